"""Compaction of primary-key tables: per (partition, bucket), merge sorted runs of the LSM tree.

Plan (driver): from the latest snapshot's live files, each bucket's sorted runs
(``levels``); ``full`` mode merges them all into one run at the top level, ``minor``
mode lets Paimon's universal picker (``universal``) choose, so level 0 stays bounded
without rewriting whole buckets. First-row tables, whose batch reads skip level 0,
take Paimon's ``ForceUpLevel0Compaction`` in minor mode: level 0 is always merged up. Deletes are dropped only where Paimon drops them: the
output level is above 0 and no older data is left below it (``dropDelete``).

Rewrite (pluggable, like the append compaction's): each unit's files are merged into
new files (``rewrite.rewrite_unit``), in-process or on Spark executors.

Commit (driver): one COMPACT snapshot through the append compaction's commit
(``compaction.commit.commit_compaction``: based on the latest snapshot at commit time,
every removed file must still be alive, so a concurrent writer's commit is kept), with
the record count changed by the merge, and Paimon's LSM check: after the change, no
level above 0 may hold two files whose key ranges overlap (``FileStoreCommitImpl``'s
"LSM conflicts detected"). A conflicting attempt deletes its files and re-plans.

Crash safety: new files carry a per-attempt prefix and are invisible until the
snapshot is renamed into place; a process killed before that leaves unreferenced files
(orphans, removed by orphan cleanup), killed after it a finished compaction. Fault
points: ``lsm_compaction.after_rewrite`` here and the commit's own.

Not handled here (refused with the reason): deletion-vector tables (their level-0
files are hidden from batch reads until a lookup compaction writes deletion vectors),
postpone buckets (``bucket = -2``), cross-partition updates, non-Parquet files.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pypaimon.table.bucket_mode import BucketMode

from .. import faults
from ..compaction.commit import CompactChange, commit_compaction
from ..compaction.errors import CompactionConflictError, NotCompactableError
from ..compaction.plan import CompactionBin, PartitionFilter
from ..compaction.result import CompactionResult, delete_attempt_files, expire_after_compaction
from ..compaction.scan import latest_snapshot, live_entries, partition_dict, table_name
from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..maintenance.after_commit import check_write_options
from ..manifest_reader import KIND_ADD, KIND_DELETE
from ..snapshots import table_branch
from .changelog import LOOKUP_REFUSAL, changelog_prefix, changelog_producer, is_changelog_file
from .levels import non_empty_highest_level, number_of_levels, overlapping, sorted_runs
from .options import LsmOptions, check_mode
from .rewrite import rewrite_unit
from .universal import CompactUnit, pick, pick_full

log = logging.getLogger(__name__)

FAULT_AFTER_REWRITE = "lsm_compaction.after_rewrite"


@dataclass(frozen=True)
class LsmUnit:
    """The runs of one bucket to merge, where their result goes, and what it must respect."""

    partition: tuple
    bucket: int
    total_buckets: int
    files: tuple
    output_level: int
    drop_delete: bool
    # first-row: keys of these (older, not merged) files must not be written again
    older_files: tuple = ()
    # changelog-producer=full-compaction and output at the top level: emit the changes
    changelog: bool = False

    @property
    def bin(self) -> CompactionBin:
        return CompactionBin(self.partition, self.bucket, self.total_buckets, self.files)

    def describe(self, partition_keys: list[str]) -> dict[str, Any]:
        out = self.bin.describe(partition_keys)
        out.update(output_level=self.output_level, drop_delete=self.drop_delete,
                   levels=sorted({f.level for f in self.files}), changelog=self.changelog)
        return out


@dataclass
class LsmPlan:
    snapshot_id: int | None
    mode: str
    options: LsmOptions
    partition_keys: list[str]
    units: list[LsmUnit] = field(default_factory=list)
    buckets: int = 0
    files_scanned: int = 0

    @property
    def files_before(self) -> int:
        return sum(len(u.files) for u in self.units)

    @property
    def bytes_before(self) -> int:
        return sum(f.file_size for u in self.units for f in u.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "mode": self.mode,
            "options": self.options.to_dict(),
            "buckets": self.buckets,
            "files_scanned": self.files_scanned,
            "files_before": self.files_before,
            "bytes_before": self.bytes_before,
            "units": [u.describe(self.partition_keys) for u in self.units],
        }


# unit list, target file size, file prefix -> new files per unit (same order)
UnitRewriter = Callable[[list[LsmUnit], int, str], list[list[Any]]]


def check_lsm_compactable(table: Any) -> None:
    """Raise ``NotCompactableError`` unless this compaction can handle primary-key ``table``."""
    from pypaimon.read.merge_engine_support import check_supported

    name = table_name(table)
    if not table.is_primary_key_table:
        raise NotCompactableError(f"{name} has no primary key; use the append compaction")
    try:
        check_supported(table)
    except (NotImplementedError, ValueError) as err:
        raise NotCompactableError(
            f"{name} cannot be compacted here: pypaimon 2.1, whose merge functions and file "
            f"format this compaction uses, refuses the table: {err}"
        ) from None
    if changelog_producer(table) == "lookup":
        raise NotCompactableError(f"{name} cannot be compacted here: {LOOKUP_REFUSAL}")
    if table.options.deletion_vectors_enabled():
        raise NotCompactableError(
            f"{name} has deletion vectors enabled: compacting it needs Paimon's lookup "
            "compaction, which writes deletion vectors; not done here (use Paimon Java)"
        )
    mode = table.bucket_mode()
    if mode not in (BucketMode.HASH_FIXED, BucketMode.HASH_DYNAMIC):
        raise NotCompactableError(
            f"{name} has bucket mode {mode.name}; this compaction handles fixed and dynamic "
            "buckets (bucket > 0 or -1 with the primary key containing the partition keys)"
        )


def plan_lsm_compaction(table: Any, mode: str, options: LsmOptions,
                        partition_filter: PartitionFilter | None = None, snapshot: Any = None,
                        buckets: Collection[tuple[tuple, int]] | None = None) -> LsmPlan:
    """The units to merge in ``table``'s latest snapshot (or ``snapshot``).

    ``buckets``: only these ``(partition values, bucket)`` (a writer compacts what it wrote).
    """
    mode = check_mode(mode)
    check_lsm_compactable(table)
    snap = snapshot if snapshot is not None else latest_snapshot(table)
    plan = LsmPlan(snap.id if snap is not None else None, mode, options, list(table.partition_keys))
    wanted = None if buckets is None else {(tuple(p), int(b)) for p, b in buckets}
    groups: dict[tuple, list[Any]] = {}
    total: dict[tuple, int] = {}
    for entry in live_entries(table, snap):
        partition = tuple(entry.partition.values)
        key = (partition, entry.bucket)
        if wanted is not None and key not in wanted:
            continue
        if partition_filter is not None and not partition_filter(partition_dict(table, partition)):
            continue
        plan.files_scanned += 1
        groups.setdefault(key, []).append(entry.file)
        total[key] = entry.total_buckets
    plan.buckets = len(groups)
    plan.units = plan_units(table, groups, total, mode, options)
    return plan


def plan_units(table: Any, groups: Mapping[tuple, list[Any]], total_buckets: Mapping[tuple, int],
               mode: str, options: LsmOptions) -> list[LsmUnit]:
    """One unit per bucket of ``groups`` (``(partition, bucket)`` -> its live files) that needs one.

    ``full``: every run to the top level; ``minor``: Paimon's universal picker (first-row
    tables: ``ForceUpLevel0Compaction``).
    """
    first_row = table.options.merge_engine().value == "first-row"
    full_changelog = changelog_producer(table) == "full-compaction"
    units = []
    for key in sorted(groups, key=lambda k: (tuple("" if v is None else str(v) for v in k[0]), k[1])):
        files = groups[key]
        num_levels = number_of_levels(files, options.levels)
        runs = sorted_runs(files)
        unit: CompactUnit | None
        if mode == "full":
            unit = pick_full(num_levels, runs)
        else:
            unit = pick(num_levels, runs, options.trigger, options.max_size_amp, options.size_ratio,
                        force_level0=first_row)
        if unit is None:
            continue
        picked = {f.file_name for f in unit.files}
        rest = [f for f in files if f.file_name not in picked]
        drop_delete = unit.output_level != 0 and unit.output_level >= non_empty_highest_level(files)
        units.append(LsmUnit(
            partition=key[0], bucket=key[1], total_buckets=total_buckets[key], files=tuple(unit.files),
            output_level=unit.output_level, drop_delete=drop_delete,
            older_files=tuple(rest) if first_row else (),
            changelog=full_changelog and unit.output_level == num_levels - 1,
        ))
    return units


def unit_changes(units: list[LsmUnit], outputs: list[list[Any]]) -> list[CompactChange]:
    """The commit's changes: each unit's files out, its new data files in, its changelog files."""
    changes = []
    for u, written in zip(units, outputs, strict=True):
        data = [f for f in written if not is_changelog_file(f)]
        logs = [f for f in written if is_changelog_file(f)]
        changes.append(CompactChange(u.partition, u.bucket, u.total_buckets, list(u.files), data, logs))
    return changes


def delete_unit_files(table: Any, bins: list[CompactionBin], prefix: str, keep: set[str]) -> None:
    """Files of an attempt (data and changelog, by prefix) in the bins' folders, except ``keep``."""
    delete_attempt_files(table, bins, (prefix, changelog_prefix(prefix)), keep=keep)


def rewrite_units_locally(table: Any) -> UnitRewriter:
    """A ``UnitRewriter`` that merges the units one after another in this process."""

    def rewrite(units: list[LsmUnit], target: int, prefix: str) -> list[list[Any]]:
        return [
            rewrite_unit(table, u.partition, u.bucket, list(u.files), u.output_level, u.drop_delete,
                         target, prefix, list(u.older_files), u.changelog)
            for u in units
        ]

    return rewrite


def lsm_conflicts(table: Any) -> Callable[[Any, list[Any], list[Any]], None]:
    """The commit's LSM check: levels above 0 of the changed buckets stay sorted runs
    (``alive``: the base snapshot's entries of the changed partitions)."""

    def check(latest: Any, entries: list[Any], alive: list[Any]) -> None:
        live: dict[tuple, dict[str, Any]] = {}
        for e in alive:
            live.setdefault((tuple(e.partition.values), e.bucket), {})[e.file.file_name] = e.file
        changed = {(tuple(e.partition.values), e.bucket) for e in entries}
        for e in entries:
            bucket_files = live.setdefault((tuple(e.partition.values), e.bucket), {})
            if e.kind == KIND_DELETE:
                bucket_files.pop(e.file.file_name, None)
            elif e.kind == KIND_ADD:
                bucket_files[e.file.file_name] = e.file
        for key in changed:
            files = list(live.get(key, {}).values())
            for level in sorted({f.level for f in files if f.level > 0}):
                pair = overlapping([f for f in files if f.level == level])
                if pair is not None:
                    raise CompactionConflictError(
                        f"LSM conflict in {table_name(table)} partition {key[0]} bucket {key[1]}: "
                        f"level {level} would hold {pair[0].file_name} and {pair[1].file_name} "
                        "with overlapping keys (another compaction wrote that level meanwhile)"
                    )

    return check


def compact_primary_keys(
    table: Any,
    mode: str = "full",
    options: LsmOptions | None = None,
    rewriter: UnitRewriter | None = None,
    partition_filter: PartitionFilter | None = None,
    dry_run: bool = False,
    max_retries: int = 3,
    commit_user: str | None = None,
    before_commit: Callable[[int], None] | None = None,
    run_options: Mapping[str, Any] | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    buckets: Collection[tuple[tuple, int]] | None = None,
    expire: bool = True,
) -> CompactionResult:
    """Compact primary-key ``table`` (loaded on its branch) and return what happened.

    Same contract as ``compaction.runner.compact`` (retries, hook, expiry after the
    commit unless ``expire`` is false, snapshot properties); ``mode`` is ``full`` or
    ``minor``; ``options`` default to the table's (``run_options`` override them);
    ``buckets`` limits it to those ``(partition values, bucket)``.
    """
    mode = check_mode(mode)
    if max_retries < 0:
        raise InvalidArgumentError(f"max retries must not be negative, got {max_retries}")
    check_lsm_compactable(table)
    branch = table_branch(table)
    check_write_options(table, branch=branch, options=run_options)
    options = options or LsmOptions.from_table(table, run_options)
    rewriter = rewriter or rewrite_units_locally(table)
    commit_user = commit_user or f"compaction-{uuid.uuid4()}"
    started = time.monotonic()
    result = CompactionResult(dry_run=dry_run)
    attempt = 0
    while True:
        attempt += 1
        result.attempts = attempt
        mark = time.monotonic()
        plan = plan_lsm_compaction(table, mode, options, partition_filter, buckets=buckets)
        _fill(result, plan)
        result.extra["plan_s"] = round(time.monotonic() - mark, 3)
        if not plan.units:
            result.message = "nothing to compact" if plan.snapshot_id is not None else "nothing to compact: table is empty"
            break
        if dry_run:
            result.plan = plan.to_dict()
            result.message = f"dry run: would merge {plan.files_before} files in {len(plan.units)} buckets"
            break
        prefix = f"data-compact-{uuid.uuid4().hex[:12]}-"
        bins = [u.bin for u in plan.units]
        try:
            mark = time.monotonic()
            new_files = rewriter(plan.units, options.target_file_size, prefix)
            result.extra["rewrite_s"] = round(time.monotonic() - mark, 3)
            faults.check(FAULT_AFTER_REWRITE)
            changes = unit_changes(plan.units, new_files)
            if before_commit is not None:
                before_commit(attempt)
            mark = time.monotonic()
            snapshot = commit_compaction(
                table, changes, commit_user=commit_user,
                properties=dict(snapshot_properties) if snapshot_properties else None,
                rows_change=True, check=lsm_conflicts(table),
            )
            result.extra["commit_s"] = round(time.monotonic() - mark, 3)
        except CompactionConflictError as err:
            delete_unit_files(table, bins, prefix, keep=set())
            if attempt > max_retries:
                raise ConcurrentModificationError(
                    f"compaction of {table_name(table)} gave up after {attempt} attempts: {err}"
                ) from err
            log.warning("compaction attempt %d conflicted (%s); re-planning", attempt, err)
            continue
        except ConcurrentModificationError:
            raise  # uncertain commit outcome: keep the files
        except BaseException:
            delete_unit_files(table, bins, prefix, keep=set())
            raise
        committed = {f.file_name for c in changes for f in (*c.after, *c.changelog)}
        delete_unit_files(table, bins, prefix, keep=committed)  # duplicate task attempts
        result.snapshot_id = snapshot.id
        result.committed = True
        result.files_after = sum(len(c.after) for c in changes)
        result.bytes_after = sum(f.file_size for c in changes for f in c.after)
        result.extra["rows_before"] = sum(f.row_count for c in changes for f in c.before)
        result.extra["rows_after"] = sum(f.row_count for c in changes for f in c.after)
        result.extra["changelog_rows"] = sum(f.row_count for c in changes for f in c.changelog)
        result.message = (
            f"{mode} compaction merged {result.files_before} files into {result.files_after} "
            f"in {len(plan.units)} buckets (snapshot {snapshot.id})"
        )
        break
    result.extra["expired"] = expire_after_compaction(table, branch, run_options, result) if result.committed and expire else None
    result.duration_s = time.monotonic() - started
    return result


def _fill(result: CompactionResult, plan: LsmPlan) -> None:
    result.files_before = plan.files_before
    result.bytes_before = plan.bytes_before
    result.files_after = plan.files_before
    result.bytes_after = plan.bytes_before
    result.bins = len(plan.units)
    result.extra = {
        "planned_snapshot_id": plan.snapshot_id,
        "mode": plan.mode,
        "buckets": plan.buckets,
        "files_scanned": plan.files_scanned,
        "output_levels": sorted({u.output_level for u in plan.units}),
    }
