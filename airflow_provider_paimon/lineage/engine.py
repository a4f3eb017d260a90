"""One SQLAlchemy engine per store, set up for its backend, and the migration lock.

- SQLite: WAL journal so readers never wait for writers, a 30 s busy timeout, and
  explicit ``BEGIN`` (``BEGIN IMMEDIATE`` when asked) so a multi-process writer waits
  for the lock instead of failing half way through a transaction.
- MySQL/MariaDB: the system database (``paimon``) is a MySQL database, created with a
  binary utf8mb4 collation (names compare case-sensitively, as on the other backends).
- PostgreSQL: the system database is a schema inside the URL's database (no CREATEDB
  privilege needed), made the connection's ``search_path`` so the Paimon lineage proposal's unqualified
  SQL runs as written.
- Read-only engines (``read_only=True``, for readers such as the UI) never create a
  file, change a journal mode or write: SQLite opens the file ``mode=ro`` with
  ``PRAGMA query_only`` (``_sqlite_read_only_uri``: a WAL store no writer has open is
  opened ``immutable``, so not even its ``-wal``/``-shm`` files are created), one
  connection per use (so each one looks again); MySQL/MariaDB sessions are
  ``READ ONLY``; PostgreSQL sessions have ``default_transaction_read_only``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool, StaticPool

from ..paimon.secrets import mask_url
from .errors import InvalidLineageArgumentError
from .url import backend_of, default_sqlite_path

IMMEDIATE = "paimon_sqlite_immediate"
LOCK_TIMEOUT_S = 60


def _sqlite_engine(url: URL, options: dict[str, Any], read_only: bool = False) -> sa.Engine:
    path = url.database or ""
    memory = path in ("", ":memory:") or path.startswith("file::memory:")
    kwargs: dict[str, Any] = {"connect_args": {"timeout": 30, "check_same_thread": False}}
    if not memory and read_only:
        # sqlite3 would create a missing file on connect; mode=ro opens only an existing
        # one. A creator keeps engine.url (shown in messages) the URL the user gave.
        if url.query.get("uri") == "true":
            raise InvalidLineageArgumentError(
                f"lineage store {mask_url(url)!r}: read-only opening of a SQLite URI URL is not "
                "supported; give the plain file path (sqlite:////path/lineage.sqlite)"
            )
        file = os.path.abspath(Path(path).expanduser())
        kwargs["creator"] = lambda: sqlite3.connect(_sqlite_read_only_uri(file), uri=True, timeout=30,
                                                    check_same_thread=False)
        kwargs["poolclass"] = NullPool  # each connection decides ro vs immutable anew
    elif not memory and Path(path).expanduser() == default_sqlite_path():
        default_sqlite_path().parent.mkdir(parents=True, exist_ok=True)
    if not memory and not Path(path).expanduser().parent.is_dir():
        raise InvalidLineageArgumentError(
            f"lineage store SQLite file {path!r}: directory {str(Path(path).parent)!r} does "
            "not exist; create it or point the URL at an existing directory"
        )
    if memory:
        kwargs["poolclass"] = StaticPool
    engine = sa.create_engine(url, **kwargs, **options)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        if read_only:
            cur.execute("PRAGMA query_only=ON")  # the journal mode is the writers' business
        elif not memory:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        immediate = conn.get_execution_options().get(IMMEDIATE)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _sqlite_read_only_uri(file: str) -> str:
    """The URI a reader opens ``file`` with, writing nothing next to it.

    ``mode=ro`` never creates the file nor writes the database, but on a WAL database
    SQLite still creates the ``-wal`` and ``-shm`` files when they are missing (and a
    read-only connection cannot remove them). So a WAL database without a ``-wal``
    file (no writer has it open: the last writer to close checkpoints and deletes it)
    is opened ``immutable``: no locks, no side files, only the main file read. If a
    writer starts meanwhile, this connection does not see its commits until the next
    connection (the engine opens one per use); a writer checkpointing more than
    SQLite's 1,000-page auto-checkpoint during one request could make that request's
    answer inconsistent (never the store). A WAL database whose ``-wal`` exists is
    opened plain ``mode=ro`` (the side files are the writers'), and so is a
    rollback-journal database (its readers create no side files).
    """
    uri = "file:" + quote(file) + "?mode=ro"
    try:
        with open(file, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return uri  # missing or unreadable: sqlite3 says so on connect
    wal_mode = header[:16] == b"SQLite format 3\x00" and header[18:20] == b"\x02\x02"
    if wal_mode and not os.path.exists(file + "-wal"):
        return uri + "&immutable=1"
    return uri


def server_url(url: URL, database: str) -> URL:
    """The URL the store's engine connects with (MySQL: the system database)."""
    if backend_of(url) == "mysql":
        return url.set(database=database)
    return url


def create_store_engine(
    url: URL, database: str, options: dict[str, Any] | None = None, *, read_only: bool = False
) -> sa.Engine:
    """An engine whose connections see the store's tables unqualified (and, if
    ``read_only``, can neither create the store nor write to it)."""
    opts = dict(options or {})
    backend = backend_of(url)
    if backend == "sqlite":
        return _sqlite_engine(url, opts, read_only)
    opts.setdefault("pool_pre_ping", True)
    opts.setdefault("pool_size", 5)
    opts.setdefault("max_overflow", 10)
    opts.setdefault("pool_recycle", 1800)
    connect_args = dict(opts.pop("connect_args", {}))
    if backend == "postgresql":
        connect_args["options"] = f'-c search_path="{database}"'  # quoted: case kept, as in CREATE SCHEMA
        if read_only:
            connect_args["options"] += " -c default_transaction_read_only=on"
        connect_args.setdefault("connect_timeout", 10)
    else:
        connect_args.setdefault("connect_timeout", 10)
        connect_args.setdefault("charset", "utf8mb4")
        if read_only:
            connect_args["init_command"] = "SET SESSION TRANSACTION READ ONLY"
    return sa.create_engine(server_url(url, database), connect_args=connect_args, **opts)


def create_mysql_database(url: URL, database: str) -> None:
    """Create the system database on the MySQL server of ``url`` if it is missing.

    Connects without a default database: the URL may name the very database that is
    missing (``mysql+pymysql://host/paimon``), and MySQL refuses such a connection.
    """
    engine = sa.create_engine(
        url._replace(database=None), connect_args={"connect_timeout": 10, "charset": "utf8mb4"}
    )
    try:
        with engine.connect() as conn, named_lock(conn, "mysql", f"create:{database}"):
            exists = conn.execute(
                sa.text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :n"),
                {"n": database},
            ).first()
            if not exists:
                conn.exec_driver_sql(
                    f"CREATE DATABASE IF NOT EXISTS `{database}` "
                    "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
    finally:
        engine.dispose()


@contextlib.contextmanager
def named_lock(conn: sa.Connection, backend: str, name: str) -> Iterator[None]:
    """A server-side lock held by ``conn`` (MySQL ``GET_LOCK``, PostgreSQL advisory lock)."""
    key = f"paimon_lineage:{name}"[:64]
    if backend == "mysql":
        got = conn.execute(sa.text("SELECT GET_LOCK(:k, :t)"), {"k": key, "t": LOCK_TIMEOUT_S}).scalar()
        if got != 1:
            raise TimeoutError(f"could not take lock {key!r} within {LOCK_TIMEOUT_S}s")
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT RELEASE_LOCK(:k)"), {"k": key})
            conn.commit()
    elif backend == "postgresql":
        lock_id = zlib.crc32(key.encode())
        conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": lock_id})
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": lock_id})
            conn.commit()
    else:
        yield


def ensure_schema(engine: sa.Engine, database: str) -> int:
    """Create or upgrade the store's tables; return its schema version.

    Fast path: one read when the store is current. Otherwise the migration runs under
    a lock (SQLite: one ``BEGIN IMMEDIATE`` transaction), so concurrent first users
    neither fail nor migrate twice.
    """
    from . import schema  # its MySQL dialect when a store is opened, not with the URL helpers

    where = mask_url(engine.url)
    with engine.connect() as conn:
        version = schema.read_version(conn)
        schema.check_not_newer(version, where)
        if version == schema.LATEST_VERSION:
            return version
    backend = backend_of(engine.url)
    if backend == "sqlite":
        with engine.connect() as conn:
            conn.execution_options(**{IMMEDIATE: True})
            with conn.begin():
                return schema.migrate(conn, where, single_transaction=True)
    with engine.connect() as conn, named_lock(conn, backend, f"migrate:{database}"):
        if backend == "postgresql":
            conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{database}"')
            conn.commit()
        version = schema.migrate(conn, where)
        if backend == "postgresql":  # fresh statistics, or the planner ignores the new indexes
            analyze(conn)
            conn.commit()
        return version


def analyze(conn: sa.Connection) -> None:
    """Refresh the planner's statistics of the store's tables (``ANALYZE``).

    PostgreSQL plans with statistics that a bulk load leaves stale (measured: the
    catch-up sensor's query 0.57 ms with fresh statistics, 25 ms without, at 10M rows);
    run it after loading many rows (``LineageStore.analyze``).
    """
    from . import schema  # as in ensure_schema

    quote = conn.dialect.identifier_preparer.quote
    names = [t for t in schema.TABLES if sa.inspect(conn).has_table(t)]
    backend = conn.dialect.name
    for name in names:
        if backend == "mysql":
            conn.exec_driver_sql(f"ANALYZE TABLE {quote(name)}").all()
        else:
            conn.exec_driver_sql(f"ANALYZE {quote(name)}")
