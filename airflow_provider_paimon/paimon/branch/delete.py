"""Delete a branch, refusing one that a table scan falls back to.

A branch named in ``scan.fallback-branch`` is read whenever a partition is missing on
the branch that names it; deleting it would silently drop rows from those reads, so we
refuse and say which branch uses it. The folder is first renamed to a hidden name (the
branch disappears at once) and then removed.
"""

from __future__ import annotations

import uuid
from typing import Any

from .. import fileops, object_dirs
from ..errors import InvalidArgumentError
from ..names import name_profile, validate_branch_name
from ..snapshots import TableLayout
from ._common import FALLBACK_OPTION, fallback_users, require_branch
from .journal import refuse_if_pending


def delete_branch(table: Any, branch: str) -> dict[str, Any]:
    """Delete ``branch`` of ``table``."""
    layout = TableLayout.of(table)
    validate_branch_name(branch, name_profile(table))
    require_branch(layout, branch)
    users = fallback_users(layout, branch)
    if users:
        raise InvalidArgumentError(
            f"branch {branch!r} is the {FALLBACK_OPTION} of {', '.join(users)}; "
            f"unset that option (ALTER TABLE ... RESET '{FALLBACK_OPTION}') before deleting it"
        )
    refuse_if_pending(layout, branch)
    trash = f"{layout.branch_dir()}/.trash-{branch}-{uuid.uuid4().hex[:12]}"
    object_dirs.move_dir(layout.file_io, layout.root(branch), trash)
    fileops.delete_tree(layout.file_io, trash)
    return {"branch": branch, "deleted": True}
