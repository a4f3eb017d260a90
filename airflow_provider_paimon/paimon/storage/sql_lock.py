"""A commit lock held as a leased row in a SQL database (SQLite file, MySQL/MariaDB, PostgreSQL).

For object stores without conditional writes: the committer holds the lock of the
directory it creates a file in (``snapshot/``, ``tag/``...) while it checks that the
file is absent and PUTs it. The lock is a row keyed by that directory: taking it is an
``INSERT`` that the primary key lets only one writer win, and a holder that died stops
blocking others when its lease (``commit.lock.lease-seconds``) runs out, when the next
taker replaces the row with a guarded ``UPDATE ... WHERE expires_at < now``. Nothing
waits on a database connection while the lock is held, so one pool serves many tables.

A lease is time-bound: the holder's PUT must finish within it (the default, 60 s, is
far above a metadata PUT), and clocks of committers should agree within seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ..secrets import mask_url
from .atomicity import LOCK_TIMEOUT, LOCK_URL, CommitAtomicityError, CommitLockTimeoutError

log = logging.getLogger(__name__)

TABLE = "paimon_commit_lock"
_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()
_TABLE_READY: set[str] = set()


def _metadata() -> tuple[Any, Any]:
    import sqlalchemy as sa

    md = sa.MetaData()
    table = sa.Table(
        TABLE,
        md,
        sa.Column("lock_key", sa.String(64), primary_key=True),  # sha256 of the resource
        sa.Column("resource", sa.String(1024), nullable=False),  # for people looking at it
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),  # epoch millis
    )
    return md, table


_MD, LOCKS = _metadata()


def _engine(url: str) -> Any:
    import sqlalchemy as sa

    with _ENGINES_LOCK:
        engine = _ENGINES.get(url)
        if engine is None:
            try:
                backend = sa.engine.make_url(url).get_backend_name()
            except Exception:  # noqa: BLE001 - the parser's message may quote the URL
                raise CommitAtomicityError(
                    f"option {LOCK_URL!r} is not a SQLAlchemy URL: {mask_url(url)!r} "
                    "(e.g. sqlite:////path/locks.sqlite, mysql+pymysql://user@host/db, "
                    "postgresql+psycopg2://user@host/db)"
                ) from None
            kwargs: dict[str, Any] = {"pool_pre_ping": True}
            if backend == "sqlite":
                kwargs["connect_args"] = {"timeout": 30}
            else:
                kwargs["connect_args"] = {"connect_timeout": 10}
            engine = sa.create_engine(url, **kwargs)
            _ENGINES[url] = engine
    if url not in _TABLE_READY:
        try:
            _MD.create_all(engine, checkfirst=True)
        except sa.exc.OperationalError as err:
            if "already exists" not in str(err).lower():
                raise CommitAtomicityError(
                    f"commit lock database {mask_url(url)!r} (option {LOCK_URL!r}) is not usable: "
                    f"{mask_url(str(err.orig))}"
                ) from None
        except sa.exc.ProgrammingError as err:  # a concurrent CREATE TABLE (PostgreSQL, MySQL)
            if "exist" not in str(err).lower() and "duplicate" not in str(err).lower():
                raise
        except sa.exc.IntegrityError:  # PostgreSQL's pg_type race on concurrent CREATE TABLE
            pass
        _TABLE_READY.add(url)
    return engine


def _forget_engines_after_fork() -> None:
    """A forked child (Spark's Python workers fork) must not share its parent's connections."""
    for engine in _ENGINES.values():
        engine.dispose(close=False)
    _ENGINES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_engines_after_fork)


def _now_ms() -> int:
    return int(time.time() * 1000)


class SqlLock:
    """Leased locks in the database at ``url``; picklable (engines are per process)."""

    def __init__(self, url: str, lease_s: int, timeout_s: int) -> None:
        self.url = url
        self.lease_ms = int(lease_s) * 1000
        self.timeout_s = int(timeout_s)

    @staticmethod
    def key_of(resource: str) -> str:
        return hashlib.sha256(resource.encode("utf-8")).hexdigest()

    @contextlib.contextmanager
    def hold(self, resource: str) -> Iterator[float]:
        """Hold the lock of ``resource``; yields the monotonic deadline of the lease."""
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"[:128]
        deadline = self.acquire(resource, owner)
        try:
            yield deadline
        finally:
            self.release(resource, owner)

    def acquire(self, resource: str, owner: str) -> float:
        import sqlalchemy as sa

        engine = _engine(self.url)
        key = self.key_of(resource)
        give_up = time.monotonic() + self.timeout_s
        pause = 0.02
        while True:
            started = time.monotonic()
            now = _now_ms()
            row = {"lock_key": key, "resource": resource[:1024], "owner": owner, "expires_at": now + self.lease_ms}
            try:
                with engine.begin() as conn:
                    conn.execute(LOCKS.insert().values(**row))
                return started + self.lease_ms / 1000
            except sa.exc.IntegrityError:
                pass
            with engine.begin() as conn:  # take over a lease that ran out (its holder died)
                taken = conn.execute(
                    LOCKS.update()
                    .where(LOCKS.c.lock_key == key, LOCKS.c.expires_at < now)
                    .values(owner=owner, expires_at=now + self.lease_ms, resource=resource[:1024])
                ).rowcount
            if taken == 1:
                log.warning("took over the expired commit lock of %s", resource)
                return started + self.lease_ms / 1000
            if time.monotonic() >= give_up:
                with engine.connect() as conn:
                    holder = conn.execute(
                        sa.select(LOCKS.c.owner, LOCKS.c.expires_at).where(LOCKS.c.lock_key == key)
                    ).first()
                who = f" by {holder.owner} until epoch ms {holder.expires_at}" if holder else ""
                raise CommitLockTimeoutError(
                    f"the commit lock of {resource} stayed held{who} for {self.timeout_s}s "
                    f"(option {LOCK_TIMEOUT!r}); another committer is slow or the lease is long"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def release(self, resource: str, owner: str) -> None:
        engine = _engine(self.url)
        with engine.begin() as conn:
            conn.execute(LOCKS.delete().where(LOCKS.c.lock_key == self.key_of(resource), LOCKS.c.owner == owner))
