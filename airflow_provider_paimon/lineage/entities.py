"""Table and data lineage records, as the Paimon lineage proposal's ``TableLineageEntity``/``DataLineageEntity``.

Validation happens here, before any database is touched, so a bad record is refused
with a clear message and nothing is written. ``branch`` is our addition: a Paimon
branch has its own snapshot ids, so ``(table, snapshot 5)`` on ``main`` and on a branch
are different data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..paimon.commit_properties import SPARK_APP_ID, run_of
from ..paimon.errors import InvalidNameError
from ..paimon.names import MAIN_BRANCH, UNICODE_PROFILE, validate_branch_name
from ..paimon.snapshot_identity import SnapshotIdentity
from .errors import InvalidLineageArgumentError

#: Longest job, database, table or branch name the store keeps (VARCHAR length).
MAX_NAME_LENGTH = 255
#: Largest id a BIGINT column holds.
MAX_ID = 2**63 - 1


def check_name(kind: str, value: object) -> str:
    """Return ``value`` if it is a usable name, else raise naming ``kind`` and the fix."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidLineageArgumentError(f"{kind} must be a non-blank string, got {value!r}")
    if value != value.strip():
        raise InvalidLineageArgumentError(
            f"{kind} {value!r} must not start or end with whitespace; strip it"
        )
    if "\x00" in value:
        raise InvalidLineageArgumentError(f"{kind} {value!r} must not contain NUL characters")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidLineageArgumentError(
            f"{kind} is {len(value)} characters long; the store keeps at most {MAX_NAME_LENGTH}"
        )
    return value


def check_branch(value: object) -> str:
    """``main`` or a valid Paimon branch name; ``None``/empty means ``main``."""
    if value is None or value == "":
        return MAIN_BRANCH
    name = check_name("branch", value)
    if name == MAIN_BRANCH:
        return name
    try:
        return validate_branch_name(name, UNICODE_PROFILE)  # a reference: the table's ops apply its profile
    except InvalidNameError as err:
        raise InvalidLineageArgumentError(str(err)) from None


def check_id(kind: str, value: object, minimum: int = 0) -> int:
    """Return ``value`` if it is an integer id within ``[minimum, 2**63-1]``."""
    if value is None:
        raise InvalidLineageArgumentError(f"{kind} is missing; pass an integer >= {minimum}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidLineageArgumentError(
            f"{kind} must be an integer >= {minimum}, got {type(value).__name__} {value!r}"
        )
    if value < minimum or value > MAX_ID:
        raise InvalidLineageArgumentError(
            f"{kind} must be between {minimum} and {MAX_ID}, got {value}"
        )
    return value


def normalize_time(value: datetime | None) -> datetime | None:
    """Aware UTC time (naive input is taken as UTC); ``None`` stays ``None``."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidLineageArgumentError(
            f"create_time must be a datetime, got {type(value).__name__}"
        )
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


@dataclass(frozen=True)
class TableLineage:
    """A job reads (source) or writes (sink) a table. Key: job, database, table."""

    job: str
    database: str
    table: str
    branch: str = MAIN_BRANCH
    create_time: datetime | None = None

    def __post_init__(self) -> None:
        check_name("job", self.job)
        check_name("database", self.database)
        check_name("table", self.table)
        object.__setattr__(self, "branch", check_branch(self.branch))
        object.__setattr__(self, "create_time", normalize_time(self.create_time))


@dataclass(frozen=True)
class DataLineage:
    """Barrier ``barrier_id`` of a job consumed (source) or produced (sink) a snapshot.

    Key: job, barrier_id, database, table. Barrier ids start at 0 (Spark micro-batch
    ids do); Paimon snapshot ids start at 1.

    ``identity``: the commit the snapshot is (``paimon.snapshot_identity``), read from
    the snapshot when it was consumed or produced; ``None`` when unknown. Read back from
    the store, ``identity_status`` says where it came from and ``retracted_at`` /
    ``retracted_by`` whether the snapshot was removed since (both ignored on writes).
    """

    job: str
    database: str
    table: str
    barrier_id: int
    snapshot_id: int
    branch: str = MAIN_BRANCH
    create_time: datetime | None = None
    identity: SnapshotIdentity | None = None
    identity_status: str | None = field(default=None, compare=False)
    retracted_at: datetime | None = field(default=None, compare=False)
    retracted_by: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_name("job", self.job)
        check_name("database", self.database)
        check_name("table", self.table)
        check_id("barrier_id", self.barrier_id, 0)
        check_id("snapshot_id", self.snapshot_id, 1)
        object.__setattr__(self, "branch", check_branch(self.branch))
        object.__setattr__(self, "create_time", normalize_time(self.create_time))
        check_identity(self.identity)

    @property
    def table_lineage(self) -> TableLineage:
        """The table-level record this data record implies."""
        return TableLineage(self.job, self.database, self.table, self.branch, self.create_time)


@dataclass(frozen=True)
class LineageFilter:
    """Optional conditions for listing lineage (all given ones must hold).

    Names match exactly (bound parameters: SQL metacharacters are plain text). The
    barrier and snapshot conditions apply to data lineage only; ranges are inclusive.
    """

    job: str | None = None
    database: str | None = None
    table: str | None = None
    branch: str | None = None
    barrier_id: int | None = None
    min_barrier_id: int | None = None
    max_barrier_id: int | None = None
    snapshot_id: int | None = None
    min_snapshot_id: int | None = None
    max_snapshot_id: int | None = None

    def __post_init__(self) -> None:
        for kind in ("job", "database", "table"):
            if getattr(self, kind) is not None:
                check_name(kind, getattr(self, kind))
        if self.branch is not None:
            check_branch(self.branch)
        for kind in ("barrier_id", "min_barrier_id", "max_barrier_id"):
            if getattr(self, kind) is not None:
                check_id(kind, getattr(self, kind), 0)
        for kind in ("snapshot_id", "min_snapshot_id", "max_snapshot_id"):
            if getattr(self, kind) is not None:
                check_id(kind, getattr(self, kind), 0)
        for low, high in (("min_barrier_id", "max_barrier_id"), ("min_snapshot_id", "max_snapshot_id")):
            lo, hi = getattr(self, low), getattr(self, high)
            if lo is not None and hi is not None and lo > hi:
                raise InvalidLineageArgumentError(f"{low} ({lo}) is greater than {high} ({hi})")

    @property
    def has_data_conditions(self) -> bool:
        """Whether a barrier or snapshot condition is set (invalid for table lineage)."""
        return any(
            getattr(self, k) is not None
            for k in (
                "barrier_id", "min_barrier_id", "max_barrier_id",
                "snapshot_id", "min_snapshot_id", "max_snapshot_id",
            )
        )


def check_identity(value: object) -> SnapshotIdentity | None:
    """``value`` if it is a ``SnapshotIdentity`` (or ``None``), else a clear error."""
    if value is not None and not isinstance(value, SnapshotIdentity):
        raise InvalidLineageArgumentError(
            f"identity must be a paimon.snapshot_identity.SnapshotIdentity or None, got {type(value).__name__}"
        )
    if value is not None:
        check_name("commit_user", value.commit_user)
        for name in ("commit_identifier", "time_millis"):
            if isinstance(getattr(value, name), bool) or not isinstance(getattr(value, name), int):
                raise InvalidLineageArgumentError(f"identity {name} must be an integer, got {getattr(value, name)!r}")
    return value


@dataclass(frozen=True)
class SnapshotRef:
    """One snapshot of one table (on a branch): a node of the data lineage graph.

    ``identity`` (optional) is the commit the snapshot is; two refs with the same id
    but different identities are different commits (a rollback reused the id). It does
    not take part in ``==`` (refs compare by name and id, as before).
    """

    database: str
    table: str
    snapshot_id: int
    branch: str = MAIN_BRANCH
    identity: SnapshotIdentity | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_name("database", self.database)
        check_name("table", self.table)
        check_id("snapshot_id", self.snapshot_id, 1)
        object.__setattr__(self, "branch", check_branch(self.branch))
        check_identity(self.identity)

    def __str__(self) -> str:
        suffix = "" if self.branch == MAIN_BRANCH else f"$branch_{self.branch}"
        return f"{self.database}.{self.table}{suffix}@{self.snapshot_id}"


@dataclass(frozen=True)
class BarrierRun:
    """The Airflow task try and Spark application behind barrier ``barrier_id`` of a job.

    What the barrier's snapshots carry in their ``properties`` (``paimon/commit_properties``),
    kept beside the lineage so a barrier found by lineage names its run without opening
    the table. Every field but the key is optional: outside Airflow only the Spark
    application id is known. Key: job, barrier_id.
    """

    job: str
    barrier_id: int
    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    try_number: int | None = None
    map_index: int | None = None
    spark_app_id: str | None = None
    create_time: datetime | None = None

    def __post_init__(self) -> None:
        check_name("job", self.job)
        check_id("barrier_id", self.barrier_id, 0)
        for name in ("dag_id", "run_id", "task_id", "spark_app_id"):
            value = getattr(self, name)
            if value is not None:
                # names of the run: cut to what the store keeps rather than refuse lineage
                object.__setattr__(self, name, str(value).strip()[:MAX_NAME_LENGTH] or None)
        for name in ("try_number", "map_index"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidLineageArgumentError(f"{name} must be an integer or None, got {value!r}")
        object.__setattr__(self, "create_time", normalize_time(self.create_time))

    @property
    def empty(self) -> bool:
        """Nothing known about the run (nothing worth a row)."""
        return not any((self.dag_id, self.run_id, self.task_id, self.spark_app_id))

    @classmethod
    def from_properties(cls, job: str, barrier_id: int, properties: dict[str, str] | None) -> BarrierRun:
        """From a commit's run properties (``commit_properties``: ``airflow.*``, ``spark.app.id``)."""
        props = dict(properties or {})
        ref = run_of(props)
        if ref is None:
            return cls(job, barrier_id, spark_app_id=props.get(SPARK_APP_ID) or None)
        return cls(job, barrier_id, ref.dag_id, ref.run_id, ref.task_id, ref.try_number, ref.map_index,
                   ref.spark_app_id)
