"""List the tags of main or a branch (with their retention, when they have one)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..snapshots import TableLayout, read_tag, tag_names
from ._common import resolve_branch


@dataclass(frozen=True)
class TagInfo:
    name: str
    snapshot_id: int
    schema_id: int
    commit_time_millis: int
    record_count: int | None
    #: ``tagCreateTime`` as ISO local time, and ``tagTimeRetained`` in seconds (``None``: never expires)
    created_at: str | None = None
    time_retained_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def list_tags(table: Any, *, branch: str | None = None) -> list[TagInfo]:
    """Tags of ``branch`` (default main), sorted by name."""
    layout = TableLayout.of(table)
    br = resolve_branch(layout, branch, table)
    out = []
    for name in tag_names(layout, br):
        doc = read_tag(layout, br, name)
        if doc is None:
            continue
        out.append(
            TagInfo(
                name=name,
                snapshot_id=int(doc["id"]),
                schema_id=int(doc["schemaId"]),
                commit_time_millis=int(doc.get("timeMillis", 0)),
                record_count=doc.get("totalRecordCount"),
                **_retention(doc),
            )
        )
    return out


def _retention(doc: dict[str, Any]) -> dict[str, Any]:
    created, retained = doc.get("tagCreateTime"), doc.get("tagTimeRetained")
    if created is None or retained is None:
        return {}
    from pypaimon.common.time_utils import json_array_to_local_datetime

    return {"created_at": json_array_to_local_datetime(created).isoformat(), "time_retained_seconds": float(retained)}
