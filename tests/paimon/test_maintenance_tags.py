"""Tag lifecycle: a tag a branch was created from cannot be deleted; expire_tags."""

from __future__ import annotations

import pytest
from test_branch_support import load_table, make_table, rows, tree, write

from airflow_provider_paimon.paimon import branch as bops
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
