"""The correction DAG under a real Airflow 3: scheduler, dag-processor, api-server, triggerer.

What ``dag.test()`` cannot show: the sensor deferred through the real triggerer while
the corrected job runs, on a LocalExecutor with ONE worker slot (``parallelism=1``).
The sensor starts first (higher priority) and the job can only run in the slot the
sensor gave back by deferring; so a successful run whose job started before the sensor
finished proves the sensor held no worker slot while it waited. The states seen over
the REST API while polling must include ``deferred`` for the sensor.

The metadata DB is a fresh PostgreSQL database (SQLite cannot take five processes);
under ``CI=true`` a missing server fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from conftest import DAGS, ORDERS, VENV_BIN

DAG_ID = "paimon_data_correction"
USER, PASSWORD = "admin", "real-airflow-pw"
RUN_TIMEOUT = float(os.environ.get("PAIMON_E2E_RUN_TIMEOUT", "1200"))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def metadata_db(postgres_server_url: str, unique_name: str):
    """A fresh PostgreSQL database for this Airflow; dropped afterwards."""
    import sqlalchemy as sa

    admin = sa.create_engine(postgres_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{unique_name}"'))
    url = sa.engine.make_url(postgres_server_url).set(drivername="postgresql+psycopg2", database=unique_name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{unique_name}" WITH (FORCE)'))
        admin.dispose()


def _env(home: Path, db_url: str, api_port: int) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PAIMON_LINEAGE"))}
    env.update(
        AIRFLOW_HOME=str(home),
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__PARALLELISM="1",  # ONE worker slot: a sensor holding it would block the job
        AIRFLOW__CORE__DAGS_FOLDER=str(DAGS),
        # every example DAG is parsed, but only the one under test is unpaused (a scheduled
        # one would take the single worker slot)
        AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="True",
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://127.0.0.1:{api_port}/execution/",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=db_url,
        AIRFLOW__CORE__AUTH_MANAGER="airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=f"{USER}:admin",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(passwords),
        AIRFLOW__API_AUTH__JWT_SECRET="real-airflow-e2e-secret-0123456789abcdef",
        AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{api_port}",
        AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE="True",  # the DAG's sensor defers
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="2",
        AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="1200",
        AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC="2",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
    )
    return env


@contextmanager
def _airflow_processes(home: Path, env: dict[str, str], api_port: int):
    """api-server, scheduler, dag-processor and triggerer; all stopped (process groups) after."""
    airflow = os.path.join(VENV_BIN, "airflow")
    migrated = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    commands = {
        "api-server": [airflow, "api-server", "--host", "127.0.0.1", "--port", str(api_port), "--workers", "1"],
        "scheduler": [airflow, "scheduler"],
        "dag-processor": [airflow, "dag-processor"],
        "triggerer": [airflow, "triggerer"],
    }
    procs: dict[str, subprocess.Popen] = {}
    with ExitStack() as stack:
        for name, cmd in commands.items():
            log = stack.enter_context(open(home / f"{name}.log", "w"))
            procs[name] = subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            yield procs
        finally:
            for proc in procs.values():
                with _suppress():
                    os.killpg(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            for proc in procs.values():
                try:
                    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    with _suppress():
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)


@contextmanager
def _suppress():
    try:
        yield
    except ProcessLookupError:
        pass


class Api:
    """The bits of Airflow's REST API v2 the test needs, with a bearer token."""

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


def _wait(what: str, check, timeout: float, procs: dict, home: Path, every: float = 2.0):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
        if dead or time.monotonic() > deadline:
            logs = "\n".join(
                f"--- {n}.log ---\n{(home / f'{n}.log').read_text(errors='replace')[-2500:]}" for n in procs
            )
            pytest.fail(f"{what}: {'processes died ' + str(dead) if dead else 'timed out'}\n{logs}")
        time.sleep(every)


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


@pytest.mark.timeout(RUN_TIMEOUT + 600)
def test_correction_dag_with_real_scheduler_and_triggerer(orders_warehouse, metadata_db, tmp_path):
    from correction_tasks import load_job_module, paimon_hook_for, read_rows

    home = tmp_path / "airflow-home"
    api_port = _free_port()
    env = _env(home, metadata_db, api_port)
    lineage_url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    conf = {
        "warehouse": orders_warehouse,
        "lineage_url": lineage_url,
        "branch": "fix_live",
        "tag": "before_fix_live",
        "backup_name": "main_before_fix_live",
    }
    api = Api(f"http://127.0.0.1:{api_port}")
    with _airflow_processes(home, env, api_port) as procs:
        _wait("api-server up", lambda: _healthy(api), 240, procs, home)
        api.login()
        _wait("DAG parsed", lambda: api.call("GET", f"/api/v2/dags/{DAG_ID}")[0] == 200, 300, procs, home)
        status, body = api.call("PATCH", f"/api/v2/dags/{DAG_ID}", {"is_paused": False})
        assert status == 200 and body["is_paused"] is False, body
        status, run = api.call(
            "POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": conf}
        )
        assert status in (200, 201), run
        run_id = run["dag_run_id"]
        seen: dict[str, set[str]] = {}

        def finished():
            status, body = api.call("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")
            if status != 200:
                return None
            for ti in body["task_instances"]:
                seen.setdefault(ti["task_id"], set()).add(ti["state"] or "none")
            _, dag_run = api.call("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")
            return body if dag_run.get("state") in ("success", "failed") else None

        tis = _wait("DAG run finished", finished, RUN_TIMEOUT, procs, home)
        _, dag_run = api.call("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")
        by_task = {ti["task_id"]: ti for ti in tis["task_instances"]}
        states = {t: ti["state"] for t, ti in by_task.items()}
        assert dag_run["state"] == "success", (states, seen)
        status, xcom = api.call(
            "GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/wait_catch_up/xcomEntries/return_value"
        )
        # the triggerer writes a trigger's log beside the task's: <attempt>.log.trigger.<id>.log
        trigger_logs = "".join(
            p.read_text(errors="replace") for p in (home / "logs").rglob("task_id=wait_catch_up/*.trigger.*.log")
        )

    # The sensor waited in the triggerer...
    assert "deferred" in seen["wait_catch_up"], seen
    assert "triggers.catchup.SnapshotCatchUpTrigger" in trigger_logs and "not caught up yet" in trigger_logs
    # ...and, with one worker slot, the job ran while the sensor was still unfinished:
    sensor, job = by_task["wait_catch_up"], by_task["run_corrected_job"]
    assert _parse_time(sensor["start_date"]) < _parse_time(job["start_date"]) < _parse_time(sensor["end_date"]), (
        sensor, job
    )
    assert states["delete_branch"] == "skipped" and states["replace_main"] == "success", states
    assert status == 200, xcom
    value = xcom["value"]
    if isinstance(value, str):  # the API may give the stringified value
        import ast

        value = json.loads(value) if value.startswith('{"') else ast.literal_eval(value)
    assert value["caught_up"] is True and value["sources"][0]["source"] == "db.orders", value

    hook = paimon_hook_for(orders_warehouse)
    assert load_job_module("enrich_orders").verify(ORDERS, read_rows(hook, "db.orders_enriched")) == []
    assert "main_before_fix_live" in hook.list_branches("db.orders_enriched")


def _healthy(api: Api) -> bool:
    try:
        with urllib.request.urlopen(api.base + "/api/v2/monitor/health", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False
