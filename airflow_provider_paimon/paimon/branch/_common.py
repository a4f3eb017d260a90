"""Checks shared by the branch operations (existence, fallback branches, listings)."""

from __future__ import annotations

from typing import Any

from ..errors import (
    AlreadyExistsError,
    BranchNotFoundError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from ..snapshots import TableLayout, branch_names, read_schema, schema_ids, snapshot_ids, tag_names

FALLBACK_OPTION = "scan.fallback-branch"


def require_branch(layout: TableLayout, branch: str) -> None:
    """Raise ``BranchNotFoundError`` naming the existing branches."""
    if not layout.branch_exists(branch):
        known = ", ".join(branch_names(layout)) or "none"
        raise BranchNotFoundError(
            f"branch {branch!r} does not exist on table {layout.table_path} (branches: {known})"
        )


def require_no_branch(layout: TableLayout, branch: str) -> None:
    if layout.branch_exists(branch):
        raise AlreadyExistsError(f"branch {branch!r} already exists on table {layout.table_path}")


def tag_not_found(layout: TableLayout, branch: str | None, tag: str) -> TagNotFoundError:
    known = ", ".join(tag_names(layout, branch)) or "none"
    where = "main" if branch in (None, "", "main") else f"branch {branch!r}"
    return TagNotFoundError(f"tag {tag!r} does not exist on {where} (tags: {known})")


def snapshot_not_found(layout: TableLayout, branch: str | None, snapshot_id: int) -> SnapshotNotFoundError:
    ids = snapshot_ids(layout, branch)
    have = f"{ids[0]}..{ids[-1]}" if ids else "none"
    where = "main" if branch in (None, "", "main") else f"branch {branch!r}"
    return SnapshotNotFoundError(f"snapshot {snapshot_id} does not exist on {where} (snapshots: {have})")


def latest_schema_options(layout: TableLayout, branch: str | None) -> dict[str, Any]:
    ids = schema_ids(layout, branch)
    if not ids:
        return {}
    doc = read_schema(layout, branch, ids[-1]) or {}
    return dict(doc.get("options") or {})


def fallback_users(layout: TableLayout, branch: str) -> list[str]:
    """Branches (``main`` included) whose latest schema names ``branch`` as fallback."""
    users = []
    for owner in ["main", *branch_names(layout)]:
        if owner != branch and latest_schema_options(layout, owner).get(FALLBACK_OPTION) == branch:
            users.append(owner)
    return users
