"""The live data files of a table (or branch) at a snapshot, straight from its manifests.

Planning and the commit both need the exact manifest entries (partition, bucket,
total buckets, file meta with stats), not read splits, so this reads the manifest
lists with pypaimon's own readers and resolves each file's path.
"""

from __future__ import annotations

from typing import Any

from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.read.scanner.file_scanner import FileScanner
from pypaimon.utils.file_store_path_factory import canonical_data_file_path


def latest_snapshot(table: Any) -> Any:
    """The table's latest snapshot (``None`` for an empty table)."""
    return table.snapshot_manager().get_latest_snapshot()


def live_entries(table: Any, snapshot: Any) -> list[Any]:
    """ADD entries alive in ``snapshot`` (DELETEs already merged away), paths resolved."""
    if snapshot is None:
        return []
    manifests = ManifestListManager(table).read_all(snapshot)
    entries = (
        FileScanner(table, lambda: ([], None))
        .with_all_buckets()
        .read_manifest_entries(manifests, keep_stats=True)
    )
    for entry in entries:
        resolve_path(table, tuple(entry.partition.values), entry.bucket, entry.file)
    return entries


def resolve_path(table: Any, partition: tuple, bucket: int, file: Any) -> None:
    """Set ``file.file_path`` (manifests do not store it) so readers can open the file."""
    if not file.file_path and not file.external_path:
        file.file_path = canonical_data_file_path(table, tuple(partition), bucket, file.file_name)


def partition_dict(table: Any, partition: tuple) -> dict[str, Any]:
    """``("2024-01-01", 3)`` -> ``{"dt": "2024-01-01", "hr": 3}`` in partition-key order."""
    return dict(zip(table.partition_keys, partition, strict=True))


def table_name(table: Any) -> str:
    """``db.t`` (``db.t$branch_b`` on a branch) for messages."""
    ident = getattr(table, "identifier", None)
    getter = getattr(ident, "get_full_name", None)
    return str(getter()) if getter else str(ident)
