"""Stale fast-forward journals: orphan cleanup deletes a ``.branch-op.json`` whose
fast-forward is complete on disk (killed just before removing it) once it is older than
the safety age, as it does for replace-main; an unfinished one is kept for its rerun."""

from __future__ import annotations

import os
import time

import pytest
from support.branch_tables import load_table, make_table, table_dir, write
from support.maintenance import states

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.maintenance import remove_orphan_files
from airflow_provider_paimon.paimon.tag import create_tag

PENDING = "pending branch operation (rerun it to finish)"


def _age(tdir: str) -> None:
    past = time.time() - 2 * 86400
    for root, dirs, files in os.walk(tdir):
        for name in files + dirs:
            os.utime(os.path.join(root, name), (past, past))


def _setup(warehouse: str):
    """main 1-5 (tag t4 on 4), branch ``fix`` from snapshot 2 with two writes of its own
    and a tag: fast-forward copies 2-4 from the branch, deletes main's 5 and tag t4."""
    catalog, t = make_table(warehouse)
    for i in range(1, 6):
        write(t, [i])
    create_tag(t, "t4", snapshot_id=4)
    bops.create_branch(t, "fix", snapshot_id=2)
    fix = load_table(catalog, "db.t", "fix")
    write(fix, [30], "b")
    write(fix, [40], "b")
    create_tag(load_table(catalog, "db.t"), "f3", branch="fix", snapshot_id=3)
    return catalog, t


def _killed_fast_forward(catalog, point: str) -> None:
    faults.set_fault(point)
    try:
        with pytest.raises(faults.InjectedFault):
            bops.fast_forward(load_table(catalog, "db.t"), "fix")
    finally:
        faults.clear()


def test_finished_fast_forward_journal_is_stale_and_removed(warehouse):
    catalog, t = _setup(warehouse)
    tdir = table_dir(warehouse)
    _killed_fast_forward(catalog, "fast_forward.hints")  # every step done, journal left
    write(load_table(catalog, "db.t"), [50])  # a later commit to main reuses id 5
    before = states(catalog, warehouse)
    fresh = remove_orphan_files(t)  # not yet older than the safety age: kept
    assert fresh["deleted_files"] == [] and fresh["kept_because"]["newer than older_than"] >= 1
    _age(tdir)
    result = remove_orphan_files(t)
    # the journal goes, with old main's files that the fast-forward left unreferenced
    kinds = {d["path"]: d["kind"] for d in result["deleted_files"]}
    assert kinds.pop(".branch-op.json") == "journal"
    assert set(kinds.values()) <= {"data", "manifest", "manifest_list"}
    assert bops.pending_operation(t) is None
    assert states(catalog, warehouse) == before


@pytest.mark.parametrize("point", ["fast_forward.ahead", "fast_forward.switch", "fast_forward.history"])
def test_unfinished_fast_forward_journal_is_kept_and_the_rerun_finishes(warehouse, point):
    catalog, t = _setup(warehouse)
    tdir = table_dir(warehouse)
    _killed_fast_forward(catalog, point)
    _age(tdir)
    result = remove_orphan_files(t)
    assert result["kept_because"][PENDING] == 1
    assert not any(d["path"] == ".branch-op.json" for d in result["deleted_files"])
    bops.fast_forward(load_table(catalog, "db.t"), "fix")  # the rerun finishes it
    assert bops.pending_operation(t) is None
    assert sorted(r[0] for r in load_table(catalog, "db.t").new_read_builder().new_read().to_arrow(
        load_table(catalog, "db.t").new_read_builder().new_scan().plan().splits()).to_pylist()
        for r in [tuple(r.values())]) == [1, 2, 30, 40]
