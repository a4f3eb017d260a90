"""Create, delete, rename and list branches on real tables, cross-read with pypaimon."""

from __future__ import annotations

import os
import re
import time

import pytest
from support.branch_tables import files_in, load_table, make_table, rows, table_dir, tree, write

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.errors import (
    AlreadyExistsError,
    BranchNotFoundError,
    InvalidArgumentError,
    InvalidNameError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from airflow_provider_paimon.paimon.tag import create_tag


@pytest.fixture
def table(warehouse):
    catalog, table = make_table(warehouse)
    write(table, [1])
    write(table, [2])
    create_tag(table, "t1")  # on snapshot 2
    write(table, [3])
    return catalog, table


def test_create_from_tag_copies_tag_snapshot_and_schema_only(warehouse, table):
    catalog, t = table
    result = ops.create_branch(t, "fix", tag="t1")
    assert result == {"branch": "fix", "tag": "t1", "snapshot_id": 2, "schema_ids": [0]}
    root = os.path.join(table_dir(warehouse), "branch", "branch-fix")
    assert sorted(os.listdir(root)) == ["schema", "snapshot", "tag"]
    assert os.listdir(os.path.join(root, "snapshot")) == ["snapshot-2"]
    assert os.listdir(os.path.join(root, "tag")) == ["tag-t1"]
    assert rows(catalog, branch="fix") == [(1, "m1"), (2, "m2")]
    write(load_table(catalog, "db.t", "fix"), [10], "b")
    assert rows(catalog, branch="fix") == [(1, "m1"), (2, "m2"), (10, "b10")]
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (3, "m3")]
    # pypaimon's own branch manager sees it too
    assert "fix" in t.branch_manager().branches()


def test_create_from_snapshot_and_empty(warehouse, table):
    catalog, t = table
    assert ops.create_branch(t, "s1", snapshot_id=1)["snapshot_id"] == 1
    assert rows(catalog, branch="s1") == [(1, "m1")]
    assert ops.create_branch(t, "empty")["snapshot_id"] is None
    assert rows(catalog, branch="empty") == []
    write(load_table(catalog, "db.t", "empty"), [7], "e")
    assert rows(catalog, branch="empty") == [(7, "e7")]
    # leaves no staging folders behind
    assert sorted(os.listdir(os.path.join(table_dir(warehouse), "branch"))) == ["branch-empty", "branch-s1"]


@pytest.mark.parametrize("name", ["main", "MAIN", "", "  ", "123", "a/b", "..", "x..y", " lead", "a\\b"])
def test_bad_branch_names_write_nothing(warehouse, table, name):
    _, t = table
    before = tree(warehouse)
    with pytest.raises(InvalidNameError):
        ops.create_branch(t, name, tag="t1")
    assert tree(warehouse) == before


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"tag": "nope"}, TagNotFoundError, "tags: t1"),
        ({"snapshot_id": 99}, SnapshotNotFoundError, "snapshots: 1..3"),
        ({"snapshot_id": 0}, InvalidArgumentError, "positive"),
        ({"tag": "t1", "snapshot_id": 1}, InvalidArgumentError, "not both"),
        ({"tag": "a/b"}, InvalidNameError, "path separators"),
    ],
)
def test_unknown_sources_are_clear_errors_and_write_nothing(warehouse, table, kwargs, error, text):
    _, t = table
    before = tree(warehouse)
    with pytest.raises(error, match=text):
        ops.create_branch(t, "fix", **kwargs)
    assert tree(warehouse) == before


def test_create_existing_refused(warehouse, table):
    _, t = table
    ops.create_branch(t, "fix", tag="t1")
    before = tree(warehouse)
    with pytest.raises(AlreadyExistsError):
        ops.create_branch(t, "fix")
    assert tree(warehouse) == before


def test_list_with_creation_time_and_latest(table):
    _catalog, t = table
    t0 = int(time.time() * 1000) - 2000
    ops.create_branch(t, "b", tag="t1")
    ops.create_branch(t, "a")
    infos = ops.list_branches(t)
    assert [i.name for i in infos] == ["a", "b"]
    assert all(t0 <= i.create_time_millis <= int(time.time() * 1000) + 2000 for i in infos)
    assert [i.latest_snapshot_id for i in infos] == [None, 2]
    assert infos[0].to_dict()["fallback_of"] == []


def test_rename_and_delete(warehouse, table):
    catalog, t = table
    ops.create_branch(t, "old", tag="t1")
    assert ops.rename_branch(t, "old", "new") == {"branch": "new", "previous_name": "old"}
    assert [b.name for b in ops.list_branches(t)] == ["new"]
    assert rows(catalog, branch="new") == [(1, "m1"), (2, "m2")]
    with pytest.raises(BranchNotFoundError, match="branches: new"):
        ops.rename_branch(t, "old", "x")
    ops.create_branch(t, "other")
    before = tree(warehouse)
    with pytest.raises(AlreadyExistsError):
        ops.rename_branch(t, "new", "other")
    with pytest.raises(InvalidNameError):
        ops.rename_branch(t, "new", "42")
    assert tree(warehouse) == before
    assert ops.delete_branch(t, "new") == {"branch": "new", "deleted": True}
    assert files_in(warehouse, "branch") == ["branch-other"]
    with pytest.raises(BranchNotFoundError):
        ops.delete_branch(t, "new")
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (3, "m3")]


def test_fallback_branch_cannot_be_deleted_or_renamed(warehouse):
    _catalog, t = make_table(warehouse, options={"scan.fallback-branch": "fb"})
    write(t, [1])
    ops.create_branch(t, "fb", snapshot_id=1)
    ops.create_branch(t, "free", snapshot_id=1)
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match=re.escape("scan.fallback-branch of main")):
        ops.delete_branch(t, "fb")
    with pytest.raises(InvalidArgumentError, match="fallback"):
        ops.rename_branch(t, "fb", "fb2")
    assert tree(warehouse) == before
    assert [b.fallback_of for b in ops.list_branches(t)] == [("main", "free"), ()]
    ops.delete_branch(t, "free")
