"""The store's tables (SQLAlchemy Core) and the migrations that create and evolve them.

Version 1 is the Paimon lineage proposal's schema exactly: ``source_job_lineage``/``sink_job_lineage``
(job, database, table, create_time; key job+database+table),
``source_snapshot_lineage``/``sink_snapshot_lineage`` (job, barrier_id, database,
table, snapshot_id, create_time; key job+barrier_id+database+table) and ``options``.
Later versions only add (a ``branch`` column, lookup indexes, the barrier sequence,
``barrier_run``: the Airflow task try and Spark application of each barrier; version 5:
each snapshot row's identity and retraction, and ``lineage_event``, the history events),
so the Paimon lineage proposal's SQL keeps running on the store.

Identity (version 5). A snapshot id is not an identity (rollback reuses ids;
fast-forward and replace-main rewrite main), so every snapshot row also records the
commit it names, read from the snapshot file: ``commit_user``, ``commit_identifier``,
``commit_time`` (its ``timeMillis``) and ``snapshot_identity``, their digest
(``paimon.snapshot_identity``), which walks compare. ``identity_status`` says where the
identity came from: ``recorded`` (captured with the row), ``filled`` (the identity
migration read it from the live snapshot), ``unknown`` (the migration could not tell:
never guessed); NULL for a row written before version 5 or by a writer that gave none.
``retracted_at``/``retracted_by``: the snapshot the row names no longer exists (a
rollback or fast-forward removed it); the row is kept for audit and walks skip it
unless asked. ``schema_version`` holds one row per
applied migration; a store whose version is newer than ``LATEST_VERSION`` is refused
rather than written with an old idea of the schema.

Every migration step checks before it changes (MySQL commits DDL at once), so a
migration killed half way is finished by the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from ..paimon.snapshot_identity import DIGEST_LENGTH
from .errors import SchemaVersionError

NAME = sa.String(255)
TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
ID = sa.BigInteger()
#: Largest value of an ``ID`` column.
MAX_ID = 2**63 - 1

SOURCE_JOB = "source_job_lineage"
SINK_JOB = "sink_job_lineage"
SOURCE_SNAPSHOT = "source_snapshot_lineage"
SINK_SNAPSHOT = "sink_snapshot_lineage"
OPTIONS = "options"
BARRIER_SEQUENCE = "barrier_sequence"
SCHEMA_VERSION = "schema_version"
BARRIER_RUN = "barrier_run"
LINEAGE_EVENT = "lineage_event"

#: The tables users may read (the Spark ``paimon-lineage`` source offers these):
#: the proposal's five and ``barrier_run``, the Airflow try and Spark app of each barrier.
READABLE_TABLES = (SOURCE_JOB, SINK_JOB, SOURCE_SNAPSHOT, SINK_SNAPSHOT, OPTIONS, BARRIER_RUN, LINEAGE_EVENT)
JOB_TABLES = (SOURCE_JOB, SINK_JOB)
SNAPSHOT_TABLES = (SOURCE_SNAPSHOT, SINK_SNAPSHOT)


def _job_table(md: sa.MetaData, name: str, with_branch: bool) -> sa.Table:
    cols: list[sa.Column[Any]] = [
        sa.Column("job", NAME, primary_key=True),
        sa.Column("database", NAME, primary_key=True),
        sa.Column("table", NAME, primary_key=True),
        sa.Column("create_time", TIME, nullable=False),
    ]
    if with_branch:
        cols.append(sa.Column("branch", NAME, nullable=False, server_default="main"))
    return sa.Table(name, md, *cols)


#: The identity and retraction columns of the snapshot tables (version 5), all nullable.
IDENTITY_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("snapshot_identity", sa.String(DIGEST_LENGTH)),
    ("commit_user", NAME),
    ("commit_identifier", ID),
    ("commit_time", ID),
    ("identity_status", sa.String(16)),
    ("retracted_at", TIME),
    ("retracted_by", NAME),
)
#: ``identity_status`` values.
RECORDED, FILLED, UNKNOWN = "recorded", "filled", "unknown"


def _snapshot_table(md: sa.MetaData, name: str, with_branch: bool, with_identity: bool = False) -> sa.Table:
    cols: list[sa.Column[Any]] = [
        sa.Column("job", NAME, primary_key=True),
        sa.Column("barrier_id", ID, primary_key=True, autoincrement=False),
        sa.Column("database", NAME, primary_key=True),
        sa.Column("table", NAME, primary_key=True),
        sa.Column("snapshot_id", ID, nullable=False),
        sa.Column("create_time", TIME, nullable=False),
    ]
    if with_branch:
        cols.append(sa.Column("branch", NAME, nullable=False, server_default="main"))
    if with_identity:
        cols.extend(sa.Column(col, kind, nullable=True) for col, kind in IDENTITY_COLUMNS)
    return sa.Table(name, md, *cols)


def _options_table(md: sa.MetaData) -> sa.Table:
    return sa.Table(
        OPTIONS, md, sa.Column("key", NAME, primary_key=True), sa.Column("value", sa.Text())
    )


# The Paimon lineage proposal's schema as written (version 1). The benchmark's baseline uses it too.
proposal_metadata = sa.MetaData()
for _name in JOB_TABLES:
    _job_table(proposal_metadata, _name, with_branch=False)
for _name in SNAPSHOT_TABLES:
    _snapshot_table(proposal_metadata, _name, with_branch=False)
_options_table(proposal_metadata)

# The current schema (LATEST_VERSION); queries are built against these objects.
metadata = sa.MetaData()
source_job_lineage = _job_table(metadata, SOURCE_JOB, with_branch=True)
sink_job_lineage = _job_table(metadata, SINK_JOB, with_branch=True)
source_snapshot_lineage = _snapshot_table(metadata, SOURCE_SNAPSHOT, with_branch=True, with_identity=True)
sink_snapshot_lineage = _snapshot_table(metadata, SINK_SNAPSHOT, with_branch=True, with_identity=True)
options = _options_table(metadata)
barrier_sequence = sa.Table(
    BARRIER_SEQUENCE,
    metadata,
    sa.Column("job", NAME, primary_key=True),
    sa.Column("last_barrier_id", ID, nullable=False),
)
# The run behind each barrier (version 4): what its snapshots' properties say. Every
# column but the key is nullable: outside Airflow only the Spark application is known.
barrier_run = sa.Table(
    BARRIER_RUN,
    metadata,
    sa.Column("job", NAME, primary_key=True),
    sa.Column("barrier_id", ID, primary_key=True, autoincrement=False),
    sa.Column("dag_id", NAME, nullable=True),
    sa.Column("run_id", NAME, nullable=True),
    sa.Column("task_id", NAME, nullable=True),
    sa.Column("try_number", sa.Integer(), nullable=True),
    sa.Column("map_index", sa.Integer(), nullable=True),
    sa.Column("spark_app_id", NAME, nullable=True),
    sa.Column("create_time", TIME, nullable=False),
)
# History events (version 5): a rollback, fast-forward, replace-main or publish, with
# what it removed and what its new snapshots derive from (``detail``: JSON).
lineage_event = sa.Table(
    LINEAGE_EVENT,
    metadata,
    sa.Column("event_id", ID.with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("database", NAME, nullable=False),
    sa.Column("table", NAME, nullable=False),
    sa.Column("branch", NAME, nullable=False),
    sa.Column("create_time", TIME, nullable=False),
    # what makes the operation unique (a retried task records it once)
    sa.Column("event_key", NAME, nullable=False),
    sa.Column("detail", sa.Text(), nullable=False),
)
schema_version = sa.Table(
    SCHEMA_VERSION,
    metadata,
    sa.Column("version", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("description", NAME, nullable=False),
    sa.Column("applied_at", TIME, nullable=False),
)

# Lookups by (database, table, snapshot): one hop up/downstream starts here, and each
# further hop joins back on the primary key's (job, barrier_id) prefix.
V2_INDEXES = {
    "ix_source_snapshot_lineage_lookup": (SOURCE_SNAPSHOT, ("database", "table", "snapshot_id")),
    "ix_sink_snapshot_lineage_lookup": (SINK_SNAPSHOT, ("database", "table", "snapshot_id")),
    "ix_source_job_lineage_table": (SOURCE_JOB, ("database", "table")),
    "ix_sink_job_lineage_table": (SINK_JOB, ("database", "table")),
}
# Version 5: a node with a known identity is matched by it (on any branch: a copy keeps
# its identity); a job's progress on a source (the catch-up sensor) is read newest first
# from its own index, however many barriers the job has run.
IDENTITY_INDEXES = {
    "ix_source_snapshot_lineage_identity": (SOURCE_SNAPSHOT, ("database", "table", "snapshot_identity")),
    "ix_sink_snapshot_lineage_identity": (SINK_SNAPSHOT, ("database", "table", "snapshot_identity")),
    # (branch is left out: with it the key passes MySQL's 3,072-byte limit in utf8mb4)
    "ix_source_snapshot_lineage_progress": (SOURCE_SNAPSHOT, ("job", "database", "table", "snapshot_id")),
    "ix_lineage_event_table": (LINEAGE_EVENT, ("database", "table", "event_id")),
}
LOOKUP_INDEXES = {**V2_INDEXES, **IDENTITY_INDEXES}
for _ix, (_tname, _cols) in LOOKUP_INDEXES.items():
    sa.Index(_ix, *(metadata.tables[_tname].c[c] for c in _cols))

TABLES = {t.name: t for t in metadata.sorted_tables}


def _v1_proposal_tables(conn: sa.Connection) -> None:
    proposal_metadata.create_all(conn, checkfirst=True)


def _v2_branch_and_indexes(conn: sa.Connection) -> None:
    inspector = sa.inspect(conn)
    quote = conn.dialect.identifier_preparer.quote
    for name in JOB_TABLES + SNAPSHOT_TABLES:
        if "branch" not in {c["name"] for c in inspector.get_columns(name)}:
            conn.exec_driver_sql(
                f"ALTER TABLE {quote(name)} ADD COLUMN branch VARCHAR(255) NOT NULL DEFAULT 'main'"
            )
    for ix, (tname, _cols) in V2_INDEXES.items():
        if ix not in {i["name"] for i in inspector.get_indexes(tname)}:
            next(i for i in metadata.tables[tname].indexes if i.name == ix).create(conn)


def _v3_barrier_sequence(conn: sa.Connection) -> None:
    barrier_sequence.create(conn, checkfirst=True)


def _v4_barrier_run(conn: sa.Connection) -> None:
    barrier_run.create(conn, checkfirst=True)


def _v5_identity(conn: sa.Connection) -> None:
    """Identity and retraction columns, their indexes, and ``lineage_event``.

    Existing rows get NULL identities (not checked): only the table's own snapshot
    files can say which commit a row meant (``paimon-lineage fill-identities``).
    """
    inspector = sa.inspect(conn)
    quote = conn.dialect.identifier_preparer.quote
    for name in SNAPSHOT_TABLES:
        present = {c["name"] for c in inspector.get_columns(name)}
        for col, kind in IDENTITY_COLUMNS:
            if col not in present:
                conn.exec_driver_sql(
                    f"ALTER TABLE {quote(name)} ADD COLUMN {quote(col)} {kind.compile(dialect=conn.dialect)} NULL"
                )
    lineage_event.create(conn, checkfirst=True)
    inspector = sa.inspect(conn)
    for ix, (tname, _cols) in IDENTITY_INDEXES.items():
        if ix not in {i["name"] for i in inspector.get_indexes(tname)}:
            next(i for i in metadata.tables[tname].indexes if i.name == ix).create(conn)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[sa.Connection], None]


MIGRATIONS = (
    Migration(1, "the lineage proposal's tables: job and snapshot lineage, options", _v1_proposal_tables),
    Migration(2, "branch column and lookup indexes", _v2_branch_and_indexes),
    Migration(3, "per-job barrier sequence for batch jobs", _v3_barrier_sequence),
    Migration(4, "barrier_run: the Airflow run and Spark application of each barrier", _v4_barrier_run),
    Migration(5, "snapshot identities, retraction and history events", _v5_identity),
)
LATEST_VERSION = MIGRATIONS[-1].version


def read_version(conn: sa.Connection) -> int:
    """The store's schema version; 0 when it has no ``schema_version`` table yet."""
    if not sa.inspect(conn).has_table(SCHEMA_VERSION):
        return 0
    return int(conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar() or 0)


def check_not_newer(version: int, where: str) -> None:
    """Refuse a store written by a newer package (its schema may mean other things)."""
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"lineage store {where} has schema version {version}, but this "
            f"airflow-provider-paimon supports up to version {LATEST_VERSION}; upgrade "
            "airflow-provider-paimon (pip install -U airflow-provider-paimon) to use it"
        )


def migrate(
    conn: sa.Connection, where: str, target: int = LATEST_VERSION, *, single_transaction: bool = False
) -> int:
    """Apply the missing migrations up to ``target`` on ``conn`` (caller holds the lock).

    Commits after each step, so the version row is written only once its step is done;
    with ``single_transaction`` (SQLite, whose write transaction is the lock) the caller
    commits once at the end instead. Returns the version the store is at afterwards.
    """
    commit = (lambda: None) if single_transaction else conn.commit
    inspector = sa.inspect(conn)
    fresh = target == LATEST_VERSION and not any(inspector.has_table(t) for t in metadata.tables)
    schema_version.create(conn, checkfirst=True)
    commit()
    version = read_version(conn)
    check_not_newer(version, where)
    if fresh:  # a new store: create the latest schema at once, then record every step
        metadata.create_all(conn, checkfirst=True)
        _record(conn, MIGRATIONS)
        commit()
        return LATEST_VERSION
    for migration in MIGRATIONS:
        if version < migration.version <= target:
            migration.apply(conn)
            _record(conn, [migration])
            commit()
            version = migration.version
    return version


def _record(conn: sa.Connection, applied: Sequence[Migration]) -> None:
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    conn.execute(
        schema_version.insert(),
        [{"version": m.version, "description": m.description, "applied_at": now} for m in applied],
    )
