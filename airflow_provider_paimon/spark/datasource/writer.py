"""Batch write: executors write data files, the driver commits them as ONE snapshot.

Each Spark task opens the table, writes its Arrow batches with pypaimon's batch
writer (files land under the table's bucket folders, invisible until committed) and
returns the pypaimon ``CommitMessage`` list describing them. Append tables without
buckets (partitioned or not, Parquet) take a faster path, ``fast_append``, that
writes the same files and metadata directly with pyarrow. When every task has
succeeded Spark calls ``commit`` once on the driver with all messages, and a single
pypaimon commit publishes them: one Spark write = one snapshot, all or nothing.

Failure handling:
- a task that fails deletes the files it wrote before re-raising (pypaimon
  ``abort``), so a retried or failed task leaves nothing behind;
- when the job fails, Spark calls ``abort`` with the messages of the tasks that did
  succeed, and their files are deleted;
- if the commit itself fails, the files are deleted unless a snapshot by this
  write's ``commit_user`` exists (then the commit did land and the files are live).

After a commit that produced a snapshot, the table's snapshot retention is applied to
the branch written, as Paimon's writers do (``paimon.maintenance.after_commit``; off
with ``write-only=true``); it never fails the committed write. A primary-key table's
written buckets are then compacted by Paimon's writer rules (``paimon.lsm.after_commit``:
the universal picker, first-row tables every commit; off with ``write-only=true``), and
with ``changelog-producer=input`` the tasks store their raw rows as changelog files.

Overwrite: ``mode("overwrite")`` replaces the whole table (or the partition given by
option ``overwrite-partition``, its values parsed by column type on the driver; a task
meeting a row outside it fails), in one OVERWRITE snapshot; with option
``overwrite-mode=dynamic`` it replaces only the partitions the DataFrame has rows for.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from airflow_provider_paimon.paimon.compaction.precommit import merge_commit_messages
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.lsm.after_commit import compact_after_write
from airflow_provider_paimon.paimon.lsm.changelog import changelog_prefix
from airflow_provider_paimon.paimon.lsm.engines import RowKindCheck
from airflow_provider_paimon.paimon.lsm.input_changelog import use_input_changelog
from airflow_provider_paimon.paimon.lsm.retracts import with_delete_counts
from airflow_provider_paimon.paimon.maintenance.after_commit import expire_after_commit
from airflow_provider_paimon.paimon.merging_commit import merging_commit
from airflow_provider_paimon.paimon.partitions import format_partition_value, format_spec

from .. import commit_events
from ..branch import redirect as branch_redirect
from ..lineage import direct as lineage_direct
from ..lineage import guard as lineage_guard
from ..options import PaimonOptions
from ..tables import open_table
from . import fast_append
from .schema_merge import batch_casts
from .types import conform_batch

log = logging.getLogger(__name__)

# Folders of a table that never hold this write's data files.
_METADATA_DIRS = (
    "snapshot",
    "schema",
    "manifest",
    "tag",
    "branch",
    "index",
    "consumer",
    "changelog",
    "statistics",
)
# On failure, sweep again after this long: tasks Spark is still cancelling may
# finish a file after the first sweep.
SECOND_SWEEP_DELAY_S = float(os.environ.get("PAIMON_SPARK_SWEEP_DELAY_S", "2.0"))


@dataclass
class TaskCommit(WriterCommitMessage):
    """What one task wrote: pypaimon commit messages (pickled by Spark) and a row count."""

    messages: list[Any] = field(default_factory=list)
    row_count: int = 0
    #: a micro-batch's task: its streaming query's Spark ``runId`` (the OpenLineage run a
    #: Spark Connect capture's commit events belong to: ``lineage.connect_openlineage``)
    stream_run: str | None = None


@dataclass
class WritePlan:
    """Everything the driver decided before any task runs (picklable)."""

    opts: PaimonOptions
    table_arrow_schema: pa.Schema
    overwrite: bool
    # overwrite-partition, values typed by their columns (paimon/partitions.py)
    static_partition: dict[str, Any] | None
    dynamic_overwrite: bool
    commit_user: str
    base_snapshot_id: int | None
    # Data files of this write start with this name (Paimon option data-file.prefix),
    # so a failed write can find files of tasks it never heard back from.
    file_prefix: str | None = None
    # Snapshot properties of the commit: the Airflow run and Spark app behind it
    # (``paimon.commit_properties``), captured on the driver; {} commits none.
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    # write.merge-schema: casts and null columns the tasks apply (``schema_merge.MergePlan``)
    merge: Any = None
    # overwrite exactly these partitions (typed values), emptying those the rows miss
    # (``paimon.overwrite.overwrite_partitions``); None: the overwrite modes above
    replace_partitions: tuple[dict[str, Any], ...] | None = None


class PaimonWriter(DataSourceArrowWriter):
    """Writes one Spark DataFrame into one Paimon table (branch) as one commit."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    # -- shared ---------------------------------------------------------------

    def _table(self) -> Any:
        table = open_table(self.plan.opts, time_travel=False)
        if self.plan.file_prefix:
            table = table.copy({"data-file.prefix": self.plan.file_prefix})
        if self.plan.overwrite:
            # Paimon's default (dynamic-partition-overwrite=true) would turn a plain
            # overwrite into a partial one; decide explicitly.
            flag = "true" if self.plan.dynamic_overwrite else "false"
            table = table.copy({"dynamic-partition-overwrite": flag})
        return table

    def _write_builder(self, table: Any) -> Any:
        builder = table.new_batch_write_builder()
        builder.commit_user = self.plan.commit_user
        if self.plan.overwrite:
            builder.overwrite(dict(self.plan.static_partition or {}))
        return builder

    # -- executor -------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        branch_redirect.check_task(self.plan.opts)  # before any file: a stale redirect fails here
        table = self._table()
        target = self.plan.table_arrow_schema
        writer: Any
        if fast_append.unsupported_reason(table) is None:
            # plain append table: Parquet files written by ``fast_append`` (same metadata)
            writer = fast_append.FastAppendWriter(
                table, target, overflow_writer=lambda: self._write_builder(table).new_write()
            )
            write_batch = writer.write
        else:
            # changelog-producer=input: the raw rows as changelog, as Paimon Java's writer
            writer = use_input_changelog(self._write_builder(table).new_write(), self.plan.file_prefix)
            write_batch = writer.write_arrow
        rows = 0
        static = self.plan.static_partition
        # primary-key tables with rowkind.field: each batch's row kinds, checked before
        # the writer sees it (a delete the merge engine cannot take writes nothing)
        kinds = RowKindCheck.for_table(table, self.plan.opts.table)
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                if self.plan.merge is not None:
                    batch = batch_casts(batch, self.plan.merge, target)
                batch = conform_batch(batch, target)
                if static:
                    check_rows_in_partition(batch, static)
                if kinds is not None:
                    kinds.check(batch)
                write_batch(batch)
                rows += batch.num_rows
            messages = with_delete_counts(table, writer.prepare_commit())
        except BaseException:
            writer.abort()
            raise
        finally:
            writer.close()
        return TaskCommit(messages=[m for m in messages if not m.is_empty()], row_count=rows)

    # -- driver ---------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        lineage_guard.check_before_commit(  # fail policy
            f"the write to {self.plan.opts.table}", self.plan.opts.capture_routing
        )
        lineage_direct.check_store_before_commit(self.plan.opts, f"the write to {self.plan.opts.table}")
        task_messages = task_messages_of(messages)
        row_count = sum(m.row_count for m in messages if isinstance(m, TaskCommit))
        table = self._table()
        if self.plan.opts.precommit_compact and task_messages:
            task_messages = merge_commit_messages(table, task_messages, self.plan.opts.raw)
        # Paimon's manifest merge inside this commit (pypaimon alone never merges)
        table_commit = merging_commit(self._write_builder(table).new_commit(), self.plan.opts.table_options)
        try:
            if self.plan.replace_partitions is not None:
                from airflow_provider_paimon.paimon.overwrite import overwrite_partitions

                overwrite_partitions(table_commit, task_messages, self.plan.replace_partitions,
                                     self.plan.snapshot_properties)
            else:
                table_commit.commit(task_messages, snapshot_properties=self.plan.snapshot_properties or None)
        except BaseException:
            if self._committed_snapshot(table) is None:
                _delete_files(table_commit, task_messages)
                self._sweep(table)
            raise
        finally:
            table_commit.close()
        snapshot = self._committed_snapshot(table)
        if snapshot is None:  # nothing to commit (empty append): no snapshot, no event
            return
        opts = self.plan.opts
        commit_events.publish_for(
            opts,
            commit_events.CommitEvent,
            snapshot_id=snapshot.id,
            commit_kind=str(snapshot.commit_kind),
            row_count=row_count,
            **{"commit_user": self.plan.commit_user, **commit_events.identity_fields(snapshot)},
        )
        lineage_direct.on_commit(  # option-driven lineage
            opts, snapshot.id, str(snapshot.commit_kind), run=self.plan.snapshot_properties,
            identity=commit_events.identity_fields(snapshot),
        )
        expire_after_commit(table, branch=opts.branch, options=opts.table_options)
        # primary keys: compact the written buckets and wait, as Paimon's batch writers do
        compact_after_write(
            table, {(tuple(m.partition), m.bucket) for m in task_messages if m.new_files},
            options=opts.table_options, commit_user=self.plan.commit_user,
            properties=self.plan.snapshot_properties,
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        task_messages = task_messages_of(messages)
        table = self._table()
        if self._committed_snapshot(table) is not None:
            return  # the commit landed; these files are part of the table now
        if task_messages:
            table_commit = self._write_builder(table).new_commit()
            try:
                _delete_files(table_commit, task_messages)
            finally:
                table_commit.close()
        self._sweep(table)

    def _sweep(self, table: Any) -> None:
        """Delete every file of this (uncommitted) write, twice: late tasks may add one."""
        if not self.plan.file_prefix:
            return
        for attempt in range(2):
            if attempt:
                time.sleep(SECOND_SWEEP_DELAY_S)
            try:
                removed = _delete_with_prefix(
                    table.file_io, table.table_path,
                    (self.plan.file_prefix, changelog_prefix(self.plan.file_prefix)),
                )
            except Exception:  # cleanup is best effort; the job already failed
                log.exception("cleaning files of failed write %s", self.plan.commit_user)
                return
            if removed:
                log.info("removed %d file(s) of failed write %s", removed, self.plan.commit_user)

    def _committed_snapshot(self, table: Any) -> Any | None:
        """The snapshot this write created, if any (newest first, back to the base)."""
        manager = table.snapshot_manager()
        latest = manager.get_latest_snapshot()
        base = self.plan.base_snapshot_id or 0
        snapshot_id = latest.id if latest is not None else 0
        while snapshot_id > base:
            snapshot = manager.get_snapshot_by_id(snapshot_id)
            if snapshot is not None and snapshot.commit_user == self.plan.commit_user:
                return snapshot
            snapshot_id -= 1
        return None


def check_rows_in_partition(batch: pa.RecordBatch, spec: dict[str, Any]) -> None:
    """Fail the task on the first row outside the ``overwrite-partition`` partition.

    pypaimon would only find such rows at the commit, after the whole job ran.
    """
    for column, value in spec.items():
        values = batch.column(column)
        if value is None:
            outside = pc.is_valid(values)
        else:
            outside = pc.fill_null(pc.not_equal(values, pa.scalar(value, type=values.type)), True)
        if pc.any(outside).as_py():
            found = values.filter(outside)[0].as_py()
            raise InvalidArgumentError(
                f"option 'overwrite-partition' is {format_spec(spec)}, but the DataFrame has a row "
                f"with {column}={format_partition_value(found)}; filter the DataFrame to that "
                "partition, or use overwrite-mode=dynamic to replace every partition it has rows for"
            )


def task_messages_of(messages: list[WriterCommitMessage | None]) -> list[Any]:
    """pypaimon's commit messages of every task that reported (``TaskCommit``), in order."""
    out: list[Any] = []
    for message in messages:
        if isinstance(message, TaskCommit):
            out.extend(message.messages)
    return out


def _delete_files(table_commit: Any, task_messages: list[Any]) -> None:
    if task_messages:
        table_commit.abort(task_messages)


def _delete_with_prefix(file_io: Any, path: str, prefix: str | tuple[str, ...]) -> int:
    """Delete files named ``prefix*`` (any of them) under the table's partition/bucket folders."""
    removed = 0
    for status in file_io.list_status(path):
        name = status.base_name
        is_dir = getattr(status, "type", None) == pafs.FileType.Directory
        child = f"{path.rstrip('/')}/{name}"
        if is_dir:
            if name not in _METADATA_DIRS:
                removed += _delete_with_prefix(file_io, child, prefix)
        elif name.startswith(prefix):
            file_io.delete(child)
            removed += 1
    return removed
