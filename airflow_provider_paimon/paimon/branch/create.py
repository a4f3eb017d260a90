"""Create a branch: empty (schemas only), from a tag, or from a snapshot of main.

Like Paimon Java's ``createBranch``, a branch gets copies of the few metadata files it
starts from (the tag, its snapshot, the schemas up to the snapshot's schema), never
data files: data and manifests stay shared under the table root. The files are first
written to a hidden staging folder and the folder is renamed to ``branch-NAME`` in one
step, so a crash never leaves a half-made branch that readers would list.
"""

from __future__ import annotations

import uuid
from typing import Any

from .. import faults, fileops, object_dirs
from ..errors import InvalidArgumentError
from ..names import name_profile, refuse_lookalike, validate_branch_name, validate_tag_name
from ..snapshots import (
    TableLayout,
    branch_names,
    read_snapshot,
    read_tag,
    schema_ids,
    table_branch,
    to_json,
)
from ._common import require_branch, require_no_branch, snapshot_not_found, tag_not_found

TAG_ONLY_FIELDS = ("tagCreateTime", "tagTimeRetained")


def create_branch(
    table: Any,
    branch: str,
    *,
    tag: str | None = None,
    snapshot_id: int | None = None,
    source_branch: str | None = None,
) -> dict[str, Any]:
    """Create ``branch`` on ``table``; returns what it was created from.

    ``source_branch`` is where the tag or snapshot is looked up: by default the branch
    ``table`` was loaded on (main for a main table).
    """
    layout = TableLayout.of(table)
    if source_branch is None:
        source_branch = table_branch(table)
    profile = name_profile(table)
    validate_branch_name(branch, profile)
    if tag is not None and snapshot_id is not None:
        raise InvalidArgumentError("give a tag or a snapshot id to create a branch from, not both")
    if tag is not None:
        validate_tag_name(tag, profile)
    if source_branch not in (None, "", "main"):
        require_branch(layout, source_branch)
    require_no_branch(layout, branch)
    refuse_lookalike("branch", branch, branch_names(layout))
    files = plan_branch_files(layout, tag=tag, snapshot_id=snapshot_id, source=source_branch)
    publish_branch(layout, branch, files)
    snap = files.get("snapshot")
    return {
        "branch": branch,
        "tag": tag,
        "snapshot_id": None if snap is None else snap[0],
        "schema_ids": sorted(files["schemas"]),
    }


def plan_branch_files(
    layout: TableLayout, *, tag: str | None, snapshot_id: int | None, source: str | None = None
) -> dict[str, Any]:
    """The documents a new branch starts with; raises if the tag/snapshot is unknown."""
    if snapshot_id is not None and (
        isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id <= 0
    ):
        raise InvalidArgumentError(f"snapshot id must be a positive integer, got {snapshot_id!r}")
    out: dict[str, Any] = {"tag": None, "snapshot": None, "schemas": {}}
    if tag is not None:
        tag_doc = read_tag(layout, source, tag)
        if tag_doc is None:
            raise tag_not_found(layout, source, tag)
        snap_doc = read_snapshot(layout, source, int(tag_doc["id"]))
        if snap_doc is None:  # the snapshot expired; the tag still holds all of it
            snap_doc = {k: v for k, v in tag_doc.items() if k not in TAG_ONLY_FIELDS}
        out["tag"] = (tag, tag_doc)
        out["snapshot"] = (int(tag_doc["id"]), snap_doc)
        max_schema = int(tag_doc["schemaId"])
    elif snapshot_id is not None:
        snap_doc = read_snapshot(layout, source, snapshot_id)
        if snap_doc is None:
            raise snapshot_not_found(layout, source, snapshot_id)
        out["snapshot"] = (snapshot_id, snap_doc)
        max_schema = int(snap_doc["schemaId"])
    else:
        ids = schema_ids(layout, source)
        if not ids:
            raise InvalidArgumentError(f"table {layout.table_path} has no schema to start a branch from")
        max_schema = ids[-1]
    for sid in schema_ids(layout, source):
        if sid <= max_schema:
            out["schemas"][sid] = fileops.read_text(layout.file_io, layout.schema_path(source, sid))
    return out


def publish_branch(layout: TableLayout, branch: str, files: dict[str, Any]) -> None:
    """Write ``files`` into a staging folder, then rename it to the branch folder."""
    staging_name = f".tmp-{branch}-{uuid.uuid4().hex[:12]}"
    stage_root = f"{layout.branch_dir()}/{staging_name}"
    io = layout.file_io
    try:
        for sid, text in files["schemas"].items():
            fileops.write_atomic(io, f"{stage_root}/schema/schema-{sid}", text)
        if files["snapshot"] is not None:
            sid, doc = files["snapshot"]
            text = to_json(doc)
            fileops.write_atomic(io, f"{stage_root}/snapshot/snapshot-{sid}", text)
        if files["tag"] is not None:
            name, doc = files["tag"]
            fileops.write_atomic(io, f"{stage_root}/tag/tag-{name}", to_json(doc))
        faults.check("create_branch.staged")
        object_dirs.move_dir(io, stage_root, layout.root(branch))
    except BaseException:
        fileops.delete_tree(io, stage_root)
        raise
