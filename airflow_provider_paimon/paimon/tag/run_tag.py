"""The name of a tag that marks one scheduler run (``TagDagRunOperator``).

One run, one tag: the name comes from the DAG and the run, so a retried or cleared
task finds the tag its run already made instead of making a second one. The run's
logical date (UTC, ``20261124T090000Z``; microseconds only when set) reads best and
is unique per DAG; a run without one (Airflow 3 manual or asset-triggered runs) uses
its run id. Whatever the DAG id or run id hold, the name is reduced to
``[A-Za-z0-9._-]`` (so it is a safe file name on every store and passes
``names.validate_tag_name``) and kept under ``names.MAX_NAME_BYTES``, a long name
ending in a short hash of the full one so two long runs never collide.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

from ..names import MAX_NAME_BYTES, validate_tag_name

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")


def sanitise_tag_name(text: str) -> str:
    """``text`` with every run of unsafe characters (and of dots) replaced by ``_``."""
    name = _DOTS.sub("_", _UNSAFE.sub("_", text)).strip("._-")
    if len(name) > MAX_NAME_BYTES:
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]  # a name, not security
        name = f"{name[:MAX_NAME_BYTES - 11].rstrip('._-')}-{digest}"
    return name


def run_tag_name(prefix: str, logical_date: datetime | None, run_id: str | None) -> str:
    """``{prefix}-{logical date}`` or ``{prefix}-{run id}``, sanitised and validated."""
    if logical_date is not None:
        when = logical_date.astimezone(timezone.utc) if logical_date.tzinfo else logical_date
        stamp = when.strftime("%Y%m%dT%H%M%S") + (f".{when.microsecond:06d}" if when.microsecond else "") + "Z"
    elif run_id:
        stamp = run_id
    else:
        raise ValueError("a run tag needs the run's logical date or run id")
    name = sanitise_tag_name(f"{prefix}-{stamp}" if prefix else stamp)
    return validate_tag_name(name)
