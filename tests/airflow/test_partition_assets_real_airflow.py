"""Paimon partitions as asset partitions under a real Airflow 3, and a publish deadline.

One set of real processes (scheduler, dag-processor, api-server, triggerer on a fresh
PostgreSQL metadata DB) runs ``dags/partition_assets_dag.py`` as it ships:

* plain pypaimon commits are seen by the watcher (``partition_keys=True``), relayed as
  partitioned events, and the consumer on ``PartitionedAssetTimetable`` runs exactly
  once per new partition, its task reading that partition;
* the backfill DAG (a real spark-submit of ``dags/jobs/rewrite_partitions.py`` through
  ``PaimonSparkSubmitOperator(asset_partitions=True)``) writes two new partitions, then
  rewrites one old partition: the consumer runs once for each partition written, and
  the relay skips those commits (reported by their task), so nothing runs twice;
* in the same session, a DAG with ``deadline=publish_deadline("5 s", marker=...)`` whose
  run stalls gets the default callback run by the triggerer (the marker file appears).

The reference for partitions and rows is what the test wrote and plain pypaimon reads.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
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
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.assets import asset_uri
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.consumers import read_next_snapshot

REPO_DAGS = Path(__file__).resolve().parents[2] / "dags"
TABLE = "demo.orders"
CONSUMER = "airflow-e2e-partitions"
SCHEMA = pa.schema([("order_id", pa.int64()), ("amount", pa.float64()), ("dt", pa.string()), ("region", pa.string())])

pytestmark = [pytest.mark.airflow, pytest.mark.postgres, pytest.mark.submit]

STALLED_DAG = '''
import os
import time
from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_paimon.deadlines import publish_deadline

with DAG("paimon_stalled_publish", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         deadline=publish_deadline("5 s", marker=os.environ["PAIMON_TEST_DEADLINE_MARKER"])):
    @task
    def stall():
        time.sleep(40)  # the "publish" never comes in time

    stall()
'''


@pytest.fixture
def metadata_db(postgres_server_url: str, unique_name: str):
    with postgres_database(postgres_server_url, unique_name) as url:
        yield url


def make_orders(warehouse: str) -> Any:
    from pypaimon import Schema

    catalog = open_catalog(warehouse)
    catalog.create_database("demo", True)
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt", "region"]), False)
    return load_table(catalog, TABLE)


def commit(tbl: Any, partitions: list[tuple[str, str]]) -> int:
    """One pypaimon APPEND: one row per partition given."""
    rows = [{"order_id": 900 + i, "amount": 1.0, "dt": d, "region": r} for i, (d, r) in enumerate(partitions)]
    return commit_rows(tbl, rows, SCHEMA)


class Metadata:
    """Reads of Airflow's own tables: the consumer's runs and the asset's events."""

    def __init__(self, url: str, uri: str) -> None:
        import sqlalchemy as sa

        self.sa, self.engine, self.uri = sa, sa.create_engine(url), uri

    def _rows(self, sql: str, **params: Any) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(self.sa.text(sql), params).all())

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        """Each run: its partition key, state, and the task's XCom return value."""
        rows = self._rows(
            "SELECT r.run_id, r.partition_key, r.state, x.value FROM dag_run r LEFT JOIN xcom x "
            "ON x.dag_id = r.dag_id AND x.run_id = r.run_id AND x.key = 'return_value' "
            "WHERE r.dag_id = :dag ORDER BY r.id", dag=dag_id,
        )
        return [{"run_id": r[0], "key": r[1], "state": r[2],
                 "value": json.loads(r[3]) if isinstance(r[3], str) else r[3]} for r in rows]

    def done(self, dag_id: str) -> list[dict[str, Any]]:
        return [r for r in self.runs(dag_id) if r["state"] in ("success", "failed")]

    def events(self) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT e.id, e.partition_key, e.source_dag_id, e.extra FROM asset_event e JOIN asset a "
            "ON a.id = e.asset_id WHERE a.uri = :uri ORDER BY e.id", uri=self.uri,
        )
        return [{"id": r[0], "key": r[1], "dag": r[2], "extra": r[3] if isinstance(r[3], dict) else json.loads(r[3])}
                for r in rows]

    def close(self) -> None:
        self.engine.dispose()


def keys_ran(db: Metadata) -> list[str]:
    return sorted(r["key"] for r in db.done("paimon_partition_consumer"))


@pytest.mark.timeout(900)
def test_consumer_runs_once_per_partition_from_any_writer_and_the_deadline_fires(warehouse, metadata_db, tmp_path):
    tbl = make_orders(warehouse)
    before = commit(tbl, [("2026-11-01", "eu")])  # before the watcher: no run for it
    dags = tmp_path / "dags"
    (dags / "jobs").mkdir(parents=True)
    shutil.copy(REPO_DAGS / "partition_assets_dag.py", dags)
    shutil.copy(REPO_DAGS / "jobs" / "rewrite_partitions.py", dags / "jobs")
    (dags / "stalled_publish_dag.py").write_text(STALLED_DAG)
    marker = tmp_path / "missed-deadline.txt"
    home = tmp_path / "airflow-home"
    api_port = free_port()
    env = airflow_env(
        home, metadata_db, api_port, dags,
        AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="False",
        AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC="1",
        AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC="1",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[1]"}),
        PAIMON_PARTITIONS_WAREHOUSE=warehouse,
        PAIMON_PARTITIONS_TABLE=TABLE,
        PAIMON_PARTITIONS_CONSUMER=CONSUMER,
        PAIMON_PARTITIONS_POLL_SECONDS="1",
        PAIMON_TEST_DEADLINE_MARKER=str(marker),
        **PRELOADED_WORKERS,  # some 15 tasks: each starts 5-20 s sooner
    )
    db = Metadata(metadata_db, asset_uri(warehouse, TABLE))
    api = Api(f"http://127.0.0.1:{api_port}")
    position = lambda: read_next_snapshot(load_table(open_catalog(warehouse), TABLE), CONSUMER)  # noqa: E731
    started = time.monotonic()
    try:
        with airflow_processes(home, env, api_port, ["api-server", "scheduler", "dag-processor", "triggerer"]) as procs:
            wait_for("api-server up", api.healthy, 240, procs)
            api.login()
            wait_for("DAGs parsed", lambda: api.call("GET", "/api/v2/dags/paimon_stalled_publish")[0] == 200,
                     300, procs)
            # the stalled run first: its deadline passes while the rest goes on
            status, stalled = api.call("POST", "/api/v2/dags/paimon_stalled_publish/dagRuns", {"logical_date": None})
            assert status in (200, 201), stalled
            wait_for("watcher started", lambda: position() == before + 1, 180, procs, every=1)

            # 1. plain pypaimon: two new partitions in one commit, then one more
            a = commit(tbl, [("2026-11-03", "eu"), ("2026-11-03", "us")])
            wait_for("runs for a", lambda: keys_ran(db) == ["dt=2026-11-03/region=eu", "dt=2026-11-03/region=us"],
                     120, procs, every=1)
            b = commit(tbl, [("2026-11-04", "eu")])
            wait_for("run for b", lambda: len(keys_ran(db)) == 3, 90, procs, every=1)
            wait_for("deadline callback", marker.exists, 60, procs, every=1)

            # 2. through the operator (spark-submit): two new partitions, then a backfill of one
            def backfill(partitions: list[str], version: int) -> str:
                status, run = api.call("POST", "/api/v2/dags/paimon_partition_backfill/dagRuns", {
                    "logical_date": None, "conf": {"partitions": partitions, "rows": 3, "version": version}})
                assert status in (200, 201), run
                run_id = run["dag_run_id"]
                wait_for(f"backfill {partitions}", lambda: api.call(
                    "GET", f"/api/v2/dags/paimon_partition_backfill/dagRuns/{run_id}")[1].get("state")
                    in ("success", "failed"), 300, procs, every=2)
                return run_id

            backfill(["dt=2026-11-05/region=eu", "dt=2026-11-05/region=us"], 1)
            wait_for("runs for the operator's partitions", lambda: len(keys_ran(db)) == 5, 120, procs, every=1)
            backfill(["dt=2026-11-03/region=eu"], 2)
            wait_for("run for the backfilled partition", lambda: len(keys_ran(db)) == 6, 120, procs, every=1)
            # the relay saw the operator's two commits too: it must have skipped them
            wait_for("relay done", lambda: len(db.done("paimon_partition_relay")) >= 2 and all(
                r["state"] == "success" for r in db.runs("paimon_partition_relay")), 60, procs, every=1)
            time.sleep(8)  # anything announced twice would be queued and run by now
            consumer_runs = db.done("paimon_partition_consumer")
            relay_runs = db.runs("paimon_partition_relay")
            backfill_runs = db.runs("paimon_partition_backfill")
            events = db.events()
            print(f"real Airflow scenario took {time.monotonic() - started:.0f} s")
    finally:
        db.close()

    # the consumer: exactly once per new partition, again only for the one backfilled
    assert sorted(r["key"] for r in consumer_runs) == [
        "dt=2026-11-03/region=eu", "dt=2026-11-03/region=eu", "dt=2026-11-03/region=us",
        "dt=2026-11-04/region=eu", "dt=2026-11-05/region=eu", "dt=2026-11-05/region=us",
    ]
    assert all(r["state"] == "success" for r in consumer_runs), consumer_runs
    for run in consumer_runs:  # each run read its own partition
        assert run["value"]["partition_key"] == run["key"], run
    rows = [(r["key"], r["value"]["rows"]) for r in consumer_runs]
    assert rows.count(("dt=2026-11-03/region=eu", 1)) == 1  # pypaimon's one row, then
    assert rows.count(("dt=2026-11-03/region=eu", 3)) == 1  # the backfill's three
    assert ("dt=2026-11-05/region=us", 3) in rows and ("dt=2026-11-04/region=eu", 1) in rows
    # against plain pypaimon: the rows each partition holds now
    final = load_table(open_catalog(warehouse), TABLE)
    read = final.new_read_builder()
    frame = read.new_read().to_arrow(read.new_scan().plan().splits()).to_pandas()
    counts = frame.groupby(["dt", "region"]).size().to_dict()
    assert counts == {("2026-11-01", "eu"): 1, ("2026-11-03", "eu"): 3, ("2026-11-03", "us"): 1,
                      ("2026-11-04", "eu"): 1, ("2026-11-05", "eu"): 3, ("2026-11-05", "us"): 3}
    backfilled = frame[(frame.dt == "2026-11-03") & (frame.region == "eu")]
    assert sorted(backfilled.amount) == [20.0, 21.0, 22.0]  # the backfill's version 2 replaced pypaimon's row

    # the events: the relay announced pypaimon's partitions, the operator its own
    partitioned = sorted((e["dag"], e["key"]) for e in events if e["key"])
    assert partitioned == [
        ("paimon_partition_backfill", "dt=2026-11-03/region=eu"),
        ("paimon_partition_backfill", "dt=2026-11-05/region=eu"),
        ("paimon_partition_backfill", "dt=2026-11-05/region=us"),
        ("paimon_partition_relay", "dt=2026-11-03/region=eu"),
        ("paimon_partition_relay", "dt=2026-11-03/region=us"),
        ("paimon_partition_relay", "dt=2026-11-04/region=eu"),
    ]
    watcher = [e["extra"]["payload"] for e in events if e["key"] is None]
    assert [p["snapshot_id"] for p in watcher][:2] == [a, b]
    assert [p["partition_keys"] for p in watcher][:2] == [
        ["dt=2026-11-03/region=eu", "dt=2026-11-03/region=us"], ["dt=2026-11-04/region=eu"]]
    operator_snapshots = {p["snapshot_id"] for p in watcher if (p.get("properties") or {}).get(
        "airflow.dag_id") == "paimon_partition_backfill"}
    assert len(operator_snapshots) == 2
    skipped = {s for r in relay_runs for s in r["value"]["skipped_snapshot_ids"]}
    assert skipped == operator_snapshots
    assert all(r["state"] == "success" for r in backfill_runs)
    # the deadline: the triggerer ran the default callback for the stalled run
    assert marker.read_text().split() == ["paimon_stalled_publish", stalled["dag_run_id"]]
