"""Unsafe branch and tag names are refused by every operation that takes one, with nothing written.

Look-alikes of ``main``, bidi overrides, control characters, default-ignorable code
points (``m\u034fain`` displays as ``main``), mixed-script names, names outside the
table's name profile and over-long names (which used to end in a raw ``OSError``
naming the full path, and a retry) are refused by ``paimon/names.py`` before any file
is touched; so is a new name that looks like an existing one (``Fix`` beside ``fix``).
"""

from __future__ import annotations

import sys
import unicodedata

import pytest
from support.branch_tables import make_table, table_dir, tree, write

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, InvalidNameError
from airflow_provider_paimon.paimon.names import (
    MAX_NAME_BYTES,
    NAME_PROFILE_OPTION,
    UNICODE_PROFILE,
    is_default_ignorable,
    skeleton,
    validate_branch_name,
    validate_tag_name,
)
from airflow_provider_paimon.paimon.tag import create_tag, delete_tag, rename_tag

_DEFAULT = "which the default name profile does not allow"
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
    # default-ignorable code points: render as nothing
    "m\u034fain": ("control or invisible character U+034F",) * 2,  # combining grapheme joiner
    "fi\u034fx": ("control or invisible character U+034F",) * 2,  # beside the existing 'fix'
    "fix\ufe0f": ("control or invisible character U+FE0F",) * 2,  # variation selector-16
    "fix\ufe00": ("control or invisible character U+FE00",) * 2,
    "fix\u17b4": ("control or invisible character U+17B4",) * 2,  # Khmer inherent vowel
    "\u115ffix": ("control or invisible character U+115F",) * 2,  # Hangul choseong filler
    # outside the default profile [A-Za-z0-9_.-]
    "fix\u2800": (f"U+2800 (BRAILLE PATTERN BLANK), {_DEFAULT}",) * 2,
    "mai\u0307n": ("looks like 'main'", f"U+0307 (COMBINING DOT ABOVE), {_DEFAULT}"),
    "m\u1d00in": ("looks like 'main'", f"U+1D00 (LATIN LETTER SMALL CAPITAL A), {_DEFAULT}"),
    "MA\u0130N": ("looks like 'main'", f"U+0130 (LATIN CAPITAL LETTER I WITH DOT ABOVE), {_DEFAULT}"),
    "-fix": ("must not start with '-'",) * 2,
}
# the same names on a table that opted in to Unicode names
UNSAFE_UNICODE = {
    **{name: UNSAFE[name] for name in (
        "ma\u0456n", "f\u0456x", "\uff4d\uff41\uff49\uff4e", "MAIN", "fix\u202egnp.exe", "fix\u200bx",
        "x" * 5000, "m\u034fain", "fi\u034fx", "fix\ufe0f", "fix\ufe00", "fix\u17b4", "\u115ffix", "-fix")},
    "fix\u2800": ("U+2800 (BRAILLE PATTERN BLANK), which is not a letter, digit, mark",) * 2,
    "mai\u0307n": ("looks like 'main'", "combining mark U+0307 (COMBINING DOT ABOVE) on U+0069"),
    "m\u1d00in": ("looks like 'main'", "U+1D00 (LATIN LETTER SMALL CAPITAL A), a technical or historic"),
    "MA\u0130N": ("looks like 'main'", None),  # a Turkish capital: a fine tag name in this profile
    "fix \u0661": ("U+0020 (SPACE), which is not a letter, digit, mark",) * 2,
    "\u16a0\u16a2": ("U+16A0 (RUNIC LETTER FEHU FEOH FE F), a technical or historic",) * 2,
}


def _table(warehouse, options=None):
    _catalog, t = make_table(warehouse, options=options)
    write(t, [1])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    write(t, [2])
    return t


@pytest.fixture
def table(warehouse):
    return _table(warehouse)


@pytest.fixture
def unicode_table(warehouse):
    """A table whose names follow the Unicode profile, with a branch and a tag named ``cop``."""
    t = _table(warehouse, {NAME_PROFILE_OPTION: UNICODE_PROFILE})
    ops.create_branch(t, "cop")
    create_tag(t, "cop")
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
        ("rename tag (from)", "tag", lambda n: rename_tag(t, n, "t8")),
        ("rename tag (to)", "tag", lambda n: rename_tag(t, "t1", n)),
    ]


def _refused_everywhere(warehouse, table, name, expected_by_kind):
    before = tree(table_dir(warehouse))
    for label, kind, call in _operations(table):
        expected = expected_by_kind[0 if kind == "branch" else 1]
        if expected is None:
            continue
        with pytest.raises(InvalidNameError) as err:
            call(name)
        message = str(err.value)
        assert expected in message, f"{label}: {message}"
        assert len(message) < 400, f"{label}: the message must not echo a huge name"
        assert tree(table_dir(warehouse)) == before, f"{label} changed the table"


@pytest.mark.parametrize("name", list(UNSAFE), ids=lambda n: ascii(n[:12]))
def test_every_operation_refuses_unsafe_names_and_writes_nothing(warehouse, table, name):
    _refused_everywhere(warehouse, table, name, UNSAFE[name])


@pytest.mark.parametrize("name", list(UNSAFE_UNICODE), ids=lambda n: ascii(n[:12]))
def test_unicode_profile_still_refuses_them_and_writes_nothing(warehouse, unicode_table, name):
    _refused_everywhere(warehouse, unicode_table, name, UNSAFE_UNICODE[name])


# a new name that looks like an existing one of its kind: (table fixture, name, the existing name)
LOOKALIKES = [
    ("table", "Fix", "fix"), ("table", "FIX", "fix"), ("table", "T1", "t1"),
    ("unicode_table", "\u0441\u043e\u0440", "cop"),  # Cyrillic es, o, er: one script, passes for 'cop'
    ("unicode_table", "\u0421\u041e\u0420", "cop"),  # Cyrillic capitals: case folded, then mapped
]


@pytest.mark.parametrize(("fixture", "name", "existing"), LOOKALIKES, ids=lambda v: ascii(v)[:14])
def test_a_new_name_that_looks_like_an_existing_one_is_refused(request, warehouse, fixture, name, existing):
    t = request.getfixturevalue(fixture)
    ops.create_branch(t, "spare")
    create_tag(t, "spare_tag")
    branches, tags = {"fix", "cop"}, {"t1", "cop"}
    new_name_ops = [
        ("create branch", "branch", lambda: ops.create_branch(t, name)),
        ("rename branch", "branch", lambda: ops.rename_branch(t, "spare", name)),
        ("replace main (backup branch)", "branch", lambda: ops.replace_main(t, "fix", backup_name=name)),
        ("create tag", "tag", lambda: create_tag(t, name)),
        ("rename tag", "tag", lambda: rename_tag(t, "spare_tag", name)),
        ("replace main (backup tag)", "tag", lambda: ops.replace_main(t, "fix", backup_name=name, backup_kind="tag")),
    ]
    before = tree(table_dir(warehouse))
    checked = 0
    for label, kind, call in new_name_ops:
        if existing not in (branches if kind == "branch" else tags):
            continue
        assert skeleton(existing) == skeleton(name)
        with pytest.raises(InvalidNameError, match=f"looks like the existing {kind} '{existing}'"):
            call()
        assert tree(table_dir(warehouse)) == before, f"{label} changed the table"
        checked += 1
    assert checked >= 3


def test_a_branch_may_be_renamed_to_another_case_of_itself_only_if_nothing_else_looks_alike(warehouse, table):
    # the branch being renamed is not "another" name: fix -> Fix is a rename, not a look-alike
    ops.rename_branch(table, "fix", "Fix")
    assert [b.name for b in ops.list_branches(table)] == ["Fix"]


def test_message_shows_invisible_characters_escaped():
    with pytest.raises(InvalidNameError) as err:
        validate_branch_name("fix\u202eexe")
    assert "\u202e" not in str(err.value) and "\\u202e" in str(err.value)


ASCII_NAMES = ["fix_2026-11-24", "Fix.v2", "x" * MAX_NAME_BYTES, "main2", "mainline", "a-b.c_d"]
UNICODE_NAMES = ["correção", "исправление", "修正_1", "テスト_ー", "हिन्दी", "Ελληνικά", "İstanbul", "한국어"]


@pytest.mark.parametrize("name", ASCII_NAMES + UNICODE_NAMES)
def test_ordinary_names_still_pass(name):
    assert validate_branch_name(name, UNICODE_PROFILE) == name
    assert validate_tag_name(name, UNICODE_PROFILE) == name
    if name in ASCII_NAMES:
        assert validate_branch_name(name) == name
        assert validate_tag_name(name) == name
    else:  # the default profile refuses them, saying how to opt in
        with pytest.raises(InvalidNameError, match=NAME_PROFILE_OPTION):
            validate_branch_name(name)


def test_unicode_names_work_on_a_table_that_opted_in(warehouse, unicode_table):
    ops.create_branch(unicode_table, "correção", tag="t1")
    create_tag(unicode_table, "修正_1", branch="correção")
    assert "correção" in [b.name for b in ops.list_branches(unicode_table)]
    ops.delete_branch(unicode_table, "correção")


@pytest.mark.parametrize("value", ["latin", "", "ascii,unicode", "UNICODE "])
def test_a_name_profile_nobody_chose_fails_closed(warehouse, value):
    _catalog, other = make_table(warehouse, "db.other", options={NAME_PROFILE_OPTION: value})
    if value.strip().lower() == UNICODE_PROFILE:  # the value's case and spaces do not matter
        ops.create_branch(other, "correção")
        return
    before = tree(table_dir(warehouse, "db.other"))
    for call in (lambda: ops.create_branch(other, "fix2"), lambda: create_tag(other, "t2"),
                 lambda: ops.delete_branch(other, "fix2")):
        with pytest.raises(InvalidArgumentError, match=f"{NAME_PROFILE_OPTION}.*fix the value"):
            call()
    assert tree(table_dir(warehouse, "db.other")) == before


def test_default_ignorable_table_matches_unicodedata():
    """Every transcribed range is default-ignorable where unicodedata can tell (format, variation
    selectors, fillers), and no letter or digit outside them is."""
    ranges_checked = 0
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        name = unicodedata.name(char, "")
        if is_default_ignorable(char):
            ranges_checked += 1
            assert category in ("Cf", "Mn", "Lo", "Cn"), (hex(code), category)
            assert category != "Lo" or ("HANGUL" in name and name.endswith("FILLER")), hex(code)
            assert category != "Mn" or "VARIATION SELECTOR" in name or code in (0x034F, 0x17B4, 0x17B5), hex(code)
        elif "VARIATION SELECTOR" in name or ("HANGUL" in name and name.endswith(" FILLER")):
            raise AssertionError(f"{hex(code)} {name} is default-ignorable but not in the table")
    assert ranges_checked == 4174  # DerivedCoreProperties.txt 14.0: 4,174 code points


def test_tag_named_like_main_is_allowed_but_not_a_lookalike_branch():
    assert validate_tag_name("main") == "main"
    with pytest.raises(InvalidNameError, match="looks like 'main'"):
        validate_branch_name("\uff4d\uff41\uff49\uff4e")
