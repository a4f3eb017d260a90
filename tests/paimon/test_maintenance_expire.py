"""Snapshot expiry: every retained snapshot, tag and branch reads as before; the files
only expired snapshots used are gone; Paimon Java's rule on a plain table; bad input."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, table_dir, tree, write
from support.maintenance import (
    OPTIONS,
    compact_main,
    data_files,
    java_expire,
    meta_ids,
    scenario,
    states,
)

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.errors import (
    BranchNotFoundError,
    ConcurrentModificationError,
    InvalidArgumentError,
)
from airflow_provider_paimon.paimon.maintenance import expire_snapshots
from airflow_provider_paimon.paimon.tag import create_tag

NOW = timedelta(0)  # older_than=now: age does not protect anything


def test_expire_main_keeps_every_branch_tag_and_backup(warehouse):
    catalog, t = scenario(warehouse)
    tdir = table_dir(warehouse)
    before = states(catalog, warehouse)
    files_before = data_files(warehouse)
    result = expire_snapshots(t, retain_min=1, older_than=NOW, max_deletes=100)
    assert result["expired_snapshot_ids"] == list(range(1, 12))
    assert meta_ids(tdir, None, "snapshot", "snapshot-") == ["12"]
    assert Path(os.path.join(tdir, "snapshot", "EARLIEST")).read_text() == "12"
    after = states(catalog, warehouse)
    for key, rows in after.items():
        assert rows == before[key], key
    # everything retained is still there: tags, both forks, the backup, main's latest
    assert {k for k in before if k[0] != "main" or k[1] != "snapshot"} <= set(after)
    # gone: the files of main's appends 4, 5 (compacted at 6) and 9, 10 (compacted at
    # 11), which nothing retained reads; 1-3 stay (tag t2, snapfork), fix's own stay
    gone = files_before - data_files(warehouse)
    assert len(gone) == 4, gone
    assert sorted(gone) == sorted(p for p in result["deleted_files"] if p.startswith("bucket-"))
    assert result["deleted_by_kind"]["data"] == 4
    assert result["deleted_bytes"] > 0
    assert result["kept_because"]  # shared files kept, with the reason
    assert any("branch 'bk'" in owner for owner in result["kept_because"])
    # a second run has nothing left to do
    again = expire_snapshots(t, retain_min=1, older_than=NOW, max_deletes=100)
    assert again["expired_snapshot_ids"] == [] and again["deleted_file_count"] == 0


def test_branch_from_plain_snapshot_survives_main_expiry(warehouse):
    """apache/paimon 3787: the branch's only snapshot is a copy of main's snapshot 2."""
    catalog, t = make_table(warehouse, options=OPTIONS)
    write(t, [1])
    write(t, [2])
    bops.create_branch(t, "fork", snapshot_id=2)
    write(t, [3])
    compact_main(load_table(catalog, "db.t"))
    write(load_table(catalog, "db.t"), [4])
    before = states(catalog, warehouse)
    result = expire_snapshots(t, retain_min=1, older_than=NOW, max_deletes=100)
    assert result["expired_snapshot_ids"] == [1, 2, 3, 4]
    assert states(catalog, warehouse)[("fork", "latest", None)] == before[("fork", "latest", None)]
    assert result["deleted_by_kind"]["data"] == 1  # only main's file 3 (compacted, not forked)


def test_expire_a_branch_keeps_main_and_its_consumer(warehouse):
    catalog, t = scenario(warehouse)
    before = states(catalog, warehouse)
    # branch fix: snapshots 2 (from t2), 3, 4; its consumer 'reader' is at nextSnapshot 3
    result = expire_snapshots(t, branch="fix", retain_min=1, older_than=NOW, max_deletes=100)
    assert result["expired_snapshot_ids"] == [2]
    assert "consumer 'reader'" in result["stopped_because"]
    after = states(catalog, warehouse)
    assert ("fix", "snapshot", 2) not in after
    for key, rows in after.items():
        assert rows == before[key], key


def test_retention_settings_and_dry_run(warehouse):
    _catalog, t = scenario(warehouse)
    snap = tree(warehouse)
    dry = expire_snapshots(t, retain_min=1, older_than=NOW, max_deletes=100, dry_run=True)
    assert tree(warehouse) == snap
    assert dry["dry_run"] is True and dry["expired_snapshot_ids"] == list(range(1, 12))
    assert dry["deleted_by_kind"]["data"] == 4 and dry["deleted_bytes"] > 0
    real = expire_snapshots(t, retain_min=1, older_than=NOW, max_deletes=100)
    assert real["deleted_files"] == dry["deleted_files"]


@pytest.mark.parametrize(
    ("kwargs", "ids", "because"),
    [
        ({"retain_min": 3, "older_than": NOW, "max_deletes": 100}, list(range(1, 10)), "retain_min=3"),
        ({"retain_min": 1, "older_than": NOW, "max_deletes": 4}, [1, 2, 3, 4], "max_deletes=4"),
        ({"retain_min": 1, "retain_max": 5}, list(range(1, 8)), "newer than older_than"),
        # defaults: snapshot.num-retained.min 10, time-retained 1 h, expire.limit 10
        ({}, [], "newer than older_than"),
        ({"older_than": NOW}, [1, 2], "retain_min=10"),
    ],
)
def test_range_follows_paimon_options(warehouse, kwargs, ids, because):
    _catalog, t = scenario(warehouse)
    result = expire_snapshots(t, **kwargs)
    assert result["expired_snapshot_ids"] == ids
    assert because in result["stopped_because"]


def test_table_options_are_honoured(warehouse):
    _catalog, t = make_table(warehouse, options={"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms",
                                                "snapshot.expire.limit": "3"})
    for i in range(6):
        write(t, [i])
    time.sleep(0.01)
    result = expire_snapshots(t)
    assert result["expired_snapshot_ids"] == [1, 2, 3]
    assert result["settings"]["sources"]["retain_min"] == "table option"
    assert expire_snapshots(t)["expired_snapshot_ids"] == [4]


@pytest.mark.parametrize("tagged", [False, True])
def test_same_result_as_paimon_java(warehouse, tmp_path, tagged):
    """On a table without branches, our deletions are exactly Java's ExpireSnapshotsImpl."""
    import shutil

    catalog, t = make_table(warehouse, options=OPTIONS)
    for i in range(4):
        write(t, [i])
    if tagged:
        create_tag(t, "keep", snapshot_id=2)
    compact_main(load_table(catalog, "db.t"))
    write(load_table(catalog, "db.t"), [10])
    write(load_table(catalog, "db.t"), [11])
    tdir = table_dir(warehouse)
    ref = str(tmp_path / "ref")
    shutil.copytree(tdir, ref)
    cut = int(time.time() * 1000)
    want_ids, want_deleted = java_expire(ref, retain_min=2, retain_max=2**31 - 1, older_than_ms=cut, max_deletes=100)
    result = expire_snapshots(t, retain_min=2, older_than=cut, max_deletes=100)
    assert result["expired_snapshot_ids"] == want_ids == [1, 2, 3, 4, 5]
    assert set(result["deleted_files"]) == want_deleted
    assert result["deleted_by_kind"]["data"] == (2 if tagged else 4)


def _expect_error(warehouse, t, exc, match, **kwargs):
    before = tree(warehouse)
    with pytest.raises(exc, match=match):
        expire_snapshots(t, **kwargs)
    assert tree(warehouse) == before


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"retain_min": -1}, "retain_min must be >= 1"),
        ({"retain_max": 0}, "retain_max must be >= 1"),
        ({"max_deletes": -5}, "max_deletes must be >= 1"),
        ({"retain_min": "3"}, "retain_min must be a positive integer"),
        ({"retain_min": True}, "retain_min must be a positive integer"),
        ({"retain_min": 5, "retain_max": 2}, r"retain_min \(5, from argument .*\) is larger than retain_max \(2"),
        ({"retain_max": 3}, r"retain_min \(10, from default"),
        ({"older_than": datetime.now(timezone.utc) + timedelta(days=1)}, "in the future"),
        ({"older_than": datetime(2020, 1, 1)}, "timezone-aware"),
        ({"older_than": "yesterday"}, "older_than must be"),
        ({"dry_run": "yes"}, "dry_run must be True or False"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(warehouse, kwargs, match):
    _catalog, t = scenario(warehouse)
    _expect_error(warehouse, t, InvalidArgumentError, match, **kwargs)


def test_unknown_branch_and_bad_table_option(warehouse):
    _catalog, t = scenario(warehouse)
    _expect_error(warehouse, t, BranchNotFoundError, "branch 'nope' does not exist", branch="nope")
    _catalog2, t2 = make_table(warehouse, "db.u", options={"snapshot.time-retained": "soon"})
    write(t2, [1])
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match=re.escape("snapshot.time-retained 'soon' is not a duration")):
        expire_snapshots(t2)
    assert tree(warehouse) == before


def test_refused_while_a_branch_operation_is_pending(warehouse):
    from airflow_provider_paimon.paimon import faults

    catalog, t = scenario(warehouse)
    write(load_table(catalog, "db.t", "snapfork"), [5])
    faults.set_fault("replace_main.manifests")
    try:
        with pytest.raises(faults.InjectedFault):
            bops.replace_main(t, "snapfork", backup_name="bk2")
    finally:
        faults.clear()
    for br in (None, "snapfork", "bk2"):
        _expect_error(warehouse, t, ConcurrentModificationError, "pending replace_main", branch=br,
                      retain_min=1, older_than=NOW)
    # other branches can be expired meanwhile; the pending operation then finishes
    expire_snapshots(t, branch="fix", retain_min=1, older_than=NOW, max_deletes=100)
    bops.replace_main(t, "snapfork", backup_name="bk2")
    assert states(catalog, warehouse)[("main", "latest", None)] == states(catalog, warehouse)[("snapfork", "latest", None)]
