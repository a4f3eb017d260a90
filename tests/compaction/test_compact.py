"""Compaction end to end on real tables (rewrite in-process; the Spark path is in test_job).

Every test reads the result back with plain pypaimon: rows (checksum) never change,
the snapshot is a COMPACT one in Paimon's format, concurrent appends survive,
conflicts retry or fail cleanly without leaving files behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact, rewrite_bins_locally
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.paimon.errors import ConcurrentModificationError

from .helpers import (
    SMALL,
    append,
    append_many,
    batch,
    checksum,
    data_file_count,
    files_on_disk,
    make_table,
    overwrite_partition,
    read_all,
    reload,
    row_multiset,
)


def _compact(table, **kw):
    return compact(table, CompactionOptions.from_table(table), **kw)


def _compact_files_on_disk(warehouse: str) -> set[str]:
    return {os.path.basename(p) for p in files_on_disk(warehouse) if "data-compact-" in p}


def _live_names(table) -> set[str]:
    return {e.file.file_name for e in live_entries(table, latest_snapshot(table))}


def test_compact_commits_one_compact_snapshot_in_paimon_format(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 8)
    before_sum, before_rows = checksum(table), read_all(table).num_rows
    before_names = _live_names(table)

    result = _compact(table)

    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert result.committed and result.snapshot_id == snap.id == 9
    assert snap.commit_kind == "COMPACT"
    assert snap.total_record_count == before_rows and snap.delta_record_count == 0
    # On disk, as Paimon Java writes it.
    raw = json.loads(Path(table.snapshot_manager().get_snapshot_path(9)).read_text())
    assert raw["commitKind"] == "COMPACT" and raw["deltaRecordCount"] == 0
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    delta = [
        e
        for m in ManifestListManager(table).read_delta(snap)
        for e in ManifestFileManager(table).read(m.file_name, drop_stats=False)
    ]
    deleted = [e for e in delta if e.kind == 1]
    added = [e for e in delta if e.kind == 0]
    assert {e.file.file_name for e in deleted} <= before_names
    assert len(deleted) == result.files_before == 16
    assert len(added) == result.files_after == data_file_count(table) < 16
    assert all(e.file.file_source == 1 and e.file.level == 0 for e in added)
    assert all(e.total_buckets == -1 for e in added)
    # Same rows, fewer files, plain pypaimon reads it.
    assert checksum(table) == before_sum
    # Old files stay on disk for readers of older snapshots (expiration removes them).
    assert all(os.path.exists(e.file.file_path) for e in deleted if e.file.file_path)

    # Settled: the merged files are not candidates again.
    again = _compact(table)
    assert not again.committed and again.snapshot_id is None
    assert again.message == "nothing to compact"
    assert latest_snapshot(reload(warehouse)).id == 9


def test_appends_during_compaction_are_kept(warehouse):
    table = make_table(warehouse, options=SMALL)
    next_id = append_many(table, 6)
    expected = row_multiset(table)

    def concurrent_append(_attempt):
        append(reload(warehouse), batch(next_id, 50))

    result = _compact(table, before_commit=concurrent_append)

    table = reload(warehouse)
    assert result.committed and result.attempts == 1
    assert latest_snapshot(table).commit_kind == "COMPACT"
    assert latest_snapshot(table).id == 8  # 6 appends, the concurrent one, ours
    expected.update(row_multiset_of(batch(next_id, 50)))
    assert row_multiset(table) == expected
    assert latest_snapshot(table).total_record_count == sum(expected.values())


def row_multiset_of(data):
    from collections import Counter

    return Counter(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))


def test_conflict_retries_from_a_fresh_plan_and_cleans_up(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 6)

    def overwrite_once(attempt):
        if attempt == 1:
            overwrite_partition(reload(warehouse), "a", 10_000, rows=10)

    result = _compact(table, before_commit=overwrite_once, max_retries=2)

    table = reload(warehouse)
    assert result.committed and result.attempts == 2
    snap = latest_snapshot(table)
    assert snap.commit_kind == "COMPACT" and snap.id == 8
    rows = read_all(table)
    a_ids = sorted(i for i, p in zip(rows["id"].to_pylist(), rows["p"].to_pylist(), strict=True) if p == "a")
    assert a_ids == list(range(10_000, 10_010))  # the overwrite won, we did not resurrect a
    assert rows.num_rows == 10 + 6 * 30
    # The first attempt's rewritten files are gone; only committed ones remain.
    assert _compact_files_on_disk(warehouse) <= _live_names(table)


def test_conflict_beyond_retry_limit_commits_nothing(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 6)

    with pytest.raises(ConcurrentModificationError, match=r"gave up after 1 attempts.*no longer in"):
        _compact(table, before_commit=lambda a: overwrite_partition(reload(warehouse), "a", 10_000, rows=10),
                 max_retries=0)

    table = reload(warehouse)
    assert latest_snapshot(table).commit_kind == "OVERWRITE"
    assert _compact_files_on_disk(warehouse) == set()


def test_failed_rewrite_leaves_no_files_and_no_snapshot(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 6)
    disk = files_on_disk(warehouse)
    local = rewrite_bins_locally(table)

    def failing(bins, target, prefix):
        local(bins, target, prefix)  # writes real files, then "an executor dies"
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError, match="executor lost"):
        _compact(table, rewriter=failing)
    assert latest_snapshot(reload(warehouse)).id == 6
    assert files_on_disk(warehouse) == disk


def test_bucketed_table_compacts_per_bucket(warehouse):
    table = make_table(warehouse, partitioned=False, bucket=2, options=SMALL)
    append_many(table, 6)
    before = row_multiset(table)
    buckets_before = {e.bucket for e in live_entries(table, latest_snapshot(table))}

    result = _compact(table)

    table = reload(warehouse)
    assert result.committed
    entries = live_entries(table, latest_snapshot(table))
    assert {e.bucket for e in entries} == buckets_before == {0, 1}
    assert all(e.total_buckets == 2 for e in entries)
    assert len(entries) < 12
    assert row_multiset(table) == before


def test_compaction_on_a_branch_leaves_main_alone(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 2)
    table.create_tag("t1")
    table.branch_manager().create_branch("fix", "t1")
    branch = reload(warehouse, branch="fix")
    append_many(branch, 6, start=5_000)
    main_snap = latest_snapshot(reload(warehouse))
    branch_sum = checksum(branch)

    result = _compact(branch)

    branch = reload(warehouse, branch="fix")
    assert result.committed and latest_snapshot(branch).commit_kind == "COMPACT"
    assert checksum(branch) == branch_sum
    main = reload(warehouse)
    assert latest_snapshot(main).id == main_snap.id and latest_snapshot(main).commit_kind == "APPEND"
    assert read_all(main).num_rows == 2 * 60


@pytest.mark.timeout(120)
def test_streaming_reader_across_compaction_sees_each_row_once(warehouse):
    table = make_table(warehouse, options=SMALL)
    next_id = append_many(table, 5)

    builder = reload(warehouse).new_stream_read_builder().with_poll_interval_ms(50)
    scan, read = builder.new_streaming_scan(), builder.new_read()
    plans = scan.stream_sync()
    seen = read.to_arrow(next(plans).splits())["id"].to_pylist()  # initial: latest in full

    append(reload(warehouse), batch(next_id, 40))
    result = _compact(reload(warehouse))
    assert result.committed
    append(reload(warehouse), batch(next_id + 40, 40))

    for _ in range(2):  # the two appends; the COMPACT snapshot in between is skipped
        seen += read.to_arrow(next(plans).splits())["id"].to_pylist()

    assert sorted(seen) == list(range(next_id + 80))
    assert len(seen) == len(set(seen))


def test_files_of_an_older_schema_are_rewritten_as_readers_see_them(warehouse):
    import pyarrow as pa
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    from airflow_provider_paimon.paimon.catalog import open_catalog

    table = make_table(warehouse, options=SMALL)
    append_many(table, 4)
    open_catalog(warehouse).alter_table("db.t", [SchemaChange.add_column("extra", AtomicType("INT"))])
    table = reload(warehouse)
    for i in range(4):
        data = batch(1_000 + i * 60, 60)
        append(table, data.append_column("extra", pa.array([i] * 60, pa.int32())))
    before = row_multiset(table)
    assert any(row[3] is None for row in before) and any(row[3] == 3 for row in before)

    result = _compact(table)

    table = reload(warehouse)
    assert result.committed and result.files_before == 16
    assert row_multiset(table) == before
    # Everything was rewritten with the current schema.
    assert {e.file.schema_id for e in live_entries(table, latest_snapshot(table))} == {1}


def test_paimon_stream_planner_skips_compact_snapshots(warehouse):
    """The ``paimon`` streaming source's planner across a real COMPACT snapshot."""
    from airflow_provider_paimon.paimon.stream_scan import (
        StreamOffset,
        StreamPlanner,
        parse_stream_scan_config,
    )

    table = make_table(warehouse, options=SMALL)
    next_id = append_many(table, 5)

    def ids(planner, start, end):
        splits = planner.splits(planner.range_entries(start, end))
        return read_all_splits(planner.table, splits)

    planner = StreamPlanner(reload(warehouse), parse_stream_scan_config({}))
    first = planner.resolve_start()
    seen = ids(planner, StreamOffset(next_snapshot=0), first)

    append(reload(warehouse), batch(next_id, 40))
    assert _compact(reload(warehouse)).committed
    append(reload(warehouse), batch(next_id + 40, 40))

    planner = StreamPlanner(reload(warehouse), parse_stream_scan_config({}))
    end = StreamOffset(next_snapshot=planner.advance(first.next_snapshot))
    assert end.next_snapshot == 9  # 5 appends, append, COMPACT (skipped), append
    seen += ids(planner, first, end)
    assert sorted(seen) == list(range(next_id + 80))


def read_all_splits(table, splits):
    if not splits:
        return []
    return table.new_read_builder().new_read().to_arrow(splits)["id"].to_pylist()


def test_compact_snapshot_carries_the_runs_properties(warehouse):
    """The COMPACT snapshot names the Airflow run and Spark app it was given (and only them)."""
    from airflow_provider_paimon.paimon.commit_properties import commit_properties, run_of

    table = make_table(warehouse, options=SMALL)
    append_many(table, 4)
    props = commit_properties(
        {"AIRFLOW_CTX_DAG_ID": "nightly", "AIRFLOW_CTX_DAG_RUN_ID": "manual__1",
         "AIRFLOW_CTX_TASK_ID": "compact", "AIRFLOW_CTX_TRY_NUMBER": "2"},
        spark_app_id="local-123",
    )
    result = _compact(table, snapshot_properties=props)

    snap = latest_snapshot(reload(warehouse))
    assert result.committed and snap.commit_kind == "COMPACT"
    assert snap.properties == {
        "airflow.dag_id": "nightly", "airflow.run_id": "manual__1", "airflow.task_id": "compact",
        "airflow.try_number": "2", "spark.app.id": "local-123",
    }
    run = run_of(snap.properties)
    assert (run.dag_id, run.run_id, run.task_id, run.try_number) == ("nightly", "manual__1", "compact", 2)
    # snapshot file on disk, as Paimon Java reads it
    path = os.path.join(warehouse, "db.db", "t", "snapshot", f"snapshot-{snap.id}")
    with open(path) as fh:
        assert json.load(fh)["properties"]["airflow.run_id"] == "manual__1"


def test_compacted_files_dictionary_encode_only_repeating_columns(warehouse):
    """pypaimon's small files have a dictionary on every column; the rewrite keeps one only where values repeat."""
    import pyarrow.parquet as pq

    def dictionary_pages(path: str) -> dict[str, bool]:
        group = pq.ParquetFile(path).metadata.row_group(0)
        return {group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(group.num_columns)}

    table = make_table(warehouse, options=SMALL)
    append_many(table, 8)
    before = [e.file.file_path for e in live_entries(table, latest_snapshot(table))]
    assert all(dictionary_pages(p)["id"] for p in before)  # pyarrow's default
    rows_before = checksum(table)

    assert _compact(table).committed
    table = reload(warehouse)
    added = [e.file for e in live_entries(table, latest_snapshot(table)) if e.file.file_source == 1]
    assert added
    for meta in added:
        pages = dictionary_pages(meta.file_path)
        assert pages == {"id": False, "p": True, "v": False}, meta.file_name
    assert checksum(table) == rows_before
