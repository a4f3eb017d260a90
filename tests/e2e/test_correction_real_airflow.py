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
from datetime import datetime
from pathlib import Path

import pytest
from real_airflow import (
    PRELOADED_WORKERS,
    Api,
    airflow_env,
    airflow_processes,
    free_port,
    postgres_database,
    wait_for,
)
from support.orders import DAGS, ORDERS

DAG_ID = "paimon_data_correction"
RUN_TIMEOUT = float(os.environ.get("PAIMON_E2E_RUN_TIMEOUT", "1200"))


@pytest.fixture
def metadata_db(postgres_server_url: str, unique_name: str):
    """A fresh PostgreSQL database for this Airflow; dropped afterwards."""
    with postgres_database(postgres_server_url, unique_name) as url:
        yield url


def _env(home: Path, db_url: str, api_port: int) -> dict[str, str]:
    return airflow_env(
        home, db_url, api_port, DAGS,
        AIRFLOW__CORE__PARALLELISM="1",  # ONE worker slot: a sensor holding it would block the job
        # every example DAG is parsed, but only the one under test is unpaused (a scheduled
        # one would take the single worker slot)
        AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="True",
        AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE="True",  # the DAG's sensor defers
        AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT="1200",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
        **PRELOADED_WORKERS,  # ten tasks one after another: each starts 5-20 s sooner
    )


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


@pytest.mark.timeout(RUN_TIMEOUT + 600)
def test_correction_dag_with_real_scheduler_and_triggerer(orders_warehouse, metadata_db, tmp_path):
    from correction_tasks import load_job_module, paimon_hook_for, read_rows

    home = tmp_path / "airflow-home"
    api_port = free_port()
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
    names = ["api-server", "scheduler", "dag-processor", "triggerer"]
    with airflow_processes(home, env, api_port, names) as procs:
        wait_for("api-server up", api.healthy, 240, procs)
        api.login()
        wait_for("DAG parsed", lambda: api.call("GET", f"/api/v2/dags/{DAG_ID}")[0] == 200, 300, procs)
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

        tis = wait_for("DAG run finished", finished, RUN_TIMEOUT, procs)
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

