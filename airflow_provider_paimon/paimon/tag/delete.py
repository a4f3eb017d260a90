"""Delete a tag on main or a branch."""

from __future__ import annotations

from typing import Any

from .. import fileops
from ..branch._common import tag_not_found
from ..names import validate_tag_name
from ..snapshots import TableLayout, read_tag
from ._common import resolve_branch


def delete_tag(table: Any, tag: str, *, branch: str | None = None) -> dict[str, Any]:
    """Delete ``tag`` of ``branch`` (default main). Data files are not touched: they
    stay reachable from snapshots and are only removed by expiration."""
    layout = TableLayout.of(table)
    validate_tag_name(tag)
    br = resolve_branch(layout, branch, table)
    doc = read_tag(layout, br, tag)
    if doc is None:
        raise tag_not_found(layout, br, tag)
    fileops.delete_file(layout.file_io, layout.tag_path(br, tag))
    return {"tag": tag, "branch": br or "main", "snapshot_id": int(doc["id"]), "deleted": True}
