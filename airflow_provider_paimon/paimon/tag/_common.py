"""Branch resolution shared by the tag operations."""

from __future__ import annotations

from ..branch._common import require_branch
from ..names import is_main, validate_branch_name
from ..snapshots import TableLayout


def resolve_branch(layout: TableLayout, branch: str | None) -> str | None:
    """``None`` for main; otherwise the validated, existing branch name."""
    if is_main(branch):
        return None
    validate_branch_name(branch)
    require_branch(layout, branch)
    return branch
