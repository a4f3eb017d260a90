"""The streamed compaction planner (``raw_plan``) against the pypaimon-based one, the reference.

``plan_compaction`` plans append tables from raw manifest entries and builds pypaimon's
``DataFileMeta`` only for the files its bins rewrite; ``planner="pypaimon"`` plans from
every live ``ManifestEntry`` as before. On tables with long histories (appends,
overwrites, earlier compactions with and without folded deletes, a schema change),
unaware and fixed buckets, partitioned or not, with and without partition filters and
``where`` filters, both must choose the same files in the same order per bin, and each
file's metadata must be what pypaimon's reader gives: the DELETE entry the COMPACT
commit would write from it is the same, and so is its path.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
from pypaimon.table.row.generic_row import GenericRow

from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.compaction import plan as plan_module
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.plan import partition_spec_filter, plan_compaction
from airflow_provider_paimon.paimon.compaction.raw_plan import live_partitions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partitions import split_partition_text
from airflow_provider_paimon.paimon.predicates import table_partition_types, where_filter

from .helpers import (
    SMALL,
    append,
    batch,
    checksum,
    make_table,
    overwrite_partition,
    reload,
)


def _described(table, plan) -> dict:
    """Everything a consumer of the plan sees, files as the DELETE record they would write."""
    fields = table.partition_keys_fields
    bins = []
    for b in plan.bins:
        files = []
        for f in b.files:
            entry = ManifestEntry(kind=1, partition=GenericRow(list(b.partition), fields), bucket=b.bucket,
                                  total_buckets=b.total_buckets, file=f)
            files.append((ManifestFileManager._to_avro_record(entry), f.physical_path()))
        bins.append((b.partition, b.bucket, b.total_buckets, files))
    return {"snapshot": plan.snapshot_id, "scanned": (plan.files_scanned, plan.bytes_scanned),
            "candidates": plan.candidates, "bins": bins, "dict": plan.to_dict()}


def _same(table, options=None, partition_filter=None, snapshot=None) -> dict:
    options = options or CompactionOptions.from_table(table)
    ours = _described(table, plan_compaction(table, options, partition_filter, snapshot))
    reference = _described(table, plan_compaction(table, options, partition_filter, snapshot,
                                                  planner="pypaimon"))
    assert ours == reference
    return ours


def _history(warehouse, bucket=None, partitioned=True):
    """Appends, an overwrite, a schema change, two compactions (one folded), more appends."""
    table = make_table(warehouse, partitioned=partitioned, bucket=bucket,
                       options=dict(SMALL, **{"metadata.stats-mode": "full"}))
    parts = ("a", "b", "c") if partitioned else ("a",)
    next_id = 0
    for i in range(10):
        append(table, batch(next_id, 12 + i, partitions=parts))
        next_id += 12 + i
    if partitioned:
        overwrite_partition(reload(warehouse), "c", 5_000)
    open_catalog(warehouse).alter_table("db.t", [SchemaChange.add_column("extra", AtomicType("INT"))])
    next_id = _append_extra(reload(warehouse), 4, 9, next_id, parts)
    only_a = (lambda p: p["p"] == "a") if partitioned else None
    # a small compaction keeps its DELETE entries in the delta (no fold below 30 files)
    assert compact(reload(warehouse), CompactionOptions.from_table(reload(warehouse)),
                   partition_filter=only_a).committed
    _append_extra(reload(warehouse), 5, 7, 9_000, parts)
    return reload(warehouse)


def _append_extra(table, commits: int, rows: int, start: int, parts: tuple[str, ...]) -> int:
    """``commits`` appends with the column the schema change added."""
    for i in range(commits):
        data = batch(start, rows, partitions=parts)
        append(table, data.append_column("extra", pa.array([i] * rows, pa.int32())))
        start += rows
    return start


@pytest.mark.parametrize(("bucket", "partitioned"), [(None, True), (None, False), (2, True), (3, False)],
                         ids=["unaware-partitioned", "unaware", "fixed-partitioned", "fixed"])
def test_bins_match_the_pypaimon_planner(warehouse, bucket, partitioned):
    table = _history(warehouse, bucket=bucket, partitioned=partitioned)
    plan = _same(table)
    assert plan["bins"], "the history must leave something to compact"
    assert any(len(files) > 2 for *_, files in plan["bins"])
    # other packing options: everything a candidate, bins of two, a large min-file-num
    for overrides in ({"target-file-size": "1 mb"}, {"compaction.min.file-num": "2", "target-file-size": "4kb"},
                      {"compaction.min.file-num": "50"}):
        _same(table, CompactionOptions.from_table(table, overrides))
    # an older snapshot (time travel), before the compaction
    _same(table, snapshot=table.snapshot_manager().get_snapshot_by_id(8))
    if partitioned:
        for spec in ("p=a", "p=b", "p=c"):
            _same(table, partition_filter=partition_spec_filter(table, [split_partition_text(spec)]))
        types = table_partition_types(table)
        for where in ("p IN ('a', 'c')", "p > 'a'", "p = 'zz'"):
            _same(table, partition_filter=where_filter(where, types))


def test_fixed_bucket_runs_break_at_large_files(warehouse):
    """A large file ends a run of small ones: the raw planner keeps a marker of it (planned
    with a 4 KB target: the 400-row commits make files over 0.7 x 4 KB, 5 rows ~1.3 KB).

    pypaimon writes every file of the bucket with sequence number 1 and the creation
    time breaks ties at one-second resolution, so the runs are a second apart.
    """
    table = make_table(warehouse, bucket=1, options=SMALL)
    next_id = 0
    for run in ((5, 5, 5), (400,), (5, 5, 5, 5), (400,), (5,)):
        if next_id:
            time.sleep(1.05)
        for rows in run:
            append(table, batch(next_id, rows, partitions=("a",), width=60))
            next_id += rows
    table = reload(warehouse)
    plan = _same(table, CompactionOptions.from_table(table, {"target-file-size": "4kb"}))
    assert [len(files) for *_, files in plan["bins"]] == [3, 4]


def test_empty_table_and_unknown_planner(warehouse):
    table = make_table(warehouse, options=SMALL)
    assert _same(table)["bins"] == []
    with pytest.raises(InvalidArgumentError, match="unknown compaction planner"):
        plan_compaction(table, CompactionOptions(), planner="fast")


def test_live_partitions_match_pypaimon(warehouse):
    table = _history(warehouse)
    expected = {tuple(e.partition.values) for e in live_entries(table, latest_snapshot(table))}
    assert live_partitions(table, latest_snapshot(table)) == expected == {("a",), ("b",), ("c",)}


def test_unreadable_manifests_fall_back_to_pypaimon(warehouse, monkeypatch, caplog):
    table = make_table(warehouse, options=SMALL)
    for i in range(6):
        append(table, batch(i * 10, 10))
    table = reload(warehouse)
    expected = _described(table, plan_compaction(table, CompactionOptions.from_table(table), planner="pypaimon"))

    def broken(*_args, **_kwargs):
        raise ValueError("manifest block not fully read")

    monkeypatch.setattr(plan_module, "scan_groups", broken)
    with caplog.at_level("WARNING"):
        got = _described(table, plan_compaction(table, CompactionOptions.from_table(table)))
    assert got == expected and got["bins"]
    assert "fast manifest reader failed" in caplog.text


def test_an_error_of_the_callers_partition_filter_is_raised_as_is(warehouse, monkeypatch, caplog):
    """A filter's own KeyError is the caller's error: no fallback scan, no reader warning."""
    table = make_table(warehouse, options=SMALL)
    for i in range(3):
        append(table, batch(i * 10, 10))
    table = reload(warehouse)
    fallbacks = []
    monkeypatch.setattr(plan_module, "_plan_with_pypaimon", lambda *a, **k: fallbacks.append(a))

    def bad_filter(partition):
        return partition["no_such_column"] == "a"

    with caplog.at_level("WARNING"), pytest.raises(KeyError, match="no_such_column"):
        plan_compaction(table, CompactionOptions.from_table(table), partition_filter=bad_filter)
    assert not fallbacks and "fast manifest reader failed" not in caplog.text


@pytest.mark.parametrize("bucket", [None, 2])
def test_compaction_through_the_raw_planner_commits_and_reads_back(warehouse, bucket):
    table = _history(warehouse, bucket=bucket)
    before = checksum(table)
    files_before = len(live_entries(table, latest_snapshot(table)))
    planned = plan_compaction(table, CompactionOptions.from_table(table))
    result = compact(table, CompactionOptions.from_table(table))
    assert result.committed and result.files_before == planned.files_before > 0
    table = reload(warehouse)
    assert checksum(table) == before
    assert len(live_entries(table, latest_snapshot(table))) == files_before - result.files_before + result.files_after
    # nothing left that the rules would compact, by either planner
    assert _same(table)["bins"] == []


def test_coordinator_seed_matches_the_pypaimon_seed(warehouse, monkeypatch):
    """The streaming writer's coordinator seeds from raw entries too: same files, same metadata."""
    from airflow_provider_paimon.paimon.compaction import coordinator as coordinator_module

    table = _history(warehouse)
    options = CompactionOptions.from_table(table, {"target-file-size": "1 mb"})

    def seeded() -> dict:
        view = coordinator_module.CompactCoordinator(table, options)
        view.seed()
        fields = table.partition_keys_fields
        return {
            key: sorted((f.file_name, f.physical_path(), repr(ManifestFileManager._to_avro_record(ManifestEntry(
                kind=1, partition=GenericRow(list(key[0]), fields), bucket=key[1], total_buckets=-1, file=f))))
                for f in files)
            for key, files in view.bucket_files().items()
        } | {"bins": [(b.partition, [f.file_name for f in b.files]) for b in view.plan()]}

    ours = seeded()
    monkeypatch.setattr(coordinator_module, "fast_plan_reason", lambda _table: "the reference")
    assert ours == seeded()
    assert ours["bins"]
