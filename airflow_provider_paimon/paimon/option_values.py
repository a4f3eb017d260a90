"""Typed reads of string options (Spark options, Paimon table options).

One place for "is this a boolean / a non-negative integer", so the data source and
the streaming planner give the same error for the same mistake.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import InvalidArgumentError

TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")


def bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    """``options[key]`` as a boolean; ``default`` when absent or blank."""
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    value = str(raw).strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise InvalidArgumentError(f"option {key!r} must be 'true' or 'false', got {raw!r}")


def int_option(options: Mapping[str, str], key: str, minimum: int = 0) -> int | None:
    """``options[key]`` as an integer >= ``minimum``; ``None`` when absent or blank."""
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise InvalidArgumentError(f"option {key!r} must be >= {minimum}, got {value}")
    return value
