"""Writers keep their primary-key table's LSM tree bounded, by Paimon Java's writer rules.

Every write adds sorted runs at level 0; Paimon's writers compact as they go
(``MergeTreeWriter`` with ``MergeTreeCompactManager``) unless ``write-only`` is true.
The rules transcribed here:

- **minor compaction**: after a commit, each bucket's sorted runs go through the
  universal picker (``num-sorted-run.compaction-trigger``, size ratio, size
  amplification; ``universal.pick``);
- **backpressure only past the stop trigger**: a stream does not wait for its
  compaction, except when a bucket holds more than ``num-sorted-run.stop-trigger``
  sorted runs (Java's ``shouldWaitForLatestCompaction``: the trigger + 3 by default);
- **first-row tables** are compacted at every commit and the commit waits for it
  (Java's ``lookup-wait`` / ``ForceUpLevel0Compaction``): their reads skip level 0, so
  a commit's rows are visible only once compacted;
- **full compaction** every ``full-compaction.delta-commits`` commits, waited for (a
  stream: when ``(batch id + 1) % N == 0``, as Paimon's Spark writer counts; a batch
  write: at each commit when N > 0); with ``changelog-producer=full-compaction`` and no
  N, every stream commit (the default of Paimon's Flink sink,
  ``GlobalFullCompactionSinkWrite``), so the changelog follows each commit;
- ``write-only=true``: none of it (compact with ``CompactionOperator``).

Batch writes (``compact_after_write``) compact the buckets they wrote and wait, as
Java's batch writers wait for compaction at ``prepareCommit``. Streams
(``LsmStreamCompaction``, driven by ``compaction.after_commit``) hand minor
compactions to the stream's background worker (``compaction.worker``: one thread,
COMPACT snapshots under ``<commitUser>-compact``, job records in the checkpoint so a
killed job's files are cleaned up) and follow the table from each commit's delta
(``compaction.coordinator.SnapshotView``), never scanning it again.

Compaction here never fails a write: the commit has landed, errors are logged.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..compaction.after_commit_policy import Decision, warn_after_commit, write_only
from ..compaction.commit import CompactChange, commit_compaction
from ..compaction.coordinator import SnapshotView
from ..compaction.errors import NotCompactableError
from ..compaction.result import CompactionResult
from ..compaction.scan import table_name
from ..compaction.worker import (
    RENAME_ATTEMPTS,
    CompactJob,
    CompactWorker,
    Fault,
    PendingStore,
    recover,
)
from .changelog import changelog_prefix, changelog_producer
from .compact import (
    check_lsm_compactable,
    compact_primary_keys,
    lsm_conflicts,
    plan_units,
    rewrite_units_locally,
    unit_changes,
)
from .engines import merge_engine
from .levels import sorted_runs
from .options import LsmOptions

log = logging.getLogger(__name__)

#: How long a commit waits for the stream's compaction when Paimon's rules say it waits.
WAIT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class WriterRules:
    """What a writer of one primary-key table does after its commits."""

    options: LsmOptions
    first_row: bool
    # full compaction every N commits (None: never by count)
    full_every: int | None

    @classmethod
    def for_table(cls, table: Any, options: Mapping[str, Any] | None, streaming: bool) -> WriterRules:
        lsm = LsmOptions.from_table(table, options)
        every = lsm.delta_commits if lsm.delta_commits else None
        if every is None and streaming and changelog_producer(table) == "full-compaction":
            every = 1
        return cls(lsm, merge_engine(table) == "first-row", every)


def compact_after_write(
    table: Any,
    written: Collection[tuple[tuple, int]],
    *,
    options: Mapping[str, Any] | None = None,
    commit_user: str = "",
    properties: Mapping[str, str] | None = None,
) -> CompactionResult | None:
    """After a batch write's commit: compact the buckets it wrote and wait (never raises).

    ``written``: the ``(partition values, bucket)`` the commit added files to;
    ``options``: the write's own options over the table's. ``None`` when nothing ran.
    """
    try:
        if not written or not table.is_primary_key_table or write_only(table, options):
            return None
        check_lsm_compactable(table)
        rules = WriterRules.for_table(table, options, streaming=False)
        mode = "full" if rules.full_every else "minor"
        result = compact_primary_keys(
            table, mode, rules.options, run_options=options, commit_user=f"{commit_user}-compact",
            snapshot_properties=properties, buckets=written, expire=False,
        )
        if result.committed:
            log.info("paimon: %s after the write to %s", result.message, table_name(table))
        return result
    except NotCompactableError as err:
        log.info("paimon: the write to %s does not compact its table (%s)", table_name(table), err)
    except Exception as err:  # noqa: BLE001 - the commit has landed; never fail it
        warn_after_commit(table, "compacting the buckets it wrote", err)
    return None


class LsmCompactWorker(CompactWorker):
    """The stream's compact worker, merging LSM units (``CompactJob.units``)."""

    def _rewrite(self, table: Any, job: CompactJob, prefix: str) -> list[CompactChange]:
        outputs = rewrite_units_locally(table)(job.units, self.options.target_file_size, prefix)
        return unit_changes(job.units, outputs)

    def _commit(self, table: Any, changes: list[CompactChange], properties: dict[str, str]) -> Any:
        return commit_compaction(table, changes, commit_user=self.commit_user, properties=properties,
                                 max_rename_attempts=RENAME_ATTEMPTS, rows_change=True,
                                 check=lsm_conflicts(table))

    def _prefixes(self, prefix: str) -> list[str]:
        return [prefix, changelog_prefix(prefix)]


class LsmStreamCompaction:
    """One stream's compaction of its primary-key table in this process (``WriterRules``)."""

    def __init__(
        self,
        table: Any,
        options: Mapping[str, Any] | None,
        commit_user: str,
        pending: PendingStore | None = None,
        fault: Fault | None = None,
        **worker_kwargs: Any,
    ) -> None:
        check_lsm_compactable(table)
        self.rules = WriterRules.for_table(table, options, streaming=True)
        self.view = SnapshotView(table)
        if pending is not None:
            recover(table, pending)
        self.worker = LsmCompactWorker(self.rules.options, f"{commit_user}-compact", pending=pending,
                                       fault=fault, **worker_kwargs)
        self.jobs_committed = 0
        self.jobs_failed = 0
        self.waits = 0  # commits that waited for a compaction (tests, the benchmark)

    def after_commit(self, table: Any, batch_id: int = -1,
                     properties: Mapping[str, str] | None = None) -> Any:
        self._collect()
        self.view.table = table
        self.view.catch_up()
        full = bool(self.rules.full_every) and batch_id >= 0 and (batch_id + 1) % (self.rules.full_every or 1) == 0
        wait = self.rules.first_row or full
        if self.worker.busy:
            if not (wait or self.over_stop_trigger()):
                return Decision("busy", level0_files=self.level0_files)
            self._wait()  # Paimon's writer waits for its latest compaction here
            self.view.catch_up()
        units = plan_units(table, self.view.bucket_files(), self.view.total_buckets(),
                           "full" if full else "minor", self.rules.options)
        if not units:
            return Decision("nothing", level0_files=self.level0_files)
        files = sum(len(u.files) for u in units)
        job = CompactJob(table, [u.bin for u in units], batch_id, dict(properties or {}), units=units)
        if not self.worker.submit(job):  # pragma: no cover - idle was checked above
            return Decision("refused", len(units), files, level0_files=self.level0_files)
        if wait:
            self._wait()
            self.view.catch_up()
            return Decision("compacted", len(units), files, level0_files=self.level0_files)
        return Decision("submitted", len(units), files, level0_files=self.level0_files)

    def _collect(self) -> None:
        for result in self.worker.results():
            if result.committed:
                self.jobs_committed += 1
            elif result.error:
                self.jobs_failed += 1

    def _wait(self) -> None:
        self.waits += 1
        if not self.worker.wait_idle(WAIT_TIMEOUT_S):
            log.warning("paimon: the compaction of %s still runs after %.0f s; the stream goes on",
                        table_name(self.view.table), WAIT_TIMEOUT_S)
        self._collect()

    def over_stop_trigger(self) -> bool:
        """Whether a bucket holds more sorted runs than ``num-sorted-run.stop-trigger``."""
        stop = self.rules.options.stop_trigger
        return any(len(sorted_runs(files)) > stop for files in self.view.bucket_files().values())

    @property
    def level0_files(self) -> int:
        return sum(1 for files in self.view.bucket_files().values() for f in files if f.level == 0)
