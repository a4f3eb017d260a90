"""OpenLineage events of a lineage capture on a Spark Connect session.

Beside tests/capture/test_capture_ol_only.py and test_capture_spark.py (the classic
capture): the same events, sent where each fact is known on Connect
(``spark/lineage/connect_openlineage.py``): each commit's by the ``paimon`` source in the
server's Python workers, a streaming query's START and COMPLETE by the client's query
listener. Events go to the HTTP receiver on 127.0.0.1 and are validated against the
OpenLineage spec.
"""

from __future__ import annotations

import contextlib
import os

import pytest
from olspec import LineageReceiver, validate_event
from support.lineage_capture import configured, wait_until
from test_connect_datasource import events, read, snapshot_ids, write

from airflow_provider_paimon.lineage.store import LineageStore

#: an API key full of punctuation: it must reach the receiver's header and nowhere else
API_KEY = "k3y,w:th/;punct'\"&=%?#@!"


@contextlib.contextmanager
def connect_capture(spark, conf: dict[str, str]):
    """A capture turned on by the session's conf, as a job's register(spark) does."""
    from airflow_provider_paimon.spark import register
    from airflow_provider_paimon.spark.lineage.capture import active_capture

    with configured(spark, conf):
        register(spark)
        capture = active_capture(spark)
        assert capture is not None and type(capture).__name__ == "ConnectCapture"
        try:
            yield capture
        finally:
            capture.close()
    register(spark)


def _by_type(received, kind):
    return [e for e in received if e["eventType"] == kind]


def test_batch_writes_send_start_and_complete_with_the_store_s_barriers(
    connect_spark, connect_server, warehouse, tmp_path
):
    """Store and OpenLineage: each batch write of the paimon source is a run with START
    and COMPLETE; the second write's input is the snapshot the job read and its output the
    snapshot written; its batch facet's id is the store's barrier id; the run facet names
    the server's Spark application; the API key reaches the receiver's header only."""
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    with LineageReceiver() as receiver, connect_capture(connect_spark, {
        "spark.paimon.lineage.url": url,
        "spark.paimon.lineage.job": "etl.ol_connect",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.openlineage.transport.type": "http",
        "spark.paimon.openlineage.transport.url": receiver.url,
        "spark.paimon.openlineage.transport.apiKey": API_KEY,
        "spark.paimon.openlineage.namespace": "ol-connect-tests",
    }):
        write(events(connect_spark, 0, 10), warehouse, "db.src", **{"create-table": "true"})
        write(read(connect_spark, warehouse, "db.src"), warehouse, "db.dst", **{"create-table": "true"})
        assert wait_until(lambda: len(_by_type(receiver.events, "COMPLETE")) >= 2)
        received = receiver.events
        headers = [r.headers.get("Authorization", "") for r in receiver.requests]

    for event in received:
        validate_event(event)
    assert [e["eventType"] for e in received] == ["START", "COMPLETE", "START", "COMPLETE"]
    assert {e["job"]["name"] for e in received} == {"etl.ol_connect"}
    assert {e["job"]["namespace"] for e in received} == {"ol-connect-tests"}
    first, second = received[1], received[3]
    assert first["run"]["runId"] != second["run"]["runId"]
    assert received[0]["run"]["runId"] == first["run"]["runId"]
    dst = snapshot_ids(warehouse, "db.dst")[-1]
    facet = second["run"]["facets"]["paimon_batch"]
    assert [(s["table"], s["snapshotId"]) for s in facet["sources"]] == [("src", 1)]
    assert [(s["table"], s["snapshotId"]) for s in facet["sinks"]] == [("dst", dst)]
    assert [i["facets"]["version"]["datasetVersion"] for i in second["inputs"]] == ["1"]
    assert [o["facets"]["version"]["datasetVersion"] for o in second["outputs"]] == [str(dst)]
    with LineageStore.from_url(url) as store:
        barriers = sorted({r.barrier_id for r in store.sink_data_lineages(job="etl.ol_connect")})
    assert [e["run"]["facets"]["paimon_batch"]["batchId"] for e in (first, second)] == barriers
    app_id = connect_spark.conf.get("spark.app.id")
    assert {e["run"]["facets"]["paimon_run"]["sparkAppId"] for e in received} == {app_id}
    assert headers and all(h == f"Bearer {API_KEY}" for h in headers)
    assert not [e for e in received if API_KEY in str(e)]
    with open(connect_server.log_path, encoding="utf-8", errors="replace") as fh:
        assert API_KEY not in fh.read()


def test_a_stream_without_a_store_is_one_run_start_running_per_batch_complete(
    connect_spark, warehouse, tmp_path, monkeypatch
):
    """OpenLineage only (no store, none created), configured by the client's
    OPENLINEAGE_URL: a streaming query's events share one run, the query's Spark runId;
    START and COMPLETE come from the client, one RUNNING per micro-batch from its commit,
    with the snapshots the batch read and wrote."""
    home = tmp_path / "paimon-home"
    monkeypatch.setenv("PAIMON_HOME", str(home))
    monkeypatch.delenv("PAIMON_LINEAGE_URL", raising=False)
    spool = tmp_path / "spool"
    write(events(connect_spark, 0, 3), warehouse, "db.s_src", **{"create-table": "true"})  # @1
    write(events(connect_spark, 3, 5), warehouse, "db.s_src")  # @2
    write(events(connect_spark, 0, 0), warehouse, "db.s_dst", **{"create-table": "true"})
    with LineageReceiver() as receiver:
        monkeypatch.setenv("OPENLINEAGE_URL", receiver.url)
        with connect_capture(connect_spark, {
            "spark.paimon.lineage.job": "etl.ol_stream",
            "spark.paimon.lineage.spoolDir": str(spool),
            "spark.paimon.openlineage.enabled": "true",
        }) as capture:
            assert not capture.config.store
            query = (
                read_stream(connect_spark, warehouse, "db.s_src")
                .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.s_dst")
                .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
            )
            query.awaitTermination(240)
            assert query.exception() is None
            assert wait_until(lambda: "COMPLETE" in [e["eventType"] for e in receiver.events])
            received = sorted(receiver.events, key=lambda e: e["eventTime"])

    assert not (home / "lineage.sqlite").exists()
    for event in received:
        validate_event(event)
    kinds = [e["eventType"] for e in received]
    assert kinds[0] == "START" and kinds[-1] == "COMPLETE" and kinds.count("RUNNING") == 2, kinds
    assert {e["run"]["runId"] for e in received} == {str(query.runId)}
    running = _by_type(received, "RUNNING")
    facets = [e["run"]["facets"]["paimon_batch"] for e in running]
    assert [f["batchId"] for f in facets] == [0, 1]
    assert [[s["snapshotId"] for s in f["sources"]] for f in facets] == [[1], [2]]
    dst = snapshot_ids(warehouse, "db.s_dst")
    assert [[s["snapshotId"] for s in f["sinks"]] for f in facets] == [[dst[-2]], [dst[-1]]]
    assert {e["job"]["name"] for e in received} == {"etl.ol_stream"}


def read_stream(spark, warehouse, table):
    return (spark.readStream.format("paimon").option("warehouse", warehouse).option("table", table)
            .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
            .option("max-snapshots-per-trigger", "1").load())


def test_a_failed_stream_sends_fail(connect_spark, tmp_path):
    """A query that ends with an error: the client's listener sends FAIL for its run, with
    the error. (The listener's real wiring is the stream test's COMPLETE; a query failing
    on the server costs a stream's start, so the event is handed to the listener here.)"""
    from types import SimpleNamespace

    with LineageReceiver() as receiver, connect_capture(connect_spark, {
        "spark.paimon.lineage.job": "etl.ol_fail",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.openlineage.transport.type": "http",
        "spark.paimon.openlineage.transport.url": receiver.url,
    }) as capture:
        listener = capture.query_events.listener
        query = SimpleNamespace(id="c2cfc766-2d55-431b-aed1-574e73704848",
                                runId="93323985-c31b-426d-b130-055a40a7f793")
        listener.onQueryStarted(SimpleNamespace(**vars(query), name=None, timestamp=None))
        listener.onQueryTerminated(SimpleNamespace(**vars(query), exception="table db.missing does not exist",
                                                   errorClassOnException=None))
        assert wait_until(lambda: "FAIL" in [e["eventType"] for e in receiver.events])
        received = receiver.events
    for event in received:
        validate_event(event)
    assert [e["eventType"] for e in received] == ["START", "FAIL"]
    assert {e["run"]["runId"] for e in received} == {query.runId}
    assert "db.missing" in received[1]["run"]["facets"]["errorMessage"]["message"]


@pytest.mark.parametrize("configured", [False, True])
def test_a_capture_s_listener_goes_with_it(connect_spark, tmp_path, configured):
    """Closing the capture removes its client-side query listener (a pooled session's
    next job must not send this job's events); no listener without OpenLineage."""
    conf = {"spark.paimon.lineage.url": f"sqlite:///{tmp_path / 'lineage.sqlite'}",
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}
    if configured:
        conf["spark.paimon.openlineage.transport.type"] = "http"
        conf["spark.paimon.openlineage.transport.url"] = "http://127.0.0.1:9/never"
    before = _listeners(connect_spark)
    with connect_capture(connect_spark, conf) as capture:
        assert (capture.query_events is not None) is configured
        assert len(_listeners(connect_spark)) == len(before) + int(configured)
    assert _listeners(connect_spark) == before


def _listeners(spark):
    bus = spark.streams._sqlb  # the client-side listener bus (Spark 4.x)
    return list(bus._listener_bus)


def test_carried_settings_come_from_the_conf_or_the_client_environment():
    from airflow_provider_paimon.spark.lineage.connect_openlineage import carried_settings

    off = carried_settings({}, "job", "4.3.0", environ={})
    assert off == {}
    conf = {"spark.openlineage.transport.type": "http", "spark.openlineage.transport.url": "http://h:5000",
            "spark.openlineage.parentJobName": "dag.task", "spark.app.name": "x"}
    carried = carried_settings(conf, "job", "4.3.0", environ={})
    assert carried["conf"] == {**{k: v for k, v in conf.items() if k != "spark.app.name"},
                               "spark.paimon.openlineage.async": "false"}
    env = {"OPENLINEAGE_URL": "http://h:5000", "OPENLINEAGE_API_KEY": API_KEY, "OPENLINEAGE_NAMESPACE": "ns"}
    from_env = carried_settings({"spark.paimon.openlineage.enabled": "true"}, "job", None, environ=env)
    assert from_env["conf"]["spark.paimon.openlineage.transport.url"] == "http://h:5000"
    assert from_env["conf"]["spark.paimon.openlineage.transport.apiKey"] == API_KEY
    assert from_env["conf"]["spark.paimon.openlineage.namespace"] == "ns"
    both = carried_settings({**conf, "spark.openlineage.namespace": "from-conf"}, "job", None,
                            environ={"OPENLINEAGE_NAMESPACE": "from-env"})
    assert both["conf"]["spark.paimon.openlineage.namespace"] == "from-conf"  # as the client resolved it
    disabled = carried_settings(conf, "job", None, environ={"OPENLINEAGE_DISABLED": "true"})
    assert disabled == {}
    assert API_KEY not in repr(_options_with(from_env))


def _options_with(settings):
    import dataclasses

    from airflow_provider_paimon.spark.options import parse_options

    return dataclasses.replace(parse_options({"warehouse": os.sep + "wh", "table": "db.t"}), openlineage=settings)
