"""Lineage capture beside a stream that compacts its own table (#21) on a real local Spark.

``db.src`` (one pypaimon snapshot per micro-batch) -> ``db.dst`` through the ``paimon``
sink with its background compaction on, then ``db.dst`` -> ``db.down`` by a downstream
streaming query that walks ``db.dst`` one snapshot at a time, COMPACT ones included.
With capture on for both:

- the background COMPACT snapshots are never recorded: the sink rows of ``db.dst`` are
  exactly its micro-batches' APPEND snapshots, one per batch id;
- the downstream reader skips the COMPACT snapshots: ``db.down`` holds every source row
  once (plain pypaimon reads it back), and its own sink rows are its APPEND snapshots.
"""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from support.lineage_capture import configured, wait_until
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.lineage.queries import upstream
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
# small files and a low threshold: the stream compacts after its third micro-batch
SMALL = {"target-file-size": "32kb", "compaction.min.file-num": "3", "source.split.open-file-cost": "1b"}
BATCHES = 4


def read_ids(table):
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return sorted(builder.new_read().to_arrow(splits).column("id").to_pylist()) if splits else []


def snapshots(catalog, name):
    return catalog.get_table(name).snapshot_manager().list_snapshots()


def stream(spark, warehouse, source, sink, checkpoint, **sink_options):
    query = (
        spark.readStream.format("paimon").option("warehouse", warehouse).option("table", source)
        .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
        .option("max-snapshots-per-trigger", "1").load()
        .writeStream.format("paimon").option("warehouse", warehouse).option("table", sink)
        .options(**sink_options).option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(300)
    assert query.exception() is None


def quiet(catalog, name, checkpoint, quiet_s=2.5):
    """True once the table's latest snapshot stayed put for ``quiet_s`` and no job is pending."""
    state = os.path.join(checkpoint, "paimon-sink")
    last = {"id": None, "since": time.monotonic()}

    def settled():
        snap = catalog.get_table(name).snapshot_manager().get_latest_snapshot()
        now = snap.id if snap else None
        if now != last["id"]:
            last.update(id=now, since=time.monotonic())
            return False
        pending = [n for n in os.listdir(state) if n.startswith("compact-pending-")] if os.path.isdir(state) else []
        return time.monotonic() - last["since"] >= quiet_s and not pending

    return wait_until(settled, timeout=90.0, interval=0.25)


def test_compact_snapshots_are_no_lineage_and_downstream_reads_each_row_once(spark, warehouse, tmp_path):
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    for name in ("db.src", "db.dst", "db.down"):
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, options=SMALL), False)
    src = catalog.get_table("db.src")
    for i in range(BATCHES):
        commit_arrow(src, pa.table({"id": [2 * i, 2 * i + 1], "v": ["x", "y"]}, schema=SCHEMA))
    expected = read_ids(catalog.get_table("db.src"))
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"

    def sink_rows(table):
        with LineageStore.from_url(url) as store:
            return sorted((r.barrier_id, r.snapshot_id) for r in store.sink_data_lineages(job="etl.compacting")
                          if r.table == table)

    with configured(spark, {
        "spark.paimon.lineage.url": url,
        "spark.paimon.lineage.job": "etl.compacting",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.lineage.pollIntervalMs": "100",
    }):
        capture = enable_lineage_capture(spark, force=False)
        try:
            stream(spark, warehouse, "db.src", "db.dst", str(tmp_path / "ck1"))  # compaction on
            assert quiet(catalog, "db.dst", str(tmp_path / "ck1"))
            assert wait_until(lambda: len(sink_rows("dst")) >= BATCHES, timeout=90.0, interval=0.25)
            # the downstream query reads db.dst snapshot by snapshot, COMPACT ones too
            stream(spark, warehouse, "db.dst", "db.down", str(tmp_path / "ck2"), **{"write-only": "true"})
            appends = [s for s in snapshots(catalog, "db.down") if s.commit_kind == "APPEND"]
            assert wait_until(lambda: len(sink_rows("down")) >= len(appends) > 0, timeout=90.0, interval=0.25)
            time.sleep(1.0)  # a late (wrong) record would land now
        finally:
            capture.close()

    dst = snapshots(catalog, "db.dst")
    compacts = {s.id for s in dst if s.commit_kind == "COMPACT"}
    assert compacts and all(s.commit_user.endswith("-compact") for s in dst if s.id in compacts)
    batch_snapshots = sorted((s.commit_identifier, s.id) for s in dst if s.commit_kind == "APPEND")
    assert [b for b, _ in batch_snapshots] == list(range(BATCHES))
    assert sink_rows("dst") == batch_snapshots  # every micro-batch once, no COMPACT snapshot
    assert read_ids(catalog.get_table("db.dst")) == expected

    down = snapshots(catalog, "db.down")
    assert {s.commit_kind for s in down} == {"APPEND"}
    assert sink_rows("down") == sorted((s.commit_identifier, s.id) for s in down)
    assert read_ids(catalog.get_table("db.down")) == expected  # each source row once, not twice

    # the downstream query's sources are snapshots the stream wrote (never a COMPACT one),
    # so two hops up from each of db.down's snapshots reach db.src
    with LineageStore.from_url(url) as store:
        read = [(r.barrier_id, r.snapshot_id) for r in store.source_data_lineages(job="etl.compacting")
                if r.table == "dst"]
        assert read and not {snap for _, snap in read} & compacts, (read, sorted(compacts))
        for snap in down:
            hops = upstream(store, "db", "down", snap.id, depth=2)
            assert {n.table for n in hops} == {"dst", "src"}, (snap.id, hops)
