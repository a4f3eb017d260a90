"""Parsing and validation of table, branch and tag names.

Paimon keeps a branch in ``branch/branch-NAME`` and a tag in ``tag/tag-NAME``, so a
name must be a single, safe path component. Validation happens before anything is
written, so a bad name never leaves a stray folder behind.

Names are also shown to people (logs, the Airflow UI, ``paimon-lineage``), who must be
able to tell two names apart and see what they act on. So a branch or tag name is
refused when it

* holds a control, format or separator character (newline, tab, DEL, zero-width
  space, the bidi overrides and isolates U+202A-U+202E / U+2066-U+2069 that make
  ``fix\u202egnp.exe`` display as ``fixexe.png``...) or any **default-ignorable** code
  point (Unicode's ``Default_Ignorable_Code_Point``: the combining grapheme joiner
  U+034F, variation selectors, Hangul fillers, Khmer inherent vowels..., which render as
  nothing, so ``m\u034fain`` displays as ``main``);
* is longer than ``MAX_NAME_BYTES`` bytes in UTF-8 (file systems cap a path
  component at 255 bytes, and Paimon adds ``branch-`` and temporary suffixes);
* starts with ``-`` (it would read as a flag on the jobs' command lines);
* is not in Unicode NFKC form (fullwidth ``ｆｉｘ``, ligatures, superscripts: each
  would be a second name that looks like an existing one);
* mixes letters of the look-alike scripts Latin, Greek, Cyrillic, Armenian and
  Cherokee (``maіn`` with a Cyrillic ``і``); a name wholly in one of them, or
  mixing Latin with Han, kana or Hangul, is fine;
* is outside the table's **name profile** (``NAME_PROFILE_OPTION``): ``ascii`` (the
  default) allows ``[A-Za-z0-9_.-]`` only; ``unicode`` (an opt-in) allows letters,
  digits and combining marks of the scripts Unicode recommends for identifiers, as far
  as Python's ``unicodedata`` can tell them (see ``_unicode_problem``);
* (branches) reads as ``main`` by ``skeleton``: ``MAIN``, ``ｍａｉｎ``, ``m\u1d00in``
  (small capital A), ``MA\u0130N`` (dotted capital I), ``mai\u0307n``;
* (new names) has the same ``skeleton`` as an existing branch (for a branch) or tag
  (for a tag) of another spelling: ``Fix`` beside ``fix``, Cyrillic ``сор`` beside
  ``cop`` (``refuse_lookalike``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .errors import InvalidArgumentError, InvalidNameError

MAIN_BRANCH = "main"
#: longest branch/tag name, in UTF-8 bytes (a path component holds 255)
MAX_NAME_BYTES = 128
#: longest database or table name, in UTF-8 bytes (a path component holds 255; the
#: database folder adds ``.db``)
MAX_IDENTIFIER_BYTES = 250
_BAD_CHARS = re.compile(r"[/\\\x00]")
#: Unicode categories never allowed in a name: control, format (bidi, zero-width),
#: surrogate, private use, unassigned, line and paragraph separators
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: scripts whose letters pass for each other; a name may use at most one of them
_CONFUSABLE_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE")

#: The table option choosing the name profile of a table's branches and tags.
NAME_PROFILE_OPTION = "airflow-paimon.name-profile"
ASCII_PROFILE = "ascii"
UNICODE_PROFILE = "unicode"
NAME_PROFILES = (ASCII_PROFILE, UNICODE_PROFILE)
_ASCII_NAME_CHAR = re.compile(r"[A-Za-z0-9_.\-]")

#: Default_Ignorable_Code_Point, transcribed from Unicode's DerivedCoreProperties.txt
#: (14.0, the version of Python 3.11's unicodedata; the set is unchanged in 15.0-16.0).
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),  # Cf       SOFT HYPHEN
    (0x034F, 0x034F),  # Mn       COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # Cf       ARABIC LETTER MARK
    (0x115F, 0x1160),  # Lo   [2] HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # Mn   [2] KHMER VOWEL INHERENT AQ..KHMER VOWEL INHERENT AA
    (0x180B, 0x180D),  # Mn   [3] MONGOLIAN FREE VARIATION SELECTOR ONE..THREE
    (0x180E, 0x180E),  # Cf       MONGOLIAN VOWEL SEPARATOR
    (0x180F, 0x180F),  # Mn       MONGOLIAN FREE VARIATION SELECTOR FOUR
    (0x200B, 0x200F),  # Cf   [5] ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # Cf   [5] LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x2064),  # Cf   [5] WORD JOINER..INVISIBLE PLUS
    (0x2065, 0x2065),  # Cn       <reserved-2065>
    (0x2066, 0x206F),  # Cf  [10] LEFT-TO-RIGHT ISOLATE..NOMINAL DIGIT SHAPES
    (0x3164, 0x3164),  # Lo       HANGUL FILLER
    (0xFE00, 0xFE0F),  # Mn  [16] VARIATION SELECTOR-1..VARIATION SELECTOR-16
    (0xFEFF, 0xFEFF),  # Cf       ZERO WIDTH NO-BREAK SPACE
    (0xFFA0, 0xFFA0),  # Lo       HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # Cn   [9] <reserved-FFF0>..<reserved-FFF8>
    (0x1BCA0, 0x1BCA3),  # Cf   [4] SHORTHAND FORMAT LETTER OVERLAP..SHORTHAND FORMAT UP STEP
    (0x1D173, 0x1D17A),  # Cf   [8] MUSICAL SYMBOL BEGIN BEAM..MUSICAL SYMBOL END PHRASE
    (0xE0000, 0xE0000),  # Cn       <reserved-E0000>
    (0xE0001, 0xE0001),  # Cf       LANGUAGE TAG
    (0xE0002, 0xE001F),  # Cn  [30] <reserved-E0002>..<reserved-E001F>
    (0xE0020, 0xE007F),  # Cf  [96] TAG SPACE..CANCEL TAG
    (0xE0080, 0xE00FF),  # Cn [128] <reserved-E0080>..<reserved-E00FF>
    (0xE0100, 0xE01EF),  # Mn [240] VARIATION SELECTOR-17..VARIATION SELECTOR-256
    (0xE01F0, 0xE0FFF),  # Cn [3600] <reserved-E01F0>..<reserved-E0FFF>
)

#: Blocks whose letters UTS #39 gives Identifier_Type Technical/Obsolete/Uncommon_Use
#: (phonetic notation, letter-like symbols): look-alikes of ordinary letters.
_TECHNICAL_BLOCKS = (
    (0x0250, 0x02AF),  # IPA Extensions (script a and g, small capital I...)
    (0x02B0, 0x02FF),  # Spacing Modifier Letters (apostrophe- and colon-like letters)
    (0x1D00, 0x1DBF),  # Phonetic Extensions and Supplement (small capitals A, M, N...)
    (0x1DC0, 0x1DFF),  # Combining Diacritical Marks Supplement
    (0x2100, 0x214F),  # Letterlike Symbols
    (0xA720, 0xA7FF),  # Latin Extended-D (phonetic and medievalist letters)
    (0xAB30, 0xAB6F),  # Latin Extended-E
)
#: First words of the Unicode names of scripts UTS #31 excludes from identifiers or
#: limits to specialised use (historic scripts, notations).
_EXCLUDED_SCRIPT_WORDS = frozenset({
    "OGHAM", "RUNIC", "GOTHIC", "OLD", "LINEAR", "CUNEIFORM", "EGYPTIAN", "COPTIC",
    "GLAGOLITIC", "PHOENICIAN", "AVESTAN", "CARIAN", "LYCIAN", "LYDIAN", "UGARITIC",
    "DESERET", "SHAVIAN", "OSMANYA", "CYPRIOT", "KHAROSHTHI", "BRAHMI", "MUSICAL",
    "MATHEMATICAL", "BRAILLE", "CHEROKEE", "IMPERIAL", "INSCRIPTIONAL", "MEROITIC",
    "ANATOLIAN", "BAMUM", "DUPLOYAN", "SIGNWRITING", "TANGUT", "NUSHU",
})
#: Modifier letters that are letters of their script (kana length mark, iteration marks).
_SCRIPT_MODIFIER_LETTERS = frozenset("\u3005\u3031\u3032\u3033\u3034\u3035\u309d\u309e\u30fc\u30fd\u30fe\uff70")

#: Letters that look like a Latin letter, mapped to it (after NFKD and case folding):
#: Greek and Cyrillic look-alikes, Armenian ones, Latin small capitals and IPA letters.
#: A subset of UTS #39's confusables.txt: the letters that pass for [a-z]; digits and
#: ASCII pairs such as l/1/I and rn/m are left alone (ordinary names would collide).
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "\u0430": "a", "\u0432": "b", "\u0433": "r", "\u0435": "e", "\u0456": "i", "\u0458": "j",
    "\u043a": "k", "\u043c": "m", "\u043d": "h", "\u043e": "o", "\u0440": "p", "\u0441": "c",
    "\u0442": "t", "\u0443": "y", "\u0445": "x", "\u0455": "s", "\u04bb": "h", "\u0501": "d",
    "\u051b": "q", "\u051d": "w", "\u04cf": "l", "\u04af": "y", "\u0438": "n", "\u043f": "n",
    "\u0491": "r", "\u0457": "i",
    # Greek
    "\u03b1": "a", "\u03b2": "b", "\u03b5": "e", "\u03b6": "z", "\u03b7": "n", "\u03b9": "i",
    "\u03ba": "k", "\u03bc": "m", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p", "\u03c4": "t",
    "\u03c5": "u", "\u03c7": "x", "\u03f2": "c", "\u03c9": "w", "\u03b3": "y", "\u03c3": "o",
    "\u03c2": "c",
    # Armenian
    "\u0585": "o", "\u057d": "u", "\u0570": "h", "\u0578": "n", "\u0566": "q", "\u0581": "g",
    "\u0561": "w", "\u057c": "n",
    # Latin small capitals, IPA and other letters that pass for [a-z]
    "\u1d00": "a", "\u0299": "b", "\u1d04": "c", "\u1d05": "d", "\u1d07": "e", "\ua730": "f",
    "\u0262": "g", "\u029c": "h", "\u026a": "i", "\u1d0a": "j", "\u1d0b": "k", "\u029f": "l",
    "\u1d0d": "m", "\u0274": "n", "\u1d0f": "o", "\u1d18": "p", "\u0280": "r", "\ua731": "s",
    "\u1d1b": "t", "\u1d1c": "u", "\u1d20": "v", "\u1d21": "w", "\u028f": "y", "\u1d22": "z",
    "\u0131": "i", "\u0237": "j", "\u0251": "a", "\u0261": "g", "\u0269": "i", "\u0138": "k",
    "\u01c0": "l",
})
#: Marks a skeleton drops after i and j: their dot is already drawn (``mai\u0307n``).
_DOT_MARKS = frozenset("\u0307\u0358")


def parse_table_name(name: str) -> tuple[str, str]:
    """Split ``db.table`` into its parts; a ``$branch_X`` suffix is not allowed here."""
    if not isinstance(name, str) or name.count(".") != 1:
        raise InvalidArgumentError(
            f"table name {_shown(name) if isinstance(name, str) else repr(name)} must be 'database.table' "
            "(exactly one dot), e.g. 'sales.orders'"
        )
    database, table = name.split(".")
    if not database or not table:
        raise InvalidArgumentError(
            f"table name {_shown(name)} must be 'database.table' with both parts non-empty"
        )
    if "$" in table:
        raise InvalidArgumentError(
            f"table name {_shown(name)} carries a system suffix; pass the branch separately "
            "(option 'branch') instead of 'table$branch_NAME'"
        )
    return database, table


def check_table_identifier(database: str, table: str) -> tuple[str, str]:
    """``(database, table)`` if each can name a folder of the warehouse, else InvalidArgumentError.

    For names that come from outside (a URL of the UI): a part longer than
    ``MAX_IDENTIFIER_BYTES`` in UTF-8, or holding a path separator, control or invisible
    character, cannot be a table of the warehouse, and is refused before the catalog is
    asked (which would fail on the file system with an error naming the path).
    """
    for kind, part in (("database", database), ("table", table)):
        if not isinstance(part, str) or not part.strip():
            raise InvalidArgumentError(f"{kind} name must not be blank")
        size = len(part.encode("utf-8", "surrogatepass"))
        if size > MAX_IDENTIFIER_BYTES:
            raise InvalidArgumentError(
                f"{kind} name {_shown(part)} is longer than {MAX_IDENTIFIER_BYTES} bytes in UTF-8 "
                f"({size}); no table of the warehouse has such a name"
            )
        bad = next((c for c in part if unicodedata.category(c) in _FORBIDDEN_CATEGORIES
                    or is_default_ignorable(c)), None)
        if bad is not None or _BAD_CHARS.search(part) or part in (".", ".."):
            shown = f"U+{ord(bad):04X}" if bad is not None else "a path separator or '..'"
            raise InvalidArgumentError(f"{kind} name {_shown(part)} holds {shown}; no table of the warehouse has such a name")
    return database, table


def _shown(name: str) -> str:
    """The name for an error message: escaped (invisible characters visible), and short."""
    text = name if len(name) <= 60 else f"{name[:40]}...({len(name)} characters)"
    return ascii(text)


def _char(char: str) -> str:
    return f"U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')})"


def is_default_ignorable(char: str) -> bool:
    """True for a code point of Unicode's ``Default_Ignorable_Code_Point`` set."""
    code = ord(char)
    return any(low <= code <= high for low, high in _DEFAULT_IGNORABLE)


def _check_characters(kind: str, name: str) -> None:
    """Refuse control/bidi/invisible characters and over-long names (before anything else)."""
    for char in name:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES or is_default_ignorable(char):
            raise InvalidNameError(
                f"{kind} name {_shown(name)} holds the control or invisible character "
                f"{_char(char)}; use visible characters only"
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


def check_profile(profile: Any) -> str:
    """``ascii`` or ``unicode`` (any case); anything else is refused (never a default)."""
    value = profile.strip().lower() if isinstance(profile, str) else profile
    if value not in NAME_PROFILES:
        raise InvalidArgumentError(
            f"name profile {profile!r} is not one of {', '.join(NAME_PROFILES)} "
            f"(table option {NAME_PROFILE_OPTION!r}); fix the value or remove it for 'ascii'"
        )
    return str(value)


def name_profile(table: Any) -> str:
    """The name profile of a pypaimon table: its ``NAME_PROFILE_OPTION``, ``ascii`` when unset.

    A value that is not a profile is an ``InvalidArgumentError`` (fail closed: the
    table's names are not checked by a rule nobody chose).
    """
    schema = getattr(table, "table_schema", None)
    options = getattr(schema, "options", None) or {}
    raw = options.get(NAME_PROFILE_OPTION) if isinstance(options, dict) else None
    return ASCII_PROFILE if raw is None else check_profile(raw)


def _ascii_problem(name: str) -> str | None:
    bad = next((c for c in name if not _ASCII_NAME_CHAR.fullmatch(c)), None)
    if bad is None:
        return None
    return (f"holds {_char(bad)}, which the default name profile does not allow: use A-Z, a-z, "
            f"0-9, '_', '.' and '-' (or set the table option {NAME_PROFILE_OPTION!r} to "
            f"'{UNICODE_PROFILE}' for letters of other scripts)")


def _unicode_problem(name: str) -> str | None:
    """What puts ``name`` outside the Unicode profile (None: inside).

    UTS #39's Identifier_Status=Allowed, approximated with what ``unicodedata`` knows:
    letters (``L*``), decimal digits (``Nd``) and combining marks (``Mn``, ``Mc``) plus
    ``_ . -``; no symbols, punctuation or spaces; no letters of the technical blocks
    (``_TECHNICAL_BLOCKS``) or excluded scripts (``_EXCLUDED_SCRIPT_WORDS``, by the
    first word of the Unicode name, which Python's unicodedata has instead of the
    Script property); modifier letters only where they are letters of their script
    (kana, iteration marks). UTS #39's mark checks (5.4): a combining mark must follow a
    letter, not a Latin, Greek, Cyrillic or Armenian one (they are written precomposed,
    which NFKC already requires: a mark left over stacks an accent that may not show),
    and not the mark before it.
    """
    prev = ""
    for char in name:
        category = unicodedata.category(char)
        code = ord(char)
        word = unicodedata.name(char, "").split(" ", 1)[0]
        if char in "_.-":
            pass
        elif category[0] == "M":
            base = _script(prev)
            if category == "Me" or not prev or (not prev.isalpha() and unicodedata.category(prev)[0] != "M"):
                return f"holds the combining mark {_char(char)} that does not follow a letter"
            if base in _CONFUSABLE_SCRIPTS or (unicodedata.category(prev)[0] == "M" and char == prev):
                return (f"holds the combining mark {_char(char)} on {_char(prev)}: write the letter "
                        "precomposed, or without the mark")
        elif category == "Lm" and char not in _SCRIPT_MODIFIER_LETTERS:
            return f"holds the modifier letter {_char(char)}, which names do not allow"
        elif category[0] != "L" and category != "Nd":
            return f"holds {_char(char)}, which is not a letter, digit, mark, '_', '.' or '-'"
        if any(low <= code <= high for low, high in _TECHNICAL_BLOCKS) or word in _EXCLUDED_SCRIPT_WORDS:
            return f"holds {_char(char)}, a technical or historic character that names do not allow"
        prev = char
    return None


def _check_profile(kind: str, name: str, profile: str) -> None:
    problem = _ascii_problem(name) if check_profile(profile) == ASCII_PROFILE else _unicode_problem(name)
    if problem is not None:
        raise InvalidNameError(f"{kind} name {_shown(name)} {problem}")


def skeleton(name: str) -> str:
    """What ``name`` looks like: two names with one skeleton are taken for each other.

    NFKD, default-ignorable code points removed, case folded, the ``_CONFUSABLES``
    look-alikes mapped to the Latin letter they pass for, a dot mark on i/j dropped,
    NFC. In the spirit of UTS #39's skeleton (which does not fold case), for the
    letters this table covers: Latin, Greek, Cyrillic and Armenian look-alikes of
    ``a-z``; other scripts compare by case folding and NFKC only.
    """
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not is_default_ignorable(c))
    text = unicodedata.normalize("NFKD", text.casefold()).translate(_CONFUSABLES)
    out: list[str] = []
    for char in text:
        if char in _DOT_MARKS and out and out[-1] in "ij":
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


def looks_like_main(name: str) -> bool:
    """True when ``name`` reads as ``main`` (``skeleton``): ``MAIN``, ``ｍａｉｎ``, ``mаin``..."""
    return skeleton(name) == MAIN_BRANCH


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
    if name.startswith("-"):
        raise InvalidNameError(
            f"{kind} name {_shown(name)} must not start with '-' (it would read as a flag on a command line)"
        )
    return name


def validate_branch_name(name: str, profile: str = ASCII_PROFILE) -> str:
    """Raise ``InvalidNameError`` unless ``name`` can be a branch's name under ``profile``.

    ``profile``: ``ascii`` (the default) or ``unicode``; operations on a table pass
    ``name_profile(table)``.
    """
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
    _check_profile("branch", name, profile)
    return name


def validate_tag_name(name: str, profile: str = ASCII_PROFILE) -> str:
    """Raise ``InvalidNameError`` unless ``name`` can be a tag's name under ``profile``."""
    _validate_component("tag", name)
    _check_unambiguous("tag", name)
    if name.isdigit():
        raise InvalidNameError(
            f"tag name {name!r} must not be all digits (it would read as a snapshot id)"
        )
    _check_profile("tag", name, profile)
    return name


def refuse_lookalike(kind: str, name: str, existing: Iterable[str]) -> None:
    """Refuse a new ``kind`` (branch or tag) ``name`` that looks like an existing one.

    ``existing``: the names of that kind already there (the table's branches for a
    branch, the tags of that branch for a tag). The same name is not a look-alike (the
    operation's own "already exists" answers it).
    """
    mine = skeleton(name)
    for other in existing:
        if other != name and skeleton(other) == mine:
            raise InvalidNameError(
                f"{kind} name {_shown(name)} looks like the existing {kind} {_shown(other)} "
                "(same letters after case folding and look-alike mapping); choose a name "
                "that cannot be mistaken for it"
            )


def is_main(branch: str | None) -> bool:
    return branch is None or branch == "" or branch == MAIN_BRANCH
