"""Lineage across replace-main and fast-forward: main's new snapshot comes from the branch.

After ``replace-main fix`` main's new snapshot N reads exactly as branch ``fix``'s
snapshot X, but no Spark job wrote N, so the capture has no row for it and
``paimon-lineage upstream db.t N`` would find nothing. The branch job records the link
as one batch of a job of its own (``paimon.replace_main`` / ``paimon.fast_forward``):
source ``(db, t, fix, X)``, sink ``(db, t, main, N)``. Upstream of main N is then the
branch snapshot, and one hop further the branch snapshot's own upstream (the corrected
job's sources); downstream of X reaches main N.

Both rows carry the snapshots' identities (``paimon.snapshot_identity``): main@N is a
new commit (replace-main writes a new snapshot) whose rows are the branch commit's.
``record_link`` is the general form (any source and sink of one table), which the
history events use for fast-forward copies and rollback-as-latest too
(``history_events``).

Recording is idempotent (a retried task does not add a second batch): a link whose
sink row already exists is not recorded again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..paimon.snapshot_identity import SnapshotIdentity
from .entities import SnapshotRef
from .store import LineageStore

REPLACE_MAIN_JOB = "paimon.replace_main"
FAST_FORWARD_JOB = "paimon.fast_forward"
ROLLBACK_JOB = "paimon.rollback"
#: Jobs whose barriers are history links (a snapshot's rows come from another one), not
#: data jobs: a cascade never re-runs them.
LINK_JOBS = frozenset({REPLACE_MAIN_JOB, FAST_FORWARD_JOB, ROLLBACK_JOB})
JOBS = {"replace-main": REPLACE_MAIN_JOB, "fast-forward": FAST_FORWARD_JOB}


@dataclass(frozen=True)
class BranchLink:
    """What was recorded: ``job``'s barrier linking branch snapshot -> main snapshot."""

    job: str
    barrier_id: int
    source: SnapshotRef
    sink: SnapshotRef
    recorded: bool  # False: the same link was already in the store

    def to_dict(self) -> dict[str, object]:
        def name(ref: SnapshotRef) -> str:
            return f"{ref.database}.{ref.table}@{ref.branch}:{ref.snapshot_id}"

        out: dict[str, object] = {"job": self.job, "barrier_id": self.barrier_id, "source": name(self.source),
                                  "sink": name(self.sink), "recorded": self.recorded}
        for side, ref in (("source", self.source), ("sink", self.sink)):
            if ref.identity is not None:
                out[f"{side}_identity"] = ref.identity.digest
        return out


def record_link(
    store: LineageStore,
    job: str,
    database: str,
    table: str,
    source_branch: str,
    source_snapshot_id: int,
    source_identity: SnapshotIdentity | None,
    sink_branch: str,
    sink_snapshot_id: int,
    sink_identity: SnapshotIdentity | None,
) -> BranchLink:
    """Record that ``sink``'s rows are ``source``'s (one barrier of ``job``), once.

    A link whose sink row already names the same source (and, where both are known, the
    same commits) is not recorded again: a retried task adds nothing.
    """
    source = SnapshotRef(database, table, int(source_snapshot_id), source_branch, source_identity)
    sink = SnapshotRef(database, table, int(sink_snapshot_id), sink_branch, sink_identity)
    for row in store.sink_data_lineages(
        job=job, database=database, table=table, branch=sink.branch, snapshot_id=sink.snapshot_id
    ):
        if row.retracted_at is not None or not _same(row.identity, sink_identity):
            continue
        sources = store.source_data_lineages(job=job, barrier_id=row.barrier_id, database=database, table=table)
        if any(s.branch == source.branch and s.snapshot_id == source.snapshot_id and _same(s.identity, source_identity)
               for s in sources):
            return BranchLink(job, row.barrier_id, source, sink, recorded=False)
    barrier_id = store.next_barrier_id(job)
    store.record_batch(job, barrier_id, sources=[source], sinks=[sink])
    return BranchLink(job, barrier_id, source, sink, recorded=True)


def _same(a: SnapshotIdentity | None, b: SnapshotIdentity | None) -> bool:
    return a is None or b is None or a == b


def record_branch_link(
    store: LineageStore,
    operation: str,
    database: str,
    table: str,
    branch: str,
    branch_snapshot_id: int,
    main_snapshot_id: int,
    *,
    branch_identity: SnapshotIdentity | None = None,
    main_identity: SnapshotIdentity | None = None,
) -> BranchLink:
    """Record that main's ``main_snapshot_id`` is branch ``branch``'s ``branch_snapshot_id``.

    ``operation`` is ``replace-main`` or ``fast-forward`` (it names the job); the
    identities are the two snapshots' commits (``paimon.snapshot_identity``).
    """
    if operation not in JOBS:
        raise ValueError(f"operation must be one of {', '.join(JOBS)}, got {operation!r}")
    return record_link(store, JOBS[operation], database, table, branch, branch_snapshot_id, branch_identity,
                       "main", main_snapshot_id, main_identity)
