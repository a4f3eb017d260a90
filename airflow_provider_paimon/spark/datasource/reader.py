"""Batch read: plan pypaimon splits once on the driver, read them on executors as Arrow.

``partitions()`` runs on the driver when a DataFrame is first planned. It opens the
table (branch, time travel), plans the splits and packs them into Spark input
partitions of similar size. Each ``read()`` runs on an executor, opens the table
again, and streams the splits' Arrow record batches straight to Spark: no per-row
Python. Primary-key tables are merged on read by pypaimon.

No filter push-down from Spark, on purpose. Spark 4.x keeps ONE read plan per loaded
DataFrame (``PythonDataSourceV2.readInfo``): a query with pushable filters replaces it
with the plan made for those filters, and every later query on the same DataFrame
that has no pushable filter (``df.count()``, ``collect()``, a write) reuses that
pruned plan and silently loses rows. A reader therefore never narrows its plan with
filters Spark pushed for one query; Spark evaluates every filter itself.

Pruning that belongs to the DataFrame is fine: option ``partition-filter`` (a
whitelisted predicate over partition columns, ``partition_pruning.py``) is part of
the read's definition, so every query on the DataFrame reads the same partitions.

Column projection: Spark 4.x does not tell a Python data source which columns a
query needs (``PythonScanBuilder`` has no ``pruneColumns``), so the reader reads the
schema it was created with. Read fewer columns with option ``columns`` (``"a,b"``)
or with a user schema holding a subset of the columns (``.schema("a BIGINT, b STRING")``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from .. import commit_events
from ..branch import redirect as branch_redirect
from ..lineage import direct as lineage_direct
from ..options import PaimonOptions
from ..tables import open_table
from .partition_pruning import select_partitions
from .types import conform_batch, spark_to_arrow_schema

# pypaimon packs small files into splits of this size while planning; we then pack
# splits into Spark partitions, so plan small and pack late (more parallelism).
PLAN_SPLIT_TARGET_SIZE = "32 mb"
DEFAULT_PARTITION_TARGET_SIZE = 128 * 1024 * 1024
# pypaimon reads 1024 rows per Arrow batch by default; every batch then crosses the
# Python -> JVM boundary on its own, which made full scans ~5x slower. Bigger
# batches cost only memory (option 'read.batch-size' overrides).
READ_BATCH_SIZE = "65536"


class SplitGroup(InputPartition):
    """One Spark task's share of the scan: a few pypaimon splits (they pickle to a few KB)."""

    def __init__(self, index: int, splits: list[Any], snapshot_id: int | None) -> None:
        self.index = index
        self.splits = splits
        self.snapshot_id = snapshot_id

    def __repr__(self) -> str:
        return f"SplitGroup(index={self.index}, splits={len(self.splits)}, snapshot_id={self.snapshot_id})"


def pack_splits(splits: Sequence[Any], groups: int) -> list[list[Any]]:
    """Spread ``splits`` over ``groups`` lists of similar total file size (largest first)."""
    groups = max(1, min(groups, len(splits)))
    bins: list[list[Any]] = [[] for _ in range(groups)]
    sizes = [0] * groups
    for split in sorted(splits, key=_split_size, reverse=True):
        smallest = sizes.index(min(sizes))
        bins[smallest].append(split)
        sizes[smallest] += _split_size(split)
    return [b for b in bins if b]


def _split_size(split: Any) -> int:
    try:
        return int(split.file_size)
    except Exception:  # noqa: BLE001 - some split kinds have no size
        return sum(int(getattr(f, "file_size", 0) or 0) for f in getattr(split, "files", []))


class PaimonReader(DataSourceReader):
    """Reads one Paimon table (branch, snapshot) into Spark; picklable, holds no table.

    It has no ``pushFilters`` (see the module docstring for the Spark behaviour that
    makes per-query push-down lose rows); the only pruning is the DataFrame's own
    ``partition-filter`` option.
    """

    def __init__(self, opts: PaimonOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self.scanned: dict[str, Any] = {}

    def _planning_table(self) -> Any:
        table = open_table(self.opts)
        if "source.split.target-size" not in self.opts.table_options:
            table = table.copy({"source.split.target-size": PLAN_SPLIT_TARGET_SIZE})
        return table

    def plan(self) -> tuple[list[Any], int | None]:
        """The splits to read and the snapshot they belong to (driver side)."""
        table = self._planning_table()
        plan = table.new_read_builder().new_scan().plan()
        splits = list(plan.splits())
        if self.opts.partition_filter:
            splits = select_partitions(table, splits, self.opts.partition_filter)
        snapshot_id = getattr(plan, "snapshot_id", None)
        # the commit the read saw (lineage records it beside the id: paimon.snapshot_identity)
        self.scanned = {} if snapshot_id is None else commit_events.identity_fields(
            table.snapshot_manager().get_snapshot_by_id(snapshot_id))
        return splits, snapshot_id

    def partitions(self) -> Sequence[InputPartition]:
        splits, snapshot_id = self.plan()
        identity = self.scanned
        commit_events.publish_for(self.opts, commit_events.ScanEvent, snapshot_id=snapshot_id, split_count=len(splits),
                                  **identity)
        lineage_direct.on_scan(self.opts, snapshot_id, identity=identity)  # option-driven lineage (no capture)
        if not splits:
            return [SplitGroup(0, [], snapshot_id)]
        total = sum(_split_size(s) for s in splits)
        target = self.opts.partition_target_size or DEFAULT_PARTITION_TARGET_SIZE
        wanted = max(-(-total // target), self.opts.min_partitions or os.cpu_count() or 2)
        return [SplitGroup(i, group, snapshot_id) for i, group in enumerate(pack_splits(splits, wanted))]

    # -- executor -------------------------------------------------------------

    def read(self, partition: SplitGroup) -> Iterator[pa.RecordBatch]:  # type: ignore[override]  # Spark hands back what partitions() made
        branch_redirect.check_task(self.opts)  # a redirect changed after planning fails here
        if not partition.splits:
            return
        table = open_table(self.opts)
        if "read.batch-size" not in self.opts.table_options:
            table = table.copy({"read.batch-size": READ_BATCH_SIZE})
        target = spark_to_arrow_schema(self.schema)
        builder = table.new_read_builder()
        if target.names != [f.name for f in table.table_schema.fields]:
            builder = builder.with_projection(list(target.names))
        reader = builder.new_read().to_arrow_batch_reader(partition.splits)
        try:
            for batch in reader:
                if batch.num_rows:
                    yield conform_batch(batch, target)
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()
