"""Rename a tag on main or a branch (Paimon's ``rename_tag``).

Paimon Java renames the tag file in one step; object stores have no rename, and a
rename that overwrote an existing tag would silently retarget it. So here:

1. the new name is created only if absent, with the old tag's exact document
   (snapshot, ``tagCreateTime`` and ``tagTimeRetained`` kept: the retention keeps
   counting from the original creation);
2. then the old tag file is deleted (fault point ``rename_tag.written`` in between).

Killed between the two steps, both names read the same snapshot; running the rename
again sees the new tag holding exactly the old one's document and finishes by
deleting the old name. A new name already holding anything else is refused. A tag a
branch was created from is refused too (as ``delete_tag`` does): the branch's link to
it is its name.
"""

from __future__ import annotations

from typing import Any

from .. import faults, fileops
from ..branch._common import tag_not_found
from ..errors import AlreadyExistsError, InvalidArgumentError
from ..names import name_profile, refuse_lookalike, validate_tag_name
from ..snapshots import TableLayout, read_tag, tag_names, to_json
from ._common import resolve_branch
from .delete import TagInUseError, branches_created_from


def rename_tag(table: Any, tag: str, new_name: str, *, branch: str | None = None) -> dict[str, Any]:
    """Rename ``tag`` of ``branch`` (default main) to ``new_name``; the snapshot is unchanged."""
    layout = TableLayout.of(table)
    profile = name_profile(table)
    validate_tag_name(tag, profile)
    validate_tag_name(new_name, profile)
    if tag == new_name:
        raise InvalidArgumentError(f"tag {tag!r} cannot be renamed to itself; give a different new name")
    br = resolve_branch(layout, branch, table)
    where = "main" if br is None else f"branch {br!r}"
    doc = read_tag(layout, br, tag)
    if doc is None:
        raise tag_not_found(layout, br, tag)
    existing = read_tag(layout, br, new_name)
    resumed = existing is not None and existing == doc
    if existing is not None and not resumed:
        raise AlreadyExistsError(
            f"tag {new_name!r} already exists on {where} (snapshot {existing.get('id')}); "
            "delete it first or choose another name"
        )
    refuse_lookalike("tag", new_name, (t for t in tag_names(layout, br) if t != tag))
    users = branches_created_from(layout, br, tag, doc)
    if users:
        names = ", ".join(repr(u) for u in users)
        raise TagInUseError(
            f"tag {tag!r} cannot be renamed: branch {names} was created from it and is linked to "
            "it by name; delete or fast-forward that branch first"
        )
    if not resumed and not fileops.create_new(layout.file_io, layout.tag_path(br, new_name), to_json(doc)):
        raise AlreadyExistsError(f"tag {new_name!r} was created on {where} during the rename; nothing was renamed")
    faults.check("rename_tag.written")
    fileops.delete_file(layout.file_io, layout.tag_path(br, tag))
    return {"tag": tag, "new_name": new_name, "branch": br or "main", "snapshot_id": int(doc["id"]),
            "resumed": resumed}
