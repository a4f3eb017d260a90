"""Tag lifecycle: a tag a branch was created from cannot be deleted; expire_tags."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, rows, table_dir, tree, write
from support.maintenance import OPTIONS, compact_main, states

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.errors import BranchNotFoundError, InvalidArgumentError
from airflow_provider_paimon.paimon.maintenance import expire_snapshots, expire_tags
from airflow_provider_paimon.paimon.tag import create_tag, delete_tag
from airflow_provider_paimon.paimon.tag.delete import TagInUseError


def test_deleting_a_tag_a_branch_needs_is_refused_naming_the_branch(warehouse):
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    create_tag(t, "t1", snapshot_id=1)
    create_tag(t, "t2", snapshot_id=2)
    bops.create_branch(t, "fix", tag="t1")
    bops.create_branch(t, "fork", snapshot_id=2)
    before = tree(warehouse)
    with pytest.raises(TagInUseError, match=r"tag 't1' cannot be deleted: branch 'fix' was created from it"):
        delete_tag(t, "t1")
    assert tree(warehouse) == before
    # a tag no branch was created from (fork copied snapshot 2, not the tag) goes
    assert delete_tag(t, "t2")["deleted"] is True
    # a branch with its own commits still needs it; once merged into main (fast-forward)
    # or deleted, the tag can go
    write(load_table(catalog, "db.t", "fix"), [7], "b")
    with pytest.raises(TagInUseError, match="branch 'fix'"):
        delete_tag(t, "t1")
    bops.delete_branch(t, "fix")
    assert delete_tag(t, "t1")["deleted"] is True
    assert rows(catalog, branch="fork") == [(1, "m1"), (2, "m2")]


def _tag_with_retention(warehouse: str, name: str, snapshot_id: int, created: datetime, retained: timedelta) -> None:
    """A tag file as Paimon Java (and pypaimon's Tag) write one with a retention."""
    from pypaimon.common.time_utils import duration_to_json_seconds, local_datetime_to_json_array

    tdir = table_dir(warehouse)
    doc = json.loads(Path(os.path.join(tdir, "snapshot", f"snapshot-{snapshot_id}")).read_text())
    doc["tagCreateTime"] = local_datetime_to_json_array(created)
    doc["tagTimeRetained"] = duration_to_json_seconds(retained)
    os.makedirs(os.path.join(tdir, "tag"), exist_ok=True)
    with open(os.path.join(tdir, "tag", f"tag-{name}"), "w") as fh:
        json.dump(doc, fh)


def test_expire_tags(warehouse):
    catalog, t = make_table(warehouse, options=OPTIONS)
    write(t, [1])
    write(t, [2])
    long_ago = datetime.now() - timedelta(days=3)
    _tag_with_retention(warehouse, "old", 2, long_ago, timedelta(days=1))
    compact_main(load_table(catalog, "db.t"))  # snapshot 3: files 1 and 2 merged
    write(load_table(catalog, "db.t"), [4])
    _tag_with_retention(warehouse, "young", 4, datetime.now(), timedelta(days=1))
    _tag_with_retention(warehouse, "forked", 4, long_ago, timedelta(hours=1))
    create_tag(t, "plain", snapshot_id=4)
    bops.create_branch(t, "fix", tag="forked")
    # snapshots 1-3 expire; only tag 'old' still holds the two small files
    expire_snapshots(t, retain_min=1, older_than=timedelta(0), max_deletes=100)
    before = states(catalog, warehouse)
    snap = tree(warehouse)
    dry = expire_tags(t, dry_run=True)
    assert tree(warehouse) == snap
    assert dry["expired_tags"] == ["old"]
    assert dry["kept_tags"]["plain"] == "no time_retained"
    assert dry["kept_tags"]["young"].startswith("retained until")
    assert dry["kept_tags"]["forked"] == "branch 'fix' was created from it"
    result = expire_tags(t)
    assert result["expired_tags"] == ["old"] and result["deleted_files"] == dry["deleted_files"]
    # the two small files were needed only by tag 'old'
    assert result["deleted_by_kind"]["data"] == 2
    after = states(catalog, warehouse)
    assert ("main", "tag", "old") not in after
    for key, rows_ in after.items():
        assert rows_ == before[key], key
    assert expire_tags(t)["expired_tags"] == []


def test_expire_tags_bad_input(warehouse):
    _catalog, t = make_table(warehouse)
    write(t, [1])
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match="dry_run must be True or False"):
        expire_tags(t, dry_run="no")
    with pytest.raises(BranchNotFoundError, match="branch 'nope' does not exist"):
        expire_tags(t, branch="nope")
    assert tree(warehouse) == before
