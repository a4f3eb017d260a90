"""One compaction run: plan, rewrite, commit; re-plan and retry on a conflict.

After a commit the run expires snapshots of the branch it compacted with the
table's retention, as Paimon Java's compaction jobs do (``expire_after_commit``: the
writers' rule, ``write-only=true`` turns it off, never raises); a dry run, or a run
that committed nothing, expires nothing.

The rewrite step is pluggable (``BinRewriter``): the Spark job rewrites bins in
parallel on executors, tests and small tables can rewrite in-process. Every file a
run writes carries one per-attempt prefix, so an attempt that fails (conflict,
error, a Spark task that ran twice) leaves nothing behind: its files are found by
prefix in the bins' bucket folders and deleted.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..maintenance.after_commit import check_write_options
from ..snapshots import table_branch
from .commit import CompactChange, commit_compaction
from .errors import CompactionConflictError
from .manifest_compaction import fold_deletes
from .options import CompactionOptions
from .plan import CompactionBin, CompactionPlan, PartitionFilter, plan_compaction
from .result import CompactionResult, delete_attempt_files, expire_after_compaction
from .rewrite import FILE_SOURCE_COMPACT, rewrite_files
from .scan import table_name

log = logging.getLogger(__name__)

# bins, target file size, data-file prefix -> new files per bin (same order)
BinRewriter = Callable[[list[CompactionBin], int, str], list[list[Any]]]


def rewrite_bins_locally(table: Any) -> BinRewriter:
    """A ``BinRewriter`` that rewrites the bins one after another in this process."""

    def rewrite(bins: list[CompactionBin], target: int, prefix: str) -> list[list[Any]]:
        return [
            rewrite_files(table, b.partition, b.bucket, list(b.files), target,
                          FILE_SOURCE_COMPACT, prefix)
            for b in bins
        ]

    return rewrite


def compact(
    table: Any,
    options: CompactionOptions,
    rewriter: BinRewriter | None = None,
    partition_filter: PartitionFilter | None = None,
    dry_run: bool = False,
    max_retries: int = 3,
    commit_user: str | None = None,
    before_commit: Callable[[int], None] | None = None,
    run_options: Mapping[str, Any] | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
    mode: str = "full",
    unit_rewriter: Any = None,
) -> CompactionResult:
    """Compact ``table`` (already loaded on its branch) and return what happened.

    Primary-key tables are compacted per bucket by ``paimon.lsm.compact``: ``mode``
    ``full`` or ``minor`` (Paimon's universal picker), their options from the table and
    ``run_options`` (``options`` is the append compaction's), ``unit_rewriter`` in place
    of ``rewriter``. Append tables have one mode.

    ``max_retries`` is how many times a conflicting attempt is re-planned and re-run.
    ``before_commit(attempt)`` is a hook between rewrite and commit (tests use it to
    commit concurrently). ``run_options`` are the run's own table options
    (``write-only``, ``snapshot.*``) over the table's, for the expiry after the commit;
    bad values there or in the table are refused before anything is written, as the
    writers refuse them. ``snapshot_properties`` go on the COMPACT snapshot (the Airflow
    run and Spark app behind it, ``paimon.commit_properties``).
    """
    if getattr(table, "is_primary_key_table", False):
        # here, not at the top: lsm.compact imports compaction's modules, whose package
        # (compaction/__init__) imports this one
        from ..lsm.compact import compact_primary_keys

        return compact_primary_keys(
            table, mode=mode, rewriter=unit_rewriter, partition_filter=partition_filter,
            dry_run=dry_run, max_retries=max_retries, commit_user=commit_user,
            before_commit=before_commit, run_options=run_options, snapshot_properties=snapshot_properties,
        )
    if max_retries < 0:
        raise InvalidArgumentError(f"max retries must not be negative, got {max_retries}")
    branch = table_branch(table)
    check_write_options(table, branch=branch, options=run_options)
    rewriter = rewriter or rewrite_bins_locally(table)
    commit_user = commit_user or f"compaction-{uuid.uuid4()}"
    started = time.monotonic()
    result = CompactionResult(dry_run=dry_run)
    attempt = 0
    while True:
        attempt += 1
        result.attempts = attempt
        mark = time.monotonic()
        plan = plan_compaction(table, options, partition_filter)
        _fill_from_plan(result, plan)
        result.extra["plan_s"] = round(time.monotonic() - mark, 3)
        if plan.is_empty:
            result.message = (
                "nothing to compact" if plan.snapshot_id is not None else "nothing to compact: table is empty"
            )
            if not dry_run and plan.snapshot_id is not None:
                # a run killed between its COMPACT commit and the fold of its deletes
                # left them in the latest delta: fold them now (nothing to fold: no-op)
                _finish_fold(table, commit_user, snapshot_properties, result)
            break
        if dry_run:
            result.plan = plan.to_dict()
            result.message = (
                f"dry run: would rewrite {plan.files_before} files in {len(plan.bins)} bins"
            )
            break
        prefix = f"data-compact-{uuid.uuid4().hex[:12]}-"
        try:
            mark = time.monotonic()
            new_files = rewriter(plan.bins, options.target_file_size, prefix)
            result.extra["rewrite_s"] = round(time.monotonic() - mark, 3)
            changes = [
                CompactChange(b.partition, b.bucket, b.total_buckets, list(b.files), list(after))
                for b, after in zip(plan.bins, new_files, strict=True)
            ]
            if before_commit is not None:
                before_commit(attempt)
            mark = time.monotonic()
            snapshot = commit_compaction(
                table, changes, commit_user=commit_user,
                properties=dict(snapshot_properties) if snapshot_properties else None,
            )
            result.extra["commit_s"] = round(time.monotonic() - mark, 3)
        except CompactionConflictError as err:
            delete_attempt_files(table, plan.bins, prefix, keep=set())
            if attempt > max_retries:
                raise ConcurrentModificationError(
                    f"compaction of {table_name(table)} gave up after {attempt} attempts: {err}"
                ) from err
            log.warning("compaction attempt %d conflicted (%s); re-planning", attempt, err)
            continue
        except ConcurrentModificationError:
            raise  # uncertain commit outcome: keep the files
        except BaseException:
            delete_attempt_files(table, plan.bins, prefix, keep=set())
            raise
        committed_names = {f.file_name for c in changes for f in c.after}
        # Duplicate task attempts may have left files that no commit references.
        delete_attempt_files(table, plan.bins, prefix, keep=committed_names)
        result.snapshot_id = snapshot.id
        result.committed = True
        result.files_after = sum(len(c.after) for c in changes)
        result.bytes_after = sum(f.file_size for c in changes for f in c.after)
        result.message = (
            f"compacted {result.files_before} files into {result.files_after} "
            f"in {len(plan.bins)} bins (snapshot {snapshot.id})"
        )
        break
    result.extra["expired"] = None
    if result.committed:
        result.extra["expired"] = expire_after_compaction(table, branch, run_options, result)
    result.duration_s = time.monotonic() - started
    return result


def _finish_fold(table: Any, commit_user: str, properties: Mapping[str, str] | None,
                 result: CompactionResult) -> None:
    folded = fold_deletes(table, commit_user=commit_user, properties=dict(properties or {}))
    if folded is not None and folded.committed:
        result.extra["manifests"] = folded.to_dict()
        result.message += f"; {folded.message}"


def _fill_from_plan(result: CompactionResult, plan: CompactionPlan) -> None:
    result.files_before = plan.files_before
    result.bytes_before = plan.bytes_before
    result.files_after = plan.files_before
    result.bytes_after = plan.bytes_before
    result.bins = len(plan.bins)
    result.extra = {
        "planned_snapshot_id": plan.snapshot_id,
        "files_scanned": plan.files_scanned,
        "candidates": plan.candidates,
    }
