"""Rename a branch in one directory rename (it is never listed under both names)."""

from __future__ import annotations

from typing import Any

from .. import object_dirs
from ..errors import InvalidArgumentError
from ..names import name_profile, refuse_lookalike, validate_branch_name
from ..snapshots import TableLayout, branch_names
from ._common import FALLBACK_OPTION, fallback_users, require_branch, require_no_branch
from .journal import refuse_if_pending


def rename_branch(table: Any, branch: str, new_name: str) -> dict[str, Any]:
    """Rename ``branch`` to ``new_name``; refuses a fallback branch (readers name it)."""
    layout = TableLayout.of(table)
    profile = name_profile(table)
    validate_branch_name(branch, profile)
    validate_branch_name(new_name, profile)
    if branch == new_name:
        raise InvalidArgumentError(f"new branch name is the same as the old one ({branch!r})")
    require_branch(layout, branch)
    require_no_branch(layout, new_name)
    refuse_lookalike("branch", new_name, (b for b in branch_names(layout) if b != branch))
    users = fallback_users(layout, branch)
    if users:
        raise InvalidArgumentError(
            f"branch {branch!r} is the {FALLBACK_OPTION} of {', '.join(users)}; "
            "renaming it would break their reads; change that option first"
        )
    refuse_if_pending(layout, branch)
    object_dirs.move_dir(layout.file_io, layout.root(branch), layout.root(new_name))
    return {"branch": new_name, "previous_name": branch}
