"""OpenLineage from the Spark conf alone: no lineage store configured, none created.

A batch write and a streaming query on the local Spark, events sent to the HTTP
receiver and validated against the OpenLineage spec; the same events as with a store
(datasets, versions = snapshot ids, ``paimon_batch``), the batch id taken from the run
(batch writes) or the micro-batch (streaming).
"""

from __future__ import annotations

import contextlib
import os

import pytest
from olspec import LineageReceiver, validate_event
from pypaimon import CatalogFactory
from support.lineage_capture import append, configured, make_tables, wait_until

from airflow_provider_paimon.paimon.commit_properties import airflow_env
from airflow_provider_paimon.spark.lineage.capture import enable_from_conf
from airflow_provider_paimon.spark.lineage.recorder import RunSequenceRecorder
from airflow_provider_paimon.spark.registration import register_data_source

pytestmark = pytest.mark.spark


@pytest.fixture
def no_store(tmp_path, monkeypatch):
    """A PAIMON_HOME of its own (where the default SQLite store would go), no store URL."""
    home = tmp_path / "paimon-home"
    monkeypatch.setenv("PAIMON_HOME", str(home))
    monkeypatch.delenv("PAIMON_LINEAGE_URL", raising=False)
    monkeypatch.delenv("PAIMON_CATALOG_OPTIONS_JSON", raising=False)
    return home


@contextlib.contextmanager
def airflow_task(spark, **names):
    """The driver runs as an Airflow task try would (AIRFLOW_CTX_*), then no more.

    The data source is registered again on the way out, so later tests of the shared
    session commit without this run's properties.
    """
    env = airflow_env(**names)
    os.environ.update(env)
    try:
        yield
    finally:
        for key in env:
            os.environ.pop(key, None)
        register_data_source(spark)


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def _assert_no_store(home, spool):
    """No SQLite store (the default one included), no spooled store rows."""
    assert not (home / "lineage.sqlite").exists()
    leftovers = [*(_files(home) if home.exists() else []), *(_files(spool) if spool.exists() else [])]
    assert not [f for f in leftovers if "pending" in f or "sqlite" in f or f.endswith(".db")], leftovers


def test_batch_writes_emit_openlineage_without_a_store(spark, warehouse, tmp_path, no_store):
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(5))
    spool = tmp_path / "spool"
    task = airflow_task(spark, dag_id="orders", run_id="manual__1", task_id="load", try_number=2)
    with task, LineageReceiver() as receiver, configured(
        spark,
        {
            "spark.paimon.lineage.job": "etl.olonly",
            "spark.paimon.lineage.spoolDir": str(spool),
            "spark.paimon.lineage.pollIntervalMs": "100",
            "spark.paimon.openlineage.transport.type": "http",
            "spark.paimon.openlineage.transport.url": receiver.url,
            "spark.paimon.openlineage.async": "false",
        },
    ):
        capture = enable_from_conf(spark)
        assert capture is not None and not capture.config.store
        assert isinstance(capture.recorder, RunSequenceRecorder)
        try:
            for _ in range(2):  # two batch writes of one run: batch ids 1 and 2
                done = capture.recorder.delivered
                src = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
                src.write.format("paimon").option("warehouse", warehouse).option("table", "db.dst").mode("append").save()
                assert wait_until(lambda d=done: capture.recorder.delivered > d)
        finally:
            capture.close()
        events = receiver.wait_for(4)

    _assert_no_store(no_store, spool)
    assert [e["eventType"] for e in events] == ["START", "COMPLETE", "START", "COMPLETE"]
    for event in events:
        validate_event(event)
    completes = [e for e in events if e["eventType"] == "COMPLETE"]
    assert [e["run"]["facets"]["paimon_batch"]["batchId"] for e in completes] == [1, 2]
    for n, event in enumerate(completes, start=1):
        assert event["job"]["name"] == "etl.olonly"
        (source,), (sink,) = event["inputs"], event["outputs"]
        assert source["name"] == "db.src" and source["facets"]["version"]["datasetVersion"] == "1"
        assert sink["name"] == "db.dst" and sink["facets"]["version"]["datasetVersion"] == str(n)
        facet = event["run"]["facets"]["paimon_batch"]
        assert [s["snapshotId"] for s in facet["sinks"]] == [n]
        assert [s["snapshotId"] for s in facet["sources"]] == [1]
    assert events[0]["run"]["runId"] != events[2]["run"]["runId"]  # one OpenLineage run per write
    # every event names the Airflow task try and Spark application, as the snapshots do
    snapshot = CatalogFactory.create({"warehouse": warehouse}).get_table("db.dst").snapshot_manager().get_latest_snapshot()
    props = snapshot.properties
    assert props["airflow.dag_id"] == "orders" and props["spark.app.id"] == spark.sparkContext.applicationId
    for event in events:
        assert event["run"]["facets"]["paimon_run"] == {
            "_producer": event["run"]["facets"]["paimon_run"]["_producer"],
            "_schemaURL": event["run"]["facets"]["paimon_run"]["_schemaURL"],
            "dagId": props["airflow.dag_id"], "runId": props["airflow.run_id"],
            "taskId": props["airflow.task_id"], "tryNumber": int(props["airflow.try_number"]),
            "sparkAppId": props["spark.app.id"],
        }


def test_streaming_query_emits_openlineage_without_a_store(spark, warehouse, tmp_path, no_store):
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(3))  # snapshot 1
    append(catalog, "db.src", range(3, 5))  # snapshot 2
    spool = tmp_path / "spool"
    receiver = LineageReceiver().start()
    # Airflow's injected transport keys alone (spark_inject_transport_info)
    with configured(
        spark,
        {
            "spark.paimon.lineage.job": "etl.olstream",
            "spark.paimon.lineage.spoolDir": str(spool),
            "spark.openlineage.transport.type": "http",
            "spark.openlineage.transport.url": receiver.url,
            "spark.openlineage.transport.endpoint": "/api/v1/lineage",
        },
    ):
        capture = enable_from_conf(spark)
        assert capture is not None and not capture.config.store
        try:
            query = (
                spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src")
                .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
                .option("max-snapshots-per-trigger", "1").load()
                .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
                .option("write-only", "true").option("checkpointLocation", str(tmp_path / "checkpoint"))
                .trigger(availableNow=True).start()
            )
            query.awaitTermination(240)
            assert wait_until(lambda: "COMPLETE" in [e["eventType"] for e in receiver.events])
        finally:
            capture.close()
            receiver.stop()

    _assert_no_store(no_store, spool)
    events = receiver.events
    for event in events:
        validate_event(event)
    kinds = [e["eventType"] for e in events]
    assert kinds[0] == "START" and kinds[-1] == "COMPLETE" and kinds.count("RUNNING") == 2, kinds
    running = [e for e in events if e["eventType"] == "RUNNING"]
    facets = [e["run"]["facets"]["paimon_batch"] for e in running]
    assert [f["batchId"] for f in facets] == [0, 1]
    assert [[s["snapshotId"] for s in f["sources"]] for f in facets] == [[1], [2]]
    assert [[s["snapshotId"] for s in f["sinks"]] for f in facets] == [[1], [2]]
    assert [e["outputs"][0]["facets"]["version"]["datasetVersion"] for e in running] == ["1", "2"]
    assert len({e["run"]["runId"] for e in events}) == 1  # one run: the query
    app_id = spark.sparkContext.applicationId  # outside Airflow: the Spark application only
    assert {e["run"]["facets"]["paimon_run"]["sparkAppId"] for e in events} == {app_id}
    assert not [e for e in events if "dagId" in e["run"]["facets"]["paimon_run"]]
