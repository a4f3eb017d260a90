"""Plan a streaming read of a Paimon table: which data or changelog files each range adds.

A streaming reader needs three answers, all pure functions of the table's metadata
so that a range planned twice (after a crash, on a replayed micro-batch) yields the
same files:

* where to start (``scan.mode`` and friends, or a consumer's saved position);
* how far one micro-batch may go (rate limits, the ``availableNow`` target);
* which data files a range of snapshots adds.

Paimon's rules are followed (``DeltaFollowUpScanner`` / ``StartingScanner`` in Java):
the default start reads the latest snapshot in full, then every new APPEND snapshot's
added files. COMPACT snapshots only rewrite files that were already read, so they are
skipped: a compacted row is never delivered twice. OVERWRITE snapshots are skipped
unless ``streaming-read-overwrite`` is true; an append stream cannot retract rows, so
then only the files an OVERWRITE adds are read (documented in docs/streaming.md).

Positions are :class:`StreamOffset` values: ``next_snapshot`` is the first snapshot
not yet read, exactly the ``nextSnapshot`` Paimon stores for a consumer.

Primary-key tables are read as their changelog, as Paimon's follow-up scanners do: with
a ``changelog-producer`` (``input``, ``full-compaction``, ``lookup``) every snapshot
whose changelog manifest lists files (``ChangelogFollowUpScanner``: the writer's
APPEND snapshots for ``input``, COMPACT ones for ``full-compaction``), else the files
each APPEND snapshot added (``DeltaFollowUpScanner``, the ``none`` semantics: each
commit's rows as its writer merged them, retracts included). Those files are read
unmerged (Paimon's streaming splits), each row with its kind; the full read of a
start snapshot is the merged table. ``from-file-creation-time`` is refused for them
(a subset of a bucket's files is no state of the table).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgumentError, SnapshotNotFoundError
from .lsm.changelog import changelog_producer
from .lsm.engines import options_map
from .option_values import bool_option, int_option

# scan.mode values (Paimon's names). "full" is Paimon's deprecated alias of latest-full.
SCAN_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "from-file-creation-time",
    "compacted-full",
)
_UNSUPPORTED_MODES = {
    "incremental": "it is a batch-only mode (use a batch read with incremental-between)",
    "from-creation-timestamp": "use 'from-timestamp' or 'from-file-creation-time'",
}

APPEND = "APPEND"
COMPACT = "COMPACT"
OVERWRITE = "OVERWRITE"
NOT_STARTED = 0  # next_snapshot of the initial offset: "resolve the start on first use"
BATCH_IDENTIFIER = (1 << 63) - 1  # a batch commit's identifier (Java's Long.MAX_VALUE)


@dataclass(frozen=True)
class StreamOffset:
    """A position in a table's snapshot sequence, as Spark's JSON offset.

    ``next_snapshot``: first snapshot not read yet (0 = not started).
    ``full_snapshot``: set on the first range only, when it begins with a full read of
    that snapshot. ``start_snapshot``: set on the first range only: where its
    incremental part starts, so a range replayed from the initial offset is planned
    exactly as it was the first time.

    ``table`` (``db.table``), ``branch`` and ``warehouse`` name what the position is in,
    so a checkpoint can be checked against the query reading it and lineage capture
    can name the source from the offset alone. They are optional (offsets written
    before they existed have none) and not part of equality: two offsets are the same
    position when their snapshots are.

    ``data_snapshot`` is set when the last snapshots below ``next_snapshot`` are COMPACT
    ones (passed over, their rows already read): the newest snapshot below it that
    changed data, i.e. the snapshot whose rows the position has read. Lineage records
    it as the source snapshot, since a COMPACT snapshot is never a sink snapshot of the
    lineage store (a hop up from it would find nothing). Not part of equality either.

    ``lineage_commit`` is that snapshot's identity (``paimon.snapshot_identity``:
    ``{"commitUser", "commitIdentifier", "timeMillis"}``) as read when the offset was
    made, so lineage records which commit the batch read, not only its id (a rollback
    can give the id to another commit). Optional, not part of equality.
    """

    next_snapshot: int
    full_snapshot: int | None = None
    start_snapshot: int | None = None
    table: str | None = field(default=None, compare=False)
    branch: str | None = field(default=None, compare=False)
    warehouse: str | None = field(default=None, compare=False)
    data_snapshot: int | None = field(default=None, compare=False)
    lineage_commit: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nextSnapshot": int(self.next_snapshot)}
        if self.full_snapshot is not None:
            out["fullSnapshot"] = int(self.full_snapshot)
        if self.start_snapshot is not None:
            out["startSnapshot"] = int(self.start_snapshot)
        if self.data_snapshot is not None:
            out["dataSnapshot"] = int(self.data_snapshot)
        for key, value in (("table", self.table), ("branch", self.branch), ("warehouse", self.warehouse)):
            if value is not None:
                out[key] = str(value)
        if self.lineage_commit is not None:
            out["lineageCommit"] = dict(self.lineage_commit)
        return out

    @staticmethod
    def from_json(value: Mapping[str, Any]) -> StreamOffset:
        try:
            return StreamOffset(
                next_snapshot=int(value["nextSnapshot"]),
                full_snapshot=_opt_int(value.get("fullSnapshot")),
                start_snapshot=_opt_int(value.get("startSnapshot")),
                table=_opt_str(value.get("table")),
                branch=_opt_str(value.get("branch")),
                warehouse=_opt_str(value.get("warehouse")),
                data_snapshot=_opt_int(value.get("dataSnapshot")),
                lineage_commit=value["lineageCommit"] if isinstance(value.get("lineageCommit"), Mapping) else None,
            )
        except (KeyError, TypeError, ValueError):
            raise InvalidArgumentError(
                f"offset {dict(value)!r} is not a paimon stream offset (expected "
                "{'nextSnapshot': N}); was the checkpoint written by another source?"
            ) from None

    @property
    def started(self) -> bool:
        return self.next_snapshot != NOT_STARTED

    @property
    def consumed_snapshot(self) -> int | None:
        """The last snapshot this position has read (lineage's source snapshot)."""
        return self.next_snapshot - 1 if self.next_snapshot > 1 else None

    @property
    def lineage_snapshot(self) -> int | None:
        """The snapshot whose rows this position has read: ``data_snapshot`` or the consumed one."""
        return self.data_snapshot if self.data_snapshot is not None else self.consumed_snapshot


class OffsetTableMismatchError(InvalidArgumentError):
    """A checkpoint's stream offset names another table or branch than the query reads."""


def check_offset_table(offset: StreamOffset, table: str, branch: str, raw: Any = None) -> None:
    """Refuse ``offset`` when it names a table or branch other than ``table``/``branch``.

    Offsets without a name (written before offsets carried one) are accepted.
    """
    other_table = offset.table is not None and offset.table != table
    other_branch = offset.branch is not None and offset.branch != branch
    if other_table or other_branch:
        raise OffsetTableMismatchError(
            f"the checkpoint's offset {dict(raw) if raw is not None else offset.to_json()!r} "
            f"is a position in {offset.table or table} (branch {offset.branch or branch}), "
            f"but this query reads {table} (branch {branch}); a checkpoint belongs to the "
            "stream it was written by: give this query its own checkpointLocation"
        )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(value)
    return value


@dataclass(frozen=True)
class StreamScanConfig:
    """The streaming-read options, validated."""

    mode: str = "latest-full"
    snapshot_id: int | None = None
    timestamp_millis: int | None = None
    file_creation_time_millis: int | None = None
    max_snapshots_per_trigger: int | None = None
    max_files_per_trigger: int | None = None
    read_overwrite: bool = False


def parse_stream_scan_config(options: Mapping[str, str]) -> StreamScanConfig:
    """Read ``scan.*`` and rate-limit options; resolve ``default`` as Paimon does."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    mode = (opts.get("scan.mode") or "default").strip().lower()
    if mode in _UNSUPPORTED_MODES:
        raise InvalidArgumentError(
            f"scan.mode {mode!r} is not supported for streaming reads: {_UNSUPPORTED_MODES[mode]}"
        )
    if mode not in SCAN_MODES:
        raise InvalidArgumentError(
            f"scan.mode {mode!r} is unknown; use one of: {', '.join(SCAN_MODES)}"
        )
    snapshot_id = int_option(opts, "scan.snapshot-id", 1)
    timestamp = int_option(opts, "scan.timestamp-millis", 0)
    creation = int_option(opts, "scan.file-creation-time-millis", 0)
    given = [k for k, v in (("scan.snapshot-id", snapshot_id), ("scan.timestamp-millis", timestamp),
                            ("scan.file-creation-time-millis", creation)) if v is not None]
    if mode == "default":
        if len(given) > 1:
            raise InvalidArgumentError(
                f"options {', '.join(given)} conflict: a streaming read starts from one of them"
            )
        mode = {
            "scan.snapshot-id": "from-snapshot",
            "scan.timestamp-millis": "from-timestamp",
            "scan.file-creation-time-millis": "from-file-creation-time",
        }.get(given[0] if given else "", "latest-full")
    elif mode == "full":
        mode = "latest-full"
    needs = {
        "from-snapshot": ("scan.snapshot-id", snapshot_id),
        "from-snapshot-full": ("scan.snapshot-id", snapshot_id),
        "from-timestamp": ("scan.timestamp-millis", timestamp),
        "from-file-creation-time": ("scan.file-creation-time-millis", creation),
    }
    if mode in needs and needs[mode][1] is None:
        raise InvalidArgumentError(f"scan.mode {mode!r} needs option {needs[mode][0]!r}")
    if mode in ("latest-full", "latest", "compacted-full") and given:
        raise InvalidArgumentError(
            f"scan.mode {mode!r} takes no start point, but {', '.join(given)} was given; "
            "drop it or use the matching from-* mode"
        )
    read_overwrite = bool_option(opts, "streaming-read-overwrite", False)
    return StreamScanConfig(
        mode=mode,
        snapshot_id=snapshot_id,
        timestamp_millis=timestamp,
        file_creation_time_millis=creation,
        max_snapshots_per_trigger=int_option(opts, "max-snapshots-per-trigger", 1),
        max_files_per_trigger=int_option(opts, "max-files-per-trigger", 1),
        read_overwrite=read_overwrite,
    )


class StreamPlanner:
    """Snapshot-range planning over one table (a branch is just another table object).

    Holds pypaimon's snapshot and manifest readers; every method is deterministic
    given the table's files, so it can run on the driver for each micro-batch.
    """

    def __init__(self, table: Any, config: StreamScanConfig) -> None:
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.manifest_list_manager import ManifestListManager

        self.table = table
        self.config = config
        self.primary_keys = bool(getattr(table, "is_primary_key_table", False))
        self.changelog = False  # read changelog manifests (a primary key with a producer)
        if self.primary_keys:
            self.changelog = check_primary_key_stream(table, config) != "none"
        self.snapshots = table.snapshot_manager()
        self._manifest_lists = ManifestListManager(table)
        self._manifests = ManifestFileManager(table)

    # ----------------------------------------------------------------- snapshots
    def latest_id(self) -> int | None:
        latest = self.snapshots.get_latest_snapshot()
        return latest.id if latest is not None else None

    def earliest_id(self) -> int | None:
        if self.latest_id() is None:
            return None
        return self.snapshots.try_get_earliest_snapshot().id

    def snapshot(self, snapshot_id: int) -> Any:
        snap = self.snapshots.get_snapshot_by_id(snapshot_id)
        if snap is None:
            earliest = self.earliest_id()
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} of {self.table.identifier} does not exist "
                f"(earliest kept: {earliest}, latest: {self.latest_id()}); it expired or was "
                "never written. Use a consumer-id so that expiry keeps unread snapshots, or "
                "restart the query from a new checkpoint"
            )
        return snap

    def data_snapshot_before(self, next_snapshot: int, floor: int = 1) -> int | None:
        """The newest non-COMPACT snapshot below ``next_snapshot`` when the ones after it are COMPACT.

        None when snapshot ``next_snapshot - 1`` is not COMPACT (it is the answer
        itself), or when no such snapshot is found down to ``floor`` (expired, or a
        table that starts with COMPACT snapshots): lineage then keeps the consumed id.
        """
        position = next_snapshot - 1
        while position >= max(1, floor):
            snap = self.snapshots.get_snapshot_by_id(position)
            if snap is None:
                return None
            if snap.commit_kind != COMPACT:
                return None if position == next_snapshot - 1 else position
            position -= 1
        return None

    def is_scannable(self, snap: Any) -> bool:
        """APPEND snapshots carry new rows; COMPACT never does; OVERWRITE only if asked.

        With a changelog producer: the snapshots whose changelog manifest lists files.
        """
        if self.changelog:
            return bool(snap.changelog_manifest_list)
        if snap.commit_kind == APPEND:
            return True
        return snap.commit_kind == OVERWRITE and self.config.read_overwrite

    # --------------------------------------------------------------------- start
    def resolve_start(self, consumer_next: int | None = None) -> StreamOffset:
        """Where a new query starts. A saved consumer position wins over ``scan.mode``.

        Returns an offset whose ``full_snapshot`` (if set) is read in full first and
        whose ``next_snapshot`` is the first snapshot read incrementally.
        """
        latest = self.latest_id()
        if consumer_next is not None:
            return StreamOffset(next_snapshot=max(1, consumer_next))
        mode, cfg = self.config.mode, self.config
        if mode in ("latest-full", "from-file-creation-time"):
            if latest is None:
                # Empty table: the first snapshot that appears is read in full.
                return StreamOffset(next_snapshot=1)
            return StreamOffset(next_snapshot=latest + 1, full_snapshot=latest)
        if mode == "latest":
            return StreamOffset(next_snapshot=(latest or 0) + 1)
        if mode == "from-snapshot":
            return StreamOffset(next_snapshot=self._check_start_id(cfg.snapshot_id, latest))
        if mode == "from-snapshot-full":
            sid = self._check_start_id(cfg.snapshot_id, latest)
            self.snapshot(sid)
            return StreamOffset(next_snapshot=sid + 1, full_snapshot=sid)
        if mode == "from-timestamp":
            return StreamOffset(next_snapshot=self._first_at_or_after(cfg.timestamp_millis, latest))
        if mode == "compacted-full":
            if latest is None:
                return StreamOffset(next_snapshot=1)  # as latest-full on an empty table
            start = self.latest_full_compaction(latest) or latest
            return StreamOffset(next_snapshot=start + 1, full_snapshot=start)
        raise InvalidArgumentError(f"scan.mode {mode!r} is not supported")  # pragma: no cover

    def latest_full_compaction(self, latest: int) -> int | None:
        """The newest snapshot ``compacted-full`` starts from (:func:`latest_full_compaction`)."""
        return latest_full_compaction(self.table, latest, self.snapshots)

    def _check_start_id(self, snapshot_id: int | None, latest: int | None) -> int:
        assert snapshot_id is not None
        if latest is not None:
            earliest = self.earliest_id()
            if earliest is not None and snapshot_id < earliest:
                raise SnapshotNotFoundError(
                    f"scan.snapshot-id {snapshot_id} of {self.table.identifier} has expired "
                    f"(earliest kept: {earliest}, latest: {latest})"
                )
        if snapshot_id > (latest or 0) + 1:
            raise SnapshotNotFoundError(
                f"scan.snapshot-id {snapshot_id} of {self.table.identifier} is beyond the "
                f"latest snapshot ({latest}); give at most {(latest or 0) + 1}"
            )
        return snapshot_id

    def _first_at_or_after(self, timestamp: int | None, latest: int | None) -> int:
        """First snapshot committed at or after ``timestamp`` (Paimon's from-timestamp)."""
        assert timestamp is not None
        if latest is None:
            return 1
        before = self.snapshots.earlier_or_equal_time_mills(timestamp - 1)
        if before is None:
            return self.earliest_id() or 1
        return before.id + 1

    # --------------------------------------------------------------- rate limits
    def advance(
        self,
        next_snapshot: int,
        cap: int | None = None,
        max_snapshots: int | None = None,
        max_files: int | None = None,
        taken_files: int = 0,
    ) -> int:
        """The ``next_snapshot`` after reading from ``next_snapshot`` as far as allowed.

        ``cap`` is the last snapshot that may be read (latest, or the availableNow
        target). Rate limits count scannable snapshots and their added files; a range
        always makes progress by at least one scannable snapshot. Skipped (COMPACT)
        snapshots are passed over for free.
        """
        latest = self.latest_id()
        if latest is None:
            return next_snapshot
        if next_snapshot > latest + 1:
            raise SnapshotNotFoundError(
                f"the stream on {self.table.identifier} has read up to snapshot "
                f"{next_snapshot - 1}, but the latest snapshot is now {latest}: the table "
                "(branch) was rolled back or replaced. New commits would reuse ids the "
                "stream has passed, so it stops instead of skipping them; restart the query "
                "with a new checkpoint (and scan.mode) to read the table as it is now"
            )
        last = latest if cap is None else min(latest, cap)
        if next_snapshot <= last:
            earliest = self.earliest_id()
            if earliest is not None and next_snapshot < earliest:
                self.snapshot(next_snapshot)  # raises: expired
        position, snapshots, files = next_snapshot, 0, taken_files
        while position <= last:
            snap = self.snapshot(position)
            if self.is_scannable(snap):
                added = self._added_file_count(snap) if max_files is not None else 0
                over_files = max_files is not None and files + added > max_files
                over_count = max_snapshots is not None and snapshots + 1 > max_snapshots
                if (over_files or over_count) and (snapshots > 0 or taken_files > 0):
                    break
                snapshots += 1
                files += added
            position += 1
        return position

    def _added_file_count(self, snap: Any) -> int:
        return sum(m.num_added_files for m in self._delta_manifests(snap))

    def _delta_manifests(self, snap: Any) -> list[Any]:
        if self.changelog:
            return list(self._manifest_lists.read_changelog(snap))
        return list(self._manifest_lists.read_delta(snap))

    # ---------------------------------------------------------------- file plans
    def full_entries(self, snapshot_id: int) -> list[Any]:
        """Live data files of ``snapshot_id`` (filtered by scan.file-creation-time-millis)."""
        snap = self.snapshot(snapshot_id)
        entries = self._read_entries(self._manifest_lists.read_all(snap))
        threshold = self.config.file_creation_time_millis
        if threshold is not None:
            entries = [e for e in entries if _created_at_or_after(e.file, threshold)]
        return entries

    def delta_entries(self, snapshot_id: int) -> list[Any]:
        """Files a single snapshot adds, or nothing for a skipped snapshot."""
        snap = self.snapshot(snapshot_id)
        if not self.is_scannable(snap):
            return []
        entries = self._read_entries(self._delta_manifests(snap))
        return [e for e in entries if e.kind == 0]

    def range_entries(self, start: StreamOffset, end: StreamOffset) -> list[Any]:
        """All data files read between two offsets (``start`` exclusive, ``end`` inclusive)."""
        entries: list[Any] = []
        if end.full_snapshot is not None:
            entries.extend(self.full_entries(end.full_snapshot))
        first = end.start_snapshot if end.start_snapshot is not None else start.next_snapshot
        if end.full_snapshot is not None:
            first = max(first, end.full_snapshot + 1)
        for snapshot_id in range(first, end.next_snapshot):
            entries.extend(self.delta_entries(snapshot_id))
        return entries

    def _read_entries(self, manifest_files: list[Any]) -> list[Any]:
        if not manifest_files:
            return []
        workers = max(1, min(8, os.cpu_count() or 1))
        return list(self._manifests.read_entries_parallel(manifest_files, max_workers=workers))

    def range_splits(self, start: StreamOffset, end: StreamOffset) -> list[Any]:
        """Read splits of a range: ``splits(range_entries)``; for primary-key tables the
        full read's splits (merged) first, then each snapshot's changes (unmerged, one
        split per snapshot and bucket, in commit order)."""
        snapshot_id = end.consumed_snapshot
        if not self.primary_keys:
            return self.splits(self.range_entries(start, end), snapshot_id=snapshot_id)
        out: list[Any] = []
        first = end.start_snapshot if end.start_snapshot is not None else start.next_snapshot
        if end.full_snapshot is not None:
            out.extend(self._pk_splits(self.full_entries(end.full_snapshot), end.full_snapshot, streaming=False))
            first = max(first, end.full_snapshot + 1)
        for sid in range(first, end.next_snapshot):
            entries = self.delta_entries(sid)
            buckets: dict[tuple, list[Any]] = {}
            for e in entries:
                buckets.setdefault((tuple(e.partition.values), e.bucket), []).append(e)
            for key in sorted(buckets, key=repr):
                out.extend(self._pk_splits(buckets[key], sid, streaming=True))
        return out

    def _pk_splits(self, entries: list[Any], snapshot_id: int, streaming: bool) -> list[Any]:
        """Primary-key splits: merged (a state) or streaming (changes as written, with retracts)."""
        from pypaimon.read.scanner.primary_key_table_split_generator import (
            PrimaryKeyTableSplitGenerator,
        )

        if not entries:
            return []
        options = self.table.options
        generator = PrimaryKeyTableSplitGenerator(
            self.table, options.source_split_target_size(), options.source_split_open_file_cost(),
            deletion_files_map={}, snapshot_id=snapshot_id,
        )
        splits = generator.create_splits(entries)
        for split in splits:
            split.is_streaming = streaming
        return splits

    def splits(self, entries: Iterable[Any], snapshot_id: int | None = None) -> list[Any]:
        """pypaimon read splits for ``entries`` (packed by the table's split target size)."""
        from pypaimon.read.scanner.append_table_split_generator import AppendTableSplitGenerator

        entries = list(entries)
        if not entries:
            return []
        options = self.table.options
        generator = AppendTableSplitGenerator(
            self.table,
            options.source_split_target_size(),
            options.source_split_open_file_cost(),
            deletion_files_map={},
            snapshot_id=snapshot_id,
        )
        splits = generator.create_splits(entries)
        for split in splits:
            split.is_streaming = True
        return splits


def latest_full_compaction(table: Any, latest: int | None = None, snapshots: Any = None) -> int | None:
    """The snapshot ``scan.mode=compacted-full`` reads; None when there is none.

    Paimon's rule (``CompactedStartingScanner`` / ``FullCompactedStartingScanner``):
    the newest COMPACT snapshot; with ``full-compaction.delta-commits`` = d, only one
    whose commit identifier is a multiple of d or a batch commit's (a streaming
    writer's full compactions fall on those). The caller reads the latest snapshot when
    there is none, as Paimon does. Walks back from ``latest`` (default: the latest
    snapshot), as Paimon's does, stopping at the first match. The one home of the rule:
    streaming starts (``StreamPlanner.resolve_start``) and batch reads
    (``batch_scan.batch_scan_options``) both ask it.
    """
    snapshots = snapshots if snapshots is not None else table.snapshot_manager()
    if latest is None:
        newest = snapshots.get_latest_snapshot()
        if newest is None:
            return None
        latest = int(newest.id)
    every = int_option(options_map(table), "full-compaction.delta-commits", 1)
    earliest_snapshot = snapshots.try_get_earliest_snapshot()
    earliest = earliest_snapshot.id if earliest_snapshot is not None else 1
    for snapshot_id in range(latest, earliest - 1, -1):
        snap = snapshots.get_snapshot_by_id(snapshot_id)
        if snap is None or snap.commit_kind != COMPACT:
            continue
        identifier = int(snap.commit_identifier)
        if every is None or identifier % every == 0 or identifier == BATCH_IDENTIFIER:
            return snapshot_id
    return None


def check_primary_key_stream(table: Any, config: StreamScanConfig) -> str:
    """The changelog producer of a primary-key table a stream may read; refusals name why."""
    producer = changelog_producer(table)
    if config.mode == "from-file-creation-time":
        raise InvalidArgumentError(
            f"scan.mode 'from-file-creation-time' reads the files created after a time; "
            f"{table.identifier} has a primary key, and a subset of a bucket's files is no "
            "state of it: use 'from-timestamp' (its changes from then on) or 'latest-full'"
        )
    if config.read_overwrite and producer in ("full-compaction", "lookup"):
        raise InvalidArgumentError(
            f"streaming-read-overwrite cannot be used with changelog-producer {producer!r} "
            f"({table.identifier}): it would read changes twice (Paimon refuses it too)"
        )
    return producer


def _created_at_or_after(file_meta: Any, threshold: int) -> bool:
    millis = creation_epoch_millis(file_meta)
    return millis is None or millis >= threshold


def creation_epoch_millis(file_meta: Any) -> int | None:
    """A data file's creation time in epoch millis, as Paimon Java computes it.

    Paimon stores the writer's local wall-clock time; Java converts it with the
    system zone. pypaimon's ``creation_time_epoch_millis`` drops the milliseconds,
    which would misplace files committed within the same second as the threshold.
    """
    created = getattr(file_meta, "creation_time", None)
    if created is None:
        return None
    # A naive datetime's timestamp() interprets it in the local zone, as Java does.
    return round(created.to_local_date_time().timestamp() * 1000)
