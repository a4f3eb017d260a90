"""Lineage across replace-main and fast-forward: main's new snapshot comes from the branch.

After ``replace-main fix`` main's new snapshot N reads exactly as branch ``fix``'s
snapshot X, but no Spark job wrote N, so the capture has no row for it and
``paimon-lineage upstream db.t N`` would find nothing. The branch job records the link
as one batch of a job of its own (``paimon.replace_main`` / ``paimon.fast_forward``):
source ``(db, t, fix, X)``, sink ``(db, t, main, N)``. Upstream of main N is then the
branch snapshot, and one hop further the branch snapshot's own upstream (the corrected
job's sources); downstream of X reaches main N.

Recording is idempotent (a retried task does not add a second batch): a link whose
sink row already exists is not recorded again.
"""

from __future__ import annotations

from dataclasses import dataclass

from .entities import SnapshotRef
from .store import LineageStore

REPLACE_MAIN_JOB = "paimon.replace_main"
FAST_FORWARD_JOB = "paimon.fast_forward"
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
        return {
            "job": self.job,
            "barrier_id": self.barrier_id,
            "source": f"{self.source.database}.{self.source.table}@{self.source.branch}:{self.source.snapshot_id}",
            "sink": f"{self.sink.database}.{self.sink.table}@{self.sink.branch}:{self.sink.snapshot_id}",
            "recorded": self.recorded,
        }


def record_branch_link(
    store: LineageStore,
    operation: str,
    database: str,
    table: str,
    branch: str,
    branch_snapshot_id: int,
    main_snapshot_id: int,
) -> BranchLink:
    """Record that main's ``main_snapshot_id`` is branch ``branch``'s ``branch_snapshot_id``.

    ``operation`` is ``replace-main`` or ``fast-forward`` (it names the job).
    """
    if operation not in JOBS:
        raise ValueError(f"operation must be one of {', '.join(JOBS)}, got {operation!r}")
    job = JOBS[operation]
    source = SnapshotRef(database, table, int(branch_snapshot_id), branch)
    sink = SnapshotRef(database, table, int(main_snapshot_id))
    for row in store.sink_data_lineages(
        job=job, database=database, table=table, branch=sink.branch, snapshot_id=sink.snapshot_id
    ):
        sources = store.source_data_lineages(job=job, barrier_id=row.barrier_id, database=database, table=table)
        if any(s.branch == branch and s.snapshot_id == source.snapshot_id for s in sources):
            return BranchLink(job, row.barrier_id, source, sink, recorded=False)
    barrier_id = store.next_barrier_id(job)
    store.record_batch(job, barrier_id, sources=[source], sinks=[sink])
    return BranchLink(job, barrier_id, source, sink, recorded=True)
