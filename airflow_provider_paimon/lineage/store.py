"""``LineageStore``: the Paimon lineage proposal's ``LineageMeta`` over a SQL database, in snake_case.

Each call is one short transaction that has committed when the call returns, so a
record is visible to every reader at once (the Paimon lineage proposal's visibility requirement).
Records are upserted: recording the same key again is not an error and leaves one
row; ``snapshot_id`` and ``branch`` take the latest value, ``create_time`` keeps the
first. Transient failures (deadlocks, a busy SQLite file, a dropped connection) are
retried, so concurrent writers never see them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL

from airflow_provider_paimon.paimon.secrets import is_secret
from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity

from ..paimon.secrets import mask_url
from . import schema
from .engine import IMMEDIATE, analyze, create_mysql_database, create_store_engine, ensure_schema
from .entities import (
    BarrierRun,
    DataLineage,
    LineageFilter,
    SnapshotRef,
    TableLineage,
    check_id,
    check_name,
)
from .errors import (
    InvalidLineageArgumentError,
    LineageError,
    LineageStoreMissingError,
    LineageStoreUnavailableError,
    UnsupportedBackendError,
)
from .retry import RetryPolicy, with_retry
from .schema import LATEST_VERSION, check_not_newer, read_version
from .sequence import next_barrier_id
from .url import (
    DEFAULT_DATABASE,
    backend_of,
    check_database_name,
    driver_requirement,
    parse_url,
    scrub,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

_MYSQL_UNKNOWN_DATABASE = 1049


class LineageStore:
    """Table and data lineage in a SQL database addressed by a SQLAlchemy URL.

    Build it with ``LineageStore.from_url``; use it as a context manager (or call
    ``close``) to release its connections.
    """

    def __init__(self, engine: sa.Engine, database: str, retry: RetryPolicy, version: int) -> None:
        self._engine = engine
        self.database = database
        self.backend = backend_of(engine.url)
        self.retry = retry
        self.schema_version = version
        self._statements: dict[tuple[str, tuple[str, ...]], sa.Insert] = {}

    # -- construction -------------------------------------------------------------

    @classmethod
    def from_url(
        cls,
        url: str | URL | None = None,
        database: str = DEFAULT_DATABASE,
        *,
        create: bool = True,
        read_only: bool = False,
        retry: RetryPolicy | None = None,
        engine_options: dict[str, Any] | None = None,
    ) -> LineageStore:
        """Open (and on first use create) the store at ``url``.

        ``url``: SQLAlchemy URL, ``$PAIMON_LINEAGE_URL`` or a SQLite file in ``~/.paimon``
        when ``None``. ``database``: the system database (the Paimon lineage proposal's ``jdbc.database``):
        a MySQL database or a PostgreSQL schema; SQLite ignores it. ``create=False``
        refuses to create or upgrade anything. ``read_only=True`` (readers such as the
        UI) implies ``create=False`` and also makes every connection refuse writes.
        """
        if read_only:
            create = False
        parsed = parse_url(url)
        database = check_database_name(database)
        policy = retry or RetryPolicy()
        masked = mask_url(parsed)
        if (
            not create
            and backend_of(parsed) == "sqlite"
            and parsed.database not in (None, "", ":memory:")
            and not os.path.exists(os.path.expanduser(parsed.database))  # don't create it by looking
        ):
            raise LineageStoreMissingError(
                f"lineage store {masked!r} does not exist; create it with "
                "'paimon-lineage init' (or open it with create=True)"
            )
        try:
            engine = create_store_engine(parsed, database, engine_options, read_only=read_only)
        except (ModuleNotFoundError, exc.NoSuchModuleError) as err:
            raise UnsupportedBackendError(
                f"lineage store URL {masked!r}: its driver is not installed ({err}); "
                f"install {driver_requirement(parsed)}"
            ) from None
        try:
            version = _guard(parsed, "open", lambda: with_retry(
                lambda: _prepare(parsed, engine, database, create), policy, "open lineage store"
            ))
        except LineageError:
            engine.dispose()
            raise
        except (TypeError, ValueError) as err:  # the driver refused a connection argument
            engine.dispose()
            raise InvalidLineageArgumentError(
                f"lineage store URL {masked!r}: the driver refused its connection arguments "
                f"({scrub(f'{type(err).__name__}: {err}', parsed)}); fix the URL's query string"
            ) from None
        except BaseException:
            engine.dispose()
            raise
        log.debug("lineage store %s (database %s) at schema version %d", masked, database, version)
        return cls(engine, database, policy, version)

    @property
    def engine(self) -> sa.Engine:
        """The SQLAlchemy engine (tables are unqualified on its connections)."""
        return self._engine

    @property
    def url(self) -> str:
        """The store's URL with its password masked."""
        return mask_url(self._engine.url)

    def close(self) -> None:
        """Release the store's pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LineageStore(url={self.url!r}, database={self.database!r})"

    # -- running statements ---------------------------------------------------------

    def run(self, what: str, fn: Callable[[sa.Connection], T], *, write: bool = False) -> T:
        """Run ``fn`` in one transaction, retrying transient errors; map the rest."""

        def attempt() -> T:
            with self._engine.connect() as conn:
                if write and self.backend == "sqlite":
                    conn.execution_options(**{IMMEDIATE: True})
                with conn.begin():
                    return fn(conn)

        return _guard(self._engine.url, what, lambda: with_retry(attempt, self.retry, what))

    def _upsert(self, conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]], update: Sequence[str]) -> None:
        if not rows:
            return
        keys = [c.name for c in table.primary_key.columns]
        rows.sort(key=lambda r: tuple(r[k] for k in keys))  # same lock order everywhere
        conn.execute(self._upsert_statement(table, tuple(update)), rows)

    def _upsert_statement(self, table: sa.Table, update: tuple[str, ...]) -> sa.Insert:
        """INSERT ... ON CONFLICT/DUPLICATE KEY UPDATE, built once per table and store.

        Identity columns (``_KEEP_KNOWN``) keep a known value when the row comes again
        without one (a record spooled by an older capture, a writer that gives none).
        """
        cached = self._statements.get((table.name, update))
        if cached is not None:
            return cached
        keys = [c.name for c in table.primary_key.columns]
        stmt: sa.Insert

        def value(new: Any, c: str) -> Any:
            return sa.func.coalesce(new[c], table.c[c]) if c in _KEEP_KNOWN else new[c]

        if self.backend == "mysql":
            mysql_insert = mysql_dialect.insert(table)
            stmt = mysql_insert.on_duplicate_key_update({c: value(mysql_insert.inserted, c) for c in update})
        else:
            insert = pg_dialect.insert if self.backend == "postgresql" else sqlite_dialect.insert
            pending = insert(table)
            stmt = pending.on_conflict_do_update(
                index_elements=keys, set_={c: value(pending.excluded, c) for c in update}
            )
        self._statements[(table.name, update)] = stmt
        return stmt

    # -- writing --------------------------------------------------------------------

    def store_lineage(
        self,
        *,
        source_tables: Iterable[TableLineage] = (),
        sink_tables: Iterable[TableLineage] = (),
        source_data: Iterable[DataLineage] = (),
        sink_data: Iterable[DataLineage] = (),
        runs: Iterable[BarrierRun] = (),
    ) -> int:
        """Record all given lineage in ONE transaction (all or nothing); return the count.

        ``runs``: the Airflow run / Spark application of barriers (``barrier_run``); a
        barrier recorded again (a replayed micro-batch, a retry) keeps the latest run.
        """
        groups = {
            schema.SOURCE_JOB: _entities(source_tables, TableLineage),
            schema.SINK_JOB: _entities(sink_tables, TableLineage),
            schema.SOURCE_SNAPSHOT: _entities(source_data, DataLineage),
            schema.SINK_SNAPSHOT: _entities(sink_data, DataLineage),
        }
        now = datetime.now(timezone.utc)
        rows = {name: [_row(e, now) for e in items] for name, items in groups.items()}
        run_rows = [_run_row(r, now) for r in _entities(runs, BarrierRun)]

        def write(conn: sa.Connection) -> int:
            for name, table_rows in rows.items():
                update = ("branch",) if name in schema.JOB_TABLES else ("snapshot_id", "branch", *_KEEP_KNOWN)
                self._upsert(conn, schema.TABLES[name], [dict(r) for r in table_rows], update)
            self._upsert(conn, schema.barrier_run, [dict(r) for r in run_rows], _RUN_UPDATE)
            return sum(len(r) for r in rows.values()) + len(run_rows)

        return self.run("store lineage", write, write=True)

    def store_barrier_runs(self, runs: Iterable[BarrierRun]) -> int:
        """Record which Airflow run / Spark application made barriers (``barrier_run``)."""
        return self.store_lineage(runs=runs)

    def barrier_runs(self, job: str | None = None, barrier_id: int | None = None) -> list[BarrierRun]:
        """The recorded runs of barriers, by job and barrier id (all when not given)."""
        table = schema.barrier_run
        conds = []
        if job is not None:
            conds.append(table.c.job == check_name("job", job))
        if barrier_id is not None:
            conds.append(table.c.barrier_id == check_id("barrier_id", barrier_id, 0))
        query = sa.select(table).where(*conds).order_by(*table.primary_key.columns)
        rows = self.run("read barrier runs", lambda c: c.execute(query).all())
        return [_run_entity(r) for r in rows]

    def store_source_table_lineage(self, entity: TableLineage) -> None:
        """Record that ``entity.job`` reads ``entity.database.table``."""
        self.store_lineage(source_tables=[entity])

    def store_sink_table_lineage(self, entity: TableLineage) -> None:
        """Record that ``entity.job`` writes ``entity.database.table``."""
        self.store_lineage(sink_tables=[entity])

    def store_source_data_lineage(self, entity: DataLineage) -> None:
        """Record that barrier ``entity.barrier_id`` consumed source snapshot ``entity.snapshot_id``."""
        self.store_lineage(source_data=[entity])

    def store_sink_data_lineage(self, entity: DataLineage) -> None:
        """Record that barrier ``entity.barrier_id`` produced sink snapshot ``entity.snapshot_id``."""
        self.store_lineage(sink_data=[entity])

    def record_batch(
        self,
        job: str,
        barrier_id: int,
        sources: Iterable[SnapshotRef] = (),
        sinks: Iterable[SnapshotRef] = (),
    ) -> int:
        """Record one batch (barrier) of ``job``: data lineage and the implied table lineage.

        This is what the Spark capture calls once per micro-batch or batch job commit;
        all rows land in one transaction.
        """
        srcs = _entities(sources, SnapshotRef)
        snks = _entities(sinks, SnapshotRef)
        src_data = [DataLineage(job, s.database, s.table, barrier_id, s.snapshot_id, s.branch, identity=s.identity)
                    for s in srcs]
        snk_data = [DataLineage(job, s.database, s.table, barrier_id, s.snapshot_id, s.branch, identity=s.identity)
                    for s in snks]
        return self.store_lineage(
            source_tables=_unique_tables(src_data),
            sink_tables=_unique_tables(snk_data),
            source_data=src_data,
            sink_data=snk_data,
        )

    def next_barrier_id(self, job: str) -> int:
        """The next barrier id for a batch run of ``job`` (see ``sequence``)."""
        return next_barrier_id(self, job)

    def set_options(self, values: Mapping[str, Any]) -> list[str]:
        """Store catalog options (the Paimon lineage proposal's options table); return the keys stored.

        Secret options (the package's secret policy: password, token, key, header.*,
        a URL with a password...) are not stored: the table is readable by everyone
        who can read lineage.
        """
        if not isinstance(values, Mapping):
            raise InvalidLineageArgumentError("options must be a mapping of str to str")
        rows = []
        stored: list[str] = []
        for key, value in values.items():
            check_name("option key", key)
            if is_secret(key, value):
                log.info("option %r looks secret and is not stored in the lineage store", key)
                continue
            rows.append({"key": key, "value": None if value is None else str(value)})
            stored.append(key)
        self.run("store options", lambda c: self._upsert(c, schema.options, rows, ("value",)), write=True)
        return sorted(stored)

    def options(self) -> dict[str, str | None]:
        """The stored catalog options."""
        result = self.run("read options", lambda c: c.execute(sa.select(schema.options)).all())
        return {row.key: row.value for row in result}

    # -- reading --------------------------------------------------------------------

    def source_table_lineages(self, where: LineageFilter | None = None, *, limit: int | None = None, **conditions: Any) -> list[TableLineage]:
        """Source table lineage matching ``where`` / keyword conditions (see ``LineageFilter``)."""
        return self._table_lineages(schema.source_job_lineage, where, limit, conditions)

    def sink_table_lineages(self, where: LineageFilter | None = None, *, limit: int | None = None, **conditions: Any) -> list[TableLineage]:
        """Sink table lineage matching ``where`` / keyword conditions."""
        return self._table_lineages(schema.sink_job_lineage, where, limit, conditions)

    def source_data_lineages(self, where: LineageFilter | None = None, *, limit: int | None = None, **conditions: Any) -> list[DataLineage]:
        """Source data lineage matching ``where`` / keyword conditions."""
        return self._data_lineages(schema.source_snapshot_lineage, where, limit, conditions)

    def sink_data_lineages(self, where: LineageFilter | None = None, *, limit: int | None = None, **conditions: Any) -> list[DataLineage]:
        """Sink data lineage matching ``where`` / keyword conditions."""
        return self._data_lineages(schema.sink_snapshot_lineage, where, limit, conditions)

    def _table_lineages(self, table: sa.Table, where: LineageFilter | None, limit: int | None, conditions: dict[str, Any]) -> list[TableLineage]:
        flt = _filter(where, conditions)
        if flt.has_data_conditions:
            raise InvalidLineageArgumentError(
                "barrier and snapshot conditions apply to data lineage only; use "
                "source_data_lineages/sink_data_lineages or drop them"
            )
        query = _select(table, flt, limit)
        rows = self.run(f"read {table.name}", lambda c: c.execute(query).all())
        return [_table_entity(r) for r in rows]

    def _data_lineages(self, table: sa.Table, where: LineageFilter | None, limit: int | None, conditions: dict[str, Any]) -> list[DataLineage]:
        query = _select(table, _filter(where, conditions), limit)
        rows = self.run(f"read {table.name}", lambda c: c.execute(query).all())
        return [_data_entity(r) for r in rows]

    # -- deleting (the Paimon lineage proposal's actions) ------------------------------------------------

    def _delete(self, tables: Sequence[sa.Table], job: str) -> int:
        check_name("job", job)

        def delete(conn: sa.Connection) -> int:
            return sum(conn.execute(sa.delete(t).where(t.c.job == job)).rowcount for t in tables)

        return self.run(f"delete lineage of job {job!r}", delete, write=True)

    def delete_source_table_lineage(self, job: str) -> int:
        """Delete ``job``'s source table lineage; return the number of rows deleted."""
        return self._delete([schema.source_job_lineage], job)

    def delete_sink_table_lineage(self, job: str) -> int:
        """Delete ``job``'s sink table lineage; return the number of rows deleted."""
        return self._delete([schema.sink_job_lineage], job)

    def delete_table_lineage(self, job: str) -> int:
        """Both of the above in one transaction (the Paimon lineage proposal's ``delete-table-lineage``)."""
        return self._delete([schema.source_job_lineage, schema.sink_job_lineage], job)

    def delete_data_lineage(self, job: str) -> int:
        """Delete ``job``'s source and sink data lineage (the Paimon lineage proposal's ``delete-data-lineage``).

        The job's barrier sequence is kept, so later batch runs never reuse an id. The
        barriers' runs (``barrier_run``) go with them.
        """
        return self._delete(
            [schema.source_snapshot_lineage, schema.sink_snapshot_lineage, schema.barrier_run], job
        )

    def analyze(self) -> None:
        """Refresh the database's statistics of the store's tables (``ANALYZE``): after a
        bulk load, so the planner uses the lookup indexes (PostgreSQL needs it most)."""
        self.run("analyze", analyze, write=True)

    def read_table(self, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """All rows of one readable table, as (column names, rows) (for the Spark source)."""
        if name not in schema.READABLE_TABLES:
            raise InvalidLineageArgumentError(
                f"lineage table {name!r} is unknown; choose one of {', '.join(schema.READABLE_TABLES)}"
            )
        table = schema.TABLES[name]
        query = sa.select(table).order_by(*table.primary_key.columns)
        rows = self.run(f"read {name}", lambda c: c.execute(query).all())
        return [c.name for c in table.columns], [tuple(r) for r in rows]


# -- helpers ------------------------------------------------------------------------


def _prepare(url: URL, engine: sa.Engine, database: str, create: bool) -> int:
    """Check the store is reachable and current; create/upgrade it if allowed."""
    try:
        with engine.connect() as conn:
            version = read_version(conn)
    except exc.OperationalError as err:
        code = getattr(err.orig, "args", [None])[0]
        if backend_of(url) != "mysql" or code != _MYSQL_UNKNOWN_DATABASE:
            raise
        if not create:
            raise LineageStoreMissingError(
                f"lineage store {mask_url(url)!r} has no database {database!r}; open it "
                "once with create=True (or run 'paimon-lineage init') to create it"
            ) from None
        create_mysql_database(url, database)
        version = 0
    check_not_newer(version, repr(mask_url(url)))
    if version == LATEST_VERSION:
        return version
    if not create:
        raise LineageError(
            f"lineage store {mask_url(url)!r} is at schema version {version}, this package "
            f"needs {LATEST_VERSION}; run 'paimon-lineage init' to upgrade it"
        )
    return ensure_schema(engine, database)


def _guard(url: URL, what: str, fn: Callable[[], T]) -> T:
    """Turn driver errors into store errors whose text has no password in it."""
    try:
        return fn()
    except exc.DBAPIError as err:
        detail = scrub(str(err.orig), url).strip().splitlines()[0] if err.orig else type(err).__name__
        if isinstance(err, exc.OperationalError) and _is_connect_failure(err):
            raise LineageStoreUnavailableError(
                f"cannot reach lineage store {mask_url(url)!r} ({detail}); check that the "
                "server runs and the URL's host, port, user and password are right"
            ) from None
        raise LineageError(f"lineage store {mask_url(url)!r}: {what} failed: {detail}") from None


def _is_connect_failure(err: exc.DBAPIError) -> bool:
    orig = err.orig
    if orig is None:
        return False
    module = type(orig).__module__
    if module.startswith("pymysql"):
        return bool(orig.args) and orig.args[0] in (1045, 2003, 2005, 2006, 2013)
    if module.startswith("psycopg"):
        pgcode = getattr(orig, "pgcode", None)
        return pgcode is None or str(pgcode).startswith(("08", "28"))
    if module.startswith("sqlite3"):
        return "unable to open" in str(orig).lower()
    return False


def _entities(items: Iterable[Any], kind: type) -> list[Any]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidLineageArgumentError(f"expected an iterable of {kind.__name__}, got {type(items).__name__}")
    result = list(items)
    for item in result:
        if not isinstance(item, kind):
            raise InvalidLineageArgumentError(
                f"expected {kind.__name__} records, got {type(item).__name__}; build them with "
                f"airflow_provider_paimon.lineage.{kind.__name__}(...)"
            )
    return result


def _unique_tables(data: list[DataLineage]) -> list[TableLineage]:
    return list({(d.job, d.database, d.table): d.table_lineage for d in data}.values())


#: Snapshot-row columns an upsert never turns from known back to NULL.
_KEEP_KNOWN = ("snapshot_identity", "commit_user", "commit_identifier", "commit_time", "identity_status")


def identity_columns(identity: SnapshotIdentity | None, status: str | None = schema.RECORDED) -> dict[str, Any]:
    """The identity columns of a snapshot row (all NULL for an unknown identity)."""
    if identity is None:
        return dict.fromkeys(_KEEP_KNOWN)
    return {"snapshot_identity": identity.digest, "commit_user": identity.commit_user,
            "commit_identifier": identity.commit_identifier, "commit_time": identity.time_millis,
            "identity_status": status}


def _row(entity: TableLineage | DataLineage, now: datetime) -> dict[str, Any]:
    created = (entity.create_time or now).astimezone(timezone.utc).replace(tzinfo=None)
    row = {"job": entity.job, "database": entity.database, "table": entity.table,
           "branch": entity.branch, "create_time": created}
    if isinstance(entity, DataLineage):
        row["barrier_id"] = entity.barrier_id
        row["snapshot_id"] = entity.snapshot_id
        row.update(identity_columns(entity.identity))
    return row


_RUN_UPDATE = ("dag_id", "run_id", "task_id", "try_number", "map_index", "spark_app_id", "create_time")


def _run_row(run: BarrierRun, now: datetime) -> dict[str, Any]:
    created = (run.create_time or now).astimezone(timezone.utc).replace(tzinfo=None)
    return {"job": run.job, "barrier_id": run.barrier_id, "dag_id": run.dag_id, "run_id": run.run_id,
            "task_id": run.task_id, "try_number": run.try_number, "map_index": run.map_index,
            "spark_app_id": run.spark_app_id, "create_time": created}


def _run_entity(row: Any) -> BarrierRun:
    entity = object.__new__(BarrierRun)
    for name in ("job", "barrier_id", "dag_id", "run_id", "task_id", "try_number", "map_index",
                 "spark_app_id"):
        object.__setattr__(entity, name, getattr(row, name))
    object.__setattr__(entity, "create_time", _aware(row.create_time))
    return entity


def _filter(where: LineageFilter | None, conditions: dict[str, Any]) -> LineageFilter:
    if where is not None and not isinstance(where, LineageFilter):
        raise InvalidLineageArgumentError(f"where must be a LineageFilter, got {type(where).__name__}")
    if conditions:
        fields = set(LineageFilter.__dataclass_fields__)
        unknown = sorted(set(conditions) - fields)
        if unknown:
            raise InvalidLineageArgumentError(
                f"unknown lineage filter {', '.join(unknown)}; use {', '.join(sorted(fields))}"
            )
        base = {k: getattr(where, k) for k in fields} if where else {}
        return LineageFilter(**{**base, **conditions})
    return where or LineageFilter()


def _select(table: sa.Table, flt: LineageFilter, limit: int | None) -> sa.Select:
    c = table.c
    conds = [c[k] == getattr(flt, k) for k in ("job", "database", "table", "branch") if getattr(flt, k) is not None]
    for col in ("barrier_id", "snapshot_id"):
        if col in c:
            if getattr(flt, col) is not None:
                conds.append(c[col] == getattr(flt, col))
            if getattr(flt, f"min_{col}") is not None:
                conds.append(c[col] >= getattr(flt, f"min_{col}"))
            if getattr(flt, f"max_{col}") is not None:
                conds.append(c[col] <= getattr(flt, f"max_{col}"))
    query = sa.select(table).where(*conds).order_by(*table.primary_key.columns)
    if limit is not None:
        query = query.limit(check_id("limit", limit, 1))
    return query


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value


def _table_entity(row: Any) -> TableLineage:
    # Rows come from the database (maybe written by another tool): no re-validation.
    entity = object.__new__(TableLineage)
    for name, value in (("job", row.job), ("database", row.database), ("table", row.table),
                        ("branch", row.branch), ("create_time", _aware(row.create_time))):
        object.__setattr__(entity, name, value)
    return entity


def _data_entity(row: Any) -> DataLineage:
    entity = object.__new__(DataLineage)
    identity = SnapshotIdentity.from_fields(row.commit_user, row.commit_identifier, row.commit_time)
    for name, value in (("job", row.job), ("database", row.database), ("table", row.table),
                        ("barrier_id", row.barrier_id), ("snapshot_id", row.snapshot_id),
                        ("branch", row.branch), ("create_time", _aware(row.create_time)),
                        ("identity", identity), ("identity_status", row.identity_status),
                        ("retracted_at", _aware(row.retracted_at)), ("retracted_by", row.retracted_by)):
        object.__setattr__(entity, name, value)
    return entity
