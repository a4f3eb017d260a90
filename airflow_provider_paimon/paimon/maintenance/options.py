"""Retention settings: arguments first, then the table's options, then Paimon's defaults.

Paimon's options (``CoreOptions``) and defaults:

- ``snapshot.num-retained.min`` = 10: the newest N snapshots never expire;
- ``snapshot.num-retained.max`` = unlimited: at most N snapshots are kept;
- ``snapshot.time-retained`` = 1 h: snapshots younger than this never expire;
- ``snapshot.expire.limit`` = 10: at most N snapshots expire per run.

And one of this provider's own (Paimon Java has no such bound):

- ``snapshot.expire.execution-time-bound`` = 5 s: how long a writer's after-commit
  expiry may plan before it gives up for that commit (table unchanged). A duration
  with a unit (``5 s``, ``500 ms``, ``1 min``), longer than zero: a bare number is
  refused, since Paimon reads one as milliseconds and this provider's operators as
  seconds.

Everything is validated before any file is read for deletion: a negative count, a
minimum above the maximum, an unreadable duration or a cut-off in the future is an
error naming the setting and its source, and nothing changes.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..durations import parse_duration, parse_duration_ms
from ..errors import InvalidArgumentError
from ..option_values import parse_bool

RETAIN_MIN = "snapshot.num-retained.min"
RETAIN_MAX = "snapshot.num-retained.max"
TIME_RETAINED = "snapshot.time-retained"
EXPIRE_LIMIT = "snapshot.expire.limit"
WRITE_ONLY = "write-only"  # Paimon's: true = writers never expire (nor compact)
EXPIRE_TIME_BOUND = "snapshot.expire.execution-time-bound"  # ours, see the module docstring

DEFAULT_RETAIN_MIN = 10
DEFAULT_RETAIN_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE
DEFAULT_TIME_RETAINED_MS = 3_600_000
DEFAULT_EXPIRE_LIMIT = 10
DEFAULT_ORPHAN_AGE_MS = 86_400_000  # Paimon's remove_orphan_files: older than 1 day
DEFAULT_EXPIRE_TIME_BOUND_MS = 5_000

def now_ms() -> int:
    return int(time.time() * 1000)


def cutoff_ms(value: Any, name: str, default_age_ms: int) -> int:
    """A point in time in epoch ms from ``value``.

    ``None``: now minus ``default_age_ms``; an ``int``: epoch milliseconds; a
    ``datetime`` (timezone-aware); a ``timedelta``: that long ago. A time in the future
    is refused: it would treat files being written right now as old.
    """
    now = now_ms()
    if value is None:
        return now - default_age_ms
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a datetime, timedelta or epoch milliseconds, got {value!r}")
    if isinstance(value, timedelta):
        if value.total_seconds() < 0:
            raise InvalidArgumentError(f"{name} as a timedelta means 'that long ago' and must not be negative")
        out = now - int(value.total_seconds() * 1000)
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidArgumentError(f"{name} must be timezone-aware (e.g. datetime(..., tzinfo=timezone.utc))")
        out = int(value.timestamp() * 1000)
    elif isinstance(value, int):
        if value < 0:
            raise InvalidArgumentError(f"{name} must be epoch milliseconds >= 0, got {value}")
        out = value
    else:
        raise InvalidArgumentError(f"{name} must be a datetime, timedelta or epoch milliseconds, got {value!r}")
    if out > now:
        raise InvalidArgumentError(f"{name} lies in the future; give a time in the past")
    return out


@dataclass(frozen=True)
class Retention:
    """Resolved expiry settings and where each came from (for messages and results)."""

    retain_min: int
    retain_max: int
    older_than_ms: int
    max_deletes: int
    sources: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "retain_min": self.retain_min,
            "retain_max": None if self.retain_max == DEFAULT_RETAIN_MAX else self.retain_max,
            "older_than_millis": self.older_than_ms,
            "max_deletes": self.max_deletes,
            "sources": dict(self.sources),
        }


def _count(arg: Any, arg_name: str, options: dict[str, Any], key: str, default: int) -> tuple[int, str]:
    if arg is not None:
        if isinstance(arg, bool) or not isinstance(arg, int):
            raise InvalidArgumentError(f"{arg_name} must be a positive integer, got {arg!r}")
        if arg < 1:
            raise InvalidArgumentError(f"{arg_name} must be >= 1, got {arg}")
        return arg, "argument"
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return default, "default"
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidArgumentError(f"table option {key} must be an integer, got {raw!r}") from None
    if value < 1:
        raise InvalidArgumentError(f"table option {key} must be >= 1, got {value}; fix it with ALTER TABLE")
    return value, "table option"


def resolve_retention(
    options: dict[str, Any],
    *,
    retain_max: Any = None,
    retain_min: Any = None,
    older_than: Any = None,
    max_deletes: Any = None,
) -> Retention:
    """Expiry settings for one branch (``options`` = its latest schema's options)."""
    rmin, smin = _count(retain_min, "retain_min", options, RETAIN_MIN, DEFAULT_RETAIN_MIN)
    rmax, smax = _count(retain_max, "retain_max", options, RETAIN_MAX, DEFAULT_RETAIN_MAX)
    limit, slimit = _count(max_deletes, "max_deletes", options, EXPIRE_LIMIT, DEFAULT_EXPIRE_LIMIT)
    if rmin > rmax:
        raise InvalidArgumentError(
            f"retain_min ({rmin}, from {smin} {RETAIN_MIN}) is larger than retain_max "
            f"({rmax}, from {smax} {RETAIN_MAX}); pass retain_min <= retain_max"
        )
    if older_than is not None:
        older, sold = cutoff_ms(older_than, "older_than", 0), "argument"
    else:
        raw = options.get(TIME_RETAINED)
        if raw is None or str(raw).strip() == "":
            age, sold = DEFAULT_TIME_RETAINED_MS, "default"
        else:
            age, sold = parse_duration_ms(raw, f"table option {TIME_RETAINED}"), "table option"
        older = now_ms() - age
    return Retention(
        retain_min=rmin,
        retain_max=rmax,
        older_than_ms=older,
        max_deletes=limit,
        sources={"retain_min": smin, "retain_max": smax, "older_than": sold, "max_deletes": slimit},
    )


def writer_retention(options: dict[str, Any]) -> Retention | None:
    """What a writer expires after its commit: ``None`` when ``write-only`` is true.

    ``options`` are the branch's table options with the write's own options on top
    (as Paimon's dynamic options). Every value is checked (an unknown ``write-only``
    word, a bad count or duration raises), so a write can call this before it writes
    anything and fail with the table unchanged.
    """
    if parse_bool(options.get(WRITE_ONLY), f"option {WRITE_ONLY!r}", False):
        return None
    settings = resolve_retention(options)
    writer_time_bound_ms(options)
    return settings


def writer_time_bound_ms(options: dict[str, Any]) -> int:
    """How long a writer's after-commit expiry may plan (``snapshot.expire.execution-time-bound``).

    Absent or blank: 5 s. Anything but a duration with a unit that is longer than zero
    raises, naming the option and how to write it.
    """
    raw = options.get(EXPIRE_TIME_BOUND)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DEFAULT_EXPIRE_TIME_BOUND_MS
    name = f"option {EXPIRE_TIME_BOUND!r}"
    if not isinstance(raw, str) or not re.search(r"[A-Za-z]", raw):
        raise InvalidArgumentError(
            f"{name} is {raw!r}; give a duration with a unit, e.g. '5 s' or '500 ms' "
            "(a bare number is ambiguous: Paimon reads milliseconds, this provider's operators seconds)"
        )
    return int(parse_duration(raw, name, allow_zero=False).total_seconds() * 1000)
