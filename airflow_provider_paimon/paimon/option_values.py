"""The one parser for booleans and integers given as text.

Data source options, Paimon table options, Spark conf keys, operator arguments and
environment variables all arrive as strings (templated operator arguments too), so they
all go through ``parse_bool`` / ``parse_int`` here: the same words are accepted
everywhere and the same mistakes are refused with the same message.

Flags fail closed: a value that is not one of the accepted words (``"ture"``, ``"y"``)
raises ``InvalidArgumentError`` naming the setting, the bad value and the accepted
words; it never falls back to a default. Only an absent or blank value means "not
given" (the caller's default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidArgumentError

__all__ = [
    "ACCEPTED_BOOLEANS",
    "FALSE_WORDS",
    "TRUE_WORDS",
    "bool_option",
    "int_option",
    "parse_bool",
    "parse_int",
]

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")
#: For messages: ``true/false, 1/0, yes/no, on/off``.
ACCEPTED_BOOLEANS = ", ".join(f"{t}/{f}" for t, f in zip(TRUE_WORDS, FALSE_WORDS, strict=True))


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def parse_bool(value: Any, name: str, default: bool | None = None) -> bool:
    """``value`` as a boolean; ``default`` when it is absent or blank.

    :param value: a ``bool``, or text (case and surrounding blanks ignored).
    :param name: how the user knows the setting (``option 'create-table'``,
        ``spark.paimon.lineage.enabled``, ``dry_run``, ``$OPENLINEAGE_DISABLED``).
    :param default: the value when not given; ``None`` makes the setting required.
    :raises InvalidArgumentError: any other value, naming ``name`` and the accepted words.
    """
    if isinstance(value, bool):
        return value
    if _blank(value):
        if default is None:
            raise InvalidArgumentError(f"{name} is required: give one of {ACCEPTED_BOOLEANS}")
        return default
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise InvalidArgumentError(
        f"{name} must be a boolean ({ACCEPTED_BOOLEANS}), got {value!r}"
    )


def parse_int(
    value: Any, name: str, minimum: int | None = None, default: int | None = None
) -> int | None:
    """``value`` as an integer >= ``minimum``; ``default`` when it is absent or blank.

    Accepts ints and decimal text (``" 42 "``); refuses booleans, floats and anything
    else with ``InvalidArgumentError`` naming ``name`` and the bad value.
    """
    if _blank(value):
        return default
    if isinstance(value, (bool, float)):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise InvalidArgumentError(f"{name} must be an integer >= {minimum}, got {number}")
    return number


def bool_option(options: Mapping[str, Any], key: str, default: bool) -> bool:
    """``options[key]`` as a boolean; ``default`` when absent or blank."""
    return parse_bool(options.get(key), f"option {key!r}", default)


def int_option(options: Mapping[str, Any], key: str, minimum: int = 0) -> int | None:
    """``options[key]`` as an integer >= ``minimum``; ``None`` when absent or blank."""
    return parse_int(options.get(key), f"option {key!r}", minimum)
