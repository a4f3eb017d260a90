"""Pre-commit merging: small new files of one commit become target-size files."""

from __future__ import annotations

import os

import pytest

from airflow_provider_paimon.paimon.compaction.precommit import (
    merge_commit_messages,
    precommit_enabled,
)
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

from .helpers import SMALL, batch, make_table, reload, row_multiset, row_multiset_of_table


def _messages_from_writers(table, writers: int, rows: int = 40):
    """What a Spark job's tasks hand the driver: one pypaimon writer per task."""
    messages, written = [], []
    for i in range(writers):
        wb = table.new_batch_write_builder()
        write = wb.new_write()
        data = batch(i * rows, rows)
        write.write_arrow(data)
        messages.extend(write.prepare_commit())
        write.close()
        written.append(data)
    return messages, written


def _commit(table, messages):
    wb = table.new_batch_write_builder()
    commit = wb.new_commit()
    commit.commit(messages)
    commit.close()


def test_merges_small_files_per_partition_into_one_append(warehouse):
    table = make_table(warehouse, options=SMALL)
    messages, written = _messages_from_writers(table, 8)
    small_paths = [f.file_path for m in messages for f in m.new_files]
    assert len(small_paths) == 16 and all(os.path.exists(p) for p in small_paths)

    merged = merge_commit_messages(table, messages, {"precommit-compact": "true"})

    new_files = [f for m in merged for f in m.new_files]
    assert len(new_files) == 2  # one per partition: 8 x ~1 KB each is far below 32 KB
    assert {tuple(m.partition) for m in merged} == {("a",), ("b",)}
    assert not any(os.path.exists(p) for p in small_paths)
    assert all(f.file_source == 0 for f in new_files)  # part of an APPEND commit

    _commit(table, merged)
    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert snap.id == 1 and snap.commit_kind == "APPEND"
    assert len(live_entries(table, snap)) == 2
    expected = sum((row_multiset_of_table(d) for d in written), start=row_multiset_of_table(batch(0, 0)))
    assert row_multiset(table) == expected


def _names(messages):
    return sorted(f.file_name for m in messages for f in m.new_files)


def test_single_small_file_per_partition_passes_through(warehouse):
    table = make_table(warehouse, options=SMALL)
    single, _ = _messages_from_writers(table, 1)
    assert len(_names(single)) == 2  # one file in each partition: nothing to merge
    assert _names(merge_commit_messages(table, single, {})) == _names(single)


def test_write_option_overrides_target(warehouse):
    table = make_table(warehouse, options=SMALL)
    messages, _ = _messages_from_writers(table, 4)
    # With a tiny target every file is large already: untouched.
    merged = merge_commit_messages(table, messages, {"target-file-size": "100b"})
    assert _names(merged) == _names(messages)


def test_primary_key_table_is_left_alone(warehouse):
    table = make_table(warehouse, primary_keys=["id", "p"], bucket=1)
    wb = table.new_batch_write_builder()
    write = wb.new_write()
    write.write_arrow(batch(0, 10))
    messages = write.prepare_commit()
    write.close()
    assert merge_commit_messages(table, messages, {}) is messages


def test_precommit_enabled_flag():
    assert precommit_enabled({"precommit-compact": "true"})
    assert precommit_enabled({"precommit-compact": " TRUE "})
    assert not precommit_enabled({"precommit-compact": "false"})
    assert not precommit_enabled(None)


@pytest.mark.spark
def test_spark_writer_option_merges_before_commit(spark, warehouse):
    make_table(warehouse, options=SMALL)
    # 2 tasks x 2 partitions would commit 4 small files; merged: one per partition.
    df = spark.createDataFrame(batch(0, 400)).repartition(2)
    (df.write.format("paimon").option("warehouse", warehouse).option("table", "db.t")
     .option("precommit-compact", "true").mode("append").save())
    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert snap.id == 1 and snap.commit_kind == "APPEND"
    assert len(live_entries(table, snap)) == 2
    assert row_multiset(table) == row_multiset_of_table(batch(0, 400))
    # Nothing left behind: the 4 small files were deleted.
    on_disk = [f for _r, _d, fs in os.walk(warehouse) for f in fs if f.endswith(".parquet")]
    assert len(on_disk) == 2
