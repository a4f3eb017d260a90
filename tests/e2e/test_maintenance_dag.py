"""The maintenance DAG end to end: a real Spark streaming write, then ``dag.test()``.

One good run (four spark-submits: compact, expire snapshots, remove orphans, expire
tags) on a table a short streaming query wrote, micro-batch by micro-batch; bad
params fail at the ``preflight`` task with nothing submitted or changed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from dag_run_results import files_by_size, task_states, task_xcom

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
BATCHES = 6


def _load_dag():
    """A freshly imported DAG (``dag.test(run_conf=...)`` leaves its conf in the shared Params)."""
    import importlib

    import maintenance_dag

    return importlib.reload(maintenance_dag).dag


def _read_ids(warehouse: str, branch_tag: str | None = None) -> list[int]:
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table("db.events")
    if branch_tag:
        table = table.copy({"scan.tag-name": branch_tag})
    builder = table.new_read_builder()
    return sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()).column("id").to_pylist())


@pytest.fixture
def streamed_table(spark, tmp_path) -> str:
    """``db.events`` (append, partitioned by dt) written by a streaming query: one snapshot per file."""
    from pypaimon import CatalogFactory, Schema

    warehouse = str(tmp_path / "warehouse")
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table(
        "db.events",
        Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], options={"compaction.min.file-num": "2"}),
        False,
    )
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for b in range(BATCHES):
        lines = [json.dumps({"id": b * 10 + i, "dt": f"2026-11-0{1 + b % 2}", "v": f"b{b}"}) for i in range(4)]
        (incoming / f"part-{b:03d}.json").write_text("\n".join(lines) + "\n")
    stream = (
        spark.readStream.format("json").schema("id BIGINT, dt STRING, v STRING")
        .option("maxFilesPerTrigger", 1).load(str(incoming))
    )
    query = (
        stream.writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.events")
        # write-only: the maintenance DAG compacts this table (one snapshot per micro-batch before it)
        .option("write-only", "true")
        .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )
    query.awaitTermination(300)
    assert query.exception() is None and not query.isActive
    return warehouse


def test_maintenance_dag_on_a_streamed_table(streamed_table, airflow_db):
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.tag import create_tag

    warehouse = streamed_table
    table_dir = Path(warehouse) / "db.db" / "events"
    assert sorted(p.name for p in (table_dir / "snapshot").glob("snapshot-*")) == [
        f"snapshot-{i}" for i in range(1, BATCHES + 1)
    ], "one snapshot per micro-batch"
    rows = _read_ids(warehouse)
    assert len(rows) == BATCHES * 4
    # a tag whose retention has passed, one that stays, and a file a failed write left behind
    table = load_table(open_catalog(warehouse), "db.events")
    create_tag(table, "hourly-old", snapshot_id=2, time_retained="0.05")
    create_tag(table, "release-1", snapshot_id=3)
    stray = table_dir / "dt=2026-11-01" / "bucket-0" / "data-from-a-failed-write.parquet"
    stray.write_bytes(b"x" * 100)
    os.utime(stray, (time.time() - 3 * 86400,) * 2)
    small_files = {str(p) for p in table_dir.rglob("data-*.parquet")} - {str(stray)}
    assert len(small_files) == BATCHES
    time.sleep(0.1)

    run = _load_dag().test(run_conf={
        "table": "db.events", "warehouse": warehouse, "retain_min": 1, "older_than": "0 s", "max_deletes": 100,
    })
    states = task_states(run)
    assert run.state == "success", states
    assert set(states.values()) == {"success"}, states

    compacted = task_xcom(run, "compact")
    assert compacted["committed"] is True and compacted["files_before"] == BATCHES, compacted
    expired = task_xcom(run, "expire_snapshots")
    assert expired["expired_snapshot_ids"] == list(range(1, BATCHES + 1)), expired
    # the small files the compaction replaced: release-1 still holds snapshot 3's three
    assert expired["deleted_by_kind"]["data"] == BATCHES - 3, expired
    assert "tag 'release-1' of main" in expired["kept_because"], expired
    orphans = task_xcom(run, "remove_orphans")
    assert [f["path"] for f in orphans["deleted_files"]] == [
        "dt=2026-11-01/bucket-0/data-from-a-failed-write.parquet"
    ], orphans
    tags = task_xcom(run, "expire_tags")
    assert tags["expired_tags"] == ["hourly-old"] and "release-1" in tags["kept_tags"], tags

    # what is left: the compaction's snapshot, tag release-1, and the same rows for both
    assert sorted(p.name for p in (table_dir / "snapshot").glob("snapshot-*")) == [f"snapshot-{BATCHES + 1}"]
    assert sorted(p.name for p in (table_dir / "tag").iterdir()) == ["tag-release-1"]
    assert _read_ids(warehouse) == rows
    assert _read_ids(warehouse, "release-1") == sorted(r for r in rows if r < 30)
    assert not stray.exists()
    left = {str(p) for p in table_dir.rglob("data-*.parquet")}
    assert len(left & small_files) == 3 and len(left - small_files) == 2  # release-1's three, two merged files


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"table": "db.nope"}, "table db.nope does not exist"),
        ({"orphan_older_than": "10 min"}, "older_than 10 min is shorter than 1 h"),
        ({"older_than": "an hour"}, "older_than 'an hour' is not a duration"),
        ({"retain_min": 5, "retain_max": 2}, "retain_min (5, from argument"),
    ],
)
def test_bad_params_fail_at_preflight_and_change_nothing(tmp_path, conf, message):
    """The ``preflight`` task's check (no submit): a table written by pypaimon is enough."""
    from airflow.sdk.exceptions import AirflowFailException
    from pypaimon import CatalogFactory, Schema

    from airflow_provider_paimon.operators.preflight import preflight_all

    warehouse = str(tmp_path / "warehouse")
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.events", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    dag = _load_dag()
    params = {**dag.params.dump(), "warehouse": warehouse, "table": "db.events", **conf}
    before = files_by_size(warehouse)
    tasks = [dag.get_task(t) for t in ("compact", "expire_snapshots", "remove_orphans", "expire_tags")]
    with pytest.raises(AirflowFailException, match="nothing was changed") as err:
        preflight_all(tasks, {"params": params})
    assert message in str(err.value), str(err.value)
    assert files_by_size(warehouse) == before
