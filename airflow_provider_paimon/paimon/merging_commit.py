"""pypaimon's commit, with Paimon Java's manifest merge inside it.

pypaimon 2.1's ``FileStoreCommit`` writes a new snapshot's base manifest list as the
previous snapshot's base + delta lists, unmerged ("manifest compaction is handled by
external maintenance"), so every commit adds a manifest that is never merged. Paimon
Java merges right there, in the same commit (``FileStoreCommitImpl.tryCommitOnce``
-> ``ManifestFileMerger.merge``). :func:`merging_commit` puts that step back into
every commit this package makes through pypaimon (the ``paimon`` data source's batch
and streaming sinks, and through them ``write_table`` and ``foreach_batch_writer``):

- the commit's ``FileStoreCommit`` is replaced by :class:`MergingFileStoreCommit`, the
  same class with one change: while one commit attempt prepares its snapshot, reading
  the previous snapshot's manifests returns them merged (``paimon.manifests.merge``,
  Java's rules and the table's ``manifest.*`` options). Everything else is pypaimon's:
  conflict checks, retries on a lost race, duplicate detection, the atomic snapshot
  commit. The merged list is the new snapshot's base; no extra snapshot is made.
- crash safety is the commit's own: merged manifests are new files that only the new
  snapshot names, so a process killed after writing them (fault point
  ``commit.after_merged_manifests``) leaves the table as it was plus unreferenced files
  in ``manifest/`` (orphans, as any failed commit leaves), and the next commit merges
  again. An attempt that certainly did not land (an error before the snapshot commit,
  or another writer took the snapshot id) deletes the manifests it merged; one whose
  outcome is unknown keeps them, as pypaimon and Java keep their files.

Tables written by other writers are merged by our next commit (the merge reads
whatever the latest snapshot lists) or by ``compact_manifest``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.write.file_store_commit import CommitFailRetryResult, FileStoreCommit

from . import faults
from .manifests import MergedManifests, MergeOptions, _Io, merge

log = logging.getLogger(__name__)

FAULT_AFTER_MERGE = "commit.after_merged_manifests"


class MergingManifestLists(ManifestListManager):
    """A manifest-list manager whose ``read_all`` merges while a commit prepares."""

    def __init__(self, table: Any, options: MergeOptions) -> None:
        super().__init__(table)
        self.options = options
        self.last: MergedManifests | None = None
        self._merging = False
        self._io = _Io(table)  # deletes; merge() picks its own reader

    @contextlib.contextmanager
    def merging(self) -> Iterator[None]:
        self._merging, self.last = True, None
        try:
            yield
        finally:
            self._merging = False

    def read_all(self, snapshot: Any) -> list[Any]:
        manifests = super().read_all(snapshot)
        if not self._merging or not manifests:
            return manifests
        merged = merge(self.table, manifests, self.options)
        self.last = merged
        if merged.changed:
            log.info(
                "%s manifest merge: %d manifests -> %d (%d written, %d entries -> %d)",
                merged.kind, len(manifests), len(merged.metas), len(merged.written),
                merged.entries_in, merged.entries_out,
            )
        faults.check(FAULT_AFTER_MERGE)
        return merged.metas

    def discard_last(self) -> None:
        """Delete the manifests the last attempt merged (it certainly did not commit)."""
        if self.last is not None and self.last.written:
            self._io.delete(self.last.written)
        self.last = None


class MergingFileStoreCommit(FileStoreCommit):
    """pypaimon's ``FileStoreCommit`` whose new base manifest list is merged (Java's rules)."""

    def __init__(self, snapshot_commit: Any, table: Any, commit_user: str,
                 commit_callbacks: list[Any] | None = None,
                 options: MergeOptions | None = None) -> None:
        super().__init__(snapshot_commit, table, commit_user, commit_callbacks=commit_callbacks)
        # Only the base-list step reads through this one; the conflict checks keep
        # pypaimon's reader (bound in FileStoreCommit.__init__).
        self.manifest_list_manager = MergingManifestLists(table, options or MergeOptions.of_table(table))

    def _try_commit_once(self, *args: Any, **kwargs: Any) -> Any:
        lists = self.manifest_list_manager
        assert isinstance(lists, MergingManifestLists)
        with lists.merging():
            try:
                result = super()._try_commit_once(*args, **kwargs)
            except BaseException:
                lists.discard_last()  # failed before the snapshot commit was attempted
                raise
        if isinstance(result, CommitFailRetryResult) and not result.commit_result_may_be_uncertain:
            lists.discard_last()  # another writer took the snapshot id: ours is not used
        return result


def merging_commit(table_commit: Any, overrides: Mapping[str, Any] | None = None) -> Any:
    """Make ``table_commit`` (pypaimon's batch or stream commit) merge manifests; returns it.

    ``overrides``: ``manifest.*`` options that win over the table's (the data source
    passes its write options). Bad values raise ``InvalidArgumentError`` before
    anything is written.
    """
    current = table_commit.file_store_commit
    if isinstance(current, MergingFileStoreCommit):
        return table_commit
    table = current.table
    options = MergeOptions.of_table(table, overrides)
    if table.options.native_commit_enabled():
        log.warning(
            "commit.native.enabled is set on %s: pypaimon's native commit does not merge "
            "manifests; run compact_manifest to keep the table's metadata small",
            getattr(table, "identifier", table),
        )
    table_commit.file_store_commit = MergingFileStoreCommit(
        current.snapshot_commit, table, current.commit_user,
        commit_callbacks=current.commit_callbacks, options=options,
    )
    return table_commit
