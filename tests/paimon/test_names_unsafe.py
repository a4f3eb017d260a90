"""Unsafe branch and tag names are refused by every operation that takes one, with nothing written.

Look-alikes of ``main``, bidi overrides, control characters, mixed-script names and
over-long names (which used to end in a raw ``OSError`` naming the full path, and a
retry) are refused by ``paimon/names.py`` before any file is touched.
"""

from __future__ import annotations

import pytest
from test_branch_support import make_table, table_dir, tree, write

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.errors import InvalidNameError
from airflow_provider_paimon.paimon.names import (
    MAX_NAME_BYTES,
    validate_branch_name,
    validate_tag_name,
)
from airflow_provider_paimon.paimon.tag import create_tag, delete_tag

# name -> fragment of the error for a branch name, for a tag name (None: a fine tag name)
UNSAFE = {
    "ma\u0456n": ("looks like 'main'", "mixes scripts that look alike (Cyrillic, Latin)"),  # Cyrillic i
    "f\u0456x": ("mixes scripts", "mixes scripts"),
    "\uff4d\uff41\uff49\uff4e": ("looks like 'main'", "is not in Unicode NFKC form"),  # fullwidth
    "MAIN": ("reserved for the main branch", None),
    "fix\u202egnp.exe": ("control or invisible character U+202E",) * 2,  # right-to-left override
    "fix\u2066x\u2069": ("control or invisible character U+2066",) * 2,
    "fix\nnext": ("control or invisible character U+000A",) * 2,
    "fix\tx": ("control or invisible character U+0009",) * 2,
    "fix\u200bx": ("control or invisible character U+200B",) * 2,  # zero-width space
    "fix\x7f": ("control or invisible character U+007F",) * 2,
    "\uff46\uff49\uff58": ("is not in Unicode NFKC form",) * 2,  # fullwidth 'fix'
    "x" * 5000: (f"longer than {MAX_NAME_BYTES} bytes",) * 2,
    "\u00e9" * (MAX_NAME_BYTES // 2 + 1): (f"longer than {MAX_NAME_BYTES} bytes",) * 2,
}


@pytest.fixture
def table(warehouse):
    _catalog, t = make_table(warehouse)
    write(t, [1])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    write(t, [2])
    return t


def _operations(t):
    """Every operation that takes a branch or tag name: (label, kind of the name, call)."""
    return [
        ("create branch", "branch", lambda n: ops.create_branch(t, n, tag="t1")),
        ("delete branch", "branch", lambda n: ops.delete_branch(t, n)),
        ("rename branch (from)", "branch", lambda n: ops.rename_branch(t, n, "other")),
        ("rename branch (to)", "branch", lambda n: ops.rename_branch(t, "fix", n)),
        ("fast-forward", "branch", lambda n: ops.fast_forward(t, n)),
        ("replace main", "branch", lambda n: ops.replace_main(t, n)),
        ("replace main (backup branch)", "branch", lambda n: ops.replace_main(t, "fix", backup_name=n)),
        ("replace main (backup tag)", "tag",
         lambda n: ops.replace_main(t, "fix", backup_name=n, backup_kind="tag")),
        ("create branch from tag", "tag", lambda n: ops.create_branch(t, "new", tag=n)),
        ("create tag", "tag", lambda n: create_tag(t, n)),
        ("create tag on branch", "branch", lambda n: create_tag(t, "t9", branch=n)),
        ("delete tag", "tag", lambda n: delete_tag(t, n)),
        ("delete tag on branch", "branch", lambda n: delete_tag(t, "t1", branch=n)),
    ]


@pytest.mark.parametrize("name", list(UNSAFE), ids=lambda n: ascii(n[:12]))
def test_every_operation_refuses_unsafe_names_and_writes_nothing(warehouse, table, name):
    before = tree(table_dir(warehouse))
    for label, kind, call in _operations(table):
        expected = UNSAFE[name][0 if kind == "branch" else 1]
        if expected is None:
            continue
        with pytest.raises(InvalidNameError) as err:
            call(name)
        message = str(err.value)
        assert expected in message, f"{label}: {message}"
        assert len(message) < 400, f"{label}: the message must not echo a huge name"
        assert tree(table_dir(warehouse)) == before, f"{label} changed the table"


def test_message_shows_invisible_characters_escaped():
    with pytest.raises(InvalidNameError) as err:
        validate_branch_name("fix\u202eexe")
    assert "\u202e" not in str(err.value) and "\\u202e" in str(err.value)


@pytest.mark.parametrize(
    "name",
    ["fix_2026-11-24", "Fix.v2", "correção", "исправление", "修正_1", "fix 1", "x" * MAX_NAME_BYTES,
     "main2", "mainline"],
)
def test_ordinary_names_still_pass(name):
    assert validate_branch_name(name) == name
    assert validate_tag_name(name) == name


def test_tag_named_like_main_is_allowed_but_not_a_lookalike_branch():
    assert validate_tag_name("main") == "main"
    with pytest.raises(InvalidNameError, match="looks like 'main'"):
        validate_branch_name("\uff4d\uff41\uff49\uff4e")
