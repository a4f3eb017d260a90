"""``commit.atomicity=lock``: commits on S3 under a leased row in SQLite, MariaDB, PostgreSQL.

The lock is for stores without conditional writes; the loopback server has them, but
in this mode they are not used (every create is "exists? then PUT" under the lock), so
a lost commit here would be the lock's fault.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from commit_race import commit_batch, create_table, open_table, read_ids

from airflow_provider_paimon.paimon.errors import AlreadyExistsError
from airflow_provider_paimon.paimon.snapshots import TableLayout, read_tag
from airflow_provider_paimon.paimon.storage import CommitLockTimeoutError
from airflow_provider_paimon.paimon.storage.sql_lock import LOCKS, SqlLock
from airflow_provider_paimon.paimon.tag.create import create_tag

WRITERS = 4


@pytest.fixture(
    params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql), pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def lock_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/locks.sqlite"
    if request.param == "mariadb":
        return request.getfixturevalue("mysql_server_url")
    return request.getfixturevalue("postgres_server_url")


def _options(s3_warehouse, lock_url: str, **extra: str) -> dict[str, str]:
    return {**s3_warehouse.options, "commit.atomicity": "lock", "commit.lock.url": lock_url, **extra}


def _lock_rows(lock_url: str, resource: str) -> list:
    engine = sa.create_engine(lock_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.select(LOCKS).where(LOCKS.c.lock_key == SqlLock.key_of(resource))))
    finally:
        engine.dispose()


def test_racing_writers_under_the_lock_lose_nothing(s3_warehouse, lock_url):
    options = _options(s3_warehouse, lock_url)
    create_table(s3_warehouse.uri, options)
    tables = [open_table(s3_warehouse.uri, options) for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS)
    batches = [list(range(w * 10, w * 10 + 10)) for w in range(WRITERS)]
    with ThreadPoolExecutor(WRITERS) as pool:
        for f in [pool.submit(commit_batch, tables[w], batches[w], f"w{w}", barrier) for w in range(WRITERS)]:
            f.result()
    assert read_ids(s3_warehouse.uri, s3_warehouse.options) == list(range(WRITERS * 10))
    prefix = "warehouse/db.db/t/snapshot/snapshot-"
    assert sorted(int(k[len(prefix):]) for k in s3_warehouse.object_keys(prefix)) == list(range(1, WRITERS + 1))
    snapshot_dir = TableLayout.of(tables[0]).snapshot_dir(None)
    assert _lock_rows(lock_url, snapshot_dir) == []  # released


def _hold_and_die(url: str, resource: str, lease: int) -> None:
    """A committer that takes the lock and is killed while holding it (SIGKILL: no cleanup)."""
    SqlLock(url, lease, 5).acquire(resource, "doomed-holder")
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_holder_blocks_only_until_its_lease_runs_out(s3_warehouse, lock_url):
    options = _options(s3_warehouse, lock_url)
    create_table(s3_warehouse.uri, options)
    table = open_table(s3_warehouse.uri, options)
    commit_batch(table, [1, 2, 3], "setup")
    layout = TableLayout.of(table)
    tag_dir = layout.tag_dir(None)
    lease = 4
    # a separate process (forked: no interpreter start-up) that dies holding the lock
    holder = multiprocessing.get_context("fork").Process(target=_hold_and_die, args=(lock_url, tag_dir, lease))
    started = time.monotonic()
    holder.start()
    holder.join(60)
    assert holder.exitcode == -signal.SIGKILL
    assert [row.owner for row in _lock_rows(lock_url, tag_dir)] == ["doomed-holder"]

    # while the dead holder's lease runs, a committer with a short timeout gives up, writing nothing
    impatient = open_table(s3_warehouse.uri, {**options, "commit.lock.timeout-seconds": "1"})
    with pytest.raises(CommitLockTimeoutError, match=re.escape("commit.lock.timeout-seconds")):
        create_tag(impatient, "v1")
    assert read_tag(layout, None, "v1") is None

    # a rerun waits out the lease, takes the lock over, and proceeds
    assert create_tag(table, "v1")["snapshot_id"] == 1
    assert time.monotonic() - started >= lease  # it did wait the lease out
    assert read_tag(layout, None, "v1")["id"] == 1
    assert _lock_rows(lock_url, tag_dir) == []
    with pytest.raises(AlreadyExistsError):
        create_tag(table, "v1")


def test_lock_url_credentials_stay_out_of_errors(s3_warehouse):
    """An unreachable lock database fails closed, and its password is not in the message."""
    options = {
        **s3_warehouse.options,
        "commit.atomicity": "lock",
        "commit.lock.url": "mysql+pymysql://paimon:Sup3rSecretPw@127.0.0.1:1/locks",
    }
    create_table(s3_warehouse.uri, {**s3_warehouse.options})
    table = open_table(s3_warehouse.uri, options)
    commit_ok = open_table(s3_warehouse.uri, s3_warehouse.options)
    commit_batch(commit_ok, [1], "setup")
    with pytest.raises(Exception) as err:  # noqa: PT011 - checked below: the message, not the type
        create_tag(table, "v1")
    assert "Sup3rSecretPw" not in str(err.value) and "commit.lock.url" in str(err.value)
    assert read_tag(TableLayout.of(table), None, "v1") is None
