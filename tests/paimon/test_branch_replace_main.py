"""Replace main: reads as the branch, history and backup kept, crash-safe, concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
from support.branch_tables import files_in, load_table, make_table, rows, table_dir, tree, write
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.errors import (
    AlreadyExistsError,
    BranchNotFoundError,
    ConcurrentModificationError,
    InvalidArgumentError,
    InvalidNameError,
)
from airflow_provider_paimon.paimon.tag import create_tag, list_tags

STEPS = [
    "replace_main.journal",
    "create_branch.staged",
    "replace_main.backup",
    "replace_main.manifests",
    "replace_main.check",
    "replace_main.schemas",
    "replace_main.switch",
    "replace_main.hint",
]
WIDE = pa.schema([("id", pa.int64()), ("v", pa.string()), ("extra", pa.string())])


def scenario(warehouse: str, widen: bool = False):
    """Main: 1,2 | tag t1 | branch fix from t1 gets 3 commits, main gets 2 more."""
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    if widen:
        catalog.alter_table("db.t$branch_fix", [SchemaChange.add_column("extra", AtomicType("STRING"))])
    b = load_table(catalog, "db.t", "fix")
    for i in range(3):
        if widen:
            commit_rows(b, [{"id": 100 + i, "v": "fixed", "extra": "e"}], WIDE)
        else:
            write(b, [100 + i], "b")
    write(t, [200], "m")
    write(t, [201], "m")
    return catalog, t, rows(catalog), rows(catalog, branch="fix")


def referenced_manifest_lists(warehouse: str) -> set[str]:
    """Manifest lists named by any snapshot of main (the only ones that are not orphans here)."""
    names = set()
    for n in files_in(warehouse, "snapshot"):
        if n.startswith("snapshot-"):
            doc = json.loads(Path(os.path.join(table_dir(warehouse), "snapshot", n)).read_text())
            names.update(doc.get(k) for k in ("baseManifestList", "deltaManifestList", "changelogManifestList"))
    return names - {None}


def snapshot_ids(warehouse: str) -> list[int]:
    return sorted(int(n[9:]) for n in files_in(warehouse, "snapshot") if n.startswith("snapshot-"))


def test_main_reads_as_branch_history_and_backup_kept(warehouse):
    catalog, t, old, new = scenario(warehouse)
    result = ops.replace_main(t, "fix", backup_name="before_fix")
    assert result["main_snapshot_id"] == 5 and result["previous_main_snapshot_id"] == 4
    assert result["backup"] == {"kind": "branch", "name": "before_fix"}
    assert rows(catalog) == new
    assert rows(catalog, branch="fix") == new
    assert rows(catalog, branch="before_fix") == old
    assert snapshot_ids(warehouse) == [1, 2, 3, 4, 5]
    tdir = table_dir(warehouse)
    assert Path(os.path.join(tdir, "snapshot", "LATEST")).read_text() == "5"
    doc = json.loads(Path(os.path.join(tdir, "snapshot", "snapshot-5")).read_text())
    assert doc["commitKind"] == "OVERWRITE"
    assert doc["properties"]["replace-main.branch"] == "fix"
    assert doc["totalRecordCount"] == len(new)
    # time travel to old main still works
    old_t = load_table(catalog, "db.t").copy({"scan.snapshot-id": "4"})
    rb = old_t.new_read_builder()
    assert len(rb.new_read().to_arrow(rb.new_scan().plan().splits())) == len(old)
    # writes continue on main with the next id
    write(load_table(catalog, "db.t"), [300])
    assert snapshot_ids(warehouse)[-1] == 6
    assert rows(catalog) == sorted([*new, (300, "m300")])
    assert not os.path.exists(os.path.join(tdir, ".branch-op.json"))


def test_rerun_after_success_changes_nothing(warehouse):
    _catalog, t, _old, _new = scenario(warehouse)
    first = ops.replace_main(t, "fix")
    before = tree(warehouse)
    again = ops.replace_main(t, "fix")
    assert again["unchanged"] is True and again["main_snapshot_id"] == first["main_snapshot_id"]
    assert again["backup"] is None
    assert tree(warehouse) == before


def test_undo_with_the_backup(warehouse):
    catalog, t, old, _new = scenario(warehouse)
    backup = ops.replace_main(t, "fix")["backup"]["name"]
    assert backup.startswith("backup_main_")
    ops.replace_main(t, backup, backup=False)
    assert rows(catalog) == old


def test_backup_as_tag_and_no_backup(warehouse):
    catalog, t, old, new = scenario(warehouse)
    result = ops.replace_main(t, "fix", backup_kind="tag", backup_name="pre")
    assert result["backup"] == {"kind": "tag", "name": "pre"}
    assert [(x.name, x.snapshot_id) for x in list_tags(t)] == [("pre", 4), ("t1", 2)]
    tagged = load_table(catalog, "db.t").copy({"scan.tag-name": "pre"})
    rb = tagged.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert sorted((r["id"], r["v"]) for r in got) == old
    write(load_table(catalog, "db.t", "fix"), [150], "b")
    before_branches = files_in(warehouse, "branch")
    assert ops.replace_main(t, "fix", backup=False)["backup"] is None
    assert files_in(warehouse, "branch") == before_branches
    assert rows(catalog) == sorted([*new, (150, "b150")])


def test_schema_included(warehouse):
    catalog, t, old, new = scenario(warehouse, widen=True)
    result = ops.replace_main(t, "fix")
    assert result["schema_id"] == 1
    assert load_table(catalog, "db.t").field_names == ["id", "v", "extra"]
    assert rows(catalog) == new
    assert rows(catalog, branch=result["backup"]["name"]) == old


def test_main_schema_change_is_replaced_by_branch_schema(warehouse):
    catalog, t, _old, new = scenario(warehouse)
    catalog.alter_table("db.t", [SchemaChange.add_column("main_only", AtomicType("INT"))])
    result = ops.replace_main(t, "fix")
    assert result["schema_id"] == 2  # a new schema with the branch's columns
    assert load_table(catalog, "db.t").field_names == ["id", "v"]
    assert rows(catalog) == new


def test_independent_schema_changes_refused_without_writing(warehouse):
    catalog, t, _, _ = scenario(warehouse, widen=True)
    catalog.alter_table("db.t", [SchemaChange.add_column("other", AtomicType("INT"))])
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match="both changed the schema"):
        ops.replace_main(t, "fix")
    assert tree(warehouse) == before


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"branch": "main"}, InvalidNameError),
        ({"branch": "../x"}, InvalidNameError),
        ({"branch": "nope"}, BranchNotFoundError),
        ({"branch": "fix", "backup_name": "7"}, InvalidNameError),
        ({"branch": "fix", "backup_name": "fix"}, AlreadyExistsError),
        ({"branch": "fix", "backup_kind": "tag", "backup_name": "t1"}, AlreadyExistsError),
        ({"branch": "fix", "backup_kind": "zip"}, InvalidArgumentError),
        ({"branch": "fix", "backup": False, "backup_name": "x"}, InvalidArgumentError),
        ({"branch": "empty"}, InvalidArgumentError),
    ],
)
def test_bad_input_writes_nothing(warehouse, kwargs, error):
    _catalog, t, _, _ = scenario(warehouse)
    ops.create_branch(t, "empty")
    before = tree(warehouse)
    branch = kwargs.pop("branch")
    with pytest.raises(error):
        ops.replace_main(t, branch, **kwargs)
    assert tree(warehouse) == before


def _padded(rows_: list[tuple]) -> list[tuple]:
    return sorted((*r, None) for r in rows_)


@pytest.mark.parametrize("widen", [False, True])
@pytest.mark.parametrize("step", STEPS)
def test_crash_at_every_step_reads_old_or_new_and_rerun_finishes(warehouse, step, widen):
    catalog, t, old, new = scenario(warehouse, widen)
    faults.set_fault(step)
    try:
        with pytest.raises(faults.InjectedFault):
            ops.replace_main(t, "fix", backup_name="bk")
    finally:
        faults.clear()
    seen = rows(catalog)
    allowed = [old, new]
    if widen and step == "replace_main.schemas":
        # documented window: the branch's added column is visible before the switch
        allowed.append(_padded(old))
    assert seen in allowed
    result = ops.replace_main(t, "fix", backup_name="bk")
    assert result["resumed"] is True and result["main_snapshot_id"] == 5
    assert rows(catalog) == new
    assert rows(catalog, branch="bk") == old
    assert snapshot_ids(warehouse) == [1, 2, 3, 4, 5]
    assert not os.path.exists(os.path.join(table_dir(warehouse), ".branch-op.json"))
    assert not [n for n in files_in(warehouse, "branch") if n.startswith(".")]


def test_every_step_is_a_fault_point(warehouse):
    _, t, _, _ = scenario(warehouse)
    faults.clear()
    faults.record_points()
    ops.replace_main(t, "fix")
    assert faults.seen_points() == STEPS
    faults.clear()


def test_unarmed_fault_points_keep_nothing(warehouse, monkeypatch):
    """In production (no fault armed) passing a point must not grow a list per call."""
    _, t, _, _ = scenario(warehouse)
    monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    faults.clear()
    ops.replace_main(t, "fix")
    for _ in range(10_000):
        faults.check("replace_main.switch")
    assert faults.seen_points() == []


KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon import branch
    table = load_table(open_catalog(sys.argv[1]), "db.t")
    if sys.argv[2] == "replace_main":
        print(branch.replace_main(table, "fix", backup_name="bk"))
    else:
        print(branch.fast_forward(table, "fix"))
    """
)


@pytest.mark.parametrize(
    ("op", "step"),
    [("replace_main", "replace_main.backup"), ("replace_main", "replace_main.switch"), ("fast_forward", "fast_forward.ahead")],
)
def test_sigkill_at_step_then_rerun(warehouse, op, step):
    """A real SIGKILL of the process in the middle of the operation, then a rerun."""
    catalog, t, old, new = scenario(warehouse)
    env = dict(os.environ, PAIMON_FAULT=step, PAIMON_FAULT_MODE="kill")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, warehouse, op], env=env, capture_output=True, timeout=180
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert rows(catalog) in (old, new)
    assert os.path.exists(os.path.join(table_dir(warehouse), ".branch-op.json"))
    # a different operation is refused while this one is pending, and so is deleting its branch
    other = ops.fast_forward if op == "replace_main" else ops.replace_main
    with pytest.raises(ConcurrentModificationError, match=f"{op} of branch 'fix'"):
        other(t, "fix")
    with pytest.raises(ConcurrentModificationError):
        ops.delete_branch(t, "fix")
    result = ops.replace_main(t, "fix", backup_name="bk") if op == "replace_main" else ops.fast_forward(t, "fix")
    assert result["resumed"] is True
    assert rows(catalog) == new
    if op == "replace_main":
        assert rows(catalog, branch="bk") == old


@pytest.mark.parametrize("point", ["replace_main.manifests", "replace_main.check"])
def test_concurrent_commit_is_refused_never_lost(warehouse, monkeypatch, point):
    catalog, t, old, new = scenario(warehouse, widen=True)
    before_manifests = set(files_in(warehouse, "manifest"))
    real_check = faults.check

    def commit_midway(p: str) -> None:
        real_check(p)
        if p == point:
            write(load_table(catalog, "db.t"), [777])

    monkeypatch.setattr(faults, "check", commit_midway)
    with pytest.raises(ConcurrentModificationError, match="nothing was replaced"):
        ops.replace_main(t, "fix", backup_name="bk")
    monkeypatch.setattr(faults, "check", real_check)
    got = rows(catalog)
    assert (777, "m777") in [r[:2] for r in got]
    assert [r[:2] for r in got] == sorted([*old, (777, "m777")])
    # the preparation was undone: no journal, no backup, no orphan manifest lists of ours
    assert not os.path.exists(os.path.join(table_dir(warehouse), ".branch-op.json"))
    assert "branch-bk" not in files_in(warehouse, "branch")
    new_lists = {n for n in set(files_in(warehouse, "manifest")) - before_manifests if n.startswith("manifest-list-")}
    assert new_lists, "the concurrent commit wrote manifest lists"
    assert new_lists <= referenced_manifest_lists(warehouse), "replace-main left orphan manifest lists"
    result = ops.replace_main(t, "fix", backup_name="bk")
    assert rows(catalog) == new
    assert result["previous_main_snapshot_id"] == 5


def test_new_main_snapshot_names_the_replacing_run_not_the_branch_writer(warehouse, monkeypatch):
    """The branch's last snapshot was written by one run; main's new snapshot names the replacer."""
    from airflow_provider_paimon.paimon.commit_properties import airflow_env

    catalog, t, _old, _new = scenario(warehouse)
    b = load_table(catalog, "db.t", "fix")
    commit_rows(b, [{"id": 150, "v": "b"}], pa.schema([("id", pa.int64()), ("v", pa.string())]),
                snapshot_properties={"airflow.dag_id": "writer", "spark.app.id": "app-w", "custom": "kept"})
    for key, value in airflow_env("publish", "manual__9", "replace", try_number=1).items():
        monkeypatch.setenv(key, value)

    result = ops.replace_main(t, "fix")

    doc = json.loads(Path(os.path.join(table_dir(warehouse), "snapshot", f"snapshot-{result['main_snapshot_id']}")).read_text())
    props = doc["properties"]
    assert props["airflow.dag_id"] == "publish" and props["airflow.run_id"] == "manual__9"
    assert props["airflow.task_id"] == "replace" and props["airflow.try_number"] == "1"
    assert "spark.app.id" not in props  # the writer's app did not make this snapshot
    assert props["custom"] == "kept" and props["replace-main.branch"] == "fix"
