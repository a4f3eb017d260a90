"""Tag operations on main or on a branch: create, delete, list."""

from __future__ import annotations

from .create import create_tag
from .delete import delete_tag
from .listing import TagInfo, list_tags

__all__ = ["TagInfo", "create_tag", "delete_tag", "list_tags"]
