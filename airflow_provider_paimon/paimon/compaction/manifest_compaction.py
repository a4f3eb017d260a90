"""``compact_manifest``: metadata-only compaction, and folding a compaction's deletes.

Paimon Java's ``compact_manifest`` procedure (``FileStoreCommitImpl.compactManifest``)
rewrites a table's manifest list without touching a data file: the latest snapshot's
base + delta manifests are fully compacted (``manifest.merge-min-count`` and
``manifest.full-compaction-threshold-size`` forced to 1, so every DELETE entry and
the ADD it cancels are dropped and small manifests are merged) and committed as a new
COMPACT snapshot whose base list is the result and whose delta list is empty. Rows,
record counts, the schema, the watermark and the index manifest stay as they are;
readers and streaming consumers (which skip COMPACT snapshots) see no change. When
nothing would change (the set of manifests is the same) nothing is committed, as in
Java.

Why a compaction folds its deletes in a snapshot of its own: a COMPACT commit must
list what it removed in its delta (one DELETE entry per replaced file). Paimon's
expiry deletes a data file when the snapshot that DELETEd it expires, and incremental
readers diff deltas, so the delta cannot be left out; but while it is there every
planner reads those entries (a 50,000-file compaction made planning 1.4x slower).
:func:`fold_deletes` runs ``compact_manifest`` right after a COMPACT commit whose
delta holds at least ``manifest.merge-min-count`` deletes, so the table's latest state
lists only live files; smaller compactions leave their few deletes to the next
commit's merge (as Java does).

Crash safety is the COMPACT commit's: new manifests and lists are invisible until the
snapshot file is created (create-if-absent through the table's snapshot commit); a
process killed before that (fault points ``compact_manifest.after_manifests`` and
``compact_manifest.after_manifest_lists``) leaves unreferenced files in ``manifest/``
and the table as it was; running it again finishes the job. A lost race for the next
snapshot id deletes this attempt's files and retries on the new latest snapshot.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.snapshot.snapshot import Snapshot

from .. import faults
from ..commit_properties import RUN_KEYS
from ..errors import ConcurrentModificationError
from ..manifests import MergeOptions, full_compaction
from .scan import table_name
from .snapshot import compact_snapshot

log = logging.getLogger(__name__)

# Paimon's compactManifest commits with Long.MAX_VALUE as its identifier.
COMMIT_IDENTIFIER = 2**63 - 1


@dataclass
class ManifestCompactionResult:
    """What one ``compact_manifest`` did (the operator pushes ``to_dict()`` to XCom)."""

    snapshot_id: int | None = None  # the new COMPACT snapshot; None: nothing to do
    based_on: int | None = None  # the snapshot it compacted
    manifests_before: int = 0
    manifests_after: int = 0
    entries_before: int = 0  # manifest entries (ADD + DELETE) a planner read before
    entries_after: int = 0
    message: str = ""

    @property
    def committed(self) -> bool:
        return self.snapshot_id is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": "compact_manifest",
            "committed": self.committed,
            "snapshot_id": self.snapshot_id,
            "based_on": self.based_on,
            "manifests_before": self.manifests_before,
            "manifests_after": self.manifests_after,
            "entries_before": self.entries_before,
            "entries_after": self.entries_after,
            "message": self.message,
        }


def _entry_count(metas: list[Any]) -> int:
    return sum(int(m.num_added_files) + int(m.num_deleted_files) for m in metas)


def compact_manifest(
    table: Any,
    *,
    commit_user: str | None = None,
    properties: Mapping[str, str] | None = None,
    options: MergeOptions | None = None,
    max_attempts: int = 10,
) -> ManifestCompactionResult:
    """Fully compact the latest snapshot's manifests into a new COMPACT snapshot.

    ``properties``: the run's ``paimon.commit_properties`` keys for the new snapshot.
    Raises ``ConcurrentModificationError`` when the outcome of the snapshot commit is
    unknown or another writer took the next snapshot id ``max_attempts`` times.
    """
    options = options or MergeOptions.of_table(table)
    commit_user = commit_user or f"compact-manifest-{uuid.uuid4()}"
    lists = ManifestListManager(table)
    snapshots = table.snapshot_manager()
    for attempt in range(max_attempts):
        latest = snapshots.get_latest_snapshot()
        if latest is None:
            return ManifestCompactionResult(message="nothing to compact: the table has no snapshot")
        before = lists.read_all(latest)
        result = ManifestCompactionResult(
            based_on=latest.id, manifests_before=len(before), entries_before=_entry_count(before)
        )
        unique = uuid.uuid4()
        base_list, delta_list = f"manifest-list-{unique}-0", f"manifest-list-{unique}-1"
        written: list[str] = []
        try:
            merged = full_compaction(table, before, options)
            written = list(merged.written)
            if {m.file_name for m in merged.metas} == {m.file_name for m in before}:
                result.manifests_after, result.entries_after = result.manifests_before, result.entries_before
                result.message = (
                    f"nothing to compact: snapshot {latest.id} lists {len(before)} manifest(s) "
                    "with no DELETE entry and no small manifests to merge"
                )
                return result
            faults.check("compact_manifest.after_manifests")
            base_size = lists.write(base_list, merged.metas)
            delta_size = lists.write(delta_list, [])
            faults.check("compact_manifest.after_manifest_lists")
            snapshot = _snapshot(table, latest, base_list, base_size, delta_list, delta_size,
                                 commit_user, properties)
        except BaseException:
            _delete(table, lists, [*written, base_list, delta_list])
            raise
        snapshot_commit = table.new_snapshot_commit()
        try:
            with snapshot_commit:
                committed = snapshot_commit.commit(latest.uuid, snapshot, [])
        except Exception as err:
            raise ConcurrentModificationError(
                f"committing manifest compaction snapshot {snapshot.id} of {table_name(table)} "
                f"failed with an uncertain outcome ({type(err).__name__}: {err}); check the "
                "table's latest snapshot before running again"
            ) from err
        if committed:
            result.snapshot_id = snapshot.id
            result.manifests_after = len(merged.metas)
            result.entries_after = _entry_count(merged.metas)
            result.message = (
                f"compacted the manifests of snapshot {latest.id}: {result.manifests_before} -> "
                f"{result.manifests_after} manifest(s), {result.entries_before} -> "
                f"{result.entries_after} entries (snapshot {snapshot.id})"
            )
            log.info("%s: %s", table_name(table), result.message)
            return result
        log.info("snapshot %d of %s was taken by another commit; retrying manifest compaction (%d)",
                 snapshot.id, table_name(table), attempt + 1)
        _delete(table, lists, [*written, base_list, delta_list])
    raise ConcurrentModificationError(
        f"could not compact the manifests of {table_name(table)}: another writer took the "
        f"next snapshot id {max_attempts} times in a row; run it again"
    )


def preview(table: Any, options: MergeOptions | None = None) -> ManifestCompactionResult:
    """What ``compact_manifest`` would do (a dry run: reads the manifest list only).

    ``entries_after`` is the live file count (every DELETE cancels one ADD);
    ``manifests_after`` the number of target-size manifests those entries need at the
    current average entry size.
    """
    options = options or MergeOptions.of_table(table)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None:
        return ManifestCompactionResult(message="dry run: the table has no snapshot")
    metas = ManifestListManager(table).read_all(latest)
    entries = _entry_count(metas)
    live = sum(int(m.num_added_files) - int(m.num_deleted_files) for m in metas)
    size = sum(int(m.file_size) for m in metas)
    after = max(1, -(-int(size * live / max(entries, 1)) // options.target_file_size)) if live else 0
    result = ManifestCompactionResult(
        based_on=latest.id, manifests_before=len(metas), entries_before=entries,
        manifests_after=min(after, len(metas)), entries_after=live,
    )
    result.message = (
        f"dry run: snapshot {latest.id} lists {len(metas)} manifest(s) with {entries} entries; "
        f"compact_manifest would leave about {result.manifests_after} holding {live} live file(s)"
    )
    return result


def fold_deletes(
    table: Any,
    *,
    commit_user: str | None = None,
    properties: Mapping[str, str] | None = None,
    options: MergeOptions | None = None,
) -> ManifestCompactionResult | None:
    """``compact_manifest`` when the latest snapshot's delta holds many DELETE entries.

    "Many" is ``manifest.merge-min-count`` (30): fewer are left to the next commit's
    merge. Returns None when there is nothing worth folding.
    """
    options = options or MergeOptions.of_table(table)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None:
        return None
    deletes = sum(int(m.num_deleted_files) for m in ManifestListManager(table).read_delta(latest))
    if deletes < options.merge_min_count:
        return None
    return compact_manifest(table, commit_user=commit_user, properties=properties, options=options)


def _snapshot(table: Any, latest: Any, base_list: str, base_size: int, delta_list: str,
              delta_size: int, commit_user: str, properties: Mapping[str, str] | None) -> Snapshot:
    # Java copies the latest snapshot's properties; ours name the run behind a snapshot
    # (and a compaction attempt), so this snapshot carries only its own run's keys.
    props = {k: v for k, v in dict(properties or {}).items() if k in RUN_KEYS}
    return compact_snapshot(latest, base_list, base_size, delta_list, delta_size, commit_user,
                            COMMIT_IDENTIFIER, props or None, schema_id=latest.schema_id)


def _delete(table: Any, lists: ManifestListManager, names: list[str]) -> None:
    for name in names:
        table.file_io.delete_quietly(f"{lists.manifest_path}/{name}")
