"""Delete a tag on main or a branch, unless a branch was created from it.

A branch created from a tag starts with copies of the tag and of its snapshot
(``branch/branch-NAME/tag/tag-T``, ``.../snapshot/snapshot-N``). Our expiry keeps the
branch's files through those copies, but Paimon Java's expiry and tag deletion only
look at the tags of the branch they run on: once the source tag is gone, Java would
delete data files the branch still reads. So, as Paimon Java does, deleting a tag that
a branch was created from is refused, naming the branches; delete (or fast-forward)
them first. A branch already fast-forwarded into the tag's branch (that branch holds
the branch's latest snapshot, same uuid) no longer counts: its history is that
branch's own now.
"""

from __future__ import annotations

from typing import Any

from .. import fileops
from ..branch._common import tag_not_found
from ..errors import InvalidArgumentError
from ..names import name_profile, validate_tag_name
from ..snapshots import TableLayout, branch_names, latest_snapshot_id, read_snapshot, read_tag
from ._common import resolve_branch


class TagInUseError(InvalidArgumentError):
    """The tag is the starting point of a branch; deleting it is refused."""


def branches_created_from(layout: TableLayout, branch: str | None, tag: str, doc: dict[str, Any]) -> list[str]:
    """Branches (other than ``branch``) holding the copy of ``tag`` they were created from."""
    owner = "main" if branch is None else branch
    users = []
    for other in branch_names(layout):
        if other == owner:
            continue
        copy = read_tag(layout, other, tag)
        if copy is not None and int(copy.get("id", -1)) == int(doc["id"]) and not _merged(layout, other, branch, int(doc["id"])):
            users.append(other)
    return users


def _merged(layout: TableLayout, other: str, into: str | None, tagged_id: int) -> bool:
    """True when ``other`` committed past the tag and ``into`` holds those commits
    (the same snapshot files, after a fast-forward)."""
    lb = latest_snapshot_id(layout, other)
    if lb is None or lb <= tagged_id:
        return False
    mine = (read_snapshot(layout, other, lb) or {}).get("uuid")
    return mine is not None and mine == (read_snapshot(layout, into, lb) or {}).get("uuid")


def delete_tag(table: Any, tag: str, *, branch: str | None = None) -> dict[str, Any]:
    """Delete ``tag`` of ``branch`` (default main). Data files are not touched: they
    stay reachable from snapshots and are only removed by expiration (or orphan
    cleanup once nothing names them)."""
    layout = TableLayout.of(table)
    validate_tag_name(tag, name_profile(table))
    br = resolve_branch(layout, branch, table)
    doc = read_tag(layout, br, tag)
    if doc is None:
        raise tag_not_found(layout, br, tag)
    users = branches_created_from(layout, br, tag, doc)
    if users:
        names = ", ".join(repr(u) for u in users)
        raise TagInUseError(
            f"tag {tag!r} cannot be deleted: branch {names} was created from it and still needs "
            "its files; delete or fast-forward that branch first"
        )
    fileops.delete_file(layout.file_io, layout.tag_path(br, tag))
    return {"tag": tag, "branch": br or "main", "snapshot_id": int(doc["id"]), "deleted": True}
