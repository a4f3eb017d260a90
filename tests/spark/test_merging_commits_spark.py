"""``write_table`` and ``foreach_batch_writer`` merge manifests in their commits (Spark).

A table another writer made with 40 plain pypaimon commits (40 unmerged manifests) gets
a few commits through each Spark path; each commit's snapshot is the only new one, its
base list is merged under ``manifest.merge-min-count``, and plain pypaimon and
pypaimon-rust read exactly the rows written. The 200-commit runs of the same commit
code are in tests/compaction/test_merging_commits.py (in-process, no Spark).
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from compaction.helpers import SCHEMA, append, make_table, reload, row_multiset
from independent_reader import read_rows, require
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot
from airflow_provider_paimon.paimon.manifests import DEFAULT_MERGE_MIN_COUNT
from airflow_provider_paimon.spark import write_table
from airflow_provider_paimon.spark.native.foreach_batch import foreach_batch_writer

pytestmark = pytest.mark.spark


def _rows(i: int) -> list[tuple]:
    return [(2 * i, f"p{i % 3}", f"v{2 * i}"), (2 * i + 1, f"p{(i + 1) % 3}", f"v{2 * i + 1}")]


def _check(warehouse: str, snapshot_id: int, expected: Counter) -> None:
    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert snap.id == snapshot_id
    base = ManifestListManager(table).read_base(snap)
    assert len(base) < DEFAULT_MERGE_MIN_COUNT, len(base)
    assert row_multiset(table) == expected
    assert read_rows(warehouse) == expected


def test_write_table_and_foreach_batch_commits_merge(spark, warehouse, tmp_path):
    require()
    table = make_table(warehouse)
    expected: Counter = Counter()
    for i in range(40):
        append(table, pa.Table.from_pylist([dict(zip(("id", "p", "v"), r, strict=True)) for r in _rows(i)],
                                           schema=SCHEMA))
        expected.update(_rows(i))
    assert len(ManifestListManager(table).read_base(latest_snapshot(table))) == 39

    snapshot = 40
    for i in range(40, 42):
        write_table(spark.createDataFrame(_rows(i), "id BIGINT, p STRING, v STRING"), "db.t", warehouse=warehouse,
                    options={"write-only": "true"})
        expected.update(_rows(i))
        snapshot += 1
        _check(warehouse, snapshot, expected)

    sink = foreach_batch_writer("db.t", warehouse=warehouse, checkpoint_location=str(tmp_path / "ck"),
                                options={"write-only": "true"})
    for batch_id, i in enumerate(range(42, 45)):
        sink(spark.createDataFrame(_rows(i), "id BIGINT, p STRING, v STRING"), batch_id)
        expected.update(_rows(i))
        snapshot += 1
        _check(warehouse, snapshot, expected)
