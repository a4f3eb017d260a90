"""Reading the per-run event log the data source's Python workers append to.

The workers publish each scan and commit as one JSON line (``spark.commit_events``);
the driver reads what was appended since the last read. A line still being written
(no newline yet) waits for the next read; an unreadable line is logged and skipped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from .recorder import IDENTITY_FIELDS, TableAt

log = logging.getLogger(__name__)


class EventLogTail:
    """Follows one append-only JSON-lines file from where the last read stopped."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def read_new(self) -> list[dict[str, Any]]:
        """The complete events appended since the last call (none if the file is gone)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # an incomplete last line waits for the rest
        events = []
        for line in lines:
            if line.strip():
                try:
                    events.append(json.loads(line))
                except ValueError:
                    log.error("unreadable event line: %.200r", line)
        return events


def event_table(raw: Mapping[str, Any]) -> TableAt:
    """The table (and snapshot, with its identity when the event names it) a scan or commit event names."""
    snapshot = raw.get("snapshot_id")
    return TableAt(
        str(raw.get("warehouse", "")),
        str(raw["database"]),
        str(raw["table"]),
        str(raw.get("branch") or "main"),
        None if snapshot is None else int(snapshot),
        str(raw.get("namespace") or ""),
    ).with_identity({k: raw.get(k) for k in IDENTITY_FIELDS})
