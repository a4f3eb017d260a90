"""Publish several tables' branches as one change (and undo it): crash-safe, validated.

Three small pypaimon tables ``db.a``, ``db.b``, ``db.c``; each has a branch ``fix`` made
from tag ``t1`` with a corrected row, and main has moved on. Every check reads with a
freshly loaded plain pypaimon table. The scenario is written once per module and
copied per test (copying a few dozen small files is much cheaper than writing it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pypaimon import Schema
from support.branch_tables import SCHEMA, rows, table_dir, tree, write

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.branch.publish_many import journal_location
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.errors import (
    AlreadyExistsError,
    BranchNotFoundError,
    ConcurrentModificationError,
    InvalidArgumentError,
    InvalidNameError,
    TableNotFoundError,
)
from airflow_provider_paimon.paimon.tag import create_tag

NAMES = ["db.a", "db.b", "db.c"]
PAIRS = [(n, "fix") for n in NAMES]
TABLE_STEPS = [
    "publish.plan",
    "replace_main.journal",
    "create_branch.staged",
    "replace_main.backup",
    "replace_main.manifests",
    "replace_main.check",
    "replace_main.schemas",
    "replace_main.switch",
    "replace_main.hint",
    "publish.table",
]
PUBLISH_POINTS = ["publish.journal"] + TABLE_STEPS * len(NAMES)
UNDO_TABLE_STEPS = [
    "undo_publish.plan",
    "replace_main.journal",
    "replace_main.backup",  # passed, nothing to back up
    "replace_main.manifests",
    "replace_main.check",
    "replace_main.schemas",
    "replace_main.switch",
    "replace_main.hint",
    "undo_publish.table",
]
UNDO_POINTS = ["undo_publish.journal"] + UNDO_TABLE_STEPS * len(NAMES)


def build(catalog, names: list[str] = NAMES) -> None:
    """Per table k: main 1,2 | tag t1 | branch fix from t1 gets 10k+100 | main gets 10k+200."""
    for k, name in enumerate(names):
        catalog.create_database(name.split(".")[0], True)
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
        t = load_table(catalog, name)
        write(t, [1, 2])
        create_tag(t, "t1")
        ops.create_branch(t, "fix", tag="t1")
        write(load_table(catalog, name, "fix"), [10 * k + 100], "b")
        write(t, [10 * k + 200], "m")


def all_rows(catalog, branch: str | None = None) -> dict[str, list[tuple]]:
    return {n: rows(catalog, n, branch) for n in NAMES}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The scenario, plus the same scenario after a finished publish (backup ``bk``)."""
    base = str(tmp_path_factory.mktemp("publish") / "fresh")
    os.mkdir(base)
    catalog = open_catalog(base)
    build(catalog)
    old, new = all_rows(catalog), all_rows(catalog, "fix")
    assert all(old[n] != new[n] for n in NAMES)
    published = base.replace("fresh", "published")
    shutil.copytree(base, published)
    ops.publish_branches(open_catalog(published), PAIRS, backup_name="bk")
    return {"fresh": base, "published": published, "old": old, "new": new}


def copy_of(template, tmp_path, which: str = "fresh", name: str = "wh") -> tuple[str, object]:
    wh = str(tmp_path / name)
    shutil.copytree(template[which], wh)
    return wh, open_catalog(wh)


def journals(wh: str) -> list[str]:
    """Pending journals: the multi-table one and every table's own."""
    out = [p for p in [os.path.join(wh, "_cascade", "publish.json")] if os.path.exists(p)]
    out += [n for n in NAMES if os.path.exists(os.path.join(table_dir(wh, n), ".branch-op.json"))]
    return out


def assert_prefix_new(seen: dict, old: dict, new: dict) -> int:
    """Tables switch in order: some prefix of NAMES reads new, the rest reads old."""
    state = []
    for n in NAMES:
        assert seen[n] in (old[n], new[n]), f"{n} reads neither its old nor its new main"
        state.append(seen[n] == new[n])
    k = state.count(True)
    assert state == [True] * k + [False] * (len(NAMES) - k), f"switched out of order: {state}"
    return k


def fault_at(monkeypatch, index: int) -> None:
    """Raise InjectedFault at the index-th fault point passed (points repeat per table)."""
    calls = []

    def check(point: str) -> None:
        calls.append(point)
        if len(calls) == index + 1:
            raise faults.InjectedFault(f"injected fault at {point} (#{index})")

    monkeypatch.setattr(faults, "check", check)


# ------------------------------------------------------------------------ publish


def test_publish_three_tables(template, tmp_path):
    wh, catalog = copy_of(template, tmp_path)
    result = ops.publish_branches(catalog, PAIRS)
    bk = result["backup_name"]
    assert bk.startswith("backup_main_")
    assert [t["table"] for t in result["tables"]] == NAMES
    assert all(t["backup"] == bk and t["main_snapshot_id"] == 3 for t in result["tables"])
    assert all_rows(catalog) == template["new"] == all_rows(catalog, "fix")
    assert all_rows(catalog, bk) == template["old"]
    assert journals(wh) == []
    # a retry of the finished publish writes nothing
    before = tree(wh)
    again = ops.publish_branches(wh, PAIRS)  # a warehouse path works as well as a catalog
    assert again["unchanged"] is True and all(t["unchanged"] for t in again["tables"])
    assert tree(wh) == before


def test_every_step_is_a_fault_point(template, tmp_path):
    _, catalog = copy_of(template, tmp_path)
    faults.clear()
    faults.record_points()
    try:
        ops.publish_branches(catalog, PAIRS, backup_name="bk")
        assert faults.seen_points() == PUBLISH_POINTS
        faults.clear()
        faults.record_points()
        ops.undo_publish(catalog, NAMES, backup_name="bk")
        assert faults.seen_points() == UNDO_POINTS
    finally:
        faults.clear()


@pytest.mark.parametrize("index", range(len(PUBLISH_POINTS)), ids=lambda i: f"{i}-{PUBLISH_POINTS[i]}")
def test_fault_at_every_step_reads_old_or_new_and_rerun_finishes(template, tmp_path, monkeypatch, index):
    wh, catalog = copy_of(template, tmp_path)
    old, new = template["old"], template["new"]
    fault_at(monkeypatch, index)
    with pytest.raises(faults.InjectedFault):
        ops.publish_branches(catalog, PAIRS, backup_name="bk")
    monkeypatch.undo()
    switched = assert_prefix_new(all_rows(catalog), old, new)
    table_no = (index - 1) // len(TABLE_STEPS)  # the table the fault hit (-1: the journal)
    step = PUBLISH_POINTS[index]
    done_at_fault = table_no + (step in ("replace_main.switch", "replace_main.hint", "publish.table"))
    assert switched == max(done_at_fault, 0)
    assert ops.pending_publish(catalog) is not None
    result = ops.publish_branches(catalog, PAIRS)  # same tables; the backup name comes from the journal
    assert result["resumed"] is True and result["backup_name"] == "bk"
    assert all_rows(catalog) == new
    assert all_rows(catalog, "bk") == old
    assert journals(wh) == []
    for n in NAMES:
        snaps = os.listdir(os.path.join(table_dir(wh, n), "snapshot"))
        assert sorted(f for f in snaps if f.startswith("snapshot-")) == ["snapshot-1", "snapshot-2", "snapshot-3"]
        assert Path(os.path.join(table_dir(wh, n), "snapshot", "LATEST")).read_text() == "3"
        assert not [d for d in os.listdir(os.path.join(table_dir(wh, n), "branch")) if d.startswith(".")]


def test_resume_publish_without_arguments(template, tmp_path, monkeypatch):
    _wh, catalog = copy_of(template, tmp_path)
    fault_at(monkeypatch, PUBLISH_POINTS.index("replace_main.switch") + len(TABLE_STEPS))  # table b
    with pytest.raises(faults.InjectedFault):
        ops.publish_branches(catalog, PAIRS, backup_name="bk")
    monkeypatch.undo()
    doc = ops.pending_publish(catalog)
    assert [(e["table"], e["branch"]) for e in doc["tables"]] == PAIRS and doc["backup"] == "bk"
    result = ops.resume_publish(catalog)
    assert [t["resumed"] for t in result["tables"]] == [True, True, False]
    assert all_rows(catalog) == template["new"]
    assert ops.resume_publish(catalog) is None


KILL_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from airflow_provider_paimon.paimon import branch, faults
    point, nth = sys.argv[2], int(sys.argv[3])
    real, seen = faults.check, []
    def check(p):
        # the point repeats per table: arm faults.py's own kill (PAIMON_FAULT_MODE=kill)
        # only on its nth passage
        seen.append(p)
        if p == point and seen.count(point) == nth:
            os.environ[faults.FAULT_ENV] = point
        real(p)
    faults.check = check
    pairs = [("db.a", "fix"), ("db.b", "fix"), ("db.c", "fix")]
    print(branch.publish_branches(sys.argv[1], pairs, backup_name="bk"))
    """
)


def test_sigkill_mid_publish_then_rerun(template, tmp_path):
    """A real SIGKILL of the publishing process inside table b's steps, then reruns."""
    wh, catalog = copy_of(template, tmp_path)
    old, new = template["old"], template["new"]
    env = dict(os.environ, PAIMON_FAULT_MODE="kill")
    env.pop(faults.FAULT_ENV, None)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, wh, "replace_main.manifests", "2"],
        env=env, capture_output=True, timeout=180,
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert assert_prefix_new(all_rows(catalog), old, new) == 1
    assert "publish.json" in os.listdir(os.path.join(wh, "_cascade"))
    # another table set is refused, naming the pending publish and how to finish or undo it
    before = tree(wh)
    with pytest.raises(ConcurrentModificationError) as err:
        ops.publish_branches(catalog, [("db.a", "fix"), ("db.c", "fix")])
    for needle in ("db.a <- fix, db.b <- fix, db.c <- fix", "'bk'", "resume_publish", "undo_publish"):
        assert needle in str(err.value)
    # so is a single-table operation on the table in flight
    with pytest.raises(ConcurrentModificationError, match="part of multi-table publish"):
        ops.fast_forward(load_table(catalog, "db.b"), "fix")
    assert tree(wh) == before
    result = ops.publish_branches(catalog, PAIRS, backup_name="bk")
    assert result["resumed"] is True
    assert all_rows(catalog) == new
    assert all_rows(catalog, "bk") == old
    assert journals(wh) == []


def test_a_concurrent_commit_stops_the_publish_and_a_rerun_finishes(template, tmp_path, monkeypatch):
    """A commit to table b's main during its turn: b keeps it, the journal stays, rerun goes on."""
    wh, catalog = copy_of(template, tmp_path)
    real, count = faults.check, []

    def commit_midway(point: str) -> None:
        real(point)
        if point == "replace_main.manifests":
            count.append(point)
            if len(count) == 2:
                write(load_table(catalog, "db.b"), [777])

    monkeypatch.setattr(faults, "check", commit_midway)
    with pytest.raises(ConcurrentModificationError, match=re.escape("publish stopped at table db.b")) as err:
        ops.publish_branches(catalog, PAIRS, backup_name="bk")
    monkeypatch.undo()
    assert "Tables already reading their branch: db.a" in str(err.value)
    seen = all_rows(catalog)
    assert seen["db.a"] == template["new"]["db.a"] and seen["db.c"] == template["old"]["db.c"]
    assert seen["db.b"] == sorted(template["old"]["db.b"] + [(777, "m777")])
    result = ops.publish_branches(catalog, PAIRS, backup_name="bk")
    assert all_rows(catalog) == template["new"]
    assert rows(catalog, "db.b", "bk") == sorted(template["old"]["db.b"] + [(777, "m777")])
    assert result["tables"][1]["previous_main_snapshot_id"] == 3
    assert journals(wh) == []


def test_a_table_already_reading_its_branch_is_backed_up_not_switched(template, tmp_path, monkeypatch):
    wh, catalog = copy_of(template, tmp_path)
    old, new = template["old"], template["new"]
    ops.replace_main(load_table(catalog, "db.b"), "fix", backup=False)
    b_before = tree(os.path.join(table_dir(wh, "db.b"), "snapshot"))
    # killed right after b was recorded as unchanged, before its backup exists
    fault_at(monkeypatch, 1 + len(TABLE_STEPS))  # b's publish.plan
    with pytest.raises(faults.InjectedFault, match=re.escape("publish.plan")):
        ops.publish_branches(catalog, PAIRS, backup_name="bk")
    monkeypatch.undo()
    assert [e["unchanged"] for e in ops.pending_publish(catalog)["tables"]] == [False, True, False]
    assert "branch-bk" not in os.listdir(os.path.join(table_dir(wh, "db.b"), "branch"))
    result = ops.publish_branches(catalog, PAIRS)
    assert [t["unchanged"] for t in result["tables"]] == [False, True, False]
    assert all_rows(catalog) == new
    assert tree(os.path.join(table_dir(wh, "db.b"), "snapshot")) == b_before  # b's main untouched
    backups = all_rows(catalog, "bk")
    assert backups == {"db.a": old["db.a"], "db.b": new["db.b"], "db.c": old["db.c"]}  # main before publish
    ops.undo_publish(catalog, NAMES, backup_name="bk")
    assert all_rows(catalog) == backups


# ----------------------------------------------------------------------------- undo


def test_undo_restores_every_table_and_is_rerunnable(template, tmp_path):
    wh, catalog = copy_of(template, tmp_path, "published")
    assert all_rows(catalog) == template["new"]
    result = ops.undo_publish(catalog, PAIRS, backup_name="bk")  # the publish's own list works
    assert [t["restored"] for t in result["tables"]] == [True, True, True]
    assert all_rows(catalog) == template["old"]
    assert all_rows(catalog, "fix") == template["new"]  # branches and backups stay
    assert all_rows(catalog, "bk") == template["old"]
    assert journals(wh) == []
    before = tree(wh)
    ops.undo_publish(catalog, NAMES, backup_name="bk")
    assert tree(wh) == before
    write(load_table(catalog, "db.a"), [300])  # main goes on after the undo
    assert rows(catalog, "db.a") == sorted(template["old"]["db.a"] + [(300, "m300")])


@pytest.mark.parametrize("index", range(len(UNDO_POINTS)), ids=lambda i: f"{i}-{UNDO_POINTS[i]}")
def test_undo_fault_at_every_step_then_rerun(template, tmp_path, monkeypatch, index):
    wh, catalog = copy_of(template, tmp_path, "published")
    old, new = template["old"], template["new"]
    fault_at(monkeypatch, index)
    with pytest.raises(faults.InjectedFault):
        ops.undo_publish(catalog, NAMES, backup_name="bk")
    monkeypatch.undo()
    # undo runs in reverse order: a prefix is still new, the rest is already old again
    assert_prefix_new(all_rows(catalog), old, new)
    result = ops.undo_publish(catalog)  # the pending undo needs no arguments
    assert result["resumed"] is True
    assert all_rows(catalog) == old
    assert journals(wh) == []


@pytest.mark.parametrize(
    ("point", "nth", "restored"),
    [
        ("publish.plan", 2, [True, False, False]),  # b planned, its own journal not yet written
        ("replace_main.manifests", 2, [True, False, False]),  # b prepared, not switched: rolled back
        ("replace_main.switch", 2, [True, True, False]),  # b switched: finished, then restored
        ("publish.table", 3, [True, True, True]),  # all switched, journal not yet removed
    ],
)
def test_undo_of_an_unfinished_publish(template, tmp_path, monkeypatch, point, nth, restored):
    wh, catalog = copy_of(template, tmp_path)
    index = [i for i, p in enumerate(PUBLISH_POINTS) if p == point][nth - 1]
    fault_at(monkeypatch, index)
    with pytest.raises(faults.InjectedFault):
        ops.publish_branches(catalog, PAIRS, backup_name="bk")
    monkeypatch.undo()
    # resuming with another backup name is refused, and undo needs none
    with pytest.raises(ConcurrentModificationError, match="publish"):
        ops.publish_branches(catalog, PAIRS, backup_name="other")
    result = ops.undo_publish(catalog)
    assert [t["restored"] for t in result["tables"]] == restored
    assert all_rows(catalog) == template["old"]
    assert journals(wh) == []
    if point == "replace_main.manifests":
        assert "branch-bk" not in os.listdir(os.path.join(table_dir(wh, "db.b"), "branch"))


def test_fault_at_every_step_of_undoing_an_unfinished_publish(template, tmp_path, monkeypatch):
    """Publish killed inside table b's switch; the undo is then killed at each of its points."""
    old, new = template["old"], template["new"]
    b_switch = PUBLISH_POINTS.index("replace_main.switch") + len(TABLE_STEPS)

    def killed_publish(name: str):
        wh, catalog = copy_of(template, tmp_path, name=name)
        fault_at(monkeypatch, b_switch)
        with pytest.raises(faults.InjectedFault):
            ops.publish_branches(catalog, PAIRS, backup_name="bk")
        monkeypatch.undo()
        return wh, catalog

    _, catalog = killed_publish("record")
    faults.clear()
    faults.record_points()
    try:
        ops.undo_publish(catalog)
        points = faults.seen_points()
    finally:
        faults.clear()
    # b's switch is finished first (its last steps), then b and a are restored; c was never touched
    assert points[:4] == ["undo_publish.journal", "replace_main.switch", "replace_main.hint", "undo_publish.plan"]
    assert points.count("undo_publish.table") == 2
    for index in range(len(points)):
        wh, catalog = killed_publish(f"wh{index}")
        fault_at(monkeypatch, index)
        with pytest.raises(faults.InjectedFault):
            ops.undo_publish(catalog)
        monkeypatch.undo()
        seen = all_rows(catalog)
        assert all(seen[n] in (old[n], new[n]) for n in NAMES), points[index]
        assert seen["db.c"] == old["db.c"]
        ops.undo_publish(catalog)
        assert all_rows(catalog) == old, points[index]
        assert journals(wh) == [], points[index]


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("tables", "kwargs", "error", "message"),
    [
        ([], {}, InvalidArgumentError, "non-empty list"),
        (["db.a"], {}, InvalidArgumentError, "not a .database.table, branch. pair"),
        ([("db.a", "fix"), ("db.nope", "fix")], {}, TableNotFoundError, "db.nope"),
        ([("db.a", "fix"), ("db.b", "nope")], {}, BranchNotFoundError, "'nope'"),
        ([("db.a", "fix"), ("db.b", "fix"), ("db.a", "fix")], {}, InvalidArgumentError, "db.a is listed twice"),
        ([("db.a", "main")], {}, InvalidNameError, "main"),
        (PAIRS, {"backup_name": "taken"}, AlreadyExistsError, "'taken' already exists on table db.c"),
        (PAIRS, {"backup_name": "fix"}, AlreadyExistsError, "already exists on table db.a"),
        ([("db.a", "fix"), ("db.c", "empty")], {}, InvalidArgumentError, "table db.c: branch 'empty' has no snapshot"),
        (PAIRS, {"catalog_options": {"x": "y"}}, InvalidArgumentError, "catalog_options"),
    ],
)
def test_bad_input_changes_nothing(template, tmp_path, tables, kwargs, error, message):
    wh, catalog = copy_of(template, tmp_path)
    ops.create_branch(load_table(catalog, "db.c"), "taken")
    ops.create_branch(load_table(catalog, "db.c"), "empty")
    before = tree(wh)
    with pytest.raises(error, match=message):
        ops.publish_branches(catalog, tables, **kwargs)
    assert tree(wh) == before


def test_a_pending_single_table_operation_is_refused(template, tmp_path):
    wh, catalog = copy_of(template, tmp_path)
    faults.set_fault("replace_main.manifests")
    try:
        with pytest.raises(faults.InjectedFault):
            ops.replace_main(load_table(catalog, "db.c"), "fix", backup_name="solo")
    finally:
        faults.clear()
    before = tree(wh)
    with pytest.raises(ConcurrentModificationError, match=r"table db.c has another pending .*replace_main"):
        ops.publish_branches(catalog, PAIRS)
    assert tree(wh) == before


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((), {}, InvalidArgumentError, "no publish is pending"),
        ((NAMES,), {"backup_name": "nope"}, BranchNotFoundError, "backup branch 'nope' does not exist on table db.a"),
        ((["db.a", "db.a"],), {"backup_name": "bk"}, InvalidArgumentError, "listed twice"),
        ((["db.a", "db.zz"],), {"backup_name": "bk"}, TableNotFoundError, "db.zz"),
    ],
)
def test_bad_undo_changes_nothing(template, tmp_path, args, kwargs, error, message):
    wh, catalog = copy_of(template, tmp_path, "published")
    before = tree(wh)
    with pytest.raises(error, match=message):
        ops.undo_publish(catalog, *args, **kwargs)
    assert tree(wh) == before


def test_journal_lives_in_the_warehouse(template, tmp_path):
    wh, catalog = copy_of(template, tmp_path)
    assert journal_location(catalog) == f"{wh}/_cascade/publish.json"
    custom = str(tmp_path / "elsewhere" / "p.json")
    faults.set_fault("publish.table")
    try:
        with pytest.raises(faults.InjectedFault):
            ops.publish_branches(catalog, PAIRS, journal_path=custom)
    finally:
        faults.clear()
    doc = json.loads(Path(custom).read_text())
    assert doc["op"] == "publish" and [e["table"] for e in doc["tables"]] == NAMES
    assert doc["tables"][0]["plan"]["N"] == 3 and doc["tables"][1]["plan"] is None
    assert ops.pending_publish(catalog) is None  # the default place holds nothing
    ops.resume_publish(catalog, journal_path=custom)
    assert not os.path.exists(custom)
    assert all_rows(catalog) == template["new"]


def test_the_docs_sample_runs(tmp_path):
    """The sample of docs/branches.md, run as written against a temp warehouse."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "branches.md").read_text()
    section = page.split("## Publish several tables as one change", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    wh = str(tmp_path / "wh")
    names = ["ods.orders", "dwd.orders_clean", "dws.daily_sales"]
    catalog = open_catalog(wh)
    build(catalog, names)
    old = {n: rows(catalog, n) for n in names}
    namespace: dict = {}
    exec(compile(code.replace('"/data/warehouse"', repr(wh)), "branches.md", "exec"), namespace)
    assert namespace["backup"].startswith("backup_main_")
    assert {n: rows(catalog, n) for n in names} == old
    assert {n: rows(catalog, n, namespace["backup"]) for n in names} == old
    assert [t["main_snapshot_id"] for t in namespace["result"]["tables"]] == [3, 3, 3]


# ------------------------------------------------------------------- object storage


def test_publish_and_undo_on_object_storage(template, s3_warehouse, monkeypatch):
    """The journal goes through the catalog's file IO: conditional PUTs on S3, no local calls."""
    names, pairs = NAMES[:2], PAIRS[:2]  # two tables keep this test short on the S3 server
    old, new = template["old"], template["new"]  # the same rows as the local scenario
    catalog = open_catalog(s3_warehouse.uri, s3_warehouse.options)
    build(catalog, names)

    def read(branch: str | None = None) -> dict:
        return {n: rows(catalog, n, branch) for n in names}

    fault_at(monkeypatch, PUBLISH_POINTS.index("replace_main.switch") + len(TABLE_STEPS))  # table b
    with pytest.raises(faults.InjectedFault):
        ops.publish_branches(catalog, pairs, backup_name="bk")
    monkeypatch.undo()
    assert read() == {n: new[n] for n in names}  # b's switch happened before the fault
    path = journal_location(catalog)
    assert path == f"{s3_warehouse.uri}/_cascade/publish.json"
    assert catalog.file_io.exists(path) and ops.pending_publish(catalog)["backup"] == "bk"
    with pytest.raises(ConcurrentModificationError, match="undo_publish"):
        ops.publish_branches(catalog, pairs[:1])
    assert ops.publish_branches(s3_warehouse.uri, pairs, catalog_options=s3_warehouse.options)["resumed"] is True
    assert read("bk") == {n: old[n] for n in names}
    assert not catalog.file_io.exists(path)
    ops.undo_publish(catalog, names, backup_name="bk")
    assert read() == {n: old[n] for n in names}
