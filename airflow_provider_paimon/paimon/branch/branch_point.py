"""Tag a table at a snapshot and branch from the tag, idempotently: a cascade's first step.

A cascading correction (``lineage.cascade.plan_cascade``) restarts each affected table
from its *branch point*, the last good snapshot. The tag is what keeps that snapshot
alive: snapshot expiry never deletes a tagged snapshot, while a branch made from a
plain snapshot is not protected by Paimon Java's expiry (apache/paimon#3787). A branch
point of ``None`` (the first bad snapshot was the table's first) gives an empty branch
(schemas only): the table is rebuilt from nothing.

Retries and reruns must reach the same state, so each step accepts what an earlier try
left when it is exactly what this call would make (the tag on the same snapshot, the
branch holding that tag), and refuses anything else, before writing, with a message
saying what is in the way. Killed between the tag and the branch, a rerun reuses the
tag and makes the branch.
"""

from __future__ import annotations

from typing import Any

from ..errors import AlreadyExistsError, InvalidArgumentError
from ..names import name_profile, validate_branch_name, validate_tag_name
from ..snapshots import TableLayout, read_tag, snapshot_ids, tag_names
from ..tag.create import create_tag
from .create import create_branch


def branch_at(table: Any, branch: str, *, snapshot_id: int | None, tag: str | None = None,
              source_branch: str | None = None) -> dict[str, Any]:
    """Make ``branch`` of ``table`` (a main table) start at ``snapshot_id`` of main
    (or of ``source_branch``).

    ``tag`` (required with a snapshot) is created on main (``source_branch``) at
    ``snapshot_id`` first and the branch is made from it; ``snapshot_id=None`` makes an
    empty branch and no tag. ``source_branch``: after a publish a table's current rows
    came from its correction branch, so a second correction may start on that branch
    (the cascade plan's ``branch_point_branch``).
    Returns ``{"branch", "tag", "snapshot_id", "source_branch", "created": {"tag": bool,
    "branch": bool}}``: ``created`` False means an earlier try had already made it.
    """
    validate_branch_name(branch, name_profile(table))
    if snapshot_id is not None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id <= 0:
            raise InvalidArgumentError(f"snapshot id must be a positive integer or None, got {snapshot_id!r}")
        if not tag:
            raise InvalidArgumentError("branching at a snapshot needs a tag name (the tag keeps the snapshot from expiry)")
        validate_tag_name(tag, name_profile(table))
    elif tag:
        raise InvalidArgumentError(f"tag {tag!r} given for an empty branch (snapshot_id None): there is nothing to tag")
    source = None if source_branch in (None, "", "main") else validate_branch_name(str(source_branch))
    if source == branch:
        raise InvalidArgumentError(f"branch {branch!r} cannot start from itself: choose another correction name")
    layout = TableLayout.of(table)
    if source is not None and not layout.branch_exists(source):
        raise InvalidArgumentError(
            f"branch {source!r} of table {layout.table_path} does not exist, so the branch point on it is gone: "
            "plan the correction again (the plan names the branch the rows came from)"
        )
    _check_earlier_try(layout, branch, snapshot_id, tag, source)

    made_tag = False
    if tag is not None and read_tag(layout, source, tag) is None:
        create_tag(table, tag, branch=source, snapshot_id=snapshot_id)
        made_tag = True
    made_branch = False
    if not layout.branch_exists(branch):
        create_branch(table, branch, tag=tag, source_branch=source)
        made_branch = True
    return {
        "branch": branch,
        "tag": tag,
        "snapshot_id": snapshot_id,
        "source_branch": source or "main",
        "created": {"tag": made_tag, "branch": made_branch},
    }


def _check_earlier_try(layout: TableLayout, branch: str, snapshot_id: int | None, tag: str | None,
                       source: str | None = None) -> None:
    """Refuse a tag or branch of the same name that this call would not have made."""
    where = f"table {layout.table_path}" + ("" if source is None else f" (branch {source})")
    if tag is not None:
        doc = read_tag(layout, source, tag)
        if doc is not None and int(doc["id"]) != snapshot_id:
            raise AlreadyExistsError(
                f"tag {tag!r} on {where} already exists at snapshot {doc['id']}, not at the branch point "
                f"{snapshot_id}: delete it or choose another correction name"
            )
    if not layout.branch_exists(branch):
        return
    if tag is not None:
        copied = read_tag(layout, branch, tag)
        if copied is None or int(copied["id"]) != snapshot_id:
            raise AlreadyExistsError(
                f"branch {branch!r} on {where} already exists but was not made from tag {tag!r} at "
                f"snapshot {snapshot_id}: delete the branch or choose another correction name"
            )
        return
    ids = snapshot_ids(layout, branch)
    if tag_names(layout, branch) or (ids and ids[0] != 1):
        raise AlreadyExistsError(
            f"branch {branch!r} on {where} already exists but was not made empty: delete the branch "
            "or choose another correction name"
        )
