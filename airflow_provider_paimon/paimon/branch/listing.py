"""List branches with their creation time and latest snapshot."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .. import fileops
from ..snapshots import TableLayout, branch_names, latest_snapshot_id, schema_ids
from ._common import fallback_users


@dataclass(frozen=True)
class BranchInfo:
    """One branch. ``create_time_millis`` is the branch folder's modification time, as
    Paimon's ``$branches`` system table reports it (on object stores, where folders
    have no time, that of the branch's first schema file)."""

    name: str
    create_time_millis: int | None
    latest_snapshot_id: int | None
    fallback_of: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["fallback_of"] = list(self.fallback_of)
        return out


def list_branches(table: Any) -> list[BranchInfo]:
    """Branches of ``table`` (main not included), sorted by name."""
    layout = TableLayout.of(table)
    return [
        BranchInfo(
            name=name,
            create_time_millis=_create_time(layout, name),
            latest_snapshot_id=latest_snapshot_id(layout, name),
            fallback_of=tuple(fallback_users(layout, name)),
        )
        for name in branch_names(layout)
    ]


def _create_time(layout: TableLayout, name: str) -> int | None:
    found = fileops.mtime_millis(layout.file_io, layout.root(name))
    if found is not None:
        return found
    ids = schema_ids(layout, name)  # object stores: a "folder" is a key prefix, no mtime
    return fileops.mtime_millis(layout.file_io, layout.schema_path(name, ids[0])) if ids else None
