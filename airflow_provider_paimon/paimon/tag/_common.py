"""Branch resolution shared by the tag operations."""

from __future__ import annotations

from typing import Any

from ..branch._common import require_branch
from ..names import ASCII_PROFILE, is_main, name_profile, validate_branch_name
from ..snapshots import TableLayout, table_branch


def resolve_branch(layout: TableLayout, branch: str | None, table: Any = None) -> str | None:
    """``None`` for main; otherwise the validated, existing branch name.

    Without ``branch``, the branch ``table`` was loaded on (so a branch table tags itself).
    """
    if branch is None and table is not None:
        branch = table_branch(table)
    if branch is None or is_main(branch):
        return None
    validate_branch_name(branch, ASCII_PROFILE if table is None else name_profile(table))
    require_branch(layout, branch)
    return branch
