"""Branch operations done right: create, delete, rename, list, fast-forward, replace main.

Several tables' branches can replace their mains as one change (``publish_branches``).

Each operation takes a pypaimon table of ``main`` (see ``paimon.catalog.load_table``),
validates everything before it writes anything, and keeps Paimon's on-disk layout.
"""

from __future__ import annotations

from .create import create_branch
from .delete import delete_branch
from .fast_forward import fast_forward
from .journal import pending_operation
from .listing import BranchInfo, list_branches
from .publish_many import pending_publish, publish_branches, resume_publish, undo_publish
from .rename import rename_branch
from .replace_main import replace_main

__all__ = [
    "BranchInfo",
    "create_branch",
    "delete_branch",
    "fast_forward",
    "list_branches",
    "pending_operation",
    "pending_publish",
    "publish_branches",
    "rename_branch",
    "replace_main",
    "resume_publish",
    "undo_publish",
]
