"""Has a job caught up with its sources? (the Paimon branch proposal: wait, then replace main).

A job writing a table's branch has caught up when, for every source table it reads,
the snapshot it has consumed is the source's latest, or at most ``max_lag_snapshots``
data snapshots behind it. "Consumed" comes from one of two places:

* the lineage store's data lineage: the highest ``snapshot_id`` the job recorded for
  the source in ``source_snapshot_lineage`` whose recorded identity is the commit the
  source holds under that id now (``consumed_live``: a snapshot id is not an identity,
  so progress on a commit a rollback removed and whose id a new commit took is no
  progress on the new commit), or
* a Paimon consumer file ``consumer/consumer-<id>`` on the source's branch, whose
  ``{"nextSnapshot": N}`` means snapshots up to ``N - 1`` were consumed.

Lag counts only snapshots that change data: a COMPACT snapshot rewrites files without
changing rows, and a streaming reader skips it, so a source whose only newer snapshots
are compactions is caught up. The count walks back from the latest snapshot and stops
once it knows the answer, so it reads at most ``max_lag + 1`` data snapshots' files.

The computation (``compute_catch_up``) is pure; the readers below feed it. Nothing
here imports Spark, Airflow or the lineage package: the store is any object with the
two methods of ``LineageProgressSource``, so the sensor can pass the real store.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import InvalidArgumentError, PaimonError
from .names import MAIN_BRANCH, is_main, parse_table_name
from .snapshot_identity import SnapshotIdentity
from .snapshots import table_latest_snapshot_id

COMPACT = "COMPACT"


class CatchUpError(PaimonError):
    """A permanent reason the catch-up check cannot succeed (waiting will not help)."""


class JobNotFoundError(CatchUpError, LookupError):
    """The lineage store has no table lineage for the job."""


class JobNotStartedError(JobNotFoundError):
    """The store knows nothing at all of the job (no source and no sink lineage).

    Permanent by default (usually a wrong job name); a check made with
    ``wait_for_job_start`` treats it as "not caught up yet" instead, for a job that is
    launched at the same time as the wait begins.
    """


class ConsumerNotFoundError(CatchUpError, LookupError):
    """No consumer file ``consumer/consumer-<id>`` on the source's branch."""


class SourceNotReadError(CatchUpError, LookupError):
    """A source given explicitly is not one the job reads (per its table lineage)."""


@dataclass(frozen=True, order=True)
class SourceRef:
    """A source table on a branch (``main`` unless told otherwise)."""

    database: str
    table: str
    branch: str = MAIN_BRANCH

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def display(self) -> str:
        """``db.table`` or ``db.table$branch_NAME`` (Paimon's and OpenLineage's naming)."""
        return self.name if is_main(self.branch) else f"{self.name}$branch_{self.branch}"

    @classmethod
    def parse(cls, spec: str | Mapping[str, Any] | SourceRef) -> SourceRef:
        """Accept ``"db.t"``, ``"db.t$branch_b"``, ``{"table": "db.t", "branch": "b"}``."""
        if isinstance(spec, SourceRef):
            return spec
        if isinstance(spec, Mapping):
            name = spec.get("table")
            branch = spec.get("branch") or MAIN_BRANCH
            if spec.get("database"):
                name = f"{spec['database']}.{name}"
        elif isinstance(spec, str):
            name, branch = spec, MAIN_BRANCH
            if "$branch_" in spec:
                name, branch = spec.split("$branch_", 1)
        else:
            raise InvalidArgumentError(
                f"source {spec!r} must be 'db.table', 'db.table$branch_NAME' or "
                "{'table': 'db.table', 'branch': 'NAME'}"
            )
        database, table = parse_table_name(str(name))
        return cls(database, table, MAIN_BRANCH if is_main(branch) else str(branch))

    def to_dict(self) -> dict[str, str]:
        return {"database": self.database, "table": self.table, "branch": self.branch}


@dataclass(frozen=True)
class SourceProgress:
    """How far one source has been consumed, against its latest snapshot."""

    source: SourceRef
    consumed: int | None
    latest: int | None
    lag: int
    caught_up: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source.display,
            **self.source.to_dict(),
            "consumed_snapshot_id": self.consumed,
            "latest_snapshot_id": self.latest,
            "lag_snapshots": self.lag,
            "caught_up": self.caught_up,
        }


@dataclass(frozen=True)
class CatchUpResult:
    """Per-source progress and the overall answer (all sources caught up)."""

    sources: tuple[SourceProgress, ...]
    max_lag_snapshots: int
    #: why progress is not known yet (e.g. the job has recorded no lineage so far)
    pending: str | None = None
    caught_up: bool = field(init=False)

    def __post_init__(self) -> None:
        done = self.pending is None and all(p.caught_up for p in self.sources)
        object.__setattr__(self, "caught_up", done)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form: what the sensor pushes to XCom and the trigger sends."""
        out: dict[str, Any] = {
            "caught_up": self.caught_up,
            "max_lag_snapshots": self.max_lag_snapshots,
            "sources": [p.to_dict() for p in self.sources],
        }
        if self.pending is not None:
            out["pending"] = self.pending
        return out

    def summary(self) -> str:
        if self.pending is not None and not self.sources:
            return self.pending
        parts = [
            f"{p.source.display}: consumed {p.consumed if p.consumed is not None else 'nothing'}"
            f" of {p.latest if p.latest is not None else 'no snapshot'} (lag {p.lag})"
            for p in self.sources
        ]
        return "; ".join(parts)


def count_data_snapshots_after(
    consumed: int | None,
    latest: int | None,
    commit_kind: Callable[[int], str | None],
    stop_after: int,
) -> int:
    """Data (non-COMPACT) snapshots in ``(consumed, latest]``, counted from ``latest`` down.

    ``commit_kind(id)`` returns the snapshot's commit kind or ``None`` when its file is
    gone (expired); an unknown snapshot counts as data, which can only make the lag
    look larger, never hide one. Counting stops once it exceeds ``stop_after``, since
    the caller only needs to know "more than allowed".
    """
    if latest is None:
        return 0
    low = 0 if consumed is None else consumed
    count = 0
    for snapshot_id in range(latest, low, -1):
        if commit_kind(snapshot_id) != COMPACT:
            count += 1
            if count > stop_after:
                break
    return count


def compute_catch_up(
    sources: Sequence[SourceRef],
    consumed: Mapping[SourceRef, int | None],
    latest: Mapping[SourceRef, int | None],
    max_lag_snapshots: int = 0,
    commit_kinds: Mapping[SourceRef, Callable[[int], str | None]] | None = None,
) -> CatchUpResult:
    """Compare consumed with latest per source; pure apart from ``commit_kinds`` look-ups.

    Without ``commit_kinds`` every snapshot counts as data (lag = latest - consumed).
    A source without any snapshot is caught up; one with snapshots that nothing was
    consumed from yet is behind by all of them.
    """
    if max_lag_snapshots < 0:
        raise InvalidArgumentError(f"max_lag_snapshots must be >= 0, got {max_lag_snapshots}")
    if not sources:
        raise InvalidArgumentError("no sources to check")
    progress = []
    for source in sources:
        seen, last = consumed.get(source), latest.get(source)
        kinds = (commit_kinds or {}).get(source) or (lambda _id: None)
        if last is None or (seen is not None and seen >= last):
            lag = 0
        else:
            lag = count_data_snapshots_after(seen, last, kinds, max_lag_snapshots)
        progress.append(SourceProgress(source, seen, last, lag, lag <= max_lag_snapshots))
    return CatchUpResult(tuple(progress), max_lag_snapshots)


# ---------------------------------------------------------------------------------
# Readers that feed compute_catch_up
# ---------------------------------------------------------------------------------


class LineageProgressSource(Protocol):
    """What the check needs from a lineage store (``LineageProgress`` adapts the real one)."""

    def job_sources(self, job: str) -> list[SourceRef]: ...

    def job_sinks(self, job: str) -> list[SourceRef]: ...

    def consumed(self, job: str, source: SourceRef) -> int | None: ...


#: Newest consumed rows the check reads per source, at most (pages of ``_PAGE``): a
#: job's live progress is among its newest rows unless a rollback removed many of them.
MAX_CONSUMED_ROWS = 1024
_PAGE = 16


def consumed_live(
    candidates: Callable[[int | None], list[tuple[int, Any]]], table: Any
) -> int | None:
    """The newest consumed snapshot that is still the commit the job read.

    ``candidates(below)`` gives ``(snapshot_id, identity or None)`` newest first, below
    ``below`` (None: all). A candidate counts when its identity is unknown (a row
    written before identities: taken by id, as before), when it is the identity of the
    table's snapshot under that id now, or when that snapshot has expired (ids below
    the earliest are never reused). A candidate whose id now holds another commit, or
    no snapshot above the latest (rolled back), is skipped.
    """
    manager = table.snapshot_manager()

    def expired(snapshot_id: int) -> bool:
        try:
            earliest = manager.try_get_earliest_snapshot()
        except Exception:  # noqa: BLE001 - no snapshot at all: nothing expired, all removed
            return False
        return earliest is not None and snapshot_id < int(earliest.id)

    below: int | None = None
    read = 0
    while read < MAX_CONSUMED_ROWS:
        page = candidates(below)
        if not page:
            return None
        read += len(page)
        for snapshot_id, identity in page:
            if identity is None:
                return snapshot_id
            live = SnapshotIdentity.of(manager.get_snapshot_by_id(snapshot_id))
            if live == identity or (live is None and expired(snapshot_id)):
                return snapshot_id
        below = page[-1][0]
    return None


def _page(reader: Callable[..., list[tuple[int, Any]]], job: str, source: SourceRef,
          below: int | None) -> list[tuple[int, Any]]:
    return reader(job, source, below=below, limit=_PAGE)


def commit_kind_reader(table: Any) -> Callable[[int], str | None]:
    """``id -> commit kind`` for a pypaimon table, ``None`` for a missing snapshot file."""
    manager = table.snapshot_manager()

    def kind(snapshot_id: int) -> str | None:
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        return None if snapshot is None else str(snapshot.commit_kind)

    return kind


def consumed_from_consumer_file(table: Any, consumer_id: str, source: SourceRef) -> int | None:
    """Last snapshot consumed by ``consumer_id`` on the source's branch.

    Paimon's consumer file holds the *next* snapshot to read, so ``N - 1`` was consumed
    (``None`` when that is 0: nothing yet). Raises ``ConsumerNotFoundError`` when the
    file does not exist, listing the consumers that do.
    """
    manager = table.consumer_manager()
    try:
        state = manager.consumer(consumer_id)
    except ValueError as err:  # pypaimon rejects ids with path separators
        raise InvalidArgumentError(f"consumer id {consumer_id!r}: {err}") from None
    if state is None:
        try:
            known = ", ".join(sorted(manager.list_all_ids())) or "none"
        except Exception:  # noqa: BLE001 - listing is only for the message
            known = "unknown"
        raise ConsumerNotFoundError(
            f"consumer {consumer_id!r} has no progress on {source.display} "
            f"(consumers there: {known}); has the streaming query with "
            f"option consumer-id={consumer_id} run on that branch yet?"
        )
    consumed = int(state.next_snapshot) - 1
    return consumed if consumed > 0 else None


def resolve_job_sources(
    store: LineageProgressSource,
    job: str,
    sink: SourceRef,
    explicit: Iterable[SourceRef] | None,
) -> list[SourceRef]:
    """The sources to check for ``job``: its table lineage, or the explicit subset.

    Fails with ``JobNotFoundError`` when the store knows nothing of the job, and with
    ``SourceNotReadError`` for an explicit source the job never read. ``sink`` is only
    used to make the job error message point at what was expected.
    """
    known = store.job_sources(job)
    if not known:
        sinks = store.job_sinks(job)
        if not sinks:
            raise JobNotStartedError(
                f"job {job!r} has no table lineage in the store: it has not run with "
                f"lineage capture yet (expected it to write {sink.display}); check the "
                "job name (the Spark app name or spark.paimon.lineage.job)"
            )
        raise JobNotFoundError(
            f"job {job!r} reads no Paimon source table (it writes "
            f"{', '.join(s.display for s in sinks)}), so there is nothing to catch up with"
        )
    if explicit is None:
        return sorted(set(known))
    wanted = list(dict.fromkeys(explicit))
    missing = [s for s in wanted if s not in set(known)]
    if missing:
        raise SourceNotReadError(
            f"job {job!r} never read {', '.join(s.display for s in missing)} "
            f"(it reads {', '.join(s.display for s in sorted(set(known)))})"
        )
    return wanted


# ---------------------------------------------------------------------------------
# The whole check, as the sensor and the trigger run it
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatchUpSpec:
    """Everything one check needs; plain values, so a trigger can serialize it.

    Exactly one of ``job`` (progress from the lineage store) and ``consumer_id``
    (progress from the sources' consumer files) is set. ``sources`` narrows a job's
    sources (or, for a consumer, names them: required there, since a consumer file
    says nothing about which tables it belongs to).
    """

    warehouse: str
    table: str
    branch: str = MAIN_BRANCH
    job: str | None = None
    consumer_id: str | None = None
    sources: tuple[SourceRef, ...] | None = None
    max_lag_snapshots: int = 0
    catalog_options: Mapping[str, str] = field(default_factory=dict)
    #: a job the store does not know yet is "not caught up" rather than an error
    wait_for_job_start: bool = False

    def __post_init__(self) -> None:
        if bool(self.job) == bool(self.consumer_id):
            raise InvalidArgumentError(
                "give exactly one of job (progress from the lineage store) and "
                "consumer_id (progress from Paimon consumer files)"
            )
        if self.consumer_id and not self.sources:
            raise InvalidArgumentError(
                "consumer_id needs explicit sources (the tables whose consumer/ folder "
                "holds its progress), e.g. sources=['db.source']"
            )
        if self.max_lag_snapshots < 0:
            raise InvalidArgumentError(
                f"max_lag_snapshots must be >= 0, got {self.max_lag_snapshots}"
            )
        parse_table_name(self.table)
        if self.sources is not None:
            object.__setattr__(self, "sources", tuple(SourceRef.parse(s) for s in self.sources))

    @property
    def sink(self) -> SourceRef:
        return SourceRef.parse({"table": self.table, "branch": self.branch})


def check_catch_up(
    spec: CatchUpSpec,
    store: LineageProgressSource | None = None,
    catalog: Any = None,
) -> CatchUpResult:
    """Run one catch-up check: validate the sink, find sources and progress, compare.

    ``store`` is required when ``spec.job`` is set. ``catalog`` defaults to one opened
    on ``spec.warehouse``. Raises ``CatchUpError`` / ``TableNotFoundError`` /
    ``BranchNotFoundError`` for what waiting cannot fix; anything else (I/O, a store
    outage) is for the caller to classify with
    ``lineage.retry.outlasts_a_poll``.
    """
    from .catalog import load_table, open_catalog

    if catalog is None:
        catalog = open_catalog(spec.warehouse, dict(spec.catalog_options))
    sink = spec.sink
    load_table(catalog, sink.name, sink.branch)  # unknown table/branch fail here

    pending: str | None = None
    if spec.job:
        if store is None:
            raise InvalidArgumentError("job given but no lineage store to read its progress from")
        try:
            sources = resolve_job_sources(store, spec.job, sink, spec.sources)
        except JobNotStartedError:
            if not spec.wait_for_job_start:
                raise
            pending = f"job {spec.job!r} has recorded no lineage yet (waiting for it to start)"
            if not spec.sources:
                return CatchUpResult((), spec.max_lag_snapshots, pending=pending)
            sources = list(dict.fromkeys(spec.sources))  # known sources, nothing consumed yet
    else:
        sources = list(dict.fromkeys(spec.sources or ()))

    consumed: dict[SourceRef, int | None] = {}
    latest: dict[SourceRef, int | None] = {}
    kinds: dict[SourceRef, Callable[[int], str | None]] = {}
    for source in sources:
        table = load_table(catalog, source.name, source.branch)
        latest[source] = table_latest_snapshot_id(table)
        kinds[source] = commit_kind_reader(table)
        if spec.job and store is not None:  # a job without a store was refused above
            by_identity = getattr(store, "consumed_snapshots", None)
            if callable(by_identity):
                consumed[source] = consumed_live(functools.partial(_page, by_identity, spec.job, source), table)
            else:
                consumed[source] = store.consumed(spec.job, source)
        else:
            consumed[source] = consumed_from_consumer_file(table, str(spec.consumer_id), source)
    result = compute_catch_up(sources, consumed, latest, spec.max_lag_snapshots, kinds)
    if pending is not None:  # never "caught up" before the job has recorded anything
        return CatchUpResult(result.sources, result.max_lag_snapshots, pending=pending)
    return result
