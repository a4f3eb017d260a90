"""Our planner (``paimon.planning``) against pypaimon's, the reference, on the same tables.

``read_table``'s plan (``spark/native/plan.py``) of append tables comes from our own
reader of the manifests now; pypaimon's planner plans the same call with
``planner="pypaimon"``. For tables made of many commits (merged and not), overwrites,
compactions (with and without folded deletes), schema changes, several buckets and
time travel, and for filters on partitions and on data columns, both must pick the same
files into the same groups with the same snapshot. The fast manifest decoder must also
return every field pypaimon decodes, for each file.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot
from airflow_provider_paimon.paimon.manifest_reader import read_entries
from airflow_provider_paimon.paimon.merging_commit import merging_commit

from .helpers import (
    SMALL,
    append,
    append_many,
    batch,
    make_table,
    overwrite_partition,
    reload,
    same_plan,
)


def _history(warehouse):
    """Many commits: plain, merging, an overwrite, a compaction; files with value statistics."""
    table = make_table(warehouse, options=dict(SMALL, **{"metadata.stats-mode": "full"}))
    next_id = append_many(table, 12, rows=8)
    for i in range(6):  # merging commits over a table another writer made
        builder = reload(warehouse).new_batch_write_builder()
        write, commit = builder.new_write(), merging_commit(builder.new_commit())
        write.write_arrow(batch(next_id + i * 10, 8, partitions=("a", "b", "c")))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    overwrite_partition(reload(warehouse), "c", 5000, rows=6)
    assert compact(reload(warehouse), CompactionOptions.from_table(reload(warehouse)),
                   partition_filter=lambda p: p["p"] == "a").committed
    append_many(reload(warehouse), 3, rows=8, start=9000)


def test_plans_match_pypaimon_over_a_long_history(warehouse):
    _history(warehouse)
    snapshot, groups, python = same_plan(warehouse)
    assert groups and not python
    files = sum(len(g[0]) for g in groups.values())
    # the statistics prune: a filter on a data column keeps fewer files than no filter
    assert sum(len(g[0]) for g in same_plan(warehouse, "id < 20")[1].values()) < files
    for text in ("p = 'a'", "p IN ('b', 'c')", "p > 'a'", "p = 'zz'", "id > 100", "id < 20 AND p = 'b'",
                 "v = 'nothing'"):
        same_plan(warehouse, text)
    for sid in (3, 12, 15, snapshot):  # time travel
        same_plan(warehouse, **{"snapshot-id": str(sid)})


def test_plans_match_after_a_compaction_that_folded_its_deletes(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 20, rows=12)  # 40 files: the compaction folds
    assert compact(reload(warehouse), CompactionOptions.from_table(reload(warehouse))).committed
    same_plan(warehouse)
    same_plan(warehouse, "p = 'b'")


def test_plans_match_with_schema_changes_and_buckets(warehouse):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    from airflow_provider_paimon.paimon.catalog import open_catalog

    make_table(warehouse, options={"bucket": "3", "bucket-key": "id", "metadata.stats-mode": "full"})
    append_many(reload(warehouse), 4, rows=20)
    open_catalog(warehouse).alter_table("db.t", [SchemaChange.add_column("extra", AtomicType("BIGINT"))], False)
    table = reload(warehouse)
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string()), ("extra", pa.int64())])
    append(table, pa.table({"id": [1000, 1001], "p": ["a", "b"], "v": ["x", "y"], "extra": [7, 8]}, schema=schema))
    _, groups, _ = same_plan(warehouse)
    assert {schema_id for _fmt, schema_id in groups} == {0, 1}
    same_plan(warehouse, "extra = 7")
    same_plan(warehouse, "p = 'a'")


def test_unpartitioned_table(warehouse):
    make_table(warehouse, partitioned=False)
    append_many(reload(warehouse), 5)
    same_plan(warehouse)
    same_plan(warehouse, "id >= 120")


def test_empty_table_plans_nothing(warehouse):
    make_table(warehouse)
    assert same_plan(warehouse) == (None, {}, [])


@pytest.mark.parametrize("stats_mode", [None, "full"])
def test_fast_decoder_reads_every_field_pypaimon_reads(warehouse, stats_mode):
    options = {"metadata.stats-mode": stats_mode} if stats_mode else {}
    table = make_table(warehouse, options=options)
    append_many(table, 3)
    table = reload(warehouse)
    files = ManifestFileManager(table)
    for meta in ManifestListManager(table).read_all(latest_snapshot(table)):
        ours = [e for block in read_entries(table.file_io, f"{files.manifest_path}/{meta.file_name}",
                                            meta.file_size) for e in block]
        theirs = files.read(meta.file_name, drop_stats=False)
        assert len(ours) == len(theirs) > 0
        for a, b in zip(ours, theirs, strict=True):
            f = b.file
            assert (a.kind, a.bucket, a.total_buckets, a.partition) == (
                b.kind, b.bucket, b.total_buckets, table_partition_bytes(b))
            assert (a.file_name, a.file_size, a.row_count, a.schema_id, a.level) == (
                f.file_name, f.file_size, f.row_count, f.schema_id, f.level)
            assert (list(a.extra_files), a.embedded_index, a.external_path, a.delete_row_count,
                    a.file_source) == (list(f.extra_files), f.embedded_index, f.external_path,
                                       f.delete_row_count, f.file_source)
            assert (a.stats_min, a.stats_max) == (f.value_stats.min_values.data, f.value_stats.max_values.data)
            assert list(a.stats_null_counts or []) == list(f.value_stats.null_counts or [])
            assert (a.min_sequence_number, a.max_sequence_number) == (
                f.min_sequence_number, f.max_sequence_number)
            assert a.creation_time == f.creation_time.get_millisecond()


def table_partition_bytes(entry):
    from pypaimon.table.row.generic_row import GenericRowSerializer

    return GenericRowSerializer.to_bytes(entry.partition)
