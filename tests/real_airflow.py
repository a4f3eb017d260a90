"""A real Airflow 3 for tests: fresh PostgreSQL metadata DB, its processes, its REST API.

Shared by the tests that need real components (scheduler, dag-processor, api-server,
triggerer) rather than ``dag.test()``: the correction DAG's e2e test and the snapshot
watcher's. Each process runs in its own process group so a test can stop it, or kill
it (SIGKILL, as a crash would) and start it again.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

VENV_BIN = str(Path(sys.executable).parent)
AIRFLOW = os.path.join(VENV_BIN, "airflow")
USER, PASSWORD = "admin", "real-airflow-pw"
#: What the LocalExecutor's workers import before they take a task (``PRELOADED_WORKERS``):
#: the worker's own module, the task runner, and what the example DAG files import (not
#: the DAG files themselves).
TASK_PRELOAD = (
    "airflow.executors.local_executor",
    "airflow.sdk.execution_time.task_runner",
    "airflow_provider_paimon.hooks.paimon",
    "airflow_provider_paimon.assets",
    "airflow_provider_paimon.operators.spark_submit",
    "airflow_provider_paimon.triggers.snapshot",
)
#: ``airflow_env`` overrides for a deployment that runs many tasks. Each task runs in a
#: process forked from a LocalExecutor worker, and by default that process imports
#: Airflow's task runner and then the DAG file's imports (pypaimon, pyarrow, pandas)
#: before the task starts: 6-25 s per task on the loaded two-core machine (2026-11-26),
#: for every task of every run. Workers started from a forkserver that imported them once
#: inherit them instead (Airflow's own settings, made for Python 3.14's forkserver
#: default); the DAG file is still parsed for each task, as always. The forkserver is a
#: fresh interpreter started with the first task, so that task also waits for Airflow's
#: own import: a deployment that runs a handful of tasks gains nothing from it.
PRELOADED_WORKERS = {
    "AIRFLOW__SCHEDULER__MP_START_METHOD": "forkserver",
    "AIRFLOW__SCHEDULER__MP_FORKSERVER_PRELOAD": ",".join(TASK_PRELOAD),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _migrated_template(admin: Any, server_url: str) -> str:
    """The name of a PostgreSQL database holding a freshly migrated Airflow metadata DB,
    made once per Airflow version and server (``airflow db migrate`` costs tens of seconds
    of CPU; a copy from a template costs well under one). Made under an advisory lock (the
    xdist workers share the server) into a scratch name, renamed only once migrated, so a
    run killed half-way leaves no half-migrated template behind."""
    import importlib.metadata
    import tempfile

    import sqlalchemy as sa

    version = importlib.metadata.version("apache-airflow").replace(".", "_").replace("+", "_")
    name = f"paimon_airflow_template_{version}"
    with admin.connect() as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(724101)"))
        try:
            found = conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
            if found is None:
                scratch = f"{name}_making_{os.getpid()}"
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)'))
                conn.execute(sa.text(f'CREATE DATABASE "{scratch}"'))
                url = sa.engine.make_url(server_url).set(drivername="postgresql+psycopg2", database=scratch)
                with tempfile.TemporaryDirectory(prefix="paimon-airflow-template-") as home:
                    migrate(airflow_env(Path(home), url.render_as_string(hide_password=False), free_port(),
                                        Path(home) / "dags"))
                conn.execute(sa.text(f'ALTER DATABASE "{scratch}" RENAME TO "{name}"'))
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(724101)"))
    return name


@contextmanager
def postgres_database(server_url: str, name: str, migrated: bool = True):
    """A fresh PostgreSQL database ``name`` (SQLAlchemy URL yielded); dropped afterwards.

    ``migrated``: a copy of a migrated Airflow metadata DB (``_migrated_template``), so
    ``airflow_processes`` has nothing left to migrate; else an empty database."""
    import sqlalchemy as sa

    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    template = _migrated_template(admin, server_url) if migrated else None
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    url = sa.engine.make_url(server_url).set(drivername="postgresql+psycopg2", database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def airflow_env(home: Path, db_url: str, api_port: int, dags_folder: Path, **overrides: str) -> dict[str, str]:
    """Environment of every process: this AIRFLOW_HOME and DB, LocalExecutor, simple auth.

    The components start together on a DB copied from the migrated template, so nothing
    runs before them to write ``airflow.cfg``: each would write its own default file
    with its own random Fernet key, and a trigger one encrypted another could not read
    (seen: the triggerer died on the scheduler's trigger kwargs). So the home gets its
    ``airflow.cfg`` here, with one Fernet key and one secret key for every process, and
    its own log-server ports (two deployments run at once on the two test workers).
    """
    import secrets as token_source

    from cryptography.fernet import Fernet

    home.mkdir(parents=True, exist_ok=True)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    config = home / "airflow.cfg"
    if not config.exists():
        config.write_text(
            f"[core]\nfernet_key = {Fernet.generate_key().decode()}\n\n"
            f"[api]\nsecret_key = {token_source.token_hex(16)}\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PAIMON_LINEAGE"))}
    env.update(
        AIRFLOW_HOME=str(home),
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__DAGS_FOLDER=str(dags_folder),
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://127.0.0.1:{api_port}/execution/",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=db_url,
        AIRFLOW__CORE__AUTH_MANAGER="airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=f"{USER}:admin",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(passwords),
        AIRFLOW__API_AUTH__JWT_SECRET="real-airflow-e2e-secret-0123456789abcdef",
        AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{api_port}",
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        # Each test's DAG files are in place before the components start and never change:
        # one parse each is enough. At the default (30 s) the dag-processor parsed every file
        # again twice a minute, each parse a forked process importing the DAG (~0.9 s of CPU;
        # 36 parses in the three real-Airflow tests of a full run).
        AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL="600",
        AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="2",
        AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC="2",
        AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=str(free_port()),
        AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT=str(free_port()),
        # A task's supervisor waits for its events at most this long; a task process that
        # closed its sockets just before it exited is only seen gone after the wait, so a
        # worker slot stayed taken ~5 s (the default) after each task had finished. It is
        # also the least time between two task heartbeats (each a call to the api-server).
        AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL="2",
    )
    env.update(overrides)
    return env


def migrate(env: dict[str, str]) -> None:
    done = subprocess.run([AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def command(name: str, api_port: int) -> list[str]:
    if name == "api-server":
        return [AIRFLOW, "api-server", "--host", "127.0.0.1", "--port", str(api_port), "--workers", "1"]
    return [AIRFLOW, name]


class AirflowProcesses:
    """The running components, by name; each in its own process group, logging to home."""

    def __init__(self, home: Path, env: dict[str, str], api_port: int) -> None:
        self.home, self.env, self.api_port = home, env, api_port
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str) -> subprocess.Popen:
        with open(self.home / f"{name}.log", "a") as log:
            proc = subprocess.Popen(
                command(name, self.api_port), env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs[name] = proc
        return proc

    def kill(self, name: str) -> None:
        """SIGKILL the whole process group (the component and its children), as a crash."""
        proc = self.procs.pop(name)
        with _gone():
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop_all(self, grace: float = 3.0) -> None:
        """SIGTERM every group, then SIGKILL what is still running after ``grace`` seconds.

        Only ever called once a test has what it needs (its checks read the API, the logs
        and the DB before this). A graceful stop is not waited for: the triggerer's
        supervisor gives its trigger runner ten seconds after SIGINT, every time (seen
        in every run's triggerer.log), which cost each test ten idle seconds.
        """
        for proc in self.procs.values():
            with _gone():
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with _gone():
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # whatever of a group outlived its leader (seen: an idle LocalExecutor worker of a
        # forkserver, left running after its scheduler had stopped) goes too
        for proc in self.procs.values():
            with _gone():
                os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()

    def logs(self, tail: int = 2500) -> str:
        return "\n".join(
            f"--- {p.name} ---\n{p.read_text(errors='replace')[-tail:]}" for p in sorted(self.home.glob("*.log"))
        )


@contextmanager
def airflow_processes(home: Path, env: dict[str, str], api_port: int, names: list[str], migrated: bool = True):
    """Start ``names`` on a DB that ``postgres_database`` copied from the migrated template
    (``migrated=False``: migrate an empty one first); stop every process group afterwards."""
    if not migrated:
        migrate(env)
    procs = AirflowProcesses(home, env, api_port)
    try:
        for name in names:
            procs.start(name)
        yield procs
    finally:
        procs.stop_all()


@contextmanager
def _gone():
    with suppress(ProcessLookupError):
        yield


class Api:
    """The bits of Airflow's REST API v2 tests need, with a bearer token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.token: str | None = None

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            self.base + path, method=method, headers=headers,
            data=None if body is None else json.dumps(body).encode(),
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, {"detail": err.read().decode(errors="replace")[:500]}

    def login(self) -> None:
        status, body = self.call("POST", "/auth/token", {"username": USER, "password": PASSWORD})
        assert status in (200, 201), body
        self.token = body["access_token"]

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.base + "/api/v2/monitor/health", timeout=5) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False


def wait_for(what: str, check: Any, timeout: float, procs: AirflowProcesses, every: float = 1.0) -> Any:
    """Poll ``check`` until truthy (every ``every`` s: a REST call or a query each time);
    fail with the components' logs on timeout or a death."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        dead = {n: p.returncode for n, p in procs.procs.items() if p.poll() is not None}
        if dead or time.monotonic() > deadline:
            pytest.fail(f"{what}: {'processes died ' + str(dead) if dead else 'timed out'}\n{procs.logs()}")
        time.sleep(every)
