"""Rollback of main or a branch to a snapshot or tag: destructive and as-latest,
crash at every step, bad input."""

from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, open_catalog, table_dir, tree, write
from support.maintenance import OPTIONS, compact_main, data_files, meta_ids, read_rows, states

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.errors import (
    BranchNotFoundError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from airflow_provider_paimon.paimon.maintenance import expire_snapshots, rollback
from airflow_provider_paimon.paimon.tag import create_tag
from airflow_provider_paimon.paimon.tag.delete import TagInUseError

STEPS = ["rollback.restore", "rollback.journal", "rollback.snapshots", "rollback.hint",
         "rollback.manifests", "rollback.data"]


def history(warehouse: str, fork: bool = False):
    """1-3 appends, tag t2 on 2, 4 COMPACT, 5 append, tag t5 on 5 (and a branch from 5)."""
    catalog, t = make_table(warehouse, options=OPTIONS)
    for i in (1, 2, 3):
        write(t, [i])
    create_tag(t, "t2", snapshot_id=2)
    compact_main(load_table(catalog, "db.t"))
    write(load_table(catalog, "db.t"), [5])
    create_tag(t, "t5", snapshot_id=5)
    if fork:
        bops.create_branch(t, "fork", snapshot_id=5)
    return catalog, load_table(catalog, "db.t")


def at(catalog, sid: int, branch: str | None = None) -> list[tuple]:
    return read_rows(load_table(catalog, "db.t", branch).copy({"scan.snapshot-id": str(sid)}))


def test_destructive_rollback_removes_later_snapshots_tags_and_their_files(warehouse):
    catalog, t = history(warehouse)
    want = at(catalog, 3)
    files = data_files(warehouse)
    result = rollback(t, snapshot_id=3)
    assert result["removed_snapshot_ids"] == [4, 5] and result["removed_tags"] == ["t5"]
    tdir = table_dir(warehouse)
    assert meta_ids(tdir, None, "snapshot", "snapshot-") == ["1", "2", "3"]
    assert meta_ids(tdir, None, "tag", "tag-") == ["t2"]
    assert Path(os.path.join(tdir, "snapshot", "LATEST")).read_text() == "3"
    assert read_rows(load_table(catalog, "db.t")) == want
    # the compacted file and snapshot 5's file were needed by nothing left
    assert len(files - data_files(warehouse)) == 2 and result["deleted_by_kind"]["data"] == 2
    # writing goes on from the target
    write(load_table(catalog, "db.t"), [9])
    assert meta_ids(tdir, None, "snapshot", "snapshot-")[-1] == "4"
    assert read_rows(load_table(catalog, "db.t")) == sorted([*want, (9, "m9")])


def test_destructive_rollback_keeps_what_a_branch_needs(warehouse):
    catalog, t = history(warehouse, fork=True)
    fork_rows = read_rows(load_table(catalog, "db.t", "fork"))
    files = data_files(warehouse)
    rollback(t, snapshot_id=3)
    assert data_files(warehouse) == files
    assert read_rows(load_table(catalog, "db.t", "fork")) == fork_rows


def test_rollback_to_a_tag_whose_snapshot_expired(warehouse):
    catalog, t = history(warehouse)
    want = at(catalog, 2)
    expire_snapshots(t, retain_min=2, older_than=timedelta(0), max_deletes=100)
    assert meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-") == ["4", "5"]
    result = rollback(t, tag="t2")
    assert result["target_snapshot_id"] == 2 and result["removed_snapshot_ids"] == [4, 5]
    assert read_rows(load_table(catalog, "db.t")) == want
    assert meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-") == ["2"]


def test_rollback_as_latest_keeps_history(warehouse, monkeypatch):
    catalog, t = history(warehouse, fork=True)
    monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "undo_bad_load")  # the run that rolls back
    monkeypatch.setenv("AIRFLOW_CTX_DAG_RUN_ID", "manual__3")
    before = states(catalog, warehouse)
    result = rollback(t, tag="t2", as_latest=True)
    assert result["snapshot_id"] == 6 and result["deleted_file_count"] == 0
    assert read_rows(load_table(catalog, "db.t")) == before[("main", "tag", "t2")]
    after = states(catalog, warehouse)
    for key, rows_ in before.items():
        if key[1] != "latest" or key[0] != "main":
            assert after[key] == rows_, key
    doc = json.loads(Path(os.path.join(table_dir(warehouse), "snapshot", "snapshot-6")).read_text())
    assert doc["commitKind"] == "OVERWRITE" and doc["properties"]["rollback.tag"] == "t2"
    assert doc["properties"]["airflow.dag_id"] == "undo_bad_load"
    assert doc["properties"]["airflow.run_id"] == "manual__3"
    assert result["already_rolled_back"] is False
    again = rollback(load_table(catalog, "db.t"), snapshot_id=2, as_latest=True)  # t2 is snapshot 2
    assert again["snapshot_id"] == 6 and again["already_rolled_back"] is True
    assert meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-")[-1] == "6"
    write(load_table(catalog, "db.t"), [7])
    assert read_rows(load_table(catalog, "db.t")) == sorted(before[("main", "tag", "t2")] + [(7, "m7")])
    # on a branch: its own snapshot ids, shared manifest folder
    write(load_table(catalog, "db.t", "fork"), [8], "b")
    rollback(t, branch="fork", snapshot_id=5, as_latest=True)
    assert read_rows(load_table(catalog, "db.t", "fork")) == before[("fork", "latest", None)]


def test_a_tag_a_branch_was_created_from_blocks_destructive_rollback(warehouse):
    _catalog, t = history(warehouse)
    bops.create_branch(t, "fix", tag="t5")
    before = tree(warehouse)
    with pytest.raises(TagInUseError, match="tag 't5' would go, and branch 'fix' was created from it"):
        rollback(t, snapshot_id=3)
    assert tree(warehouse) == before


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({}, InvalidArgumentError, "exactly one of snapshot_id or tag"),
        ({"snapshot_id": 2, "tag": "t2"}, InvalidArgumentError, "exactly one of snapshot_id or tag"),
        ({"snapshot_id": -1}, InvalidArgumentError, "positive integer"),
        ({"snapshot_id": 99}, SnapshotNotFoundError, "snapshot 99 does not exist on main"),
        ({"tag": "nope"}, TagNotFoundError, "tag 'nope' does not exist"),
        ({"snapshot_id": 2, "branch": "nope"}, BranchNotFoundError, "branch 'nope' does not exist"),
        ({"snapshot_id": 2, "as_latest": "yes"}, InvalidArgumentError, "as_latest must be True or False"),
    ],
)
def test_bad_input_changes_nothing(warehouse, kwargs, exc, match):
    _catalog, t = history(warehouse)
    before = tree(warehouse)
    with pytest.raises(exc, match=match):
        rollback(t, **kwargs)
    assert tree(warehouse) == before


@pytest.mark.parametrize("step", STEPS)
def test_crash_at_every_step_reads_and_rerun_finishes(warehouse, tmp_path, step):
    catalog, t = history(warehouse)
    old, want = read_rows(load_table(catalog, "db.t")), at(catalog, 3)
    between = {tuple(at(catalog, s)) for s in (3, 4, 5)}
    ref = str(tmp_path / "ref")
    shutil.copytree(warehouse, ref)
    rollback(load_table(open_catalog(ref), "db.t"), snapshot_id=3)
    faults.set_fault(step)
    try:
        with pytest.raises(faults.InjectedFault):
            rollback(t, snapshot_id=3)
    finally:
        faults.clear()
    assert tuple(read_rows(load_table(catalog, "db.t"))) in between | {tuple(old)}
    for sid in meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-"):
        at(catalog, int(sid))  # every snapshot still listed reads
    rollback(t, snapshot_id=3)
    assert read_rows(load_table(catalog, "db.t")) == want
    assert tree(warehouse) == tree(ref)


def test_every_step_is_a_fault_point(warehouse):
    _catalog, t = history(warehouse)
    faults.clear()
    faults.record_points()  # unarmed points record nothing unless asked
    rollback(t, snapshot_id=3)
    assert [p for p in faults.seen_points() if p.startswith("rollback.")] == STEPS
    faults.clear()


KILL_SCRIPT = """
import sys
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.maintenance import rollback
table = load_table(open_catalog(sys.argv[1]), "db.t")
print(rollback(table, snapshot_id=3, as_latest=sys.argv[2] == "latest"))
"""


@pytest.mark.parametrize(
    ("mode", "step"),
    [("destructive", "rollback.snapshots"), ("destructive", "rollback.manifests"), ("latest", "rollback.switch")],
)
def test_sigkill_at_step_then_rerun(warehouse, tmp_path, mode, step):
    """A real SIGKILL (not an exception): every snapshot still listed reads, main reads
    old or target rows, and a rerun ends as an uninterrupted rollback does."""
    import subprocess
    import sys

    catalog, _t = history(warehouse)
    old, want = read_rows(load_table(catalog, "db.t")), at(catalog, 3)
    between = {tuple(at(catalog, s)) for s in (3, 4, 5)}
    at_5 = at(catalog, 5)
    env = dict(os.environ, PAIMON_FAULT=step, PAIMON_FAULT_MODE="kill")
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse, mode], env=env,
                          capture_output=True, timeout=180)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert tuple(read_rows(load_table(catalog, "db.t"))) in between | {tuple(old)}
    for sid in meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-"):
        at(catalog, int(sid))  # every snapshot still listed reads
    result = rollback(load_table(catalog, "db.t"), snapshot_id=3, as_latest=mode == "latest")
    assert read_rows(load_table(catalog, "db.t")) == want
    if mode == "latest":  # history kept: snapshot 5 reads as before, the rollback is a new snapshot
        assert at(catalog, 5) == at_5
        # killed after its snapshot was created: that commit (6) is complete and reads the
        # target; the rerun recognises it, finishes the switch and commits nothing again
        assert at(catalog, 6) == want and result["snapshot_id"] == 6 and result["already_rolled_back"]
        assert meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-")[-1] == "6"
        assert (Path(table_dir(warehouse)) / "snapshot" / "LATEST").read_text().strip() == "6"
    else:
        assert meta_ids(table_dir(warehouse), None, "snapshot", "snapshot-")[-1] == "3"
