"""Compaction planning from raw manifest entries: memory for what a plan rewrites.

pypaimon's scan (``scan.live_entries``) builds a full ``ManifestEntry`` for every live
file (~5.3 KB each with its partition row, statistics rows and timestamp), and the
planner held all of them: ~5 GB at 1,000,000 files. The bin-packing rules need a file's
size, name and sequence numbers, nothing more. This module:

1. streams the snapshot's entries with ``manifest_reader`` (``RawEntry``: plain values,
   statistics kept as bytes), the way ``planning.Planner.live_files`` does: DELETE
   entries first, from the manifests that hold some, then every manifest's ADD entries,
   dropping the deleted ones; a partition is decoded and tested against the filter once,
   and entries of rejected partitions are walked over without being built;
2. keeps per (partition, bucket) only the small files (candidates) as ``RawEntry``s, and
   for fixed-bucket tables a ``_Marker`` (the sequence-order fields) of each large file,
   since a large file ends a run of small ones;
3. packs with the same functions as the pypaimon-based planner (``plan.pack_by_size``,
   ``plan.pack_bucket_in_order``), so both choose the same bins;
4. builds pypaimon's ``DataFileMeta`` (with statistics and path) only for the files a
   bin rewrites, one group at a time, dropping the group's raw entries as it goes.

The ``DataFileMeta`` is what pypaimon's reader would have built from the same record:
the rewrite opens it by its path, the COMPACT commit writes it back as a DELETE entry.
Append files have no key, so their (empty) key fields and key statistics are pypaimon's
empty row, as pypaimon's writers write them; ``write_cols_sequences`` (data evolution,
refused by ``check_compactable``) is not carried.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pypaimon.data.timestamp import Timestamp
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.table.row.generic_row import GenericRow, GenericRowDeserializer

from ..manifest_reader import RawEntry, read_entries
from ..planning import EntryResolver, live_adds, unsupported_reason
from .scan import partition_dict

#: What a manifest the fast reader cannot decode raises: the caller falls back to pypaimon's scan.
RAW_READ_ERRORS = (KeyError, IndexError, TypeError, ValueError, EOFError)

PartitionTest = Callable[[dict[str, Any]], bool]


class _Marker(NamedTuple):
    """A large file of a fixed bucket: only where it sits in sequence order matters."""

    file_size: int
    file_name: str
    min_sequence_number: int
    max_sequence_number: int
    creation_time: int | None  # epoch millis, as in RawEntry


@dataclass
class RawGroup:
    """The files of one (partition, bucket) kept for packing."""

    total_buckets: int
    files: list[Any] = field(default_factory=list)  # RawEntry (candidates) and _Marker


@dataclass
class RawScan:
    """What one streamed scan kept: groups to pack and the counts a plan reports."""

    groups: dict[tuple, RawGroup] = field(default_factory=dict)
    files_scanned: int = 0
    bytes_scanned: int = 0


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a plan builds millions of objects.

    Every collection of the oldest generation walks every object alive, and a plan of
    1,000,000 files creates several million (entries, file metadata, statistics rows)
    that make no reference cycles: with the collector running, more than half of a
    300,000-file plan's CPU went to it (12.7 s against 5.7 s). Reference counting still
    frees everything; the collector is re-enabled (if it was) on the way out.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class PartitionFilterFailedError(Exception):
    """The caller's partition filter raised (its error is the cause): not a failure of
    the reader, so the plan does not fall back to pypaimon's scan."""


def fast_plan_reason(table: Any) -> str | None:
    """Why ``table`` is planned through pypaimon instead (None: the raw reader plans it)."""
    return unsupported_reason(table)


class LiveRawEntries:
    """The live ADD entries of one snapshot, streamed as ``(partition values, RawEntry)``.

    ``partition_filter`` (on ``{column: value}``) is applied once per distinct partition;
    entries of rejected partitions are never built.
    """

    def __init__(self, table: Any, snapshot: Any, partition_filter: PartitionTest | None = None) -> None:
        self.table = table
        self.snapshot = snapshot
        self.partition_filter = partition_filter
        self.partition_fields = table.partition_keys_fields
        self.manifest_dir = f"{table.table_path.rstrip('/')}/manifest"
        self._partitions: dict[bytes, tuple[tuple, bool]] = {}

    def __iter__(self) -> Iterator[tuple[tuple, RawEntry]]:
        if self.snapshot is None:
            return
        manifests = ManifestListManager(self.table).read_all(self.snapshot)
        for e in live_adds(manifests, self._blocks, self._key):
            values, keep = self.partition(e.partition)
            if keep:
                yield values, e

    def partition(self, raw: bytes) -> tuple[tuple, bool]:
        """A partition's values and whether the filter keeps it (cached by its bytes)."""
        known = self._partitions.get(raw)
        if known is None:
            values = tuple(GenericRowDeserializer.from_bytes(raw, self.partition_fields).values)
            try:
                keep = self.partition_filter is None or bool(
                    self.partition_filter(partition_dict(self.table, values)))
            except Exception as err:
                raise PartitionFilterFailedError from err
            known = (values, keep)
            self._partitions[raw] = known
        return known

    def _blocks(self, meta: Any) -> Iterator[list[RawEntry]]:
        accept = None if self.partition_filter is None else self._accepts
        return read_entries(self.table.file_io, f"{self.manifest_dir}/{meta.file_name}",
                            meta.file_size, accept)

    def _accepts(self, raw: bytes) -> bool:
        return self.partition(raw)[1]

    def _key(self, e: RawEntry) -> tuple:
        """``FileEntry.Identifier`` with the partition's values (not its bytes: two writers
        may serialize one partition differently; pypaimon compares values too)."""
        return (self.partition(e.partition)[0], e.bucket, e.level, e.file_name, e.extra_files,
                e.embedded_index, e.external_path)


def scan_groups(entries: LiveRawEntries, is_candidate: Callable[[Any], bool], bucketed: bool) -> RawScan:
    """Group the streamed entries, keeping candidates (and, bucketed, markers of the rest)."""
    out = RawScan()
    groups = out.groups
    for partition, e in entries:
        out.files_scanned += 1
        out.bytes_scanned += e.file_size
        key = (partition, e.bucket)
        group = groups.get(key)
        if group is None:
            group = groups[key] = RawGroup(e.total_buckets)
        group.total_buckets = e.total_buckets  # the last entry's, as the pypaimon planner
        if is_candidate(e):
            group.files.append(e)
        elif bucketed:
            group.files.append(_Marker(e.file_size, e.file_name, e.min_sequence_number,
                                       e.max_sequence_number, e.creation_time))
    return out


def live_partitions(table: Any, snapshot: Any) -> set[tuple]:
    """The partitions (value tuples) holding a live file in ``snapshot``."""
    return {partition for partition, _ in LiveRawEntries(table, snapshot)}


# -- DataFileMeta for the files a bin rewrites ---------------------------------------


class FileMetaBuilder:
    """Builds pypaimon's ``DataFileMeta`` of a ``RawEntry``, as pypaimon's reader would.

    Value statistics and bucket directories are resolved once each, by
    ``planning.EntryResolver`` (as read planning resolves them).
    """

    def __init__(self, table: Any) -> None:
        self.table = table
        self.resolver = EntryResolver(table)
        self._empty_key = GenericRow([], table.trimmed_primary_keys_fields)
        self._empty_key_stats = SimpleStats.empty_stats()

    def build(self, partition: tuple, e: RawEntry) -> DataFileMeta:
        meta = DataFileMeta(
            file_name=e.file_name,
            file_size=e.file_size,
            row_count=e.row_count,
            min_key=self._empty_key,
            max_key=self._empty_key,
            key_stats=self._empty_key_stats,
            value_stats=self.resolver.value_stats(e),
            min_sequence_number=e.min_sequence_number,
            max_sequence_number=e.max_sequence_number,
            schema_id=e.schema_id,
            level=e.level,
            extra_files=list(e.extra_files),
            creation_time=None if e.creation_time is None else Timestamp.from_epoch_millis(e.creation_time),
            delete_row_count=e.delete_row_count,
            embedded_index=e.embedded_index,
            file_source=e.file_source,
            value_stats_cols=None if e.value_stats_cols is None else list(e.value_stats_cols),
            external_path=e.external_path,
            first_row_id=e.first_row_id,
            write_cols=None if e.write_cols is None else list(e.write_cols),
        )
        if not e.external_path:
            meta.file_path = self.resolver.bucket_dir(partition, e.bucket) + e.file_name
        return meta
