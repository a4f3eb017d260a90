"""The streaming coordinator's incremental view vs the full-scan planner.

After every change to a real table (small appends, large appends, overwrites, COMPACT
commits, other partitions) the coordinator, fed only each snapshot's delta, must
choose exactly the bins ``plan_compaction`` chooses from a full scan of the same
snapshot.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_paimon.paimon.compaction.coordinator import CompactCoordinator
from airflow_provider_paimon.paimon.compaction.errors import NotCompactableError
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.plan import plan_compaction
from airflow_provider_paimon.paimon.compaction.runner import compact

from .helpers import SMALL, append, batch, make_table, overwrite_partition


def _bins(bins) -> list[tuple]:
    return [(b.partition, b.bucket, b.total_buckets, tuple(f.file_name for f in b.files)) for b in bins]


def _same_as_planner(table, coordinator: CompactCoordinator) -> list[tuple]:
    coordinator.catch_up()
    expected = _bins(plan_compaction(table, coordinator.options).bins)
    assert _bins(coordinator.plan()) == expected
    return expected


def test_incremental_view_chooses_the_planners_bins_after_every_kind_of_commit(warehouse):
    table = make_table(warehouse, options=dict(SMALL, **{"compaction.min.file-num": "4"}))
    opts = CompactionOptions.from_table(table)
    coordinator = CompactCoordinator(table, opts)
    coordinator.catch_up()  # empty table: seeded from an (empty) scan once
    assert coordinator.scans == 1
    seen_bins = False
    for i in range(7):  # small commits in partitions a and b
        append(table, batch(i * 60, 60))
        seen_bins |= bool(_same_as_planner(table, coordinator))
    assert seen_bins
    append(table, batch(10_000, 2_000, partitions=("a",)))  # one large file: not a candidate
    _same_as_planner(table, coordinator)
    append(table, batch(20_000, 30, partitions=("c",)))  # a new partition
    _same_as_planner(table, coordinator)
    result = compact(table, opts)  # a COMPACT snapshot deletes small files, adds large ones
    assert result.committed
    assert _same_as_planner(table, coordinator) == []
    for i in range(5):
        append(table, batch(30_000 + i * 60, 60))
        _same_as_planner(table, coordinator)
    overwrite_partition(table, "b", 40_000, rows=40)  # partition b replaced
    _same_as_planner(table, coordinator)
    assert coordinator.scans == 1  # never rescanned: every change came from a delta
    assert coordinator.deltas == table.snapshot_manager().get_latest_snapshot().id


def test_seeded_mid_way_then_deltas(warehouse):
    table = make_table(warehouse, options=SMALL)
    for i in range(4):
        append(table, batch(i * 60, 60))
    coordinator = CompactCoordinator(table, CompactionOptions.from_table(table))
    coordinator.seed()
    assert coordinator.small_files == 8  # 4 commits x 2 partitions
    _same_as_planner(table, coordinator)
    append(table, batch(1_000, 60))
    assert coordinator.catch_up() == 1
    _same_as_planner(table, coordinator)


def test_reserved_files_are_not_planned_twice_and_come_back_when_released(warehouse):
    table = make_table(warehouse, options=SMALL)
    for i in range(3):
        append(table, batch(i * 60, 60))
    coordinator = CompactCoordinator(table, CompactionOptions.from_table(table))
    coordinator.catch_up()
    bins = coordinator.plan()
    assert len(bins) == 2  # one per partition (3 files >= min 3)
    coordinator.reserve(bins[:1])
    assert _bins(coordinator.plan()) == _bins(bins[1:])
    coordinator.release(bins[:1])
    assert _bins(coordinator.plan()) == _bins(bins)


def test_too_far_behind_or_expired_snapshots_mean_one_rescan(warehouse):
    table = make_table(warehouse, options=SMALL)
    coordinator = CompactCoordinator(table, CompactionOptions.from_table(table), max_catch_up=3)
    coordinator.catch_up()
    for i in range(5):
        append(table, batch(i * 60, 60))
    assert coordinator.catch_up() == 0  # 5 behind > 3: rescanned
    assert coordinator.scans == 2
    _same_as_planner(table, coordinator)
    append(table, batch(900, 60))
    append(table, batch(960, 60))
    from airflow_provider_paimon.paimon.maintenance.expire import expire_snapshots

    expire_snapshots(table, retain_max=1, retain_min=1, older_than=timedelta(0))
    assert coordinator.catch_up() == 0  # snapshot 6 is gone: rescanned
    assert coordinator.scans == 3
    _same_as_planner(table, coordinator)


def test_fixed_bucket_and_primary_key_tables_are_refused(warehouse):
    bucketed = make_table(warehouse, "db.bucketed", options=SMALL, bucket=2)
    with pytest.raises(NotCompactableError, match="CompactionOperator"):
        CompactCoordinator(bucketed, CompactionOptions())
    keyed = make_table(warehouse, "db.keyed", options=SMALL, primary_keys=["id"], bucket=1)
    with pytest.raises(NotCompactableError, match="primary"):
        CompactCoordinator(keyed, CompactionOptions())
