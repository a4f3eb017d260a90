"""Read a primary-key table's changes as the ``paimon`` stream source plans and reads them.

In-process (no Spark session): ``StreamPlanner.range_splits`` plans the snapshots,
``changelog_read.read_changes`` reads them with their kind, exactly the code the
source's ``partitions`` and executor ``read`` run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_paimon.paimon.stream_scan import StreamOffset, StreamPlanner, StreamScanConfig
from airflow_provider_paimon.spark.datasource.changelog_read import changelog_schema, read_changes
from airflow_provider_paimon.spark.datasource.types import table_spark_schema

from .scenarios import FIELDS


def read_range(table: Any, start: StreamOffset, end: StreamOffset,
               fields: Sequence[str] = FIELDS) -> list[tuple]:
    """``(kind, *fields)`` of every change between two offsets, in the order read."""
    planner = StreamPlanner(table, StreamScanConfig(mode="latest"))
    splits = planner.range_splits(start, end)
    if not splits:
        return []
    schema = changelog_schema(table, table_spark_schema(table), "t")
    out = []
    for batch in read_changes(table, schema, splits):
        columns = [batch.column(name).to_pylist() for name in ["rowkind", *fields]]
        out.extend(zip(*columns, strict=True))
    return out


def by_key(changes: list[tuple]) -> list[tuple]:
    """``changes`` grouped by key, each key's changes in the order read (buckets are read
    one after another, so only a key's own order is defined)."""
    return sorted(changes, key=lambda c: (c[1], c[2]))


def changes_of(table: Any, snapshot_id: int) -> list[tuple]:
    """The changes one snapshot carries (nothing for a snapshot a stream skips), by key."""
    return by_key(read_range(table, StreamOffset(next_snapshot=snapshot_id),
                             StreamOffset(next_snapshot=snapshot_id + 1)))
