"""Expiry killed at every step: everything present still reads, and a rerun finishes
with exactly the files an uninterrupted run leaves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from support.branch_tables import load_table, open_catalog, table_dir, tree
from support.maintenance import scenario, states

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.maintenance import expire_snapshots
from airflow_provider_paimon.paimon.maintenance.expire import JOURNAL_NAME, STEPS

ARGS = {"retain_min": 1, "older_than": 0, "max_deletes": 100}


def _reference(warehouse: str, tmp_path) -> dict[str, str]:
    """The table after an uninterrupted expiry of a copy of the warehouse."""
    ref = str(tmp_path / "ref")
    shutil.copytree(warehouse, ref)
    catalog = open_catalog(ref)
    ARGS["older_than"] = _now()
    expire_snapshots(load_table(catalog, "db.t"), **ARGS)
    return tree(ref)


def _now() -> int:
    import time

    return int(time.time() * 1000)


def _check_readable(catalog, warehouse: str, before: dict) -> None:
    """Every snapshot still present, every tag and every branch reads as before."""
    after = states(catalog, warehouse)
    for key, rows in after.items():
        assert rows == before[key], key
    for key in before:
        if key[1] != "snapshot" or key[0] != "main":
            assert key in after, key


def test_every_step_is_a_fault_point(warehouse):
    _, t = scenario(warehouse)
    faults.clear()
    faults.record_points()  # unarmed points record nothing unless asked
    expire_snapshots(t, **{**ARGS, "older_than": _now()})
    assert [p for p in faults.seen_points() if p.startswith("expire.")] == list(STEPS)
    faults.clear()


@pytest.mark.parametrize("step", STEPS)
def test_crash_at_every_step_stays_readable_and_rerun_finishes(warehouse, tmp_path, step):
    catalog, t = scenario(warehouse)
    before = states(catalog, warehouse)
    want = _reference(warehouse, tmp_path)
    faults.set_fault(step)
    try:
        with pytest.raises(faults.InjectedFault):
            expire_snapshots(t, **ARGS)
    finally:
        faults.clear()
    assert os.path.exists(os.path.join(table_dir(warehouse), JOURNAL_NAME))
    _check_readable(catalog, warehouse, before)
    # a second expiry cannot start beside the unfinished one's journal... it finishes it
    result = expire_snapshots(t, **ARGS)
    assert result["resumed"] is not None
    assert result["resumed"]["snapshot_ids"] == list(range(1, 12))
    _check_readable(catalog, warehouse, before)
    assert tree(warehouse) == want


def test_two_runs_at_once_both_finish(warehouse, tmp_path, monkeypatch):
    """A second expiry starting while the first is mid-way finishes the first's journal;
    the first then completes too (every step is idempotent) and the result is the same."""
    catalog, t = scenario(warehouse)
    before = states(catalog, warehouse)
    want = _reference(warehouse, tmp_path)
    real_check = faults.check
    inner: list = []

    def second_run(point: str) -> None:
        real_check(point)
        if point == "expire.hint" and not inner:
            inner.append(None)
            inner[0] = expire_snapshots(load_table(catalog, "db.t"), **ARGS)

    monkeypatch.setattr(faults, "check", second_run)
    outer = expire_snapshots(t, **ARGS)
    assert inner[0]["resumed"]["snapshot_ids"] == outer["expired_snapshot_ids"]
    _check_readable(catalog, warehouse, before)
    assert tree(warehouse) == want


KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.maintenance import expire_snapshots
    table = load_table(open_catalog(sys.argv[1]), "db.t")
    print(expire_snapshots(table, retain_min=1, older_than=int(sys.argv[2]), max_deletes=100))
    """
)


@pytest.mark.parametrize("step", ["expire.snapshots", "expire.manifests"])
def test_sigkill_at_step_then_rerun(warehouse, tmp_path, step):
    catalog, t = scenario(warehouse)
    before = states(catalog, warehouse)
    want = _reference(warehouse, tmp_path)
    env = dict(os.environ, PAIMON_FAULT=step, PAIMON_FAULT_MODE="kill")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, warehouse, str(ARGS["older_than"])],
        env=env, capture_output=True, timeout=180,
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    _check_readable(catalog, warehouse, before)
    assert expire_snapshots(t, **ARGS)["resumed"] is not None
    assert tree(warehouse) == want


@pytest.mark.parametrize("point", ["expire.journal", "expire.hint", "expire.manifests"])
def test_commits_during_expiry_keep_their_files(warehouse, monkeypatch, point):
    """A writer, a compaction and a new branch landing mid-expiry lose nothing."""
    from support.branch_tables import write
    from support.maintenance import compact_main

    from airflow_provider_paimon.paimon import branch as bops

    catalog, t = scenario(warehouse)
    real_check = faults.check
    done: list = []

    def concurrent(p: str) -> None:
        real_check(p)
        if p == point and not done:
            done.append(p)
            write(load_table(catalog, "db.t"), [555])
            compact_main(load_table(catalog, "db.t"))
            bops.create_branch(t, "late", snapshot_id=12)

    monkeypatch.setattr(faults, "check", concurrent)
    expire_snapshots(t, **{**ARGS, "older_than": _now()})
    monkeypatch.setattr(faults, "check", real_check)
    after = states(catalog, warehouse)
    assert (555, "m555") in after[("main", "latest", None)]
    assert after[("late", "latest", None)] == [r for r in after[("main", "latest", None)] if r != (555, "m555")]
