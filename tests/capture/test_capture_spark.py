"""Lineage capture on a real local Spark: batch writes, streaming micro-batches, a replay.

One test per mode keeps the Spark time down (the session is shared with other tests;
every conf key set here is unset again and the capture is closed, which restores the
data source registration).
"""

from __future__ import annotations

import contextlib
import os

import pytest
from olspec import LineageReceiver, validate_event
from pypaimon import CatalogFactory
from support.lineage_capture import (
    append,
    capture_conf,
    configured,
    make_tables,
    snapshot_identity,
    wait_until,
)

from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.spark import commit_events
from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture
from airflow_provider_paimon.spark.lineage.guard import PRECOMMIT_ENV
from airflow_provider_paimon.spark.lineage.routing_state import capture_routing

pytestmark = pytest.mark.spark


def _worker_daemons(spark) -> set[int]:
    """The pids of the Python worker daemons the session's (local) JVM runs."""
    import psutil

    jvm = [p for p in psutil.Process().children(recursive=True) if p.name() == "java"]
    pids = set()
    for proc in jvm:
        for child in proc.children():
            with contextlib.suppress(psutil.Error):
                if "pyspark.daemon" in child.cmdline():
                    pids.add(child.pid)
    return pids


def test_captures_reuse_the_sessions_worker_daemons(spark, warehouse, tmp_path):
    """A capture changes neither the workers' environment nor their daemons: a session
    that captures job after job (pooled, long-lived) keeps one set of Python worker
    daemons. (Routed through sc.environment, each capture started a new daemon for
    every kind of work, ~60 MB each, that never stopped.) Its workers still report to
    the capture that runs: each job's commit is recorded under its own name."""
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(3))
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    environment = dict(spark.sparkContext.environment)
    daemons = None
    for job in ("job.warm", "job.a", "job.b"):
        with configured(spark, capture_conf(url, job, tmp_path / "spool")):
            capture = enable_lineage_capture(spark, force=True)
            try:
                assert dict(spark.sparkContext.environment) == environment
                assert capture_routing(spark)[commit_events.EVENT_LOG_ENV] == capture.event_log
                spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").load() \
                    .write.format("paimon").option("warehouse", warehouse).option("table", "db.dst") \
                    .mode("append").save()
            finally:
                capture.close()
        assert capture_routing(spark) == {}
        if daemons is None:
            daemons = _worker_daemons(spark)  # the first job starts what reads and writes need
            assert daemons, "no pyspark daemon found under the session's JVM"
        else:
            assert _worker_daemons(spark) <= daemons, f"{job} started new worker daemons"
    with LineageStore.from_url(url) as store:
        for job in ("job.warm", "job.a", "job.b"):
            assert [r.table for r in store.sink_data_lineages(job=job)] == ["dst"]



def test_batch_job_lineage_and_openlineage(spark, warehouse, tmp_path):
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(5))
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    with LineageReceiver() as receiver, configured(
        spark, capture_conf(url, "etl.batch", tmp_path / "spool", receiver.url)
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
        assert capture_routing(spark) == {}
        events = receiver.wait_for(2)

    with LineageStore.from_url(url) as store:
        src_rows = store.source_data_lineages(job="etl.batch")
        sink_rows = store.sink_data_lineages(job="etl.batch")
        assert [(r.table, r.barrier_id, r.snapshot_id) for r in src_rows] == [("src", 1, 1)]
        assert [(r.table, r.barrier_id, r.snapshot_id) for r in sink_rows] == [("dst", 1, 1)]
        # each row names the commit it read / wrote, as the snapshot file says (plain pypaimon)
        assert src_rows[0].identity == snapshot_identity(catalog, "db.src", 1)
        assert sink_rows[0].identity == snapshot_identity(catalog, "db.dst", 1)
        assert src_rows[0].identity_status == sink_rows[0].identity_status == "recorded"
        assert [t.table for t in store.source_table_lineages(job="etl.batch")] == ["src"]
        assert [t.table for t in store.sink_table_lineages(job="etl.batch")] == ["dst"]
        # the barrier names the Spark application behind it (no Airflow run here)
        runs = store.barrier_runs(job="etl.batch")
        assert [(r.barrier_id, r.dag_id, r.spark_app_id) for r in runs] == [
            (1, None, spark.sparkContext.applicationId)]
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
    append(catalog, "db.src", range(3, 5))  # snapshot 2
    append(catalog, "db.src", range(5, 8))  # snapshot 3
    dst = catalog.get_table("db.dst")
    append(catalog, "db.dst", [0])
    dst.create_tag("t1")
    dst.branch_manager().create_branch("fix", "t1")  # dst$branch_fix starts at snapshot 1
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    checkpoint = str(tmp_path / "checkpoint")

    def run_available_now():
        # Two micro-batches per run: snapshots 1..2, then 3 (batch 0 is the query's
        # first: its source is named from the offset, before any plan is readable).
        query = (
            spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src")
            .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
            .option("max-snapshots-per-trigger", "2").load()
            .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
            .option("branch", "fix").option("write-only", "true").option("checkpointLocation", checkpoint)
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
            assert PRECOMMIT_ENV not in capture_routing(spark)  # buffer: no check
            # batch 0: src snapshots 1..2 -> dst$branch_fix snapshot 2;
            # batch 1: src snapshot 3 -> dst$branch_fix snapshot 3
            run_available_now()

            def sink_rows():
                with LineageStore.from_url(url) as store:
                    return store.read_table("sink_snapshot_lineage")[1]

            assert wait_until(lambda: len(sink_rows()) == 2)
            before = sink_rows()
            delivered = capture.recorder.delivered
            # A crash after the commit, before Spark's commit log entry: drop the entry,
            # Spark replays batch 1, the sink recognises its commit and publishes it again.
            for name in ("1", ".1.crc"):
                path = os.path.join(checkpoint, "commits", name)
                if os.path.exists(path):
                    os.remove(path)
            run_available_now()
            assert wait_until(lambda: capture.recorder.delivered > delivered)  # the replay's record
            # COMPLETE comes from Spark's asynchronous query-terminated event: on a busy
            # machine it can arrive after awaitTermination returns; wait for it before closing.
            assert wait_until(lambda: [e["eventType"] for e in receiver.events].count("COMPLETE") == 2)
        finally:
            capture.close()
            receiver.stop()

    events = receiver.events
    for event in events:
        validate_event(event)
    kinds = [e["eventType"] for e in events]
    assert kinds.count("START") == 2 and kinds.count("COMPLETE") == 2, kinds
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
    assert src == [(0, "src", "main", 2), (1, "src", "main", 3)]
    assert snk == [(0, "dst", "fix", 2), (1, "dst", "fix", 3)]
    with LineageStore.from_url(url) as store:  # the stream's offsets and commits name their commits
        catalog = CatalogFactory.create({"warehouse": warehouse})
        for row in store.source_data_lineages(job="etl.stream"):
            assert row.identity == snapshot_identity(catalog, "db.src", row.snapshot_id), row
        for row in store.sink_data_lineages(job="etl.stream"):
            assert row.identity == snapshot_identity(catalog, "db.dst", row.snapshot_id, "fix"), row
            assert row.identity.commit_identifier == row.barrier_id  # the micro-batch id
    assert [r[:5] for r in after] == [r[:5] for r in before]  # the replay changed nothing
    rows = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.dst").option("branch", "fix").load().count()
    assert rows == 1 + 8  # each source row exactly once (plus the branch's initial row)


def _data_files(table_path):
    return {f for root, _d, files in os.walk(table_path) if os.path.basename(root).startswith("bucket-")
            for f in files if f.startswith("data-")}


def _live_files(table):
    return {f.file_name for s in table.new_read_builder().new_scan().plan().splits() for f in s.files}


@pytest.mark.mysql
def test_fail_policy_stops_a_micro_batch_before_its_commit_while_mariadb_is_down(
    spark, warehouse, tmp_path, mysql_server_url, unique_name, monkeypatch
):
    """MariaDB behind a proxy with a password user: cut the proxy, the next micro-batch
    fails BEFORE its Paimon commit (nothing committed, files deleted, password masked);
    reopen it, restart the query: the batch is committed once, its lineage recorded."""
    import sqlalchemy as sa

    from .proxy import TcpProxy

    secret = "Pw-" + unique_name[::-1]
    admin = sa.create_engine(mysql_server_url)
    hosts = ("localhost", "127.0.0.1")
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{unique_name}`")
        for host in hosts:
            conn.exec_driver_sql(f"CREATE USER '{unique_name}'@'{host}' IDENTIFIED BY '{secret}'")
            conn.exec_driver_sql(f"GRANT ALL ON `{unique_name}`.* TO '{unique_name}'@'{host}'")
    proxy = TcpProxy("127.0.0.1", sa.engine.make_url(mysql_server_url).port or 3306)
    proxy.up()
    monkeypatch.setenv("PAIMON_LINEAGE_PASSWORD", secret)  # never in the conf or the URL
    catalog = make_tables(warehouse, "db.src", "db.dst")
    append(catalog, "db.src", range(3))  # snapshot 1
    checkpoint = str(tmp_path / "checkpoint")

    def run_available_now():
        query = (
            spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
            .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
            .option("write-only", "true")  # the test counts the sink's own commits
            .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        )
        with contextlib.suppress(Exception):  # the failed run: its error is read below
            query.awaitTermination(240)
        assert not query.isActive
        return query

    def sink_lineage():
        with admin.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(
                f"SELECT barrier_id, snapshot_id FROM `{unique_name}`.sink_snapshot_lineage ORDER BY 1"
            )]

    try:
        with configured(
            spark,
            {
                "spark.paimon.lineage.url": f"mysql+pymysql://{unique_name}@127.0.0.1:{proxy.port}/{unique_name}",
                "spark.paimon.lineage.database": unique_name,
                "spark.paimon.lineage.job": unique_name,
                "spark.paimon.lineage.onStoreFailure": "fail",
                "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
                "spark.paimon.lineage.pollIntervalMs": "100",
            },
        ):
            capture = enable_lineage_capture(spark, force=False)
            try:
                assert PRECOMMIT_ENV in capture_routing(spark)
                check_file = capture.check_file
                assert os.stat(check_file).st_mode & 0o777 == 0o600
                assert run_available_now().exception() is None  # batch 0: src 1 -> dst 1
                assert wait_until(lambda: sink_lineage() == [(0, 1)])

                proxy.down()  # the store "stops"
                append(catalog, "db.src", range(3, 6))  # snapshot 2
                failed = run_available_now()  # batch 1 must not be committed
                error = str(failed.exception())
                assert "onStoreFailure=fail" in error and "micro-batch 1 of db.dst" in error
                assert f"{unique_name}:***@127.0.0.1:{proxy.port}" in error and secret not in error
                dst = catalog.get_table("db.dst")
                assert [s.commit_identifier for s in dst.snapshot_manager().list_snapshots()] == [0]
                assert _data_files(dst.table_path) == _live_files(dst)  # batch 1's files deleted
                assert not os.path.exists(os.path.join(checkpoint, "commits", "1"))

                proxy.up()  # the store is back: restart the query
                assert run_available_now().exception() is None
                assert wait_until(lambda: sink_lineage() == [(0, 1), (1, 2)])
            finally:
                capture.close()
            assert not os.path.exists(check_file)  # the address (and password) is removed
            assert PRECOMMIT_ENV not in capture_routing(spark)
    finally:
        proxy.down()
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{unique_name}`")
            for host in hosts:
                conn.exec_driver_sql(f"DROP USER IF EXISTS '{unique_name}'@'{host}'")
        admin.dispose()
    dst = catalog.get_table("db.dst")
    assert [s.commit_identifier for s in dst.snapshot_manager().list_snapshots()] == [0, 1]
    ids = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.dst").load()
    assert sorted(r.id for r in ids.collect()) == list(range(6))  # each row exactly once
    assert _data_files(dst.table_path) == _live_files(dst)


def test_routing_of_nested_captures(spark):
    """A capture opened inside another and closed first gives the outer one its workers
    back; the outer one closed while a newer one routes leaves the newer one alone."""
    from airflow_provider_paimon.spark.lineage.routing_state import clear_route, set_route

    outer, inner = {"PAIMON_SPARK_EVENT_LOG": "/spool/outer"}, {"PAIMON_SPARK_EVENT_LOG": "/spool/inner"}
    assert set_route(spark, outer) is None
    try:
        assert set_route(spark, inner) == outer
        assert capture_routing(spark) == inner
        assert clear_route(spark, inner, outer) and capture_routing(spark) == outer
        newer = {"PAIMON_SPARK_EVENT_LOG": "/spool/newer"}
        set_route(spark, newer)
        assert not clear_route(spark, outer, None) and capture_routing(spark) == newer
        assert clear_route(spark, newer, None)
    finally:
        assert capture_routing(spark) == {}
