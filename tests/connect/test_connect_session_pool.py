"""Pooled Spark Connect sessions (``spark/connect_pool.py``) against the suite's real server.

A task leases a server session that an earlier task on this host left warm (its Python
workers already started), for its whole length, and leaves it as it found it. These
tests check the reuse by session id (never by timing), that nothing one task set is seen
by the next, that a killed holder, a released or timed-out session id and a full pool
all still give the next task a clean session, and the connection's opt-out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from urllib.parse import urlparse

import pytest
from support.kill import ROOT

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark import connect_pool
from airflow_provider_paimon.spark.connect_pool import (
    SessionPool,
    is_session_gone,
    leased_session,
    parse_pool_settings,
    with_session_id,
)
from airflow_provider_paimon.spark.session import remote_job_session


@pytest.fixture
def pool(tmp_path):
    return SessionPool("tests", 2, str(tmp_path / "slots"))


def _state(pool: SessionPool, slot: int) -> dict:
    return json.loads((pool.folder() / f"slot-{slot}.json").read_text())


def _session_closed(url: str, session_id: str) -> bool:
    """Whether the server refuses ``session_id`` as closed (without reopening it)."""
    session = connect_pool._attach(url, session_id)
    try:
        session.conf.get("spark.app.id")
    except Exception as err:  # noqa: BLE001 - the server's answer is what is checked
        return is_session_gone(err)
    finally:
        connect_pool._stop(session, release=False)
    return False


def test_two_jobs_in_a_row_share_one_server_session_and_not_their_state(connect_server, pool):
    url = connect_server.url
    with remote_job_session(url, {"spark.paimon.test.job": "one"}, pool) as spark:
        first = spark.session_id
        default_partitions = spark.conf.get("spark.sql.shuffle.partitions")
        app_id = spark.conf.get("spark.app.id")
        assert spark.conf.get("spark.paimon.test.job") == "one"
        spark.conf.set("spark.sql.shuffle.partitions", "17")  # the job's own conf
        spark.conf.set("spark.paimon.test.left", "x")
        spark.range(3).createOrReplaceTempView("left_behind")
    with remote_job_session(url, {"spark.paimon.test.other": "two"}, pool) as spark:
        assert spark.session_id == first  # the same server session, warm
        assert spark.conf.get("spark.paimon.test.job", None) is None
        assert spark.conf.get("spark.paimon.test.left", None) is None
        assert spark.conf.get("spark.paimon.test.other") == "two"
        assert spark.conf.get("spark.sql.shuffle.partitions") == default_partitions
        assert [r["viewName"] for r in spark.sql("SHOW VIEWS").collect() if r["isTemporary"]] == []
    state = _state(pool, 0)
    assert state["session_id"] == first and state["generation"] == 1 and state["in_use"] is False
    # the server's conf values are not written on this host (they may hold storage keys)
    assert set(state) == {"session_id", "generation", "server_session", "package", "in_use"}
    assert app_id not in (pool.folder() / "slot-0.json").read_text()


def test_a_job_that_stops_its_session_leaves_a_working_one_for_the_next(connect_server, pool):
    """A user's job may end with ``spark.stop()``: a pooled session's server side stays
    (the lease's client does not release it), its lease still cleans it, and the next
    task gets it, working."""
    url = connect_server.url
    with remote_job_session(url, {}, pool) as spark:
        first = spark.session_id
        spark.conf.set("spark.paimon.test.stopped", "left by a job that stopped its session")
        spark.stop()
    assert not _session_closed(url, first)
    with remote_job_session(url, {}, pool) as spark:
        assert spark.session_id == first
        assert spark.conf.get("spark.paimon.test.stopped", None) is None
        assert spark.range(3).count() == 3


def test_a_failed_job_is_cleaned_up_and_its_session_kept(connect_server, pool):
    url = connect_server.url
    seen = []

    def failing_job() -> None:
        with remote_job_session(url, {"spark.paimon.test.failed": "1"}, pool) as spark:
            seen.append(spark.session_id)
            raise RuntimeError("the job failed")

    with pytest.raises(RuntimeError, match="the job failed"):
        failing_job()
    first = seen[0]
    with leased_session(url, pool) as lease:
        assert lease.session.session_id == first and lease.reused
        assert lease.session.conf.get("spark.paimon.test.failed", None) is None


def test_a_closed_or_timed_out_session_id_is_replaced(connect_server, pool):
    """The server refuses a released (or idle past its timeout: the same answer,
    INVALID_HANDLE.SESSION_CLOSED) id; the slot takes a new one, once, and goes on."""
    url = connect_server.url
    with leased_session(url, pool) as lease:
        first = lease.session.session_id
    connect_pool._stop(connect_pool._attach(url, first), release=True)  # what the server's timeout does
    assert _session_closed(url, first)
    with leased_session(url, pool) as lease:
        assert lease.slot == 0 and lease.generation == 2 and not lease.reused
        assert lease.session.session_id != first
        lease.session.range(1).count()  # a working session
    assert _state(pool, 0)["generation"] == 2


def test_concurrent_jobs_get_different_sessions(connect_server, pool):
    """Two slots: two leases held at once use two server sessions; a third job finds the
    pool full and gets a session of its own, released when it ends."""
    url = connect_server.url
    with leased_session(url, pool) as one, leased_session(url, pool) as two:
        with leased_session(url, pool) as three:
            ids = {one.session.session_id, two.session.session_id, three.session.session_id}
            assert (one.slot, two.slot, three.slot) == (0, 1, None)
            own = three.session.session_id
            three.session.range(1).count()  # the server makes a session at its first call
        assert len(ids) == 3
    assert _session_closed(url, own)
    assert not _session_closed(url, one.session.session_id)  # pooled: kept for the next job


CHILD = textwrap.dedent("""
    import sys, time
    from airflow_provider_paimon.spark.connect_pool import SessionPool, leased_session
    url, folder, ready = sys.argv[1:4]
    with leased_session(url, SessionPool("tests", 1, folder)) as lease:
        lease.session.conf.set("spark.paimon.test.killed", "left by the killed task")
        open(ready, "w").write(lease.session.session_id)
        time.sleep(600)
""")


def _leasing_child(script: str, args: list[str], ready, **popen) -> subprocess.Popen:
    """A task process running ``script``; returns once it wrote ``ready`` (its lease)."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen([sys.executable, "-c", script, *args], env=env, stderr=subprocess.PIPE, **popen)
    deadline = time.monotonic() + 240
    while not ready.exists() or not ready.read_text():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            detail = child.stderr.read().decode()[-3000:] if child.stderr and child.poll() is not None else ""
            raise AssertionError(f"the child never leased its slot: {detail}")
        time.sleep(0.2)
    return child


def test_a_task_killed_while_holding_a_slot_does_not_block_the_next(connect_server, tmp_path):
    url = connect_server.url
    pool = SessionPool("tests", 1, str(tmp_path / "slots"))
    ready = tmp_path / "ready"
    child = _leasing_child(CHILD, [url, str(pool.folder().parent), str(ready)], ready, start_new_session=True)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    killed = ready.read_text()
    started = time.monotonic()
    with leased_session(url, pool) as lease:
        assert time.monotonic() - started < 60  # not waiting on the dead task's lock
        assert lease.slot == 0  # the pool's own slot, not a fallback session
        assert lease.session.session_id != killed and lease.generation == 2
        assert lease.session.conf.get("spark.paimon.test.killed", None) is None
    assert _session_closed(url, killed)  # released: whatever it left running is interrupted


HOLDER = textwrap.dedent("""
    import pathlib, sys, time
    from airflow_provider_paimon.spark.connect_pool import SessionPool, leased_session
    url, folder, ready, release = sys.argv[1:5]
    with leased_session(url, SessionPool("tests", 2, folder)) as lease:
        lease.session.range(1).count()
        pathlib.Path(ready).write_text(f"{lease.slot} {lease.session.session_id}")
        deadline = time.monotonic() + 300
        while not pathlib.Path(release).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
""")


def test_two_processes_leasing_at_once_get_different_sessions(connect_server, tmp_path):
    """Two task processes on one host: the slot one holds is locked for the other, which
    takes the next slot and its own server session; both end their leases normally."""
    url = connect_server.url
    pool = SessionPool("tests", 2, str(tmp_path / "slots"))
    ready, release = tmp_path / "ready", tmp_path / "release"
    child = _leasing_child(HOLDER, [url, str(pool.folder().parent), str(ready), str(release)], ready)
    try:
        child_slot, child_session = ready.read_text().split()
        with leased_session(url, pool) as lease:
            assert (int(child_slot), lease.slot) == (0, 1)
            assert lease.session.session_id != child_session
            assert lease.session.range(2).count() == 2
        release.touch()
        assert child.wait(timeout=120) == 0, child.stderr.read().decode()[-3000:] if child.stderr else ""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert _state(pool, 0)["session_id"] == child_session and _state(pool, 0)["in_use"] is False
    assert _state(pool, 1)["in_use"] is False
    assert not _session_closed(url, child_session)  # kept for the next task


def test_a_restarted_server_is_noticed_and_the_session_replaced(connect_server, pool):
    """A restarted server makes a new, cold session of an old session id; its own id of
    the session differs from the one the slot noted (here: as if the server had restarted)."""
    url = connect_server.url
    with leased_session(url, pool) as lease:
        first = lease.session.session_id
    state = _state(pool, 0)
    state["server_session"] = "00000000-0000-0000-0000-000000000000"
    (pool.folder() / "slot-0.json").write_text(json.dumps(state))
    with leased_session(url, pool) as lease:
        assert lease.session.session_id != first and lease.generation == 2 and not lease.reused
    assert _state(pool, 0)["server_session"] not in (None, state["server_session"])


def test_a_changed_package_gets_a_new_session(connect_server, pool, monkeypatch):
    """The server refuses a changed artifact under the same name, and an old zip would
    stay on the workers' path: a new package version starts a new session."""
    url = connect_server.url
    with leased_session(url, pool) as lease:
        first = lease.session.session_id
    monkeypatch.setattr(connect_pool, "_package_name", lambda: "airflow_provider_paimon-9.9-new.zip")
    with leased_session(url, pool) as lease:
        assert lease.session.session_id != first and lease.generation == 2
    assert _session_closed(url, first)


def test_pool_settings_from_the_connection_extra():
    assert parse_pool_settings({}, "k") == SessionPool("k", connect_pool.DEFAULT_POOL_SIZE)
    assert parse_pool_settings({"session_reuse": "False"}, "k") is None
    assert parse_pool_settings({"session_reuse": True, "session_pool_size": "3"}, "k") == SessionPool("k", 3)
    for extra, key in [({"session_reuse": "no"}, "session_reuse"), ({"session_reuse": 1}, "session_reuse"),
                       ({"session_pool_size": 0}, "session_pool_size"),
                       ({"session_pool_size": "many"}, "session_pool_size"),
                       ({"session_pool_size": True}, "session_pool_size"),
                       ({"session_pool_size": 65}, "session_pool_size"),
                       ({"session_reuse": False, "session_pool_size": "bad"}, "session_pool_size")]:
        with pytest.raises(InvalidArgumentError, match=key):
            parse_pool_settings(extra, "k")


def test_session_id_goes_into_the_url_parameters():
    sid = "3a4c0755-a03e-43e7-aae9-b9c3599c7162"
    assert with_session_id("sc://h:15002", sid) == f"sc://h:15002/;session_id={sid}"
    assert with_session_id("sc://h:15002/;user_id=u;token=t", sid) == f"sc://h:15002/;user_id=u;token=t;session_id={sid}"
    with pytest.raises(InvalidArgumentError, match="session_reuse"):
        with_session_id(f"sc://h:1/;session_id={sid}", sid)


def _hook_connection(monkeypatch, connect_server, name: str, extra: dict) -> None:
    parsed = urlparse(connect_server.url.replace("sc://", "http://"))
    monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(
        {"conn_type": "spark_connect", "host": parsed.hostname, "port": parsed.port, "login": "pool-tests",
         "extra": extra}))


def _session_of(spark, *args):
    return {"session_id": spark.session_id}


def _append(spark, warehouse, first):
    """A user's job: five rows through the ``paimon`` source (Python work on the server)."""
    (spark.range(int(first), int(first) + 5).selectExpr("id", "'2026-11-02' as dt").write.format("paimon")
     .mode("append").option("warehouse", warehouse).option("table", "db.t").save())
    return {"session_id": spark.session_id}


def test_the_operators_hook_reuses_sessions_unless_the_connection_opts_out(connect_server, monkeypatch, tmp_path,
                                                                           warehouse):
    """Two user jobs in a row on one pooled session, each writing through the source
    (registered again with each job's conf); an opted-out connection's tasks get new
    sessions, released after them."""
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema
    from test_connect_datasource import pypaimon_rows

    from airflow_provider_paimon.hooks.spark_connect_job import PaimonSparkConnectJobHook

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("dt", pa.string())])),
                         False)
    monkeypatch.setenv(connect_pool.STATE_DIR_ENV, str(tmp_path / "slots"))
    _hook_connection(monkeypatch, connect_server, "sc_pooled", {})
    _hook_connection(monkeypatch, connect_server, "sc_fresh", {"session_reuse": "false"})

    def run(conn_id: str, job=_session_of, args=()) -> str:
        hook = PaimonSparkConnectJobHook("job", list(args), spark_conn_id=conn_id, python_callable=job,
                                         conf={"spark.paimon.test.job": str(args)})
        result = hook.run()
        assert result == {"session_id": hook.session_id}
        return str(hook.session_id)

    pooled = [run("sc_pooled", _append, (warehouse, 0)), run("sc_pooled", _append, (warehouse, 5))]
    assert pooled[0] == pooled[1]
    assert sorted(r[0] for r in pypaimon_rows(warehouse, "db.t")) == list(range(10))
    fresh = [run("sc_fresh"), run("sc_fresh")]
    assert len({*fresh, pooled[0]}) == 3
    # opted out: released after its task (sessions are the connection's user's)
    assert _session_closed(f"{connect_server.url}/;user_id=pool-tests", fresh[0])


def test_a_bad_reuse_setting_fails_the_task_before_it_runs(connect_server, monkeypatch):
    from airflow_provider_paimon.hooks.spark_connect_job import PaimonSparkConnectJobHook
    from airflow_provider_paimon.hooks.spark_job import PaimonJobInputError

    _hook_connection(monkeypatch, connect_server, "sc_bad", {"session_reuse": "sometimes"})
    ran = []
    hook = PaimonSparkConnectJobHook("job", [], spark_conn_id="sc_bad", python_callable=lambda s: ran.append(s))
    with pytest.raises(PaimonJobInputError, match="session_reuse is 'sometimes'"):
        hook.run()
    assert ran == []


def test_a_jobs_lineage_capture_ends_with_its_lease(connect_server, pool, tmp_path):
    """Task 1 captures lineage (its source records to its store under its job name);
    task 2 on the same server session, in the same process (``dag.test()``), does not."""
    from airflow_provider_paimon.spark.lineage import connect_state

    url = connect_server.url
    store = f"sqlite:///{tmp_path / 'lineage.db'}"
    with remote_job_session(url, {"spark.paimon.lineage.url": store, "spark.paimon.lineage.job": "one"},
                            pool) as spark:
        first = spark.session_id
        assert connect_state.lineage_defaults(spark)["jdbc.url"] == store
    with remote_job_session(url, {"spark.paimon.test.other": "two"}, pool) as spark:
        assert spark.session_id == first
        assert connect_state.lineage_defaults(spark) == {}


def test_a_streaming_query_a_job_left_running_is_stopped_with_its_lease(connect_server, pool):
    """A new session per task ended its queries when it was released; a lease does too."""
    url = connect_server.url
    with remote_job_session(url, {}, pool) as spark:
        first = spark.session_id
        query = spark.readStream.format("rate").load().writeStream.format("noop").start()
        assert query.isActive
    with remote_job_session(url, {}, pool) as spark:
        assert spark.session_id == first
        assert spark.streams.active == []
