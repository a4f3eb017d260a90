"""Durations as users write them: a ``timedelta``, seconds, or Paimon's duration text.

Operators take ages and retentions from DAG params and templates, so one value comes
in several shapes: ``timedelta(hours=1)``, ``3600`` (seconds, also ``"3600"`` as a
non-native template renders it) and Paimon's syntax ``"1 h"``, ``"30 min"``,
``"7 d"`` (``parse_duration_ms``). A bare number means seconds
here (not Paimon's milliseconds): an integer DAG param renders as digits, and an
age of 3600 ms is never what a DAG means. Anything else (negative, blank, a bool, an
unknown unit) is an error naming the setting: a typo never becomes "expire now".
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Any

from .errors import InvalidArgumentError

_NUMBER = re.compile(r"^\s*\d+(\.\d+)?\s*$")
_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_DURATION = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$")


def parse_duration_ms(text: str, key: str) -> int:
    """Paimon's duration syntax (``1 h``, ``30min``, ``500 ms``, a bare number = ms)."""
    match = _DURATION.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or (unit and unit not in _UNITS_MS):
        raise InvalidArgumentError(
            f"{key} {text!r} is not a duration; write e.g. '1 h', '30 min', '10 s' or '500 ms'"
        )
    return int(match.group(1)) * _UNITS_MS[unit or "ms"]


def parse_duration(value: Any, name: str, *, allow_zero: bool = True) -> timedelta:
    """``value`` as a non-negative ``timedelta`` (positive unless ``allow_zero``)."""
    if isinstance(value, bool) or value is None:
        raise InvalidArgumentError(f"{name} must be a duration ('1 h', '30 min', seconds), got {value!r}")
    if isinstance(value, timedelta):
        out = value
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"{name} must be a finite number of seconds, got {value!r}")
        if value < 0:
            raise InvalidArgumentError(f"{name} must not be negative, got {value!r}")
        out = timedelta(seconds=value)
    elif isinstance(value, str):
        if _NUMBER.match(value):
            out = timedelta(seconds=float(value))
        else:
            out = timedelta(milliseconds=parse_duration_ms(value, name))
    else:
        raise InvalidArgumentError(f"{name} must be a duration ('1 h', '30 min', seconds), got {value!r}")
    if out < timedelta(0):
        raise InvalidArgumentError(f"{name} must not be negative, got {value!r}")
    if not allow_zero and out == timedelta(0):
        raise InvalidArgumentError(f"{name} must be longer than zero, got {value!r}")
    return out


def duration_text(value: timedelta) -> str:
    """A short readable form for logs: ``1 h``, ``90 min``, ``45 s``, ``250 ms``."""
    ms = int(value.total_seconds() * 1000)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"
