"""Plan a compaction the way Paimon does for append tables.

Unaware-bucket tables (``bucket = -1``), as ``AppendCompactCoordinator``: in each
partition, files smaller than ``target-file-size x compaction.small-file-ratio`` are
candidates; sorted by size, they are packed into bins, a bin being full once it has
more than one file and its size (each file counting ``source.split.open-file-cost``
extra) reaches twice the target; the leftover bin of a partition is compacted only
when it has at least ``compaction.min.file-num`` files.

Fixed-bucket append tables compact per bucket and keep the order of the bucket (a
reader may rely on it): only runs of consecutive small files, in sequence-number
order, are packed; a large file ends a run.

A bin always has at least two files: rewriting one file into one file gains nothing
and would make compaction never settle. The plan records the snapshot it was made
from; the commit re-checks every file against the latest snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pypaimon.data.timestamp import Timestamp
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.table.bucket_mode import BucketMode

from ..errors import InvalidArgumentError
from ..partitions import (
    DEFAULT_PARTITION_NAME,  # noqa: F401 - public name, kept here
    default_partition_name,
    format_partition_value,
    format_spec,
    parse_partition_spec,
)
from .errors import NotCompactableError, PartitionNotFoundError
from .options import CompactionOptions
from .raw_plan import (
    RAW_READ_ERRORS,
    FileMetaBuilder,
    LiveRawEntries,
    PartitionFilterFailedError,
    fast_plan_reason,
    live_partitions,
    paused_gc,
    scan_groups,
)
from .scan import latest_snapshot, live_entries, partition_dict, table_name

log = logging.getLogger(__name__)

PartitionFilter = Callable[[dict[str, Any]], bool]
#: ``auto``: our streamed reader when it can read the table; ``pypaimon``: pypaimon's scan.
PLANNERS = ("auto", "pypaimon")


@dataclass(frozen=True)
class CompactionBin:
    """Files of one partition and bucket that are rewritten together."""

    partition: tuple
    bucket: int
    total_buckets: int
    files: tuple  # DataFileMeta, in the order their rows are rewritten

    @property
    def file_count(self) -> int:
        return len(self.files)

    @property
    def total_bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def describe(self, partition_keys: list[str]) -> dict[str, Any]:
        return {
            "partition": {k: _jsonable(v) for k, v in zip(partition_keys, self.partition, strict=True)},
            "bucket": self.bucket,
            "files": self.file_count,
            "bytes": self.total_bytes,
            "rows": self.row_count,
        }


@dataclass
class CompactionPlan:
    """What one compaction attempt will rewrite, and what it looked at."""

    snapshot_id: int | None
    options: CompactionOptions
    partition_keys: list[str]
    bins: list[CompactionBin] = field(default_factory=list)
    files_scanned: int = 0
    bytes_scanned: int = 0
    candidates: int = 0

    @property
    def files_before(self) -> int:
        return sum(b.file_count for b in self.bins)

    @property
    def bytes_before(self) -> int:
        return sum(b.total_bytes for b in self.bins)

    @property
    def is_empty(self) -> bool:
        return not self.bins

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "options": self.options.to_dict(),
            "files_scanned": self.files_scanned,
            "bytes_scanned": self.bytes_scanned,
            "candidates": self.candidates,
            "files_before": self.files_before,
            "bytes_before": self.bytes_before,
            "bins": [b.describe(self.partition_keys) for b in self.bins],
        }


def check_compactable(table: Any) -> None:
    """Raise ``NotCompactableError`` unless ``table`` is an append table we can compact."""
    name = table_name(table)
    if table.is_primary_key_table:
        raise NotCompactableError(
            f"{name} has primary keys {list(table.primary_keys)}: this plan is the append "
            "compaction's; primary-key tables are compacted per bucket by paimon.lsm "
            "(compact() and the compact job choose it for them)"
        )
    options = table.options
    if options.deletion_vectors_enabled():
        raise NotCompactableError(
            f"{name} has deletion vectors enabled; compacting append tables with deletion "
            "vectors is not supported by this job (use Paimon's own compaction)"
        )
    if options.row_tracking_enabled() or options.data_evolution_enabled():
        raise NotCompactableError(
            f"{name} has row tracking / data evolution enabled; compacting it would have to "
            "preserve row ids, which this job does not do (use Paimon's own compaction)"
        )
    mode = table.bucket_mode()
    if mode not in (BucketMode.BUCKET_UNAWARE, BucketMode.HASH_FIXED):
        raise NotCompactableError(f"{name} has bucket mode {mode.name}, which this job cannot compact")


def plan_compaction(
    table: Any,
    options: CompactionOptions,
    partition_filter: PartitionFilter | None = None,
    snapshot: Any = None,
    planner: str = "auto",
) -> CompactionPlan:
    """Plan the bins to rewrite in ``table``'s latest snapshot (or ``snapshot``).

    ``planner``: ``auto`` streams the manifests with our reader and builds pypaimon's
    file metadata only for the files a bin rewrites (``raw_plan``), when the table is one
    it reads (``raw_plan.fast_plan_reason``), else pypaimon's scan as ``pypaimon``
    (every live entry in memory: ~2.9 KB a file measured). Both choose the same bins.
    """
    if planner not in PLANNERS:
        raise InvalidArgumentError(f"unknown compaction planner {planner!r} (one of {', '.join(PLANNERS)})")
    check_compactable(table)
    snap = snapshot if snapshot is not None else latest_snapshot(table)
    plan = CompactionPlan(
        snapshot_id=snap.id if snap is not None else None,
        options=options,
        partition_keys=list(table.partition_keys),
    )
    if planner == "auto":
        reason = fast_plan_reason(table)
        if reason is None:
            try:
                return _plan_from_raw(table, options, partition_filter, snap, plan)
            except PartitionFilterFailedError as err:
                cause = err.__cause__
                raise (cause if cause is not None else err) from None  # the caller's own error
            except RAW_READ_ERRORS as err:
                log.warning("compaction of %s is planned with pypaimon's scan: the fast manifest reader "
                            "failed (%s: %s)", table_name(table), type(err).__name__, err)
                plan.bins, plan.files_scanned, plan.bytes_scanned, plan.candidates = [], 0, 0, 0
        else:
            log.info("compaction of %s is planned with pypaimon's scan: %s", table_name(table), reason)
    return _plan_with_pypaimon(table, options, partition_filter, snap, plan)


def _plan_from_raw(table: Any, options: CompactionOptions, partition_filter: PartitionFilter | None,
                   snap: Any, plan: CompactionPlan) -> CompactionPlan:
    """The plan from streamed raw entries; file metadata built for binned files only."""
    bucketed = table.bucket_mode() == BucketMode.HASH_FIXED
    with paused_gc():
        scanned = scan_groups(LiveRawEntries(table, snap, partition_filter),
                              lambda f: _is_candidate(f, options), bucketed)
        plan.files_scanned, plan.bytes_scanned = scanned.files_scanned, scanned.bytes_scanned
        builder = FileMetaBuilder(table)
        groups = scanned.groups
        for key in sorted(groups, key=_sort_key):
            group = groups.pop(key)  # its raw entries go once its bins are built
            plan.candidates += sum(1 for f in group.files if _is_candidate(f, options))
            packed = (pack_bucket_in_order(group.files, options) if bucketed
                      else pack_by_size(group.files, options))
            for bin_files in packed:
                plan.bins.append(CompactionBin(
                    partition=key[0], bucket=key[1], total_buckets=group.total_buckets,
                    files=tuple(builder.build(key[0], f) for f in bin_files),
                ))
    return plan


def _plan_with_pypaimon(table: Any, options: CompactionOptions, partition_filter: PartitionFilter | None,
                        snap: Any, plan: CompactionPlan) -> CompactionPlan:
    """The plan from pypaimon's scan of every live entry (the reference planner)."""
    groups: dict[tuple, list[Any]] = {}
    total_buckets: dict[tuple, int] = {}
    for entry in live_entries(table, snap):
        partition = tuple(entry.partition.values)
        if partition_filter is not None and not partition_filter(partition_dict(table, partition)):
            continue
        plan.files_scanned += 1
        plan.bytes_scanned += entry.file.file_size
        key = (partition, entry.bucket)
        groups.setdefault(key, []).append(entry.file)
        total_buckets[key] = entry.total_buckets
    bucketed = table.bucket_mode() == BucketMode.HASH_FIXED
    for key in sorted(groups, key=_sort_key):
        files = groups[key]
        plan.candidates += sum(1 for f in files if _is_candidate(f, options))
        packed = pack_bucket_in_order(files, options) if bucketed else pack_by_size(files, options)
        for bin_files in packed:
            plan.bins.append(
                CompactionBin(
                    partition=key[0],
                    bucket=key[1],
                    total_buckets=total_buckets[key],
                    files=tuple(bin_files),
                )
            )
    return plan


def pack_by_size(files: Iterable[Any], options: CompactionOptions) -> list[list[Any]]:
    """Paimon's unaware-bucket packing of one partition's files into bins."""
    candidates = sorted(
        (f for f in files if _is_candidate(f, options)), key=lambda f: (f.file_size, f.file_name)
    )
    return _pack(candidates, options)


def pack_bucket_in_order(files: Iterable[Any], options: CompactionOptions) -> list[list[Any]]:
    """Packing for one bucket of a fixed-bucket table: consecutive runs only."""
    ordered = sorted(files, key=_sequence_order)
    bins: list[list[Any]] = []
    run: list[Any] = []
    for f in ordered:
        if _is_candidate(f, options):
            run.append(f)
            continue
        bins.extend(_pack(run, options))
        run = []
    bins.extend(_pack(run, options))
    return bins


def _pack(files: list[Any], options: CompactionOptions) -> list[list[Any]]:
    bins: list[list[Any]] = []
    current: list[Any] = []
    size = 0
    for f in files:
        current.append(f)
        size += f.file_size + options.open_file_cost
        if len(current) > 1 and size >= 2 * options.target_file_size:
            bins.append(current)
            current, size = [], 0
    if len(current) >= max(2, options.min_file_num):
        bins.append(current)
    return bins


def _is_candidate(file: Any, options: CompactionOptions) -> bool:
    return file.file_size < options.compaction_file_size


def _sequence_order(file: Any) -> tuple:
    """Paimon's order of a bucket's files (a raw entry's creation time is epoch millis)."""
    created = file.creation_time
    if isinstance(created, int):
        created = _creation_millis(created)
    elif created:
        created = file.creation_time_epoch_millis()
    else:
        created = 0
    return (file.min_sequence_number, file.max_sequence_number, created, file.file_name)


class _Created(NamedTuple):
    creation_time: Any


def _creation_millis(epoch_millis: int) -> int:
    """What ``DataFileMeta.creation_time_epoch_millis`` says for a file created at
    ``epoch_millis`` (it goes through local time; the tie-break must be the same)."""
    return int(DataFileMeta.creation_time_epoch_millis(
        _Created(Timestamp.from_epoch_millis(epoch_millis))) or 0)


def _sort_key(key: tuple) -> tuple:
    partition, bucket = key
    return (tuple("" if v is None else str(v) for v in partition), bucket)


# --- partition selection -------------------------------------------------------------


def partition_spec_filter(
    table: Any, specs: Sequence[Mapping[str, str]], snapshot: Any = None
) -> PartitionFilter:
    """A filter for the partitions matching any of ``specs`` (``{column: text}``).

    Each value is parsed by its column's Paimon type (``paimon/partitions.py``) and
    compared with the partition's typed value, so ``dt=2026-11-03`` selects a DATE
    partition, ``flag=true`` a BOOLEAN one and ``price=1.5`` the DECIMAL 1.50. Fails up
    front when a key is not a partition column, a value cannot be parsed, or a spec
    matches no partition of the table, so a typo never compacts nothing silently.
    """
    keys = list(table.partition_keys)
    if not keys:
        raise InvalidArgumentError(
            f"table {table_name(table)} is not partitioned; drop the partition filter"
        )
    specs = [dict(s) for s in specs]
    for spec in specs:
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise InvalidArgumentError(
                f"partition filter uses {unknown}, which are not partition columns "
                f"(partition columns: {keys})"
            )
    typed = [parse_partition_spec(table, spec, what=f"partition {format_spec(spec)}") for spec in specs]
    default_name = default_partition_name(table)

    def as_text(value: Any) -> str:
        return format_partition_value(value, default_name)

    def selects(spec: dict[str, Any], partition: dict[str, Any]) -> bool:
        return all(partition[k] == v for k, v in spec.items())

    def matches(partition: dict[str, Any]) -> bool:
        return any(selects(spec, partition) for spec in typed)

    snap = snapshot if snapshot is not None else latest_snapshot(table)
    existing = _existing_partitions(table, snap)
    existing_dicts = [partition_dict(table, p) for p in existing]
    for spec, values in zip(specs, typed, strict=True):
        if not any(selects(values, p) for p in existing_dicts):
            shown = ", ".join(
                sorted(",".join(f"{k}={as_text(v)}" for k, v in p.items()) for p in existing_dicts)[:10]
            ) or "none"
            raise PartitionNotFoundError(
                f"partition {format_spec(spec)} does not exist in "
                f"{table_name(table)} (partitions: {shown})"
            )
    return matches


def _existing_partitions(table: Any, snapshot: Any) -> set[tuple]:
    """The partitions with a live file (streamed: no file metadata kept)."""
    if fast_plan_reason(table) is None:
        try:
            return live_partitions(table, snapshot)
        except RAW_READ_ERRORS as err:
            log.warning("listing the partitions of %s with pypaimon's scan: the fast manifest reader "
                        "failed (%s: %s)", table_name(table), type(err).__name__, err)
    return {tuple(e.partition.values) for e in live_entries(table, snapshot)}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
