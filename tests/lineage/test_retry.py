"""Transient errors are recognised from real servers and retried; a busy SQLite file waits."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa
from sqlalchemy import exc

from airflow_provider_paimon.lineage import DataLineage, LineageStore, RetryPolicy
from airflow_provider_paimon.lineage.retry import is_transient, with_retry


def real_deadlock(store: LineageStore) -> exc.DBAPIError:
    """Provoke a genuine deadlock between two transactions; return the error raised."""
    seq = sa.table("barrier_sequence", sa.column("job"), sa.column("last_barrier_id"))
    with store.engine.begin() as conn:
        conn.execute(seq.insert(), [{"job": "a", "last_barrier_id": 0}, {"job": "b", "last_barrier_id": 0}])
    bump = lambda job: sa.update(seq).where(seq.c.job == job).values(last_barrier_id=1)  # noqa: E731
    errors: list[BaseException] = []
    first, second = store.engine.connect(), store.engine.connect()
    try:
        first.execute(bump("a"))
        second.execute(bump("b"))

        def cross() -> None:
            try:
                first.execute(bump("b"))
            except exc.DBAPIError as err:
                errors.append(err)
                first.rollback()

        thread = threading.Thread(target=cross)
        thread.start()
        time.sleep(0.3)
        try:
            second.execute(bump("a"))
        except exc.DBAPIError as err:
            errors.append(err)
            second.rollback()
        thread.join(timeout=30)
    finally:
        first.close()
        second.close()
    assert errors, "no deadlock happened"
    return errors[0]


@pytest.mark.parametrize("target", ["mysql", "postgresql"], indirect=True)
def test_real_deadlock_is_transient_and_retried(store):
    err = real_deadlock(store)
    assert is_transient(err)
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise err
        return "done"

    assert with_retry(flaky, RetryPolicy(attempts=3, base_delay=0.001), "test") == "done"
    assert len(calls) == 2


def test_permanent_errors_are_not_retried(store):
    calls = []

    def broken() -> None:
        calls.append(1)
        with store.engine.connect() as conn:
            conn.exec_driver_sql("SELECT no_such_column FROM options")

    with pytest.raises(exc.DBAPIError):
        with_retry(broken, RetryPolicy(attempts=5, base_delay=0.001), "test")
    assert len(calls) == 1


def test_a_busy_sqlite_file_makes_writers_wait_not_fail(tmp_path):
    url = f"sqlite:///{tmp_path}/busy.sqlite"
    with LineageStore.from_url(url) as store:
        holder = sa.create_engine(url, connect_args={"isolation_level": None})
        with holder.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # another process's write transaction
            releaser = threading.Timer(1.0, lambda: conn.exec_driver_sql("COMMIT"))
            releaser.start()
            began = time.monotonic()
            store.store_sink_data_lineage(DataLineage("j", "db", "t", 1, 1))
            waited = time.monotonic() - began
            releaser.join()
        holder.dispose()
        assert waited >= 0.8
        assert len(store.sink_data_lineages()) == 1
