"""Merge a snapshot's manifests into a compact set of live entries (Paimon's format).

pypaimon never merges manifests: every commit adds one manifest to the base list, so
after N commits a planner opens N manifest files, and after a compaction it also reads
a DELETE entry for every replaced file. Paimon Java merges manifests on commit
(``ManifestFileMerger``); this is the full-compaction half of it, used by our COMPACT
commit to write the new snapshot's *base* manifest list:

- the manifests are read in order; a leading run of manifests that are already full
  (at least ``manifest.target-file-size``), hold no DELETE entry and none of whose
  files is deleted later is kept as is (Java keeps them too, so a big table does not
  rewrite all its manifests on every compaction);
- from the first other manifest on, every ADD entry whose file is not deleted by a
  later DELETE entry is written again, in the same order, into new manifest files
  rolled at ``manifest.target-file-size``; DELETE entries and the ADDs they cancel
  are dropped. The result holds only ADD entries, which is what Java requires of a
  base manifest list after full compaction.

The semantics of the snapshot stay Paimon's: base = the merged state of the previous
snapshot (base + delta), delta = this commit's own changes. Nothing here deletes a
manifest: older snapshots keep their own manifest lists and the manifests they name,
which snapshot expiration cleans up as usual.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pypaimon.manifest.manifest_file_manager import ManifestFileManager

KIND_ADD = 0


@dataclass
class MergedManifests:
    """The merged manifest list and which of its files were written by the merge."""

    metas: list[Any]  # ManifestFileMeta, in order
    written: list[str] = field(default_factory=list)  # new manifest file names
    entries_in: int = 0  # entries read (ADD and DELETE)
    entries_out: int = 0  # live ADD entries in the rewritten manifests

    @property
    def changed(self) -> bool:
        return bool(self.written)


def entry_identifier(entry: Any) -> tuple:
    """Paimon's ``FileEntry.Identifier`` (as pypaimon's reader matches ADD and DELETE)."""
    f = entry.file
    return (
        tuple(entry.partition.values),
        entry.bucket,
        f.level,
        f.file_name,
        tuple(f.extra_files) if f.extra_files else (),
        f.embedded_index,
        f.external_path,
    )


def merge_manifests(
    table: Any,
    manifests: list[Any],
    target_size: int | None = None,
    name_prefix: str | None = None,
    max_workers: int = 8,
) -> MergedManifests:
    """Full compaction of ``manifests`` (a snapshot's base + delta, in order).

    Returns the manifests to put in a base manifest list; the files in ``written`` are
    new and must be deleted by the caller if it does not commit them. When there is
    nothing to gain (no DELETE entry and at most one manifest to rewrite) the input is
    returned unchanged and nothing is written.
    """
    target = int(target_size or table.options.manifest_target_size())
    files = ManifestFileManager(table)
    if not manifests:
        return MergedManifests(metas=[])

    def read(meta: Any) -> list[Any]:
        return files.read(meta.file_name, drop_stats=False, file_size=meta.file_size)

    if len(manifests) == 1:
        per_manifest = [read(manifests[0])]
    else:
        with ThreadPoolExecutor(max_workers=max_workers) as pool:
            per_manifest = list(pool.map(read, manifests))

    deleted: set[tuple] = set()
    for entries in per_manifest:
        for e in entries:
            if e.kind != KIND_ADD:
                deleted.add(entry_identifier(e))
    entries_in = sum(len(entries) for entries in per_manifest)

    keep = 0
    for meta, entries in zip(manifests, per_manifest, strict=True):
        if (
            meta.file_size < target
            or meta.num_deleted_files
            or any(e.kind != KIND_ADD or entry_identifier(e) in deleted for e in entries)
        ):
            break
        keep += 1
    rest = manifests[keep:]
    if not deleted and len(rest) <= 1:
        return MergedManifests(metas=list(manifests), entries_in=entries_in)

    live = [
        e
        for entries in per_manifest[keep:]
        for e in entries
        if e.kind == KIND_ADD and entry_identifier(e) not in deleted
    ]
    prefix = name_prefix or f"manifest-{uuid.uuid4()}"
    written = files.rolling_write(live, target, prefix) if live else []
    return MergedManifests(
        metas=list(manifests[:keep]) + list(written),
        written=[m.file_name for m in written],
        entries_in=entries_in,
        entries_out=len(live),
    )
