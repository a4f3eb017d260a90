"""Create a tag of a snapshot (the latest, or a given one) on main or a branch.

The tag file is the snapshot's JSON document, as Paimon Java writes a tag without a
retention, so Java and pypaimon read it; it is created only if absent, in one step.
"""

from __future__ import annotations

from typing import Any

from .. import fileops
from ..branch._common import snapshot_not_found
from ..errors import AlreadyExistsError, InvalidArgumentError, SnapshotNotFoundError
from ..names import validate_tag_name
from ..snapshots import TableLayout, latest_snapshot_id, read_snapshot, read_tag, to_json
from ._common import resolve_branch


def create_tag(
    table: Any, tag: str, *, branch: str | None = None, snapshot_id: int | None = None
) -> dict[str, Any]:
    """Tag ``snapshot_id`` (default: latest) of ``branch`` (default: main) as ``tag``."""
    layout = TableLayout.of(table)
    validate_tag_name(tag)
    br = resolve_branch(layout, branch, table)
    where = "main" if br is None else f"branch {br!r}"
    if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id <= 0):
        raise InvalidArgumentError(f"snapshot id must be a positive integer, got {snapshot_id!r}")
    if read_tag(layout, br, tag) is not None:
        raise AlreadyExistsError(f"tag {tag!r} already exists on {where}")
    if snapshot_id is None:
        snapshot_id = latest_snapshot_id(layout, br)
        if snapshot_id is None:
            raise SnapshotNotFoundError(f"{where} has no snapshot to tag yet; write to it first")
    doc = read_snapshot(layout, br, snapshot_id)
    if doc is None:
        raise snapshot_not_found(layout, br, snapshot_id)
    if not fileops.create_new(layout.file_io, layout.tag_path(br, tag), to_json(doc)):
        raise AlreadyExistsError(f"tag {tag!r} already exists on {where}")
    return {"tag": tag, "branch": br or "main", "snapshot_id": snapshot_id}
