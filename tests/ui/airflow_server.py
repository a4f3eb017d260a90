"""Start a real Airflow 3 api-server in a temporary AIRFLOW_HOME (for UI tests)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

USER, PASSWORD = "admin", "admin-test-pw"
#: Extra users a test may add: name -> (role, password).
Users = dict[str, tuple[str, str]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def airflow_env(home: Path, extra: dict[str, str] | None = None, users: Users | None = None) -> dict[str, str]:
    """Environment for Airflow subprocesses: temp home, SQLite, simple auth with a known password."""
    home.mkdir(parents=True, exist_ok=True)
    passwords = home / "passwords.json"
    everyone = {USER: ("admin", PASSWORD), **(users or {})}
    passwords.write_text(json.dumps({name: pw for name, (_role, pw) in everyone.items()}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home / 'airflow.db'}",
        AIRFLOW__CORE__AUTH_MANAGER="airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=",".join(f"{n}:{role}" for n, (role, _pw) in everyone.items()),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(passwords),
        AIRFLOW__API_AUTH__JWT_SECRET="test-secret-for-ui-tests-only-0123456789",
        AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
    )
    env.update(extra or {})
    return env


def airflow_bin() -> str:
    return str(Path(sys.executable).with_name("airflow"))


_MIGRATED: list[Path] = []


def _migrated_db(home: Path, env: dict[str, str]) -> None:
    """A migrated metadata DB in ``home``: migrated once per test session, then copied (saves ~13 s)."""
    if not _MIGRATED:
        subprocess.run([airflow_bin(), "db", "migrate"], env=env, check=True, capture_output=True, timeout=300)
        keep = Path(tempfile.mkdtemp(prefix="paimon-ui-airflow-db-")) / "airflow.db"
        atexit.register(shutil.rmtree, keep.parent, ignore_errors=True)
        shutil.copy(home / "airflow.db", keep)
        _MIGRATED.append(keep)
    else:
        shutil.copy(_MIGRATED[0], home / "airflow.db")


@contextmanager
def api_server(home: Path, extra_env: dict[str, str] | None = None, timeout: float = 120.0):
    """Yield the base URL of a running api-server; stop it (and its workers) afterwards."""
    with api_server_process(home, extra_env, timeout) as (base, _proc):
        yield base


@contextmanager
def api_server_process(home: Path, extra_env: dict[str, str] | None = None, timeout: float = 120.0,
                       users: Users | None = None, dag_files: dict[str, str] | None = None,
                       keep_db: bool = False, db_url: str | None = None):
    """Yield (base URL, process) of a running api-server; stop it (and its workers) afterwards.

    ``dag_files`` (file name -> source) are written to the DAGs folder and serialized
    into the metadata database first, so the auth manager knows those DAGs. ``keep_db``:
    reuse the metadata database already in ``home`` (a second server on the same data).
    ``db_url``: serve an existing, migrated metadata database (e.g. the one
    ``dag.test()`` of this test process writes) instead of one in ``home``.
    """
    extra_env = {**(extra_env or {}), **({"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url} if db_url else {})}
    env = airflow_env(home, extra_env, users)
    if db_url is None and not (keep_db and (home / "airflow.db").exists()):
        _migrated_db(home, env)
    if dag_files:
        (home / "dags").mkdir(exist_ok=True)
        for name, source in dag_files.items():
            (home / "dags" / name).write_text(source)
        subprocess.run([airflow_bin(), "dags", "reserialize"], env=env, check=True, capture_output=True, timeout=300)
    port = free_port()
    log = open(home / "api-server.log", "w")  # noqa: SIM115 - the server writes it until the finally below closes it
    proc = subprocess.Popen(
        [airflow_bin(), "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(base + "/api/v2/monitor/health", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("api-server did not start: " + (home / "api-server.log").read_text()[-3000:]) from None
                time.sleep(1)
        yield base, proc
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


def group_rss(pid: int) -> int:
    """Resident memory (bytes) of the api-server's process group (it and its workers)."""
    import psutil

    total = 0
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pid:
                total += proc.memory_info().rss
        except (psutil.Error, ProcessLookupError):
            continue
    return total


def login_token(base: str, user: str = USER, password: str = PASSWORD) -> str:
    req = urllib.request.Request(
        base + "/auth/token",
        data=json.dumps({"username": user, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["access_token"]
