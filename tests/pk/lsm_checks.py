"""Invariants of a primary-key table's LSM tree, read from its live files."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow.parquet as pq

from airflow_provider_paimon.paimon.compaction.scan import (
    latest_snapshot,
    live_entries,
    resolve_path,
)
from airflow_provider_paimon.paimon.lsm.levels import overlapping
from airflow_provider_paimon.paimon.lsm.rewrite import read_kv_files

KEY_COLUMN = "_KEY_k"  # the key field besides the partition's p, as key-value files store it


def buckets(table: Any) -> dict[tuple, list[Any]]:
    out: dict[tuple, list[Any]] = defaultdict(list)
    for e in live_entries(table, latest_snapshot(table)):
        out[(tuple(e.partition.values), e.bucket)].append(e.file)
    return dict(out)


def check_levels(table: Any, first_row: bool = False) -> None:
    """Levels above 0 are sorted runs; first-row: a key lives in one of them only."""
    for (partition, bucket), files in buckets(table).items():
        for level in {f.level for f in files if f.level > 0}:
            pair = overlapping([f for f in files if f.level == level])
            assert pair is None, f"level {level} of {partition}/{bucket} overlaps: {pair}"
        if first_row:
            upper = [f for f in files if f.level > 0]
            keys = read_kv_files(table, partition, bucket, upper).column("_KEY_k").to_pylist()
            assert len(keys) == len(set(keys)), f"first-row key twice above level 0 in {partition}/{bucket}"
        for f in files:
            assert f.delete_row_count is not None


def keys_of_buckets(table: Any, wanted: set[tuple]) -> set[tuple]:
    """The (p, k) keys stored in the buckets ``wanted`` ((partition, bucket) pairs): the
    key columns of every file (read alone: the model tests ask before each compaction)."""
    out: set[tuple] = set()
    for (partition, bucket), files in buckets(table).items():
        if (partition, bucket) in wanted:
            for f in files:
                resolve_path(table, partition, bucket, f)
                with table.file_io.new_input_stream(f.physical_path()) as stream:
                    keys = pq.ParquetFile(stream).read(columns=[KEY_COLUMN], use_threads=False)
                out |= {(partition[0], k) for k in keys.column(KEY_COLUMN).to_pylist()}
    return out
