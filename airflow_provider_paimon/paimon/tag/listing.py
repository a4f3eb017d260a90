"""List the tags of main or a branch."""

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
            )
        )
    return out
