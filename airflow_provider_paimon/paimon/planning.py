"""Live data files of a snapshot, in proportion to what is read (append tables).

pypaimon's planner costs ~90 us of CPU per data file: it decodes every manifest entry
into full objects and builds a path factory twice per file (63% of a plan). This
planner reads the same manifests with ``manifest_reader`` and:

1. skips whole manifests whose partition statistics (in the manifest list) cannot
   match the partition filter, as Paimon does;
2. reads the DELETE entries first, only from manifests that hold some (the manifest
   list says how many), then streams every manifest's ADD entries, dropping the
   deleted ones: memory is the deleted set plus one block, not every live entry;
3. tests each distinct partition once (entries carry the partition as bytes), and a
   file's value statistics only when there is a filter on data columns (pypaimon's
   own predicate and schema-evolution code do the test, so the answer is theirs);
4. builds each bucket's directory once (pypaimon's canonical escaping) and a file's
   path by appending its name.

The snapshot (latest, ``snapshot-id``, tag, timestamp...) and the predicates come from
pypaimon's own scan objects, so time travel and filters mean exactly what they mean
for pypaimon; pypaimon's planner is the reference the tests compare against.

Scope: append tables without deletion vectors, data evolution, row tracking, a
postponed bucket or query auth (``unsupported_reason``); everything else is planned by
pypaimon.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.table.row.binary_row import BinaryRow
from pypaimon.table.row.generic_row import GenericRowDeserializer
from pypaimon.utils.file_store_path_factory import canonical_data_file_path

from .manifest_reader import KIND_ADD, RawEntry, read_entries


@dataclass(frozen=True)
class LiveFile:
    """One live data file: its manifest entry, partition values and path."""

    entry: RawEntry
    partition: tuple
    path: str


def live_adds(manifests: list[Any], entries_of: Callable[[Any], Iterator[list[RawEntry]]],
              key: Callable[[RawEntry], tuple]) -> Iterator[RawEntry]:
    """The ADD entries no DELETE cancels, streamed in manifest order (Paimon's merge of a
    snapshot's entries): the DELETE entries are read first, only from the manifests the
    list says hold some, then every manifest's ADD entries go by. Memory: the deleted
    keys plus one block. ``entries_of(meta)`` reads a manifest block by block (with the
    caller's partition filter); ``key`` is ``FileEntry.Identifier``."""
    deleted: set[tuple] = set()
    for meta in manifests:
        if meta.num_deleted_files:
            for block in entries_of(meta):
                deleted.update(key(e) for e in block if e.kind != KIND_ADD)
    for meta in manifests:
        for block in entries_of(meta):
            for e in block:
                if e.kind == KIND_ADD and not (deleted and key(e) in deleted):
                    yield e


def unsupported_reason(table: Any) -> str | None:
    """Why this planner does not plan ``table`` (None: it does)."""
    options = table.options
    if table.is_primary_key_table:
        return "primary-key table"
    for probe, reason in (
        ("deletion_vectors_enabled", "deletion vectors"),
        ("data_evolution_enabled", "data evolution"),
        ("row_tracking_enabled", "row tracking"),
    ):
        check = getattr(options, probe, None)
        if check is not None and check():
            return reason
    if options.bucket() == -2:  # BucketMode.POSTPONE_BUCKET
        return "postponed bucket"
    if getattr(options, "query_auth_enabled", False):
        return "query auth"
    return None


class EntryResolver:
    """What a ``RawEntry`` needs from its table, cached: its value statistics (decoded with
    the fields of the schema and columns that wrote them, as pypaimon decodes them) and
    its bucket's directory (built once per partition and bucket: pypaimon built a path
    factory twice per file). Read planning and compaction planning both use it."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self._stats_fields: dict[tuple, list] = {}
        self._dirs: dict[tuple, str] = {}

    def value_stats(self, e: RawEntry) -> SimpleStats:
        fields = self._value_stats_fields(e)
        return SimpleStats(
            min_values=BinaryRow(e.stats_min, fields), max_values=BinaryRow(e.stats_max, fields),
            null_counts=None if e.stats_null_counts is None else list(e.stats_null_counts),
        )

    def _value_stats_fields(self, e: RawEntry) -> list:
        key = (e.schema_id, e.value_stats_cols, e.write_cols)
        fields = self._stats_fields.get(key)
        if fields is None:
            table = self.table
            schema = (table.table_schema if e.schema_id == table.table_schema.id
                      else table.schema_manager.get_schema(e.schema_id))
            record = {"_VALUE_STATS_COLS": None if e.value_stats_cols is None else list(e.value_stats_cols),
                      "_WRITE_COLS": None if e.write_cols is None else list(e.write_cols)}
            fields = ManifestFileManager._get_value_stats_fields(None, record, schema)
            self._stats_fields[key] = fields
        return fields

    def bucket_dir(self, partition: tuple, bucket: int) -> str:
        """The bucket's directory with a trailing ``/`` (pypaimon's canonical escaping)."""
        key = (partition, bucket)
        found = self._dirs.get(key)
        if found is None:
            found = canonical_data_file_path(self.table, partition, bucket, "X")[:-1]
            self._dirs[key] = found
        return found


class Planner:
    """Plans one pypaimon ``TableScan`` (its snapshot and filter) with our reader."""

    def __init__(self, table: Any, scan: Any) -> None:
        self.table = table
        self.scanner = scan.file_scanner  # pypaimon's: snapshot choice and predicates
        self.partition_predicate = self.scanner.partition_key_predicate
        self.stats_predicate = self.scanner.predicate_for_stats if self.scanner.predicate else None
        self.partition_fields = table.partition_keys_fields
        self.manifest_dir = f"{table.table_path.rstrip('/')}/manifest"
        self.snapshot: Any = None
        self._partitions: dict[bytes, tuple[tuple, bool]] = {}
        self.resolver = EntryResolver(table)
        self.manifests_total = 0
        self.manifests_read = 0

    # -- manifests ----------------------------------------------------------

    def manifests(self) -> list[Any]:
        metas, snapshot = self.scanner.manifest_scanner()
        self.snapshot = snapshot
        self.manifests_total = len(metas)
        kept = [m for m in metas if self._manifest_may_match(m)]
        self.manifests_read = len(kept)
        return kept

    def _manifest_may_match(self, meta: Any) -> bool:
        if self.partition_predicate is None:
            return True
        return bool(self.partition_predicate.test_by_simple_stats(
            meta.partition_stats, meta.num_added_files + meta.num_deleted_files))

    def _entries(self, meta: Any) -> Iterator[list[RawEntry]]:
        accept = None if self.partition_predicate is None else self._accepts
        return read_entries(self.table.file_io, f"{self.manifest_dir}/{meta.file_name}", meta.file_size,
                            accept)

    def _accepts(self, raw: bytes) -> bool:
        return self._partition(raw)[1]

    # -- entries ------------------------------------------------------------

    def live_files(self) -> Iterator[LiveFile]:
        """Every live file the scan selects, in manifest order, streamed."""
        for e in live_adds(self.manifests(), self._entries, self._key):
            values, keep = self._partition(e.partition)
            if not keep:
                continue
            if self.stats_predicate is not None and not self._stats_match(e):
                continue
            yield LiveFile(e, values, e.external_path or self.resolver.bucket_dir(values, e.bucket) + e.file_name)

    def _key(self, e: RawEntry) -> tuple:
        """``FileEntry.Identifier`` with the partition's values, not its bytes (two writers
        may serialize one partition differently; pypaimon compares values too)."""
        return (self._partition(e.partition)[0], e.bucket, e.level, e.file_name, e.extra_files,
                e.embedded_index, e.external_path)

    def _partition(self, raw: bytes) -> tuple[tuple, bool]:
        known = self._partitions.get(raw)
        if known is None:
            row = GenericRowDeserializer.from_bytes(raw, self.partition_fields)
            keep = self.partition_predicate is None or bool(self.partition_predicate.test(row))
            known = (tuple(row.values), keep)
            self._partitions[raw] = known
        return known

    def _stats_match(self, e: RawEntry) -> bool:
        """pypaimon's own test of a file's value statistics (with schema evolution)."""
        stats = self.resolver.value_stats(e)
        stats_fields: list[str] | None
        if e.value_stats_cols is None and e.write_cols is not None:
            stats_fields = list(e.write_cols)
        else:
            stats_fields = list(e.value_stats_cols) if e.value_stats_cols is not None else None
        evolution = self.scanner.simple_stats_evolutions.get_or_create(e.schema_id)
        evolved = evolution.evolution(stats, e.row_count, stats_fields)
        predicate: Any = self.stats_predicate
        return bool(predicate.test_by_simple_stats(evolved, e.row_count))


def live_files(table: Any, predicate: Any = None) -> tuple[Planner, Iterator[LiveFile]]:
    """A planner for ``table`` (its scan options choose the snapshot) and its live files."""
    builder = table.new_read_builder()
    if predicate is not None:
        builder = builder.with_filter(predicate)
    planner = Planner(table, builder.new_scan())
    return planner, planner.live_files()
