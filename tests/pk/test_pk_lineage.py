"""Lineage of jobs between primary-key tables: capture, OpenLineage, a cascade plan.

A Spark batch job reads a primary-key source (CDC rows with ``rowkind.field``: inserts,
then updates and a delete of earlier keys) and upserts into a primary-key sink, once
after each source commit; the source's LSM tree is compacted in between (a COMPACT
snapshot, which the next run reads like any other). The store must say which source
snapshot fed which sink snapshot, with each snapshot's identity read from its file;
every run emits schema-valid OpenLineage events; and the cascade plan for the bad
source commit names the sink snapshots built from it and the job to re-run, as for
append tables. The sink holds the last version of each key (pypaimon and pypaimon-rust
agree).
"""

from __future__ import annotations

import pytest
from independent_reader import rust_rows
from olspec import LineageReceiver, validate_event
from support.lineage_capture import capture_conf, configured, snapshot_identity, wait_until

from airflow_provider_paimon.lineage.cascade import plan_cascade
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys
from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture

from . import tables

pytestmark = pytest.mark.spark
JOB = "etl.pk_upsert"


def _row(k: int, v: str, op: str = "+I", ts: int = 0) -> dict:
    return {"p": "a", "k": k, "v": v, "n": k, "m": float(k), "ts": ts, "op": op}


SOURCE_COMMITS = [
    [_row(k, "good") for k in range(5)],
    # the bad commit: an update pair, an upsert, a new key and a delete
    [_row(1, "good", "-U", 1), _row(1, "bad", "+U", 1), _row(3, "bad", "+U", 1), _row(7, "bad"),
     _row(2, "good", "-D", 1)],
]


def test_capture_openlineage_and_cascade_between_primary_key_tables(spark, warehouse, tmp_path):
    src = tables.create(warehouse, "db.src", "deduplicate")
    tables.create(warehouse, "db.dst", "deduplicate")
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"

    def run_job() -> None:
        df = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
        df.write.format("paimon").option("warehouse", warehouse).option("table", "db.dst").mode("append").save()

    with LineageReceiver() as receiver, configured(spark, capture_conf(url, JOB, tmp_path / "spool", receiver.url)):
        capture = enable_lineage_capture(spark, force=False)
        try:
            for n, rows in enumerate(SOURCE_COMMITS, start=1):
                tables.write(tables.reload(warehouse, "db.src"), rows)  # src@1, src@2
                run_job()  # dst@1, dst@2
                assert wait_until(lambda n=n: capture.recorder.delivered >= n)
            assert compact_primary_keys(tables.reload(warehouse, "db.src"), "full").committed  # src@3
            run_job()  # dst@3 from the compacted source
            assert wait_until(lambda: capture.recorder.delivered >= 3)
        finally:
            capture.close()
        events = receiver.wait_for(6)

    # the source: the last version of each key, the deleted key gone
    source_rows = tables.read(tables.reload(warehouse, "db.src"))
    assert [(r[1], r[2]) for r in source_rows] == [(0, "good"), (1, "bad"), (3, "bad"), (4, "good"), (7, "bad")]
    # the sink: what the job upserted, so also key 2 as the first run wrote it (an upsert
    # of what a batch read returns carries no delete)
    expected = sorted([*source_rows, tuple(_row(2, "good").values())], key=repr)
    dst = tables.reload(warehouse, "db.dst")
    assert tables.read(dst) == expected
    assert rust_rows(warehouse, "db.dst") == expected  # columns in table order: FIELDS
    kinds = [s.commit_kind for s in src.snapshot_manager().list_snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT"], kinds

    catalog = open_catalog(warehouse)
    with LineageStore.from_url(url) as store:
        src_rows = store.source_data_lineages(job=JOB)
        sink_rows = store.sink_data_lineages(job=JOB)
        assert [(r.table, r.barrier_id, r.snapshot_id) for r in src_rows] == [
            ("src", 1, 1), ("src", 2, 2), ("src", 3, 3)]
        assert [(r.table, r.barrier_id, r.snapshot_id) for r in sink_rows] == [
            ("dst", 1, 1), ("dst", 2, 2), ("dst", 3, 3)]
        for row in src_rows:
            assert row.identity == snapshot_identity(catalog, "db.src", row.snapshot_id), row
        for row in sink_rows:
            assert row.identity == snapshot_identity(catalog, "db.dst", row.snapshot_id), row

        plan = plan_cascade(store, "db", "src", 2)
    assert plan.order == ["db.src", "db.dst"] and not plan.truncated
    root, sink = plan.tables
    assert (root.first_bad_snapshot, root.branch_point) == (2, 1)
    assert (sink.first_bad_snapshot, sink.branch_point, sink.jobs) == (2, 1, (JOB,))
    assert set(sink.bad_snapshots) == {2, 3} and sink.upstreams == ("db.src",)

    assert [e["eventType"] for e in events] == ["START", "COMPLETE"] * 3
    for event in events:
        validate_event(event)
    completes = [e for e in events if e["eventType"] == "COMPLETE"]
    assert [(c["inputs"][0]["name"], c["outputs"][0]["name"]) for c in completes] == [("db.src", "db.dst")] * 3
    assert [c["run"]["facets"]["paimon_batch"]["batchId"] for c in completes] == [1, 2, 3]
