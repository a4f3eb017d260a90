"""Streaming read planning and consumer files on real tables (no Spark)."""

from __future__ import annotations

import json
import os
import time

import pytest

from airflow_provider_paimon.paimon import consumers
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, SnapshotNotFoundError
from airflow_provider_paimon.paimon.stream_scan import (
    StreamOffset,
    StreamPlanner,
    parse_stream_scan_config,
)

from .helpers import append, compact, make_table, read_ids, reload


def _planner(table, **options):
    return StreamPlanner(table, parse_stream_scan_config(options))


def _read(planner, start: StreamOffset, end: StreamOffset) -> list[int]:
    entries = planner.range_entries(start, end)
    return read_ids(planner.table, planner.splits(entries))


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """s1..s4 APPEND (ids 1..8), s5 COMPACT (merges them), s6 APPEND (ids 9, 10). Read-only."""
    warehouse = str(tmp_path_factory.mktemp("history"))
    table = make_table(warehouse)
    for i in range(4):
        append(table, [2 * i + 1, 2 * i + 2])
    assert compact(table) == 5
    time.sleep(0.02)  # s6's file is created strictly after s5 committed
    assert append(table, [9, 10]) == 6
    return reload(warehouse)


def test_config_resolves_default_and_rejects_bad_options():
    assert parse_stream_scan_config({}).mode == "latest-full"
    assert parse_stream_scan_config({"scan.snapshot-id": "3"}).mode == "from-snapshot"
    assert parse_stream_scan_config({"scan.timestamp-millis": "5"}).mode == "from-timestamp"
    assert parse_stream_scan_config({"scan.mode": "full"}).mode == "latest-full"
    for bad, message in [
        ({"scan.mode": "sideways"}, "unknown"),
        ({"scan.mode": "incremental"}, "not supported"),
        ({"scan.mode": "compacted-full", "scan.snapshot-id": "2"}, "takes no start point"),
        ({"scan.mode": "from-snapshot"}, "needs option 'scan.snapshot-id'"),
        ({"scan.mode": "latest", "scan.snapshot-id": "2"}, "takes no start point"),
        ({"scan.snapshot-id": "2", "scan.timestamp-millis": "1"}, "conflict"),
        ({"scan.snapshot-id": "zero"}, "must be an integer"),
        ({"max-files-per-trigger": "0"}, ">= 1"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            parse_stream_scan_config(bad)
    offset = StreamOffset(next_snapshot=7, full_snapshot=6, start_snapshot=7)
    assert StreamOffset.from_json(json.loads(json.dumps(offset.to_json()))) == offset
    with pytest.raises(InvalidArgumentError, match="not a paimon stream offset"):
        StreamOffset.from_json({"offset": 1})


def test_latest_full_reads_everything_once_and_skips_compact(history):
    planner = _planner(history)
    start = planner.resolve_start()
    assert start == StreamOffset(next_snapshot=7, full_snapshot=6)
    first = StreamOffset(next_snapshot=7, full_snapshot=6, start_snapshot=7)
    assert _read(planner, StreamOffset(0), first) == list(range(1, 11))
    # Incrementally from snapshot 2: s2, s3, s4 and s6; the COMPACT s5 adds nothing.
    assert planner.delta_entries(5) == []
    assert _read(planner, StreamOffset(2), StreamOffset(7)) == [3, 4, 5, 6, 7, 8, 9, 10]


def test_start_modes(history):
    assert _planner(history, **{"scan.mode": "latest"}).resolve_start() == StreamOffset(7)
    p = _planner(history, **{"scan.snapshot-id": "3"})
    assert p.resolve_start() == StreamOffset(3)
    p = _planner(history, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "3"})
    start = p.resolve_start()
    assert start == StreamOffset(next_snapshot=4, full_snapshot=3)
    end = StreamOffset(next_snapshot=7, full_snapshot=3, start_snapshot=4)
    assert _read(p, StreamOffset(0), end) == list(range(1, 11))
    s4 = history.snapshot_manager().get_snapshot_by_id(4)
    p = _planner(history, **{"scan.timestamp-millis": str(s4.time_millis)})
    assert p.resolve_start().next_snapshot == 4
    # A consumer's saved position wins over scan.mode.
    assert _planner(history).resolve_start(consumer_next=6) == StreamOffset(6)
    with pytest.raises(SnapshotNotFoundError, match="beyond the latest"):
        _planner(history, **{"scan.snapshot-id": "9"}).resolve_start()


def test_compacted_full_starts_from_the_newest_compaction_as_paimon_does(history, tmp_path):
    p = _planner(history, **{"scan.mode": "compacted-full"})
    assert p.resolve_start() == StreamOffset(next_snapshot=6, full_snapshot=5)  # s5 COMPACT, in full
    end = StreamOffset(next_snapshot=7, full_snapshot=5, start_snapshot=6)
    assert _read(p, StreamOffset(0), end) == list(range(1, 11))  # then s6's rows
    # a batch compaction (identifier Long.MAX_VALUE) counts whatever the delta-commits
    every_two = history.copy({"full-compaction.delta-commits": "2"})
    assert _planner(every_two, **{"scan.mode": "compacted-full"}).resolve_start().full_snapshot == 5
    # no COMPACT snapshot: the latest, read in full; an empty table: its first snapshot
    plain = make_table(str(tmp_path))
    assert _planner(plain, **{"scan.mode": "compacted-full"}).resolve_start() == StreamOffset(1)
    append(plain, [1])
    append(plain, [2])
    assert _planner(reload(str(tmp_path)), **{"scan.mode": "compacted-full"}).resolve_start() == \
        StreamOffset(next_snapshot=3, full_snapshot=2)


def test_compacted_full_with_delta_commits_takes_only_full_compaction_identifiers(history):
    """Paimon's FullCompactedStartingScanner: a COMPACT whose identifier is a multiple of
    ``full-compaction.delta-commits`` (a streaming writer's full compactions), or a batch one."""
    from types import SimpleNamespace

    kinds = {1: ("APPEND", 1), 2: ("COMPACT", 3), 3: ("APPEND", 4), 4: ("COMPACT", 4), 5: ("COMPACT", 5)}

    class Snapshots:
        def get_snapshot_by_id(self, sid):
            kind, identifier = kinds[sid]
            return SimpleNamespace(id=sid, commit_kind=kind, commit_identifier=identifier)

        def get_latest_snapshot(self):
            return self.get_snapshot_by_id(5)

        def try_get_earliest_snapshot(self):
            return self.get_snapshot_by_id(1)

    for every, picked in (("3", 2), ("2", 4), ("7", None)):
        planner = _planner(history.copy({"full-compaction.delta-commits": every}), **{"scan.mode": "compacted-full"})
        planner.snapshots = Snapshots()
        assert planner.latest_full_compaction(5) == picked, every
    planner = _planner(history, **{"scan.mode": "compacted-full"})
    planner.snapshots = Snapshots()
    assert planner.latest_full_compaction(5) == 5  # without the option: the newest COMPACT
    assert planner.resolve_start() == StreamOffset(next_snapshot=6, full_snapshot=5)


def test_file_creation_time_filters_the_full_read(history):
    s5 = history.snapshot_manager().get_snapshot_by_id(5)
    p = _planner(history, **{"scan.file-creation-time-millis": str(s5.time_millis + 1)})
    assert p.config.mode == "from-file-creation-time"
    start = p.resolve_start()
    end = StreamOffset(start.next_snapshot, start.full_snapshot, start.next_snapshot)
    # Only s6's file was created after the compaction committed.
    assert start.full_snapshot == 6
    assert _read(p, StreamOffset(0), end) == [9, 10]


def test_rate_limits_count_scannable_snapshots_and_files(history):
    p = _planner(history)
    assert p.advance(2, max_snapshots=1) == 3
    assert p.advance(4, max_snapshots=1) == 6  # the COMPACT s5 is passed over for free
    assert p.advance(5, max_snapshots=1) == 7
    assert p.advance(2, max_files=2) == 4  # one file per APPEND snapshot
    assert p.advance(2) == 7
    assert p.advance(2, cap=3) == 4  # availableNow target
    assert p.advance(7) == 7


def test_a_position_after_a_compact_snapshot_names_the_data_snapshot_it_read(history):
    """Lineage's source snapshot is never a COMPACT one: s5 has s4's rows (#21)."""
    p = _planner(history)
    assert p.data_snapshot_before(6) == 4  # read up to the COMPACT s5: s4's rows
    assert p.data_snapshot_before(5) is None and p.data_snapshot_before(7) is None  # s4, s6: data
    assert p.data_snapshot_before(1) is None
    offset = StreamOffset(next_snapshot=6, data_snapshot=4)
    again = StreamOffset.from_json(json.loads(json.dumps(offset.to_json())))
    assert again == offset == StreamOffset(next_snapshot=6)  # the same position for Spark
    assert (again.lineage_snapshot, again.consumed_snapshot) == (4, 5)
    assert StreamOffset(next_snapshot=7).lineage_snapshot == 6
    assert "dataSnapshot" not in StreamOffset(next_snapshot=7).to_json()


def test_overwrite_is_skipped_unless_asked(warehouse):
    table = make_table(warehouse)
    append(table, [1])
    append(table, [2], overwrite=True)
    append(table, [3])
    table = reload(warehouse)
    assert table.snapshot_manager().get_snapshot_by_id(2).commit_kind == "OVERWRITE"
    assert _read(_planner(table), StreamOffset(1), StreamOffset(4)) == [1, 3]
    p = _planner(table, **{"streaming-read-overwrite": "true"})
    assert _read(p, StreamOffset(1), StreamOffset(4)) == [1, 2, 3]


def test_expired_snapshot_is_a_clear_error(warehouse):
    table = make_table(warehouse)
    for i in range(3):
        append(table, [i])
    os.remove(os.path.join(table.table_path, "snapshot", "snapshot-1"))
    os.remove(os.path.join(table.table_path, "snapshot", "snapshot-2"))
    with pytest.raises(SnapshotNotFoundError, match="expired"):
        _planner(reload(warehouse)).advance(2)


def test_a_rolled_back_table_stops_the_stream(warehouse):
    table = make_table(warehouse)
    for i in range(3):
        append(table, [i])
    planner = _planner(reload(warehouse))
    assert planner.advance(4) == 4
    table.rollback_to(1)
    with pytest.raises(SnapshotNotFoundError, match="rolled back"):
        _planner(reload(warehouse)).advance(4)


def test_consumer_files_live_in_the_branch_folder(warehouse):
    table = make_table(warehouse)
    append(table, [1])
    table.create_tag("t1", 1)
    table.branch_manager().create_branch("b1", "t1")
    branch = reload(warehouse, branch="b1")
    consumers.save_next_snapshot(branch, "job-1", 2)
    path = os.path.join(table.table_path, "branch", "branch-b1", "consumer", "consumer-job-1")
    with open(path) as fh:
        assert json.load(fh) == {"nextSnapshot": 2}
    assert not os.path.exists(os.path.join(table.table_path, "consumer"))
    assert consumers.read_next_snapshot(branch, "job-1") == 2
    assert consumers.read_next_snapshot(table, "job-1") is None
    assert consumers.min_next_snapshot(branch) == 2
    with pytest.raises(InvalidArgumentError, match="consumer-id"):
        consumers.save_next_snapshot(branch, "../x", 2)
