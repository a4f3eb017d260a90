"""Tags on main and on branches, read back through pypaimon's own tag manager."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, table_dir, tree, write

from airflow_provider_paimon.paimon import tag as ops
from airflow_provider_paimon.paimon.branch import create_branch
from airflow_provider_paimon.paimon.errors import (
    AlreadyExistsError,
    BranchNotFoundError,
    InvalidArgumentError,
    InvalidNameError,
    SnapshotNotFoundError,
    TagNotFoundError,
)


@pytest.fixture
def table(warehouse):
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    return catalog, t


def tag_rows(catalog, tag: str, branch: str | None = None) -> list[int]:
    t = load_table(catalog, "db.t", branch).copy({"scan.tag-name": tag})
    rb = t.new_read_builder()
    return sorted(r["id"] for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())


def test_create_latest_and_given_snapshot_on_main(warehouse, table):
    catalog, t = table
    assert ops.create_tag(t, "latest") == {"tag": "latest", "branch": "main", "snapshot_id": 2}
    assert ops.create_tag(t, "first", snapshot_id=1)["snapshot_id"] == 1
    assert tag_rows(catalog, "latest") == [1, 2]
    assert tag_rows(catalog, "first") == [1]
    # the file is the snapshot document, as Paimon Java writes a tag without retention
    tag_doc = json.loads(Path(os.path.join(table_dir(warehouse), "tag", "tag-first")).read_text())
    snap_doc = json.loads(Path(os.path.join(table_dir(warehouse), "snapshot", "snapshot-1")).read_text())
    assert tag_doc == snap_doc
    assert sorted(t.tag_manager().list_tags()) == ["first", "latest"]
    assert [(i.name, i.snapshot_id, i.record_count) for i in ops.list_tags(t)] == [("first", 1, 1), ("latest", 2, 2)]


def test_tags_on_a_branch_stay_on_it(warehouse, table):
    catalog, t = table
    create_branch(t, "b", snapshot_id=1)
    write(load_table(catalog, "db.t", "b"), [10], "b")
    assert ops.create_tag(t, "bt", branch="b")["snapshot_id"] == 2
    assert tag_rows(catalog, "bt", "b") == [1, 10]
    assert [i.name for i in ops.list_tags(t)] == []
    assert [i.name for i in ops.list_tags(t, branch="b")] == ["bt"]
    # a table object loaded on the branch tags its own branch
    ops.create_tag(load_table(catalog, "db.t", "b"), "own")
    assert [i.name for i in ops.list_tags(t, branch="b")] == ["bt", "own"]
    assert ops.delete_tag(t, "bt", branch="b")["deleted"] is True
    assert [i.name for i in ops.list_tags(t, branch="b")] == ["own"]


def test_delete(table):
    _catalog, t = table
    ops.create_tag(t, "x")
    assert ops.delete_tag(t, "x") == {"tag": "x", "branch": "main", "snapshot_id": 2, "deleted": True}
    assert ops.list_tags(t) == []
    with pytest.raises(TagNotFoundError, match="tags: none"):
        ops.delete_tag(t, "x")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda t: ops.create_tag(t, "a/b"), InvalidNameError),
        (lambda t: ops.create_tag(t, ""), InvalidNameError),
        (lambda t: ops.create_tag(t, "12"), InvalidNameError),
        (lambda t: ops.create_tag(t, ".."), InvalidNameError),
        (lambda t: ops.create_tag(t, "x", snapshot_id=9), SnapshotNotFoundError),
        (lambda t: ops.create_tag(t, "x", snapshot_id=-1), InvalidArgumentError),
        (lambda t: ops.create_tag(t, "x", branch="nope"), BranchNotFoundError),
        (lambda t: ops.create_tag(t, "x", branch="a/b"), InvalidNameError),
        (lambda t: ops.create_tag(t, "t1"), AlreadyExistsError),
        (lambda t: ops.delete_tag(t, "nope"), TagNotFoundError),
        (lambda t: ops.list_tags(t, branch="nope"), BranchNotFoundError),
    ],
)
def test_bad_input_writes_nothing(warehouse, table, call, error):
    _, t = table
    ops.create_tag(t, "t1")
    before = tree(warehouse)
    with pytest.raises(error):
        call(t)
    assert tree(warehouse) == before


def test_tag_of_empty_branch_is_clear_error(warehouse, table):
    _, t = table
    create_branch(t, "empty")
    before = tree(warehouse)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot to tag"):
        ops.create_tag(t, "x", branch="empty")
    assert tree(warehouse) == before
