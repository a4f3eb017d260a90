"""Where a branch's snapshots, schemas and tags live, and which snapshot is latest.

Everything here reads Paimon's on-disk layout directly (``snapshot/snapshot-N``,
``snapshot/LATEST``, ``snapshot/EARLIEST``, ``schema/schema-N``, ``tag/tag-NAME``, the
same under ``branch/branch-NAME/`` for a branch) and treats the JSON documents as
plain dictionaries, so that copying or rewriting one keeps every field, including
ones this pypaimon version does not know.

"Latest" is resolved exactly as Paimon (Java ``SnapshotManager.findLatest``) and
pypaimon do: trust the ``LATEST`` hint when ``snapshot-(hint+1)`` does not exist,
otherwise take the largest id in the listing. The branch operations depend on that
rule: files written behind a gap, or below a valid hint, are invisible to readers of
"latest" until one atomic step makes them visible.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from . import fileops
from .errors import ConcurrentModificationError, InvalidArgumentError
from .names import is_main

SNAPSHOT_RE = re.compile(r"^snapshot-(\d+)$")
SCHEMA_RE = re.compile(r"^schema-(\d+)$")
TAG_PREFIX = "tag-"
BRANCH_PREFIX = "branch-"


@dataclass(frozen=True)
class TableLayout:
    """Paths of one table's metadata; ``branch=None`` or ``"main"`` is main."""

    file_io: Any
    table_path: str

    @classmethod
    def of(cls, table: Any) -> TableLayout:
        """Layout of a pypaimon ``FileStoreTable`` (any branch of it: the root is shared).

        Refuses tables whose catalog manages versions itself (REST catalog): changing
        their files behind the server's back would desynchronise it.
        """
        env = getattr(table, "catalog_environment", None)
        if getattr(env, "supports_version_management", False) and getattr(env, "catalog_loader", None):
            raise InvalidArgumentError(
                "this table's catalog manages branches and tags itself (REST catalog); "
                "use the catalog's own branch API instead of file operations"
            )
        path = str(table.table_path).rstrip("/")
        marker = "/branch/" + BRANCH_PREFIX
        if marker in path:
            path = path.split(marker)[0]
        return cls(table.file_io, path)

    def branch_dir(self) -> str:
        return f"{self.table_path}/branch"

    def root(self, branch: str | None = None) -> str:
        if is_main(branch):
            return self.table_path
        return f"{self.table_path}/branch/{BRANCH_PREFIX}{branch}"

    def snapshot_dir(self, branch: str | None = None) -> str:
        return f"{self.root(branch)}/snapshot"

    def schema_dir(self, branch: str | None = None) -> str:
        return f"{self.root(branch)}/schema"

    def tag_dir(self, branch: str | None = None) -> str:
        return f"{self.root(branch)}/tag"

    def snapshot_path(self, branch: str | None, snapshot_id: int) -> str:
        return f"{self.snapshot_dir(branch)}/snapshot-{snapshot_id}"

    def schema_path(self, branch: str | None, schema_id: int) -> str:
        return f"{self.schema_dir(branch)}/schema-{schema_id}"

    def tag_path(self, branch: str | None, tag: str) -> str:
        return f"{self.tag_dir(branch)}/{TAG_PREFIX}{tag}"

    def hint_path(self, branch: str | None, which: str) -> str:
        return f"{self.snapshot_dir(branch)}/{which}"

    def branch_exists(self, branch: str) -> bool:
        return fileops.exists(self.file_io, self.root(branch))


@dataclass(frozen=True)
class SnapshotInfo:
    """The fields of a snapshot that listings show."""

    id: int
    schema_id: int
    commit_kind: str
    time_millis: int
    total_record_count: int | None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SnapshotInfo:
        return cls(
            id=int(doc["id"]),
            schema_id=int(doc["schemaId"]),
            commit_kind=str(doc.get("commitKind")),
            time_millis=int(doc.get("timeMillis", 0)),
            total_record_count=doc.get("totalRecordCount"),
        )


def _ids(layout: TableLayout, directory: str, pattern: re.Pattern[str]) -> list[int]:
    out = []
    for name in fileops.list_names(layout.file_io, directory):
        match = pattern.match(name)
        if match:
            out.append(int(match.group(1)))
    return sorted(out)


def snapshot_ids(layout: TableLayout, branch: str | None = None) -> list[int]:
    """All snapshot ids present on ``branch``, ascending."""
    return _ids(layout, layout.snapshot_dir(branch), SNAPSHOT_RE)


def schema_ids(layout: TableLayout, branch: str | None = None) -> list[int]:
    """All schema ids present on ``branch``, ascending."""
    return _ids(layout, layout.schema_dir(branch), SCHEMA_RE)


def tag_names(layout: TableLayout, branch: str | None = None) -> list[str]:
    """Tag names on ``branch``, sorted."""
    names = fileops.list_names(layout.file_io, layout.tag_dir(branch))
    return sorted(n[len(TAG_PREFIX):] for n in names if n.startswith(TAG_PREFIX) and not n.endswith(".tmp"))


def read_hint(layout: TableLayout, branch: str | None, which: str) -> int | None:
    """The ``LATEST`` / ``EARLIEST`` hint as an int, ``None`` if missing or garbled."""
    text = fileops.read_text(layout.file_io, layout.hint_path(branch, which))
    try:
        return int(text.strip()) if text and text.strip() else None
    except ValueError:
        return None


def _exists(layout: TableLayout, branch: str | None, snapshot_id: int) -> bool:
    return fileops.exists(layout.file_io, layout.snapshot_path(branch, snapshot_id))


def latest_snapshot_id(layout: TableLayout, branch: str | None = None) -> int | None:
    """The id readers of ``branch`` take as latest (Paimon's rule, see module doc)."""
    hint = read_hint(layout, branch, "LATEST")
    if hint is not None and hint > 0 and _exists(layout, branch, hint) and not _exists(layout, branch, hint + 1):
        return hint
    ids = snapshot_ids(layout, branch)
    return ids[-1] if ids else None


def table_latest_snapshot_id(table: Any) -> int | None:
    """The latest snapshot id of a pypaimon table (on its branch) as pypaimon's snapshot
    manager sees it, ``None`` when it has none. ``latest_snapshot_id`` is the same answer
    from the files of a ``TableLayout``, for code that holds no pypaimon table."""
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def earliest_snapshot_id(layout: TableLayout, branch: str | None = None) -> int | None:
    """The earliest snapshot id of ``branch`` (hint if valid, else the listing)."""
    hint = read_hint(layout, branch, "EARLIEST")
    if hint is not None and hint > 0 and _exists(layout, branch, hint) and not _exists(layout, branch, hint - 1):
        return hint
    ids = snapshot_ids(layout, branch)
    return ids[0] if ids else None


def _read_json(layout: TableLayout, path: str) -> dict[str, Any] | None:
    text = fileops.read_text(layout.file_io, path)
    return json.loads(text) if text is not None else None


def read_snapshot(layout: TableLayout, branch: str | None, snapshot_id: int) -> dict[str, Any] | None:
    """Snapshot ``snapshot_id`` of ``branch`` as its JSON document, ``None`` if absent."""
    return _read_json(layout, layout.snapshot_path(branch, snapshot_id))


def require_snapshot(layout: TableLayout, branch: str | None, snapshot_id: int | None) -> dict[str, Any]:
    """Snapshot ``snapshot_id`` of ``branch``, which an operation planned on and needs.

    Missing means it was expired (or the branch deleted) while the operation ran: a
    concurrent change, which the operation's journal lets a rerun handle.
    """
    doc = None if snapshot_id is None else read_snapshot(layout, branch, snapshot_id)
    if doc is None:
        where = "main" if branch is None else f"branch {branch!r}"
        raise ConcurrentModificationError(
            f"snapshot {snapshot_id} of {where} is gone (expired or deleted while this "
            "operation ran); rerun it"
        )
    return doc


def read_schema(layout: TableLayout, branch: str | None, schema_id: int) -> dict[str, Any] | None:
    return _read_json(layout, layout.schema_path(branch, schema_id))


def read_tag(layout: TableLayout, branch: str | None, tag: str) -> dict[str, Any] | None:
    return _read_json(layout, layout.tag_path(branch, tag))


def list_snapshots(layout: TableLayout, branch: str | None = None) -> list[SnapshotInfo]:
    """Every snapshot of ``branch`` that can still be read, ascending by id."""
    out = []
    for sid in snapshot_ids(layout, branch):
        doc = read_snapshot(layout, branch, sid)
        if doc is not None:
            out.append(SnapshotInfo.from_json(doc))
    return out


def latest_snapshot(layout: TableLayout, branch: str | None = None) -> dict[str, Any] | None:
    sid = latest_snapshot_id(layout, branch)
    return read_snapshot(layout, branch, sid) if sid is not None else None


def write_hints(layout: TableLayout, branch: str | None = None) -> None:
    """Make ``LATEST`` and ``EARLIEST`` name the largest and smallest snapshot present.

    Paimon treats both as hints; a wrong ``EARLIEST`` makes readers start their search
    at a snapshot that no longer exists, a wrong ``LATEST`` makes them list files.
    """
    ids = snapshot_ids(layout, branch)
    for which, value in (("LATEST", ids[-1] if ids else None), ("EARLIEST", ids[0] if ids else None)):
        path = layout.hint_path(branch, which)
        if value is None:
            fileops.delete_file(layout.file_io, path)
        elif read_hint(layout, branch, which) != value:
            fileops.write_atomic(layout.file_io, path, str(value))


def to_json(doc: dict[str, Any]) -> str:
    """Serialise a metadata document the way Paimon writes them (indented JSON)."""
    return json.dumps(doc, indent=2)


def table_branch(table: Any) -> str | None:
    """The branch a pypaimon table object was loaded on (``None`` for main)."""
    try:
        name = table.current_branch()
    except Exception:  # noqa: BLE001 - objects without branch support are main
        return None
    return None if is_main(name) else name


def branch_names(layout: TableLayout) -> list[str]:
    """Names of the table's branches (main and hidden staging folders excluded)."""
    names = fileops.list_names(layout.file_io, layout.branch_dir())
    return sorted(n[len(BRANCH_PREFIX):] for n in names if n.startswith(BRANCH_PREFIX))
