"""Parsing and validation of table, branch and tag names.

Paimon keeps a branch in ``branch/branch-NAME`` and a tag in ``tag/tag-NAME``, so a
name must be a single, safe path component. Validation happens before anything is
written, so a bad name never leaves a stray folder behind.

Names are also shown to people (logs, the Airflow UI, ``paimon-lineage``), who must be
able to tell two names apart and see what they act on. So a branch or tag name is
refused when it

* holds a control, format or separator character (newline, tab, DEL, zero-width
  space, the bidi overrides and isolates U+202A-U+202E / U+2066-U+2069 that make
  ``fix\u202egnp.exe`` display as ``fixexe.png``...);
* is longer than ``MAX_NAME_BYTES`` bytes in UTF-8 (file systems cap a path
  component at 255 bytes, and Paimon adds ``branch-`` and temporary suffixes);
* is not in Unicode NFKC form (fullwidth ``ｆｉｘ``, ligatures, superscripts: each
  would be a second name that looks like an existing one);
* mixes letters of the look-alike scripts Latin, Greek, Cyrillic, Armenian and
  Cherokee (``maіn`` with a Cyrillic ``і``); a name wholly in one of them, or
  mixing Latin with Han, kana or Hangul, is fine;
* (branches) reads as ``main`` after NFKC, case folding and mapping the Greek and
  Cyrillic look-alikes of m, a, i, n to Latin: ``MAIN``, ``ｍａｉｎ``.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import InvalidArgumentError, InvalidNameError

MAIN_BRANCH = "main"
#: longest branch/tag name, in UTF-8 bytes (a path component holds 255)
MAX_NAME_BYTES = 128
_BAD_CHARS = re.compile(r"[/\\\x00]")
#: Unicode categories never allowed in a name: control, format (bidi, zero-width),
#: surrogate, private use, unassigned, line and paragraph separators
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: scripts whose letters pass for each other; a name may use at most one of them
_CONFUSABLE_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE")
#: Greek/Cyrillic letters that look like the letters of "main" (after case folding)
_MAIN_HOMOGLYPHS = str.maketrans({
    "\u043c": "m", "\u03bc": "m", "\u0430": "a", "\u03b1": "a", "\u0456": "i",
    "\u0131": "i", "\u03b9": "i", "\u0438": "n", "\u043f": "n", "\u03b7": "n",
})


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


def _shown(name: str) -> str:
    """The name for an error message: escaped (invisible characters visible), and short."""
    text = name if len(name) <= 60 else f"{name[:40]}...({len(name)} characters)"
    return ascii(text)


def _check_characters(kind: str, name: str) -> None:
    """Refuse control/bidi/invisible characters and over-long names (before anything else)."""
    for char in name:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise InvalidNameError(
                f"{kind} name {_shown(name)} holds the control or invisible character "
                f"U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')}); use visible "
                "characters only"
            )
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise InvalidNameError(
            f"{kind} name {_shown(name)} is longer than {MAX_NAME_BYTES} bytes in UTF-8 "
            f"({size}); choose a shorter name"
        )


def _check_unambiguous(kind: str, name: str) -> None:
    """Refuse names that display like another name: compatibility forms, mixed scripts."""
    if unicodedata.normalize("NFKC", name) != name:
        raise InvalidNameError(
            f"{kind} name {_shown(name)} is not in Unicode NFKC form (it holds fullwidth, "
            f"ligature or other compatibility characters); write it as "
            f"{unicodedata.normalize('NFKC', name)!a}"
        )
    scripts = sorted({s for s in map(_script, name) if s in _CONFUSABLE_SCRIPTS})
    if len(scripts) > 1:
        raise InvalidNameError(
            f"{kind} name {_shown(name)} mixes scripts that look alike "
            f"({', '.join(s.title() for s in scripts)}); write it in one script"
        )


def _script(char: str) -> str:
    """The script of a letter, from its Unicode name (``CYRILLIC SMALL LETTER I``)."""
    if not char.isalpha():
        return ""
    return unicodedata.name(char, "").split(" ", 1)[0]


def looks_like_main(name: str) -> bool:
    """True when ``name`` reads as ``main``: NFKC, case-folded, Greek/Cyrillic look-alikes mapped."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return folded.translate(_MAIN_HOMOGLYPHS) == MAIN_BRANCH


def _validate_component(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"{kind} name must not be blank")
    _check_characters(kind, name)
    if name != name.strip():
        raise InvalidNameError(f"{kind} name {name!r} must not start or end with whitespace")
    if _BAD_CHARS.search(name) or name in (".", "..") or ".." in name:
        raise InvalidNameError(
            f"{kind} name {_shown(name)} must not contain path separators or '..'"
        )
    return name


def validate_branch_name(name: str) -> str:
    """Raise ``InvalidNameError`` unless ``name`` can be a new branch's name."""
    _validate_component("branch", name)
    if name.lower() == MAIN_BRANCH:
        raise InvalidNameError(f"branch name {name!r} is reserved for the main branch")
    if looks_like_main(name):
        raise InvalidNameError(
            f"branch name {_shown(name)} looks like 'main' (reserved for the main branch); "
            "choose a name that cannot be mistaken for it"
        )
    _check_unambiguous("branch", name)
    if name.isdigit():
        raise InvalidNameError(
            f"branch name {name!r} must not be all digits (it would read as a snapshot id)"
        )
    return name


def validate_tag_name(name: str) -> str:
    """Raise ``InvalidNameError`` unless ``name`` can be a tag's name."""
    _validate_component("tag", name)
    _check_unambiguous("tag", name)
    if name.isdigit():
        raise InvalidNameError(
            f"tag name {name!r} must not be all digits (it would read as a snapshot id)"
        )
    return name


def is_main(branch: str | None) -> bool:
    return branch is None or branch == "" or branch == MAIN_BRANCH
