"""Lineage capture on a Spark Connect session (beside tests/capture/test_capture_spark.py).

The capture is set in the session's conf (``spark.paimon.lineage.*`` through
``spark.conf``, no py4j); ``register(spark)`` hands it to the ``paimon`` source, which
records in the server's Python workers: the job's table lineage and, per commit, a
barrier with the snapshot the job read and the one it wrote. Read back from the
SQLite store with ``LineageStore``.
"""

from __future__ import annotations

import pytest
from test_connect_datasource import events, read, snapshot_ids, write

from airflow_provider_paimon.lineage.store import LineageStore


@pytest.fixture
def captured(connect_spark, tmp_path):
    from airflow_provider_paimon.spark import register
    from airflow_provider_paimon.spark.lineage.capture import active_capture, enable_lineage_capture

    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    conf = {
        "spark.paimon.lineage.url": url,
        "spark.paimon.lineage.job": "etl.connect",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
    }
    for key, value in conf.items():
        connect_spark.conf.set(key, value)
    register(connect_spark)  # the conf turns the capture on
    capture = enable_lineage_capture(connect_spark, force=False)  # the running one
    assert capture is not None and type(capture).__name__ == "ConnectCapture"
    # what a job asks to report its lineage (dags/jobs/enrich_orders.py does)
    assert active_capture(connect_spark) is capture and capture.config.job == "etl.connect"
    try:
        yield url
    finally:
        capture.close()
        assert active_capture(connect_spark) is None
        for key in conf:
            connect_spark.conf.unset(key)
        register(connect_spark)


def test_capture_records_table_and_data_lineage_in_the_store(connect_spark, warehouse, captured):
    write(events(connect_spark, 0, 10), warehouse, "db.src", **{"create-table": "true"})
    src = read(connect_spark, warehouse, "db.src")
    write(src, warehouse, "db.dst", **{"create-table": "true"})
    with LineageStore.from_url(captured) as store:
        sinks = sorted((t.table, t.branch) for t in store.sink_table_lineages(job="etl.connect"))
        sources = [(t.table, t.branch) for t in store.source_table_lineages(job="etl.connect")]
        sink_rows = sorted((r.table, r.snapshot_id) for r in store.sink_data_lineages(job="etl.connect"))
        source_rows = [(r.table, r.snapshot_id) for r in store.source_data_lineages(job="etl.connect")]
    assert sinks == [("dst", "main"), ("src", "main")]
    assert sources == [("src", "main")]
    assert sink_rows == [("dst", snapshot_ids(warehouse, "db.dst")[-1]), ("src", 1)]
    assert source_rows == [("src", 1)]


def test_streaming_micro_batches_record_their_source_and_sink_snapshots(connect_spark, warehouse, captured,
                                                                         tmp_path):
    """A stream on Connect: each micro-batch's commit is a barrier (its batch id) whose
    source is the snapshot the batch read up to, with both snapshots' identities."""
    from pypaimon import CatalogFactory

    from airflow_provider_paimon.paimon.snapshot_identity import table_identity

    write(events(connect_spark, 0, 10), warehouse, "db.s_src", **{"create-table": "true"})  # s_src@1
    write(events(connect_spark, 0, 0), warehouse, "db.s_dst", **{"create-table": "true"})

    def run_stream() -> None:
        query = (
            connect_spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.s_src")
            .load().writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.s_dst")
            .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
        )
        query.awaitTermination(240)
        assert query.exception() is None

    run_stream()  # batch 0: s_src@1 in full
    write(events(connect_spark, 10, 15), warehouse, "db.s_src")  # s_src@2
    run_stream()  # batch 1: s_src@2
    catalog = CatalogFactory.create({"warehouse": warehouse})
    with LineageStore.from_url(captured) as store:
        sinks = [(r.table, r.barrier_id, r.snapshot_id) for r in store.sink_data_lineages(job="etl.connect")
                 if r.table == "s_dst"]
        sources = {r.barrier_id: r for r in store.source_data_lineages(job="etl.connect") if r.table == "s_src"}
    dst_ids = snapshot_ids(warehouse, "db.s_dst")
    assert [(t, s) for t, _b, s in sinks] == [("s_dst", dst_ids[-2]), ("s_dst", dst_ids[-1])], sinks
    assert [sources[b].snapshot_id for _t, b, _s in sinks] == [1, 2]
    for _t, barrier, _s in sinks:
        row = sources[barrier]
        assert row.identity == table_identity(catalog.get_table("db.s_src"), row.snapshot_id), row


def test_native_write_table_is_captured_too(connect_spark, warehouse, captured):
    from airflow_provider_paimon.spark import read_table, write_table

    write(events(connect_spark, 0, 5), warehouse, "db.a", **{"create-table": "true"})
    write(events(connect_spark, 0, 0), warehouse, "db.b", **{"create-table": "true"})
    result = write_table(read_table(connect_spark, "db.a", warehouse=warehouse), "db.b", warehouse=warehouse)
    with LineageStore.from_url(captured) as store:
        sink_rows = [(r.table, r.snapshot_id) for r in store.sink_data_lineages(job="etl.connect") if r.table == "b"]
        source_rows = [(r.table, r.snapshot_id) for r in store.source_data_lineages(job="etl.connect")]
    assert ("b", result.snapshot_id) in sink_rows
    assert ("a", 1) in source_rows


def test_a_jvm_only_feature_says_so(connect_spark):
    from airflow_provider_paimon.paimon.errors import InvalidArgumentError
    from airflow_provider_paimon.spark.session import classic_context

    with pytest.raises(InvalidArgumentError, match=r"Spark Connect session .* classic SparkSession"):
        classic_context(connect_spark)


def test_on_store_failure_fail_commits_nothing_while_the_store_is_down(connect_spark, warehouse, tmp_path):
    """``onStoreFailure=fail`` on Connect: the source checks the store before each commit.

    Store up: the write commits and records. Store gone (its SQLite file removed): the
    next write fails naming the policy and commits nothing; back up: it commits again.
    """
    import os

    from airflow_provider_paimon.spark import register
    from airflow_provider_paimon.spark.lineage.capture import active_capture

    db = tmp_path / "lineage.sqlite"
    conf = {
        "spark.paimon.lineage.url": f"sqlite:///{db}",
        "spark.paimon.lineage.job": "etl.connect.fail",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.lineage.onStoreFailure": "fail",
    }
    for key, value in conf.items():
        connect_spark.conf.set(key, value)
    register(connect_spark)
    capture = active_capture(connect_spark)
    try:
        assert capture is not None and db.exists()  # opened (created) when the capture started
        write(events(connect_spark, 0, 5), warehouse, "db.guarded", **{"create-table": "true"})
        assert snapshot_ids(warehouse, "db.guarded") == [1]
        os.rename(db, tmp_path / "away.sqlite")  # the store is down
        with pytest.raises(Exception, match=r"onStoreFailure=fail: the write to db\.guarded was NOT committed"):
            write(events(connect_spark, 5, 10), warehouse, "db.guarded")
        assert snapshot_ids(warehouse, "db.guarded") == [1]  # nothing committed
        os.rename(tmp_path / "away.sqlite", db)  # back
        write(events(connect_spark, 5, 10), warehouse, "db.guarded")
        assert snapshot_ids(warehouse, "db.guarded") == [1, 2]
        with LineageStore.from_url(f"sqlite:///{db}") as store:
            sinks = sorted(r.snapshot_id for r in store.sink_data_lineages(job="etl.connect.fail"))
        assert sinks == [1, 2]
    finally:
        capture.close()
        for key in conf:
            connect_spark.conf.unset(key)
        register(connect_spark)
