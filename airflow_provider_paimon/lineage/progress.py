"""A job's progress as the catch-up check reads it from the lineage store.

``paimon.catchup.check_catch_up`` asks a ``LineageProgressSource`` three questions:
which tables a job reads, which it writes, and the highest snapshot it has consumed
of a source. ``StoreProgress`` answers them from a ``LineageStore``; ``NoLineageYet``
answers for a job whose store does not exist yet (it creates it with its first batch).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_paimon.paimon.catchup import SourceRef

from .queries import consumed_snapshots, max_consumed_snapshot
from .store import LineageStore


class StoreProgress:
    """``LineageProgressSource`` over a ``LineageStore``: table lineage and max consumed id."""

    def __init__(self, store: LineageStore) -> None:
        self.store = store

    def job_sources(self, job: str) -> list[SourceRef]:
        return [_ref(r) for r in self.store.source_table_lineages(job=job)]

    def job_sinks(self, job: str) -> list[SourceRef]:
        return [_ref(r) for r in self.store.sink_table_lineages(job=job)]

    def consumed(self, job: str, source: SourceRef) -> int | None:
        return max_consumed_snapshot(self.store, job, source.database, source.table, source.branch)

    def consumed_snapshots(self, job: str, source: SourceRef, *, below: int | None = None,
                           limit: int = 16) -> list[tuple[int, Any]]:
        """Consumed snapshots with their identities, newest first (``paimon.catchup.consumed_live``)."""
        return consumed_snapshots(self.store, job, source.database, source.table, source.branch,
                                  below=below, limit=limit)

    def close(self) -> None:
        self.store.close()


class NoLineageYet:
    """The progress of a job whose lineage store does not exist yet: nothing recorded."""

    def job_sources(self, job: str) -> list[SourceRef]:
        return []

    def job_sinks(self, job: str) -> list[SourceRef]:
        return []

    def consumed(self, job: str, source: SourceRef) -> int | None:
        return None

    def consumed_snapshots(self, job: str, source: SourceRef, *, below: int | None = None,
                           limit: int = 16) -> list[tuple[int, Any]]:
        return []


def _ref(row: Any) -> SourceRef:
    return SourceRef(row.database, row.table, row.branch or "main")
