"""Parsing and validation of table, branch and tag names.

Paimon keeps a branch in ``branch/branch-NAME`` and a tag in ``tag/tag-NAME``, so a
name must be a single, safe path component. Validation happens before anything is
written, so a bad name never leaves a stray folder behind.
"""

from __future__ import annotations

import re

from .errors import InvalidArgumentError, InvalidNameError

MAIN_BRANCH = "main"
_BAD_CHARS = re.compile(r"[/\\\x00]")


def parse_table_name(name: str) -> tuple[str, str]:
    """Split ``db.table`` into its parts; a ``$branch_X`` suffix is not allowed here."""
    if not isinstance(name, str) or name.count(".") != 1:
        raise InvalidArgumentError(
            f"table name {name!r} must be 'database.table' (exactly one dot), e.g. 'sales.orders'"
        )
    database, table = name.split(".")
    if not database or not table:
        raise InvalidArgumentError(
            f"table name {name!r} must be 'database.table' with both parts non-empty"
        )
    if "$" in table:
        raise InvalidArgumentError(
            f"table name {name!r} carries a system suffix; pass the branch separately "
            "(option 'branch') instead of 'table$branch_NAME'"
        )
    return database, table


def _validate_component(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"{kind} name must not be blank")
    if name != name.strip():
        raise InvalidNameError(f"{kind} name {name!r} must not start or end with whitespace")
    if _BAD_CHARS.search(name) or name in (".", "..") or ".." in name:
        raise InvalidNameError(
            f"{kind} name {name!r} must not contain path separators or '..'"
        )
    return name


def validate_branch_name(name: str) -> str:
    """Raise ``InvalidNameError`` unless ``name`` can be a new branch's name."""
    _validate_component("branch", name)
    if name.lower() == MAIN_BRANCH:
        raise InvalidNameError("branch name 'main' is reserved for the main branch")
    if name.isdigit():
        raise InvalidNameError(
            f"branch name {name!r} must not be all digits (it would read as a snapshot id)"
        )
    return name


def validate_tag_name(name: str) -> str:
    """Raise ``InvalidNameError`` unless ``name`` can be a tag's name."""
    _validate_component("tag", name)
    if name.isdigit():
        raise InvalidNameError(
            f"tag name {name!r} must not be all digits (it would read as a snapshot id)"
        )
    return name


def is_main(branch: str | None) -> bool:
    return branch is None or branch == "" or branch == MAIN_BRANCH
