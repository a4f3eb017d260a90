"""Tag operations on main or on a branch: create (optionally with a retention), delete, rename, list."""

from __future__ import annotations

from .create import create_tag
from .delete import delete_tag
from .listing import TagInfo, list_tags
from .rename import rename_tag

__all__ = ["TagInfo", "create_tag", "delete_tag", "list_tags", "rename_tag"]
