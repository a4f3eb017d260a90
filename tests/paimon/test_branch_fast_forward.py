"""Fast-forward: Java's on-disk result, cross-reads, crash at every step, concurrency."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, rows, table_dir, tree, write
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.errors import (
    BranchNotFoundError,
    ConcurrentModificationError,
    InvalidArgumentError,
    InvalidNameError,
)
from airflow_provider_paimon.paimon.tag import create_tag

STEPS = [
    "fast_forward.journal",
    "fast_forward.check",
    "fast_forward.pin_hint",
    "fast_forward.ahead",
    "fast_forward.prepare",
    "fast_forward.schemas",
    "fast_forward.switch",
    "fast_forward.history",
    "fast_forward.tags",
    "fast_forward.hints",
]


def java_fast_forward(tdir: str, branch: str) -> None:
    """Paimon Java's FileSystemBranchManager.fastForward, transcribed step by step."""
    broot = os.path.join(tdir, "branch", f"branch-{branch}")
    bsnap = os.path.join(broot, "snapshot")
    ids = sorted(int(n.split("-")[1]) for n in os.listdir(bsnap) if n.startswith("snapshot-"))
    earliest = ids[0]
    with open(os.path.join(bsnap, f"snapshot-{earliest}")) as fh:
        earliest_schema = json.load(fh)["schemaId"]
    for name in os.listdir(os.path.join(tdir, "snapshot")):
        if name.startswith("snapshot-") and int(name.split("-")[1]) >= earliest:
            os.unlink(os.path.join(tdir, "snapshot", name))
    for name in os.listdir(os.path.join(tdir, "schema")):
        if int(name.split("-")[1]) >= earliest_schema:
            os.unlink(os.path.join(tdir, "schema", name))
    tagdir = os.path.join(tdir, "tag")
    for name in os.listdir(tagdir) if os.path.isdir(tagdir) else []:
        with open(os.path.join(tagdir, name)) as fh:
            if json.load(fh)["id"] >= earliest:
                os.unlink(os.path.join(tagdir, name))
    if os.path.exists(os.path.join(tdir, "snapshot", "LATEST")):
        os.unlink(os.path.join(tdir, "snapshot", "LATEST"))
    for sub in ("snapshot", "schema", "tag"):
        src = os.path.join(broot, sub)
        if os.path.isdir(src):
            os.makedirs(os.path.join(tdir, sub), exist_ok=True)
            for name in os.listdir(src):
                shutil.copyfile(os.path.join(src, name), os.path.join(tdir, sub, name))


def metadata(tdir: str) -> dict[str, bytes]:
    """Main's snapshot/schema/tag files (hints excluded) with their bytes."""
    out = {}
    for sub in ("snapshot", "schema", "tag"):
        d = os.path.join(tdir, sub)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name in ("LATEST", "EARLIEST"):
                continue
            with open(os.path.join(d, name), "rb") as fh:
                out[f"{sub}/{name}"] = fh.read()
    return out


def hint(tdir: str, which: str) -> int | None:
    path = os.path.join(tdir, "snapshot", which)
    return int(open(path).read()) if os.path.exists(path) else None


def scenario(warehouse: str, kind: str):
    """Main and branch diverged after the branch point (snapshot 2, tag t1).

    kind: 'ahead' (branch has more snapshots than main), 'behind', 'equal'.
    """
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    b = load_table(catalog, "db.t", "fix")
    n_branch, n_main = {"ahead": (3, 1), "behind": (1, 3), "equal": (2, 2)}[kind]
    for i in range(n_branch):
        write(b, [100 + i], "b")
    create_tag(b, "bt")
    for i in range(n_main):
        write(t, [200 + i], "m")
    create_tag(t, "late")  # a main tag after the branch point: must go
    old = rows(catalog)
    new = rows(catalog, branch="fix")
    return catalog, t, old, new


@pytest.mark.parametrize("kind", ["ahead", "behind", "equal"])
def test_matches_java_on_disk_and_reads(warehouse, tmp_path, kind):
    catalog, t, old, new = scenario(warehouse, kind)
    tdir = table_dir(warehouse)
    ref = str(tmp_path / "ref")
    shutil.copytree(tdir, ref)
    java_fast_forward(ref, "fix")
    result = ops.fast_forward(t, "fix")
    assert metadata(tdir) == metadata(ref)
    ids = sorted(int(n[9:]) for n in os.listdir(os.path.join(tdir, "snapshot")) if n.startswith("snapshot-"))
    assert hint(tdir, "LATEST") == ids[-1] == result["main_snapshot_id"]
    assert hint(tdir, "EARLIEST") == ids[0] == 1
    assert sorted(os.listdir(os.path.join(tdir, "tag"))) == ["tag-bt", "tag-t1"]
    assert rows(catalog) == new != old
    assert rows(catalog, branch="fix") == new
    assert not os.path.exists(os.path.join(tdir, ".branch-op.json"))
    # writes to main continue after the branch's latest snapshot
    write(load_table(catalog, "db.t"), [999])
    assert rows(catalog) == sorted([*new, (999, "m999")])
    assert max(ids) + 1 in [int(n[9:]) for n in os.listdir(os.path.join(tdir, "snapshot")) if n.startswith("snapshot-")]


def test_schema_change_on_branch_follows(warehouse, tmp_path):
    import pyarrow as pa
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    catalog, t = make_table(warehouse)
    write(t, [1])
    ops.create_branch(t, "fix", snapshot_id=1)
    catalog.alter_table("db.t$branch_fix", [SchemaChange.add_column("extra", AtomicType("STRING"))])
    b = load_table(catalog, "db.t", "fix")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("extra", pa.string())])
    commit_rows(b, [{"id": 5, "v": "b5", "extra": "x"}], schema)
    ref = str(tmp_path / "ref")
    shutil.copytree(table_dir(warehouse), ref)
    java_fast_forward(ref, "fix")
    ops.fast_forward(t, "fix")
    assert metadata(table_dir(warehouse)) == metadata(ref)
    assert rows(catalog) == [(1, "m1", None), (5, "b5", "x")]
    assert load_table(catalog, "db.t").field_names == ["id", "v", "extra"]


def test_validation_writes_nothing(warehouse):
    _catalog, t, _, _ = scenario(warehouse, "ahead")
    ops.create_branch(t, "empty")
    before = tree(warehouse)
    with pytest.raises(InvalidNameError):
        ops.fast_forward(t, "main")
    with pytest.raises(BranchNotFoundError):
        ops.fast_forward(t, "nope")
    with pytest.raises(InvalidArgumentError, match="has no snapshot"):
        ops.fast_forward(t, "empty")
    assert tree(warehouse) == before


@pytest.mark.parametrize(
    ("kind", "step"),
    [(k, st) for k in ("ahead", "behind") for st in STEPS]
    + [("equal", st) for st in ("fast_forward.schemas", "fast_forward.switch", "fast_forward.history")],
)
def test_crash_at_every_step_reads_old_or_new_and_rerun_finishes(warehouse, tmp_path, kind, step):
    catalog, t, old, new = scenario(warehouse, kind)
    ref = str(tmp_path / "ref")
    shutil.copytree(table_dir(warehouse), ref)
    java_fast_forward(ref, "fix")
    faults.set_fault(step)
    try:
        with pytest.raises(faults.InjectedFault):
            ops.fast_forward(t, "fix")
    finally:
        faults.clear()
    assert rows(catalog) in (old, new)
    assert rows(catalog, branch="fix") == new
    result = ops.fast_forward(t, "fix")
    assert result["resumed"] is True
    assert rows(catalog) == new
    assert metadata(table_dir(warehouse)) == metadata(ref)
    assert not os.path.exists(os.path.join(table_dir(warehouse), ".branch-op.json"))


def test_every_step_is_a_fault_point(warehouse):
    _, t, _, _ = scenario(warehouse, "ahead")
    faults.clear()
    faults.record_points()
    ops.fast_forward(t, "fix")
    assert faults.seen_points() == STEPS


def test_concurrent_commit_is_refused_and_kept(warehouse, monkeypatch):
    catalog, t, old, _ = scenario(warehouse, "ahead")
    real_check = faults.check

    def commit_midway(point: str) -> None:
        real_check(point)
        if point == "fast_forward.pin_hint":
            write(load_table(catalog, "db.t"), [777])

    monkeypatch.setattr(faults, "check", commit_midway)
    with pytest.raises(ConcurrentModificationError, match="main changed during fast-forward"):
        ops.fast_forward(t, "fix")
    assert rows(catalog) == sorted([*old, (777, "m777")])
    assert not os.path.exists(os.path.join(table_dir(warehouse), ".branch-op.json"))
    monkeypatch.setattr(faults, "check", real_check)
    ops.fast_forward(t, "fix")
    assert rows(catalog) == rows(catalog, branch="fix")


@pytest.mark.parametrize("kind", ["behind", "equal", "ahead"])
def test_commit_beside_a_killed_fast_forward_stays_visible_and_is_kept(warehouse, tmp_path, kind):
    """Killed right after its switch, the journal waits for a rerun; a writer keeps
    committing to main meanwhile (pypaimon writers do not read journals). Its commit
    reads on top of the branch, and the rerun finishes without deleting it. (Found by
    the maintenance model test: with the branch behind main, old main's snapshots above
    the branch's latest were still there after the switch, so the commit made old main
    the latest again, and the rerun deleted the commit.)"""
    catalog, t, _old, new = scenario(warehouse, kind)
    faults.set_fault("fast_forward.switch")
    try:
        with pytest.raises(faults.InjectedFault):
            ops.fast_forward(t, "fix")
    finally:
        faults.clear()
    assert rows(catalog) == new
    write(load_table(catalog, "db.t"), [777])
    with_commit = sorted([*new, (777, "m777")])
    assert rows(catalog) == with_commit
    result = ops.fast_forward(t, "fix")
    assert result["resumed"] is True
    assert rows(catalog) == with_commit
    tdir = table_dir(warehouse)
    assert not os.path.exists(os.path.join(tdir, ".branch-op.json"))
    # main's history is the branch's, then the commit; no snapshot of old main is left
    lb = result["main_snapshot_id"]
    ids = sorted(int(n[9:]) for n in os.listdir(os.path.join(tdir, "snapshot")) if n.startswith("snapshot-"))
    assert ids[-1] == lb + 1 and hint(tdir, "LATEST") == lb + 1
    for sid in ids[:-1]:
        main_doc = Path(os.path.join(tdir, "snapshot", f"snapshot-{sid}")).read_text()
        branch_path = os.path.join(tdir, "branch", "branch-fix", "snapshot", f"snapshot-{sid}")
        if sid >= 2:
            assert main_doc == Path(branch_path).read_text(), sid


def test_commit_into_the_gap_of_a_killed_fast_forward_is_kept(warehouse):
    """Killed after writing the branch's snapshots ahead of main (behind a gap at
    Lm+1), a writer's commit fills the gap. The rerun must not take the branch's copies
    for a finished switch and overwrite the commit: it refuses as for any concurrent
    commit, removes its copies, and main reads old main plus the commit."""
    catalog, t, old, _new = scenario(warehouse, "ahead")
    faults.set_fault("fast_forward.ahead")
    try:
        with pytest.raises(faults.InjectedFault):
            ops.fast_forward(t, "fix")
    finally:
        faults.clear()
    write(load_table(catalog, "db.t"), [777])
    with pytest.raises(ConcurrentModificationError, match="main changed during fast-forward"):
        ops.fast_forward(t, "fix")
    assert rows(catalog) == sorted([*old, (777, "m777")])
    assert not os.path.exists(os.path.join(table_dir(warehouse), ".branch-op.json"))
