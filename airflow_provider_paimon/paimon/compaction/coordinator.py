"""The compact coordinator of a streaming writer: small files per partition, kept incrementally.

Paimon's streaming sinks for append tables without buckets run a *compact
coordinator* beside the writer (``AppendCompactCoordinator``): it keeps the table's
small files per partition and, when a partition has enough of them, hands a
compaction task to a worker. This is that coordinator, without Spark or Airflow.

It never scans the table more than once: it is seeded from the live files of one
snapshot, then follows the table snapshot by snapshot, applying each snapshot's own
*delta* manifests (the files that commit added and deleted). The stream's own
commits, other writers' appends, overwrites and COMPACT commits (ours or a
``CompactionOperator``'s) all arrive that way, so the view is the live small files of
the latest snapshot it has read. When it falls too far behind, or a snapshot it needs
has been expired, it seeds again from a scan.

Which files are rewritten together is decided by the batch planner's own rules
(``plan.pack_by_size``: ``target-file-size``, ``compaction.small-file-ratio``,
``compaction.min.file-num``, ``source.split.open-file-cost``), so for the same table
state the coordinator chooses exactly the bins ``plan_compaction`` would. Files
handed to a worker are *reserved* until the worker is done, so they are never
planned twice.

Only candidates (files below ``target x ratio``) are kept, so memory is bounded by
the small files alive, which is what compaction keeps small; the seeding scan streams
raw manifest entries (``raw_plan``) and builds file metadata for those files only. Fixed-bucket tables are
not handled here (their compaction must keep each bucket's order, which needs every
file of the bucket): ``CompactCoordinator`` refuses them and the sink leaves them to
``CompactionOperator``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.table.bucket_mode import BucketMode

from ..manifest_reader import KIND_ADD
from .errors import NotCompactableError
from .options import CompactionOptions
from .plan import CompactionBin, _is_candidate, _sort_key, check_compactable, pack_by_size
from .raw_plan import RAW_READ_ERRORS, FileMetaBuilder, LiveRawEntries, fast_plan_reason, paused_gc
from .scan import latest_snapshot, live_entries, table_name

log = logging.getLogger(__name__)

#: Further behind than this many snapshots, a scan is cheaper than reading each delta.
DEFAULT_MAX_CATCH_UP = 200


@dataclass
class _Slot:
    """One small file of the view, with where it lives."""

    file: Any  # DataFileMeta (with stats, as the planner's scan keeps them)
    total_buckets: int


class SnapshotView:
    """Files per (partition, bucket) of one table's latest snapshot, updated from commit deltas.

    Subclasses say which files they keep (``_keep``); the view is seeded by one scan
    and then follows the table snapshot by snapshot.
    """

    def __init__(self, table: Any, max_catch_up: int = DEFAULT_MAX_CATCH_UP) -> None:
        self.table = table
        self.max_catch_up = max_catch_up
        self.snapshot_id: int | None = None  # newest snapshot applied to the view
        self.scans = 0  # full scans made (seed + re-seeds)
        self.deltas = 0  # snapshot deltas applied
        self._files: dict[tuple, dict[str, _Slot]] = {}  # (partition, bucket) -> name -> slot
        self._reserved: set[tuple] = set()  # (partition, bucket, file name) handed to a worker

    def _keep(self, file: Any) -> bool:
        return True

    # -- following the table ----------------------------------------------------

    def seed(self, snapshot: Any = None) -> None:
        """Build the view from a scan of ``snapshot`` (default: the latest)."""
        snap = snapshot if snapshot is not None else latest_snapshot(self.table)
        self._files = {}
        self._seed_from(snap)
        self.snapshot_id = snap.id if snap is not None else 0
        self.scans += 1

    def _seed_from(self, snapshot: Any) -> None:
        """Fill the view from pypaimon's scan of ``snapshot`` (every live entry)."""
        for entry in live_entries(self.table, snapshot):
            self._add(entry)

    def catch_up(self, until: int | None = None) -> int:
        """Apply the deltas of the snapshots after the view's, up to ``until`` (default latest).

        Returns how many snapshot deltas were applied; re-seeds from a scan (and returns
        0) when it was never seeded, is more than ``max_catch_up`` snapshots behind, or a
        snapshot in between no longer exists (expired).
        """
        manager = self.table.snapshot_manager()
        if until is None:
            latest = manager.get_latest_snapshot()
            until = latest.id if latest is not None else 0
        if self.snapshot_id is None or until - self.snapshot_id > self.max_catch_up or until < self.snapshot_id:
            self.seed(manager.get_snapshot_by_id(until) if until else None)
            return 0
        applied = 0
        for snapshot_id in range(self.snapshot_id + 1, until + 1):
            snapshot = manager.get_snapshot_by_id(snapshot_id)
            if snapshot is None:
                log.info("paimon coordinator: snapshot %d of %s is gone; rescanning",
                         snapshot_id, table_name(self.table))
                self.seed(manager.get_snapshot_by_id(until))
                return 0
            self.apply(snapshot)
            applied += 1
        return applied

    def apply(self, snapshot: Any) -> None:
        """Apply one snapshot's delta (it must follow the view's snapshot)."""
        if self.snapshot_id is not None and snapshot.id != self.snapshot_id + 1:
            raise ValueError(
                f"snapshot {snapshot.id} does not follow the coordinator's snapshot {self.snapshot_id}"
            )
        for entry in delta_entries(self.table, snapshot):
            if entry.kind == KIND_ADD:
                self._add(entry)
            else:
                self._remove(entry)
        self.snapshot_id = snapshot.id
        self.deltas += 1

    def _add(self, entry: Any) -> None:
        if not self._keep(entry.file):
            return
        key = (tuple(entry.partition.values), entry.bucket)
        self._files.setdefault(key, {})[entry.file.file_name] = _Slot(entry.file, entry.total_buckets)

    def _remove(self, entry: Any) -> None:
        key = (tuple(entry.partition.values), entry.bucket)
        files = self._files.get(key)
        if files is None:
            return
        files.pop(entry.file.file_name, None)
        self._reserved.discard((*key, entry.file.file_name))
        if not files:
            del self._files[key]

    def bucket_files(self) -> dict[tuple, list[Any]]:
        """(partition, bucket) -> the view's files there."""
        return {key: [s.file for s in slots.values()] for key, slots in self._files.items()}

    def total_buckets(self) -> dict[tuple, int]:
        return {key: next(iter(slots.values())).total_buckets for key, slots in self._files.items() if slots}

    def reserve(self, bins: list[CompactionBin]) -> None:
        """Files of ``bins`` are being rewritten: do not plan them again."""
        for b in bins:
            self._reserved.update((b.partition, b.bucket, f.file_name) for f in b.files)

    def release(self, bins: list[CompactionBin]) -> None:
        """A worker gave ``bins`` up (or its commit is applied): plan them again if still small."""
        for b in bins:
            self._reserved.difference_update((b.partition, b.bucket, f.file_name) for f in b.files)


class CompactCoordinator(SnapshotView):
    """Live small files per (partition, bucket) of one table, updated from commit deltas."""

    def __init__(
        self, table: Any, options: CompactionOptions, max_catch_up: int = DEFAULT_MAX_CATCH_UP
    ) -> None:
        check_compactable(table)
        if table.bucket_mode() != BucketMode.BUCKET_UNAWARE:
            raise NotCompactableError(
                f"{table_name(table)} has fixed buckets; a streaming writer's coordinator only "
                "compacts append tables without buckets (bucket = -1): compact it with "
                "CompactionOperator and set write-only=true on the stream"
            )
        super().__init__(table, max_catch_up)
        self.options = options

    def _keep(self, file: Any) -> bool:
        return _is_candidate(file, self.options)

    def _seed_from(self, snapshot: Any) -> None:
        """Stream the snapshot's raw entries and build file metadata for small files only
        (``raw_plan``), so seeding a table of many large files costs what it keeps."""
        if fast_plan_reason(self.table) is not None:
            super()._seed_from(snapshot)
            return
        builder = FileMetaBuilder(self.table)
        try:
            with paused_gc():
                for partition, e in LiveRawEntries(self.table, snapshot):
                    if _is_candidate(e, self.options):
                        self._files.setdefault((partition, e.bucket), {})[e.file_name] = _Slot(
                            builder.build(partition, e), e.total_buckets)
        except RAW_READ_ERRORS as err:
            log.warning("paimon coordinator: seeding %s with pypaimon's scan: the fast manifest reader "
                        "failed (%s: %s)", table_name(self.table), type(err).__name__, err)
            self._files = {}
            super()._seed_from(snapshot)

    # -- deciding ------------------------------------------------------------------

    def plan(self) -> list[CompactionBin]:
        """The bins the planner's rules choose among the unreserved small files."""
        bins: list[CompactionBin] = []
        for key in sorted(self._files, key=_sort_key):
            slots = self._files[key]
            free = [s.file for name, s in slots.items() if (*key, name) not in self._reserved]
            if len(free) < 2:
                continue
            total_buckets = next(iter(slots.values())).total_buckets
            for files in pack_by_size(free, self.options):
                bins.append(CompactionBin(partition=key[0], bucket=key[1],
                                          total_buckets=total_buckets, files=tuple(files)))
        return bins

    # -- inspection (tests, logs) ------------------------------------------------

    @property
    def small_files(self) -> int:
        return sum(len(files) for files in self._files.values())

    @property
    def reserved(self) -> int:
        return len(self._reserved)

    def small_file_names(self) -> dict[tuple, set[str]]:
        return {key: set(files) for key, files in self._files.items()}


def delta_entries(table: Any, snapshot: Any) -> list[Any]:
    """The manifest entries (ADD and DELETE, with stats) of ``snapshot``'s own delta."""
    metas = ManifestListManager(table).read_delta(snapshot)
    files = ManifestFileManager(table)
    out: list[Any] = []
    for meta in metas:
        out.extend(files.read(meta.file_name, drop_stats=False, file_size=meta.file_size))
    return out
