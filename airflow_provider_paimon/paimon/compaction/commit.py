"""Commit a compaction as one Paimon COMPACT snapshot.

pypaimon refuses compact increments, so this writes the snapshot itself, with
pypaimon's manifest, manifest-list and snapshot-commit writers, in Paimon's layout:

- one delta manifest with a DELETE entry for every replaced file and an ADD entry for
  every new one (Paimon Java's ``FileKind``), the new files at level 0 with
  ``file_source`` COMPACT as Java's append compaction writes them;
- a base manifest list holding the merged manifests of the snapshot the commit is
  based on (``paimon.manifests.merge_manifests``: its live ADD entries only, as Paimon
  Java's manifest full compaction writes them), so planners read a few manifests
  instead of one per past commit;
- a snapshot with ``commitKind`` COMPACT and an unchanged total record count;
- when the changes carry changelog files (a primary-key table's full-compaction
  changelog), a changelog manifest list naming them, as Paimon Java's compaction
  commit writes it.

The commit is based on the latest snapshot *at commit time*, never the planning one,
so appends committed while the rewrite ran are kept. Before writing anything it
checks that every file to remove is still alive in that snapshot; if another commit
removed one (an overwrite, a concurrent compaction) it raises
``CompactionConflictError`` and nothing has been written. If another writer takes the
snapshot id first (the atomic rename fails), the temporary manifests are deleted and
the commit is retried on the new latest snapshot.

Crash safety: nothing is visible until the snapshot file is renamed into place; a
process killed after writing manifests or manifest lists leaves unreferenced files in
``manifest/`` that no snapshot names (orphans, as a failed Paimon Java commit leaves),
which readers never open. Fault points ``compaction.commit.after_manifests`` and
``compaction.commit.after_manifest_lists`` (``paimon.faults``) cover both steps.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.snapshot.snapshot import Snapshot
from pypaimon.snapshot.snapshot_commit import PartitionStatistics
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.write.commit.commit_scanner import CommitScanner

from .. import faults
from ..commit_properties import RUN_KEYS
from ..errors import ConcurrentModificationError
from ..manifest_reader import KIND_ADD, KIND_DELETE
from ..manifests import merge_manifests
from .errors import CompactionConflictError, RowCountMismatchError
from .manifest_compaction import fold_deletes
from .scan import partition_dict, table_name
from .snapshot import compact_snapshot

log = logging.getLogger(__name__)

# Paimon's BatchWriteBuilder.COMMIT_IDENTIFIER: the identifier of batch commits.
BATCH_COMMIT_IDENTIFIER = 2**63 - 1


@dataclass
class CompactChange:
    """Files of one partition/bucket: the ones removed and the ones that replace them."""

    partition: tuple
    bucket: int
    total_buckets: int
    before: list = field(default_factory=list)
    after: list = field(default_factory=list)
    # changelog files the compaction produced (primary keys, changelog-producer=full-compaction)
    changelog: list = field(default_factory=list)


def commit_compaction(
    table: Any,
    changes: list[CompactChange],
    commit_user: str | None = None,
    commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    properties: dict[str, str] | None = None,
    max_rename_attempts: int = 10,
    *,
    rows_change: bool = False,
    check: Callable[[Any, list[ManifestEntry], list[ManifestEntry]], None] | None = None,
    fold: bool = True,
) -> Snapshot:
    """Commit ``changes`` as one COMPACT snapshot and return it.

    With ``fold`` (the default) a compaction that removed at least
    ``manifest.merge-min-count`` files is followed by ``compact_manifest``
    (``manifest_compaction.fold_deletes``): the table's latest state then lists its
    live files only, not the DELETE entries this commit had to record.

    Raises ``CompactionConflictError`` (nothing written) when a file to remove is no
    longer alive, and ``RowCountMismatchError`` when the new files do not hold exactly
    the removed files' rows. ``rows_change=True`` (primary-key compaction: merging
    versions changes the count) skips that check; the snapshot's record counts follow
    the change either way. ``check(latest, entries, live)`` runs with each attempt's base
    snapshot (``live``: its entries of the changed partitions, read once for both
    checks) before anything is written and may raise ``CompactionConflictError``.
    """
    changes = [c for c in changes if c.before or c.after]
    if not changes:
        raise ValueError("nothing to commit: no compaction changes")
    if not rows_change:
        for c in changes:
            rows_before = sum(f.row_count for f in c.before)
            rows_after = sum(f.row_count for f in c.after)
            if rows_before != rows_after:
                raise RowCountMismatchError(
                    f"partition {c.partition} bucket {c.bucket}: new files hold {rows_after} rows, "
                    f"the files they replace {rows_before}; refusing to commit"
                )
    commit_user = commit_user or f"compaction-{uuid.uuid4()}"
    record_delta = sum(f.row_count for c in changes for f in c.after) - sum(
        f.row_count for c in changes for f in c.before)
    entries = _entries(table, changes)
    changelog_entries = _changelog_entries(table, changes)
    manifest_files = ManifestFileManager(table)
    manifest_lists = ManifestListManager(table)
    snapshot_manager = table.snapshot_manager()
    scanner = CommitScanner(table, manifest_lists)

    for attempt in range(max_rename_attempts):
        latest = snapshot_manager.get_latest_snapshot()
        if latest is None:
            raise CompactionConflictError(
                f"{table_name(table)} has no snapshot any more; nothing to compact against"
            )
        alive = scanner.read_all_entries_from_changed_partitions(latest, entries)
        _check_still_alive(table, latest, entries, alive)
        if check is not None:
            check(latest, entries, alive)

        unique = uuid.uuid4()
        base_list = f"manifest-list-{unique}-0"
        delta_list = f"manifest-list-{unique}-1"
        changelog_list = f"manifest-list-{unique}-changelog" if changelog_entries else None
        written_manifests: list[str] = []
        try:
            metas = manifest_files.rolling_write(
                entries, table.options.manifest_target_size(), f"manifest-{uuid.uuid4()}"
            )
            written_manifests = [m.file_name for m in metas]
            changelog_size = None
            if changelog_list is not None:
                changelog_metas = manifest_files.rolling_write(
                    changelog_entries, table.options.manifest_target_size(), f"manifest-{uuid.uuid4()}-changelog"
                )
                written_manifests += [m.file_name for m in changelog_metas]
                changelog_size = manifest_lists.write(changelog_list, changelog_metas)
            base_before = manifest_lists.read_all(latest)
            merged = merge_manifests(table, base_before)
            written_manifests += merged.written
            faults.check("compaction.commit.after_manifests")
            delta_size = manifest_lists.write(delta_list, metas)
            base_size = manifest_lists.write(base_list, merged.metas)
            faults.check("compaction.commit.after_manifest_lists")
            snapshot = compact_snapshot(
                latest, base_list, base_size, delta_list, delta_size, commit_user,
                commit_identifier, properties,
                # The newer of the schema we wrote with and the one at commit time.
                schema_id=max(table.table_schema.id, latest.schema_id),
                record_delta=record_delta,
                changelog=(changelog_list, changelog_size,
                           sum(e.file.row_count for e in changelog_entries) if changelog_list else None),
            )
            statistics = _partition_statistics(table, changes)
        except BaseException:
            _delete_manifests(table, manifest_lists, written_manifests,
                              [n for n in (base_list, delta_list, changelog_list) if n])
            raise

        snapshot_commit = table.new_snapshot_commit()
        try:
            with snapshot_commit:
                committed = snapshot_commit.commit(latest.uuid, snapshot, statistics)
        except Exception as err:
            # The outcome is unknown: keep every file, a committed snapshot may use them.
            raise ConcurrentModificationError(
                f"committing compaction snapshot {snapshot.id} of {table_name(table)} failed "
                f"with an uncertain outcome ({type(err).__name__}: {err}); check the table's "
                "latest snapshot before running again"
            ) from err
        if committed:
            log.info(
                "committed COMPACT snapshot %d of %s: -%d +%d files; base manifests %d -> %d",
                snapshot.id, table_name(table),
                sum(len(c.before) for c in changes), sum(len(c.after) for c in changes),
                len(base_before), len(merged.metas),
            )
            if fold:
                _fold(table, commit_user, properties)
            return snapshot
        log.info("snapshot %d of %s was taken by another commit; retrying (%d)",
                 snapshot.id, table_name(table), attempt + 1)
        _delete_manifests(table, manifest_lists, written_manifests,
                          [n for n in (base_list, delta_list, changelog_list) if n])
    raise ConcurrentModificationError(
        f"could not commit compaction of {table_name(table)}: another writer took the next "
        f"snapshot id {max_rename_attempts} times in a row"
    )


def _fold(table: Any, commit_user: str, properties: dict[str, str] | None) -> None:
    """Fold this commit's DELETE entries (never raises: the compaction has landed)."""
    run = {k: v for k, v in dict(properties or {}).items() if k in RUN_KEYS}
    try:
        fold_deletes(table, commit_user=commit_user, properties=run)
    except Exception as err:  # noqa: BLE001 - a later commit's merge folds them instead
        log.warning("folding the deletes of the compaction of %s failed (%s: %s); the next "
                    "commit's manifest merge or compact_manifest folds them",
                    table_name(table), type(err).__name__, err)


def _entries(table: Any, changes: list[CompactChange]) -> list[ManifestEntry]:
    fields = table.partition_keys_fields
    out: list[ManifestEntry] = []
    for c in changes:
        partition = GenericRow(list(c.partition), fields)
        for f in c.before:
            out.append(ManifestEntry(kind=KIND_DELETE, partition=partition, bucket=c.bucket,
                                     total_buckets=c.total_buckets, file=f))
        for f in c.after:
            out.append(ManifestEntry(kind=KIND_ADD, partition=partition, bucket=c.bucket,
                                     total_buckets=c.total_buckets, file=f))
    return out


def _changelog_entries(table: Any, changes: list[CompactChange]) -> list[ManifestEntry]:
    """ADD entries of the changes' changelog files (the snapshot's changelog manifest)."""
    fields = table.partition_keys_fields
    return [
        ManifestEntry(kind=KIND_ADD, partition=GenericRow(list(c.partition), fields), bucket=c.bucket,
                      total_buckets=c.total_buckets, file=f)
        for c in changes for f in c.changelog
    ]


def _check_still_alive(table: Any, latest: Any, entries: list[ManifestEntry],
                       live: list[ManifestEntry]) -> None:
    """Every DELETE must hit a file alive in ``latest`` (``live``: its entries of the
    changed partitions); every ADD must be new."""
    alive = {(tuple(e.partition.values), e.bucket, e.file.file_name) for e in live}
    for e in entries:
        key = (tuple(e.partition.values), e.bucket, e.file.file_name)
        if e.kind == KIND_DELETE and key not in alive:
            raise CompactionConflictError(
                f"file {e.file.file_name} (partition {key[0]}, bucket {e.bucket}) is no longer "
                f"in {table_name(table)} at snapshot {latest.id}: another commit removed it "
                "while the compaction ran"
            )
        if e.kind == KIND_ADD and key in alive:
            raise CompactionConflictError(
                f"file {e.file.file_name} is already part of {table_name(table)}"
            )


def _partition_statistics(table: Any, changes: list[CompactChange]) -> list[PartitionStatistics]:
    stats: dict[tuple, dict[str, Any]] = {}
    for c in changes:
        s = stats.setdefault(c.partition, {"files": 0, "bytes": 0, "buckets": c.total_buckets,
                                           "time": 0, "rows": 0})
        s["files"] += len(c.after) - len(c.before)
        s["rows"] += sum(f.row_count for f in c.after) - sum(f.row_count for f in c.before)
        s["bytes"] += sum(f.file_size for f in c.after) - sum(f.file_size for f in c.before)
        for f in c.after:
            if f.creation_time:
                s["time"] = max(s["time"], f.creation_time_epoch_millis())
    return [
        PartitionStatistics.create(
            partition_spec={k: str(v) for k, v in partition_dict(table, p).items()},
            record_count=s["rows"],
            file_count=s["files"],
            file_size_in_bytes=s["bytes"],
            last_file_creation_time=s["time"] or int(time.time() * 1000),
            total_buckets=s["buckets"],
        )
        for p, s in stats.items()
    ]


def _delete_manifests(table: Any, lists: ManifestListManager, manifests: list[str],
                      list_names: list[str]) -> None:
    for name in manifests:
        table.file_io.delete_quietly(f"{lists.manifest_path}/{name}")
    for name in list_names:
        table.file_io.delete_quietly(f"{lists.manifest_path}/{name}")
