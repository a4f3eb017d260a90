"""Recording batches in a real store, idempotently, and surviving store outages."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.spark.lineage.config import capture_config
from airflow_provider_paimon.spark.lineage.recorder import (
    BatchRecord,
    LineageCaptureError,
    LineageRecorder,
    TableAt,
)

from .proxy import TcpProxy

WH = "/wh"


def cfg(url, tmp_path, policy="buffer", job="job.a", database="paimon"):
    return capture_config(
        {
            "spark.paimon.lineage.url": url,
            "spark.paimon.lineage.database": database,
            "spark.paimon.lineage.job": job,
            "spark.paimon.lineage.onStoreFailure": policy,
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        },
        "app",
        environ={},
    )


def batch(barrier, src, sink, job="job.a", branch="main"):
    return BatchRecord(
        job, barrier,
        sources=[TableAt(WH, "db", "src", "main", src)],
        sinks=[TableAt(WH, "db", "sink", branch, sink)],
    )


def rows(url, table, database=None):
    with LineageStore.from_url(url, **({"database": database} if database else {})) as store:
        return store.read_table(table)[1]


def test_records_are_idempotent_and_branch_aware(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    rec = LineageRecorder(cfg(url, tmp_path))
    rec.open()
    assert rec.record(batch(0, 3, 5, branch="fix"))
    assert rec.record(batch(0, 3, 5, branch="fix"))  # a replayed micro-batch: same rows
    assert rec.record(batch(1, 4, 6, branch="fix"))
    rec.close()
    with LineageStore.from_url(url) as store:
        src = store.source_data_lineages(job="job.a")
        sink = store.sink_data_lineages(job="job.a")
        assert [(d.barrier_id, d.snapshot_id, d.branch) for d in src] == [(0, 3, "main"), (1, 4, "main")]
        assert [(d.barrier_id, d.snapshot_id, d.branch) for d in sink] == [(0, 5, "fix"), (1, 6, "fix")]
        assert [(t.table, t.branch) for t in store.sink_table_lineages(job="job.a")] == [("sink", "fix")]
        assert len(store.source_table_lineages(job="job.a")) == 1


def test_batch_job_barriers_come_from_the_sequence(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    rec = LineageRecorder(cfg(url, tmp_path))
    rec.open()
    first, second = batch(None, 1, 1), batch(None, 2, 2)
    rec.record(first)
    rec.record(second)
    rec.close()
    assert (first.barrier_id, second.barrier_id) == (1, 2)
    assert [r[1] for r in rows(url, "sink_snapshot_lineage")] == [1, 2]


def test_buffer_policy_spools_while_sqlite_store_is_missing_then_delivers(tmp_path):
    store_dir = tmp_path / "not-yet"
    url = f"sqlite:///{store_dir / 'l.sqlite'}"  # the folder does not exist: store down
    rec = LineageRecorder(cfg(url, tmp_path), retry_interval=0)
    rec.open()  # buffer: a warning, not an error
    assert not rec.record(batch(0, 1, 1))
    assert not rec.record(batch(1, 2, 2))
    assert rec.pending() == 2 and rec.last_error
    store_dir.mkdir()  # the store is back
    assert rec.record(batch(2, 3, 3))
    assert rec.pending() == 0
    rec.close()
    assert [(r[1], r[4]) for r in rows(url, "source_snapshot_lineage")] == [(0, 1), (1, 2), (2, 3)]


def test_spool_survives_a_crash_and_the_next_run_delivers_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'down' / 'l.sqlite'}"
    rec = LineageRecorder(cfg(url, tmp_path), retry_interval=0)
    rec.open()
    rec.record(batch(7, 1, 1))
    del rec  # the driver dies: nothing flushed, the spool file stays
    (tmp_path / "down").mkdir()
    again = LineageRecorder(cfg(url, tmp_path))
    again.open()  # delivers the spool first
    assert again.pending() == 0
    again.close()
    assert [r[1] for r in rows(url, "sink_snapshot_lineage")] == [7]


def test_fail_policy(tmp_path):
    url = f"sqlite:///{tmp_path / 'down' / 'l.sqlite'}"
    with pytest.raises(LineageCaptureError, match="onStoreFailure=fail"):
        LineageRecorder(cfg(url, tmp_path, "fail")).open()



def test_secret_never_in_errors(tmp_path):
    url = "mysql+pymysql://lineage:Sup3rS3cret@127.0.0.1:1/paimon"
    rec = LineageRecorder(cfg(url, tmp_path), retry_interval=0)
    rec.open()
    rec.record(batch(0, 1, 1))
    assert rec.last_error and "Sup3rS3cret" not in rec.last_error
    assert "Sup3rS3cret" not in Path(rec.spool_path).read_text()


@pytest.mark.mysql
def test_mariadb_outage_and_recovery_through_a_proxy(tmp_path, mysql_server_url, unique_name):
    proxy = TcpProxy("127.0.0.1", sa.engine.make_url(mysql_server_url).port or 3306)
    proxy.up()
    url = f"mysql+pymysql://root@127.0.0.1:{proxy.port}/test"
    failures = []
    rec = LineageRecorder(
        cfg(url, tmp_path, "buffer", job=unique_name, database=unique_name),
        retry_interval=0,
        on_failure=failures.append,
    )
    rec.open()
    assert rec.record(batch(0, 1, 1, job=unique_name))
    proxy.down()  # the database "stops"
    assert not rec.record(batch(1, 2, 2, job=unique_name))
    assert not rec.record(batch(2, 3, 3, job=unique_name))
    assert rec.pending() == 2
    proxy.up()  # and comes back
    assert rec.record(batch(3, 4, 4, job=unique_name))
    rec.close()
    proxy.down()
    got = sink_rows(mysql_server_url, unique_name)
    assert got == [(0, 1), (1, 2), (2, 3), (3, 4)] and not failures


@pytest.mark.mysql
def test_fail_policy_mid_run_keeps_the_record_and_reports(tmp_path, mysql_server_url, unique_name):
    proxy = TcpProxy("127.0.0.1", sa.engine.make_url(mysql_server_url).port or 3306)
    proxy.up()
    url = f"mysql+pymysql://root@127.0.0.1:{proxy.port}/test"
    failures = []
    rec = LineageRecorder(
        cfg(url, tmp_path, "fail", job=unique_name, database=unique_name),
        retry_interval=0,
        on_failure=failures.append,
    )
    rec.open()
    assert rec.record(batch(0, 1, 1, job=unique_name))
    proxy.down()
    assert not rec.record(batch(1, 2, 2, job=unique_name))
    assert len(failures) == 1 and "onStoreFailure=fail" in str(failures[0])
    assert rec.pending() == 1
    proxy.up()
    with pytest.raises(LineageCaptureError):
        rec.close()  # delivers the spool, then reports the failure
    proxy.down()
    assert rec.pending() == 0
    got = sink_rows(mysql_server_url, unique_name)
    assert got == [(0, 1), (1, 2)]


def sink_rows(server_url, database):
    """(barrier, snapshot) of the sink rows in ``database``; drops it afterwards."""
    try:
        with LineageStore.from_url(server_url, database=database) as store:
            return [(d.barrier_id, d.snapshot_id) for d in store.sink_data_lineages()]
    finally:
        engine = sa.create_engine(server_url)
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{database}`"))
        engine.dispose()


def test_the_airflow_run_of_a_barrier_is_recorded_even_after_a_spell_in_the_spool(tmp_path):
    url = f"sqlite:///{tmp_path / 'later' / 'l.sqlite'}"
    run = {"airflow.dag_id": "orders", "airflow.run_id": "scheduled__1", "airflow.task_id": "load",
           "airflow.try_number": "1", "airflow.map_index": "4", "spark.app.id": "local-9"}
    rec = LineageRecorder(cfg(url, tmp_path), retry_interval=0)
    rec.open()
    streamed = batch(3, 1, 1)
    streamed.run = dict(run)
    assert not rec.record(streamed)  # store down: spooled with its run
    (tmp_path / "later").mkdir()
    written = BatchRecord("job.a", None, [TableAt(WH, "db", "src", "main", 2)], [], streaming=False)
    written.run = {"spark.app.id": "local-9"}  # outside Airflow: the Spark application only
    assert rec.record(written) and written.barrier_id == 4  # the sequence: above barrier 3
    assert rec.record(batch(5, 2, 2))  # no run known: no row
    rec.close()
    with LineageStore.from_url(url) as store:
        runs = store.barrier_runs(job="job.a")
    assert [(r.barrier_id, r.dag_id, r.run_id, r.task_id, r.try_number, r.map_index, r.spark_app_id)
            for r in runs] == [(3, "orders", "scheduled__1", "load", 1, 4, "local-9"),
                               (4, None, None, None, None, None, "local-9")]
