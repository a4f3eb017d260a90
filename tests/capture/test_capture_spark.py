"""Lineage capture on a real local Spark: batch writes, streaming micro-batches, a replay.

One test per mode keeps the Spark time down (the session is shared with other tests;
every conf key set here is unset again and the capture is closed, which restores the
data source registration).
"""

from __future__ import annotations

import contextlib
import os
import time

import pyarrow as pa
import pytest
from olspec import LineageReceiver, validate_event
from pypaimon import CatalogFactory, Schema

from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.spark import commit_events
from airflow_provider_paimon.spark.lineage_capture import enable_lineage_capture

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@contextlib.contextmanager
def configured(spark, conf):
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in conf:
            spark.conf.unset(key)


def make_tables(warehouse, *names):
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    for name in names:
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
    return catalog


def append(catalog, name, rows):
    table = catalog.get_table(name)
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": list(rows), "v": ["x"] * len(rows)}, schema=SCHEMA))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


def wait_until(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_batch_job_lineage_and_openlineage(spark, warehouse, tmp_path):
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(5))
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    with LineageReceiver() as receiver, configured(
        spark,
        {
            "spark.paimon.lineage.url": url,
            "spark.paimon.lineage.job": "etl.batch",
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
            "spark.paimon.lineage.pollIntervalMs": "100",
            "spark.paimon.openlineage.transport.type": "http",
            "spark.paimon.openlineage.transport.url": receiver.url,
            "spark.paimon.openlineage.async": "false",
        },
    ):
        capture = enable_lineage_capture(spark, force=False)
        assert capture is not None and enable_lineage_capture(spark) is capture  # idempotent
        try:
            src = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
            src.write.format("paimon").option("warehouse", warehouse).option("table", "db.dst").mode("append").save()
            assert wait_until(lambda: capture.recorder.delivered >= 1)
        finally:
            capture.close()
        assert os.environ.get(commit_events.EVENT_LOG_ENV) is None
        assert commit_events.EVENT_LOG_ENV not in spark.sparkContext.environment
        events = receiver.wait_for(2)

    with LineageStore.from_url(url) as store:
        src_rows = store.source_data_lineages(job="etl.batch")
        sink_rows = store.sink_data_lineages(job="etl.batch")
        assert [(r.table, r.barrier_id, r.snapshot_id) for r in src_rows] == [("src", 1, 1)]
        assert [(r.table, r.barrier_id, r.snapshot_id) for r in sink_rows] == [("dst", 1, 1)]
        assert [t.table for t in store.source_table_lineages(job="etl.batch")] == ["src"]
        assert [t.table for t in store.sink_table_lineages(job="etl.batch")] == ["dst"]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    for event in events:
        validate_event(event)
    complete = events[-1]
    assert complete["job"]["name"] == "etl.batch"
    assert complete["inputs"][0]["name"] == "db.src" and complete["outputs"][0]["name"] == "db.dst"
    assert complete["run"]["facets"]["paimon_batch"]["batchId"] == 1


def test_streaming_lineage_per_micro_batch_on_a_branch_and_replay(spark, warehouse, tmp_path):
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(3))  # snapshot 1
    dst = catalog.get_table("db.dst")
    append(catalog, "db.dst", [0])
    dst.create_tag("t1")
    dst.branch_manager().create_branch("fix", "t1")  # dst$branch_fix starts at snapshot 1
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    checkpoint = str(tmp_path / "checkpoint")

    def run_available_now():
        query = (
            spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
            .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
            .option("branch", "fix").option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start()
        )
        query.awaitTermination(240)
        return query

    receiver = LineageReceiver().start()
    with configured(
        spark,
        {
            "spark.paimon.lineage.url": url,
            "spark.paimon.lineage.job": "etl.stream",
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
            "spark.paimon.openlineage.transport.type": "http",
            "spark.paimon.openlineage.transport.url": receiver.url,
            "spark.paimon.openlineage.async": "false",
        },
    ):
        capture = enable_lineage_capture(spark, force=False)
        try:
            run_available_now()  # batch 0: src snapshot 1 -> dst$branch_fix snapshot 2
            append(catalog, "db.src", range(3, 5))  # snapshot 2
            append(catalog, "db.src", range(5, 8))  # snapshot 3
            run_available_now()  # batch 1: src snapshots 2..3 -> dst$branch_fix snapshot 3
            assert wait_until(lambda: capture.recorder.delivered >= 2)
            with LineageStore.from_url(url) as store:
                before = store.read_table("sink_snapshot_lineage")[1]
            # A crash after the commit, before Spark's commit log entry: drop the entry,
            # Spark replays batch 1, the sink recognises its commit and publishes it again.
            for name in ("1", ".1.crc"):
                path = os.path.join(checkpoint, "commits", name)
                if os.path.exists(path):
                    os.remove(path)
            run_available_now()
            time.sleep(1)
        finally:
            capture.close()
            receiver.stop()

    events = receiver.events
    for event in events:
        validate_event(event)
    kinds = [e["eventType"] for e in events]
    assert kinds.count("START") == 3 and kinds.count("COMPLETE") == 3, kinds
    running = [e for e in events if e["eventType"] == "RUNNING"]
    facets = [e["run"]["facets"]["paimon_batch"] for e in running]
    assert [f["batchId"] for f in facets][:2] == [0, 1]
    assert running[1]["inputs"][0]["name"] == "db.src"
    assert running[1]["outputs"][0]["name"] == "db.dst$branch_fix"

    with LineageStore.from_url(url) as store:
        src = [(r.barrier_id, r.table, r.branch, r.snapshot_id) for r in store.source_data_lineages(job="etl.stream")]
        snk = [(r.barrier_id, r.table, r.branch, r.snapshot_id) for r in store.sink_data_lineages(job="etl.stream")]
        after = store.read_table("sink_snapshot_lineage")[1]
        assert [(t.table, t.branch) for t in store.source_table_lineages(job="etl.stream")] == [("src", "main")]
        assert [(t.table, t.branch) for t in store.sink_table_lineages(job="etl.stream")] == [("dst", "fix")]
    assert src == [(0, "src", "main", 1), (1, "src", "main", 3)]
    assert snk == [(0, "dst", "fix", 2), (1, "dst", "fix", 3)]
    assert [r[:5] for r in after] == [r[:5] for r in before]  # the replay changed nothing
    rows = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.dst").option("branch", "fix").load().count()
    assert rows == 1 + 8  # each source row exactly once (plus the branch's initial row)
