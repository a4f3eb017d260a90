"""Paimon stream offsets as a streaming query's progress reports them.

A source's ``endOffset`` is JSON ``{"nextSnapshot": N, ...}``: snapshot N-1 consumed,
or ``dataSnapshot`` when N-1 and the ones before it are COMPACT. Offsets written since
offsets carried their table also name ``table``, ``branch`` and ``warehouse``.
Anything else (another source's offset, unreadable text) reads as None.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .recorder import TableAt


def offset_json(end_offset: Any) -> Mapping[str, Any] | None:
    """A Paimon stream offset (JSON text or mapping) as a mapping, else None."""
    if end_offset is None:
        return None
    try:
        value = json.loads(end_offset) if isinstance(end_offset, str) else end_offset
    except ValueError:
        return None
    return value if isinstance(value, Mapping) and "nextSnapshot" in value else None


def next_snapshot(end_offset: Any) -> int | None:
    """``nextSnapshot`` of a Paimon stream offset, else None (not a Paimon source)."""
    value = offset_json(end_offset)
    if value is not None:
        try:
            return int(value["nextSnapshot"])
        except (TypeError, ValueError):
            return None
    return None


def data_snapshot(end_offset: Any) -> int | None:
    """``dataSnapshot`` of a Paimon stream offset: the snapshot read when the last ones were COMPACT.

    A COMPACT snapshot changes no data and is never recorded as a sink snapshot, so the
    source snapshot recorded is the one whose rows the batch read.
    """
    value = offset_json(end_offset)
    raw = None if value is None else value.get("dataSnapshot")
    try:
        return None if raw is None else int(raw)
    except (TypeError, ValueError):
        return None


def offset_commit(end_offset: Any) -> dict[str, Any]:
    """The identity of the snapshot a Paimon stream offset has read (``lineageCommit``), as
    ``TableAt`` fields; ``{}`` for offsets written before offsets carried it."""
    value = offset_json(end_offset)
    commit = None if value is None else value.get("lineageCommit")
    if not isinstance(commit, Mapping):
        return {}
    return {"commit_user": commit.get("commitUser"), "commit_identifier": commit.get("commitIdentifier"),
            "commit_time": commit.get("timeMillis")}


def offset_table(end_offset: Any) -> TableAt | None:
    """The table a Paimon stream offset names (``table``, ``branch``, ``warehouse``), if any."""
    value = offset_json(end_offset)
    name = None if value is None else value.get("table")
    if value is None or not isinstance(name, str) or name.count(".") != 1:
        return None  # an offset written before offsets carried their table
    database, table = name.split(".")
    return TableAt(str(value.get("warehouse") or ""), database, table, str(value.get("branch") or "main"))
