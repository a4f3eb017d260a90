"""Snapshot helpers: latest/earliest follow Paimon's hint rules, per branch."""

from __future__ import annotations

import os
from pathlib import Path

from support.branch_tables import load_table, make_table, table_dir, write

from airflow_provider_paimon.paimon import snapshots as s
from airflow_provider_paimon.paimon.branch import create_branch


def test_latest_and_earliest_follow_the_hints(warehouse):
    catalog, t = make_table(warehouse)
    for i in range(3):
        write(t, [i])
    layout = s.TableLayout.of(t)
    snap = os.path.join(table_dir(warehouse), "snapshot")
    assert s.snapshot_ids(layout) == [1, 2, 3]
    assert s.latest_snapshot_id(layout) == 3 and s.earliest_snapshot_id(layout) == 1
    # a valid hint below a gap hides what is behind the gap (the rule the operations use)
    os.rename(os.path.join(snap, "snapshot-3"), os.path.join(snap, "snapshot-5"))
    with open(os.path.join(snap, "LATEST"), "w") as fh:
        fh.write("2")
    assert s.latest_snapshot_id(layout) == 2
    assert load_table(catalog, "db.t").snapshot_manager().get_latest_snapshot().id == 2  # pypaimon agrees
    # a stale hint (next snapshot exists) falls back to the listing
    os.rename(os.path.join(snap, "snapshot-5"), os.path.join(snap, "snapshot-3"))
    assert s.latest_snapshot_id(layout) == 3
    # garbage in a hint is ignored
    with open(os.path.join(snap, "LATEST"), "w") as fh:
        fh.write("x")
    assert s.latest_snapshot_id(layout) == 3
    os.unlink(os.path.join(snap, "snapshot-1"))
    assert s.earliest_snapshot_id(layout) == 2
    s.write_hints(layout)
    assert Path(os.path.join(snap, "LATEST")).read_text() == "3"
    assert Path(os.path.join(snap, "EARLIEST")).read_text() == "2"
    assert [i.id for i in s.list_snapshots(layout)] == [2, 3]
    assert s.latest_snapshot(layout)["id"] == 3


def test_per_branch(warehouse):
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    create_branch(t, "b", snapshot_id=1)
    write(load_table(catalog, "db.t", "b"), [9], "b")
    layout = s.TableLayout.of(load_table(catalog, "db.t", "b"))  # a branch table gives the same root
    assert layout.table_path == table_dir(warehouse)
    assert s.snapshot_ids(layout, "b") == [1, 2]
    assert s.latest_snapshot_id(layout, "b") == 2 and s.earliest_snapshot_id(layout, "b") == 1
    assert s.branch_names(layout) == ["b"]
    assert s.schema_ids(layout, "b") == [0]
    info = s.list_snapshots(layout, "b")[-1]
    assert (info.id, info.commit_kind, info.total_record_count) == (2, "APPEND", 2)
    assert s.read_snapshot(layout, "b", 7) is None
    assert s.latest_snapshot_id(layout, "nope") is None
