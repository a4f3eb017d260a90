"""Merge a snapshot's manifests the way Paimon Java does (``ManifestFileMerger``).

pypaimon 2.1 never merges manifests: every commit adds one manifest to the base list,
so after N commits a planner opens N manifest files and a commit rewrites a list of N
entries (N commits cost O(N^2) in total). Paimon Java merges at every commit, with
three table options (same names and defaults here):

- ``manifest.target-file-size`` (8 mb): the size merged manifests aim for;
- ``manifest.merge-min-count`` (30): how many small manifests must accumulate at the
  tail of the list before they are merged (the *minor* merge);
- ``manifest.full-compaction-threshold-size`` (16 mb): when the manifests that hold
  DELETE entries or are smaller than the target add up to this much, the whole list
  is compacted (the *full* merge): DELETE entries and the ADDs they cancel are
  dropped, manifests that no delete touches are kept as they are.

:func:`merge` is ``ManifestFileMerger.merge`` (release 2.0, the non-sorting path):
full compaction when it triggers, else minor compaction. Java's rules, transcribed
line by line into ``tests/compaction/java_manifest_merger.py``, are the reference the
tests compare against. :func:`full_compaction` with the thresholds forced to 1 is
Java's ``compact_manifest`` procedure (``FileStoreCommitImpl.compactManifest``).

Nothing here deletes a manifest that a snapshot may name: the merge only writes new
manifest files (``MergedManifests.written``), which the caller deletes if it does not
commit them. Older snapshots keep their own lists; expiry cleans them up as usual.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pypaimon.common.memory_size import MemorySize
from pypaimon.manifest.manifest_file_manager import ManifestFileManager

from .errors import InvalidArgumentError
from .manifest_reader import (
    KIND_ADD,
    WRITABLE_CODECS,
    concat_manifests,
    encode_manifests,
    read_bytes,
    read_raw,
)

TARGET_FILE_SIZE = "manifest.target-file-size"
MERGE_MIN_COUNT = "manifest.merge-min-count"
FULL_COMPACTION_THRESHOLD = "manifest.full-compaction-threshold-size"

DEFAULT_TARGET_FILE_SIZE = 8 * 1024 * 1024
DEFAULT_MERGE_MIN_COUNT = 30
DEFAULT_FULL_COMPACTION_THRESHOLD = 16 * 1024 * 1024


@dataclass(frozen=True)
class MergeOptions:
    """The three settings of Paimon's manifest merge (sizes in bytes)."""

    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    merge_min_count: int = DEFAULT_MERGE_MIN_COUNT
    full_compaction_threshold: int = DEFAULT_FULL_COMPACTION_THRESHOLD

    def __post_init__(self) -> None:
        for key, value, low in (
            (TARGET_FILE_SIZE, self.target_file_size, 1),
            (MERGE_MIN_COUNT, self.merge_min_count, 1),
            (FULL_COMPACTION_THRESHOLD, self.full_compaction_threshold, 1),
        ):
            if value < low:
                raise InvalidArgumentError(f"{key} must be at least {low}, got {value}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> MergeOptions:
        """From table options (``table.options.options.to_map()`` or a plain dict).

        A value that does not parse is an error naming the option: a table option that
        is silently ignored would let the metadata grow without anyone noticing.
        """
        return cls(
            target_file_size=_size(options, TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE),
            merge_min_count=_count(options, MERGE_MIN_COUNT, DEFAULT_MERGE_MIN_COUNT),
            full_compaction_threshold=_size(
                options, FULL_COMPACTION_THRESHOLD, DEFAULT_FULL_COMPACTION_THRESHOLD
            ),
        )

    @classmethod
    def of_table(cls, table: Any, overrides: Mapping[str, Any] | None = None) -> MergeOptions:
        options = dict(table_options(table))
        options.update({k: v for k, v in dict(overrides or {}).items() if v is not None})
        return cls.from_options(options)

    def forced_full(self) -> MergeOptions:
        """Java's ``compactManifest``: min count 1, full-compaction threshold 1 byte."""
        return MergeOptions(self.target_file_size, 1, 1)


def table_options(table: Any) -> dict[str, str]:
    """The table's options as a plain ``{key: value}`` dict."""
    opts = getattr(table, "options", None)
    inner = getattr(opts, "options", None)
    to_map = getattr(inner, "to_map", None)
    if to_map is not None:
        return {str(k): str(v) for k, v in to_map().items()}
    schema = getattr(table, "table_schema", None)
    return {str(k): str(v) for k, v in dict(getattr(schema, "options", {}) or {}).items()}


def _size(options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key)
    if value is None or not str(value).strip():
        return default
    try:
        return int(MemorySize.parse(str(value).strip()).get_bytes())
    except Exception:  # noqa: BLE001 - any parse failure is the same user error
        raise InvalidArgumentError(
            f"table option {key!r} must be a size such as '8 mb', got {value!r}; "
            f"fix it with ALTER TABLE ... SET ('{key}' = '8 mb')"
        ) from None


def _count(options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key)
    if value is None or not str(value).strip():
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(
            f"table option {key!r} must be a whole number, got {value!r}; "
            f"fix it with ALTER TABLE ... SET ('{key}' = '30')"
        ) from None


@dataclass
class MergedManifests:
    """A merged manifest list and which of its files the merge wrote."""

    metas: list[Any]  # ManifestFileMeta, in order
    written: list[str] = field(default_factory=list)  # new manifest file names
    kind: str = "none"  # "none", "minor" or "full"
    entries_in: int = 0  # entries read by the merge (ADD and DELETE)
    entries_out: int = 0  # entries written by the merge

    @property
    def changed(self) -> bool:
        return bool(self.written) or self.kind != "none"


def entry_identifier(entry: Any) -> tuple:
    """Paimon's ``FileEntry.Identifier``: what makes an ADD and a DELETE the same file."""
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


class _Item(NamedTuple):
    """One manifest entry as the merge sees it, whichever reader read it."""

    kind: int
    key: tuple  # FileEntry.Identifier (the partition as values or as its bytes, per reader)
    partition: tuple  # partition values
    name: str  # data file name (for messages)
    payload: Any  # what the writer needs: pypaimon's ManifestEntry or the record's bytes
    raw: Any = None  # manifest_reader.RawEntry (fast reader only)


class _Fallback(Exception):  # noqa: N818 - a signal, not an error
    """The fast reader cannot copy this table's manifests; use pypaimon's."""


class _Io:
    """pypaimon's manifest reader and writer: any manifest pypaimon reads."""

    def __init__(self, table: Any, max_workers: int = 4) -> None:
        self.table = table
        self.files = ManifestFileManager(table)
        self.max_workers = max_workers

    def read(self, meta: Any) -> list[_Item]:
        entries = self.files.read(meta.file_name, drop_stats=False, file_size=meta.file_size)
        out = []
        for e in entries:
            key = entry_identifier(e)
            out.append(_Item(e.kind, key, key[0], e.file.file_name, e))
        return out

    def read_many(self, metas: list[Any]) -> Iterator[list[_Item]]:
        """Entries of each manifest, in order (a few read ahead in threads)."""
        if len(metas) <= 1 or self.max_workers <= 1:
            for meta in metas:
                yield self.read(meta)
            return
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            yield from pool.map(self.read, metas)

    def write(self, items: list[_Item], target: int, written: list[str]) -> list[Any]:
        if not items:
            return []
        metas = self.files.rolling_write([i.payload for i in items], target, f"manifest-{uuid.uuid4()}")
        written.extend(m.file_name for m in metas)
        return list(metas)

    def delete(self, names: Iterable[str]) -> None:
        for name in names:
            self.files.file_io.delete_quietly(f"{self.files.manifest_path}/{name}")

    def concat(self, metas: list[Any], target: int, written: list[str]) -> list[Any] | None:
        """Manifests holding ``metas``' entries in order, without reading entries (None: cannot)."""
        return None


class _FastIo(_Io):
    """Reads with ``manifest_reader`` and writes merged manifests by copying the live
    records' bytes (no decode into objects, no encode): a merge costs a few us per
    entry instead of ~90. Used while every manifest shares one writer schema and codec;
    anything else raises ``_Fallback`` and the merge runs again with pypaimon's I/O.
    """

    def __init__(self, table: Any, max_workers: int = 1) -> None:
        super().__init__(table, max_workers)
        self.schema: Any = None
        self.codec: str | None = None
        self._partitions: dict[bytes, tuple] = {}

    def read(self, meta: Any) -> list[_Item]:
        data = read_bytes(self.table.file_io, f"{self.files.manifest_path}/{meta.file_name}", meta.file_size)
        raw = read_raw(data)
        if raw is None or raw.codec not in WRITABLE_CODECS:
            raise _Fallback(meta.file_name)
        if self.schema is None:
            self.schema, self.codec = raw.schema, raw.codec
        elif raw.schema != self.schema or raw.codec != self.codec:
            raise _Fallback(meta.file_name)
        out = []
        for e, record in raw.records:
            # keyed by partition values, as pypaimon's reader keys them: two writers may
            # serialize one partition to different bytes
            values = self._values(e.partition)
            key = (values, e.bucket, e.level, e.file_name, e.extra_files, e.embedded_index, e.external_path)
            out.append(_Item(e.kind, key, values, e.file_name, record, e))
        return out

    def _values(self, raw: bytes) -> tuple:
        found = self._partitions.get(raw)
        if found is None:
            from pypaimon.table.row.generic_row import GenericRowDeserializer

            found = tuple(GenericRowDeserializer.from_bytes(raw, self.table.partition_keys_fields).values)
            self._partitions[raw] = found
        return found

    def write(self, items: list[_Item], target: int, written: list[str]) -> list[Any]:
        if not items:
            return []
        prefix = f"manifest-{uuid.uuid4()}"
        metas = []
        for n, (data, start, end) in enumerate(
            encode_manifests(self.schema, str(self.codec), [i.payload for i in items], target,
                             partitions=[i.raw.partition for i in items])
        ):
            name = f"{prefix}-{n}"
            path = f"{self.files.manifest_path}/{name}"
            written.append(name)
            with self.table.file_io.new_output_stream(path) as out:
                out.write(data)
            metas.append(self._meta(name, len(data), items[start:end]))
        return metas

    def concat(self, metas: list[Any], target: int, written: list[str]) -> list[Any] | None:
        """Append-only groups (no DELETE anywhere): their Avro blocks copied as stored, and
        each new file's meta combined from its inputs' metas; no entry is decoded, so a
        merge of a table's small manifests costs what copying their bytes costs. Files of
        another schema or codec are not concatenated. (Java's merge also refuses a data
        file listed twice; concatenation keeps such an already broken list as it is.)"""
        datas = [read_bytes(self.table.file_io, f"{self.files.manifest_path}/{m.file_name}", m.file_size)
                 for m in metas]
        try:
            pieces = list(concat_manifests(datas, target))
        except ValueError:
            return None
        prefix = f"manifest-{uuid.uuid4()}"
        out = []
        for n, (data, start, end) in enumerate(pieces):
            name = f"{prefix}-{n}"
            written.append(name)
            with self.table.file_io.new_output_stream(f"{self.files.manifest_path}/{name}") as stream:
                stream.write(data)
            out.append(_combined_meta(name, len(data), metas[start:end]))
        return out

    def _meta(self, name: str, size: int, items: list[_Item]) -> Any:
        """The ``ManifestFileMeta`` pypaimon's writer would compute for these entries."""
        from pypaimon.manifest.schema.manifest_file_meta import ManifestFileMeta
        from pypaimon.manifest.schema.simple_stats import SimpleStats
        from pypaimon.table.row.generic_row import GenericRow

        raws = [i.raw for i in items]
        fields = self.table.partition_keys_fields
        columns = list(zip(*(i.partition for i in items), strict=True)) if fields else []
        total = raws[0].total_buckets
        if total is None or total <= 0 or any(r.total_buckets != total for r in raws):
            total = None
        min_row = max_row = None
        if all(r.first_row_id is not None for r in raws):
            min_row = min(r.first_row_id for r in raws)
            max_row = max(r.first_row_id + r.row_count - 1 for r in raws)
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=sum(1 for r in raws if r.kind == KIND_ADD),
            num_deleted_files=sum(1 for r in raws if r.kind != KIND_ADD),
            partition_stats=SimpleStats(
                min_values=GenericRow([min((v for v in c if v is not None), default=None) for c in columns], fields),
                max_values=GenericRow([max((v for v in c if v is not None), default=None) for c in columns], fields),
                null_counts=[sum(1 for v in c if v is None) for c in columns],
            ),
            schema_id=max(r.schema_id for r in raws),
            min_bucket=min(r.bucket for r in raws),
            max_bucket=max(r.bucket for r in raws),
            min_level=min(r.level for r in raws),
            max_level=max(r.level for r in raws),
            min_row_id=min_row,
            max_row_id=max_row,
            total_buckets=total,
        )


def _combined_meta(name: str, size: int, metas: list[Any]) -> Any:
    """The ``ManifestFileMeta`` of a file holding exactly the entries of ``metas``."""
    from pypaimon.manifest.schema.manifest_file_meta import ManifestFileMeta
    from pypaimon.manifest.schema.simple_stats import SimpleStats
    from pypaimon.table.row.generic_row import GenericRow

    first = metas[0].partition_stats
    fields = getattr(first.min_values, "fields", None) or []
    arity = len(fields)

    def column(i: int, which: str) -> list[Any]:
        return [v for m in metas if (v := getattr(m.partition_stats, which).get_field(i)) is not None]

    def edge(values: list, pick: Any) -> Any:
        return pick(values) if values else None

    nulls = [sum(int((m.partition_stats.null_counts or [0] * arity)[i] or 0) for m in metas) for i in range(arity)]

    def opt(values: list, pick: Any) -> Any:
        return None if any(v is None for v in values) else pick(values)

    totals = {m.total_buckets for m in metas}
    return ManifestFileMeta(
        file_name=name,
        file_size=size,
        num_added_files=sum(m.num_added_files for m in metas),
        num_deleted_files=0,
        partition_stats=SimpleStats(
            min_values=GenericRow([edge(column(i, "min_values"), min) for i in range(arity)], fields),
            max_values=GenericRow([edge(column(i, "max_values"), max) for i in range(arity)], fields),
            null_counts=nulls,
        ),
        schema_id=max(m.schema_id for m in metas),
        min_bucket=opt([m.min_bucket for m in metas], min),
        max_bucket=opt([m.max_bucket for m in metas], max),
        min_level=opt([m.min_level for m in metas], min),
        max_level=opt([m.max_level for m in metas], max),
        min_row_id=opt([m.min_row_id for m in metas], min),
        max_row_id=opt([m.max_row_id for m in metas], max),
        total_buckets=totals.pop() if len(totals) == 1 else None,
    )


def merge(table: Any, manifests: list[Any], options: MergeOptions | None = None,
          io: _Io | None = None, cluster: bool = False) -> MergedManifests:
    """``ManifestFileMerger.merge``: full compaction if it triggers, else minor compaction.

    ``manifests`` is a snapshot's base + delta list, in order. On any error the files
    this call wrote are deleted before the error propagates (Java's ``newFilesForAbort``).
    """
    options = options or MergeOptions.of_table(table)
    ios = [io] if io is not None else [_FastIo(table), _Io(table)]
    for n, each in enumerate(ios):
        written: list[str] = []
        try:
            full = _try_full_compaction(table, manifests, options, each, written, cluster)
            if full is not None:
                return full
            return _minor_compaction(manifests, options, each, written)
        except _Fallback:
            each.delete(written)
            if n + 1 == len(ios):
                raise
        except BaseException:
            each.delete(written)
            raise
    raise AssertionError("unreachable")


def full_compaction(table: Any, manifests: list[Any], options: MergeOptions | None = None,
                    io: _Io | None = None) -> MergedManifests:
    """Java's ``compactManifest``: merge with both thresholds forced to 1.

    The rewritten entries are written sorted by partition (and bucket), so the new
    manifests' partition statistics let a filtered plan skip most of them.
    """
    options = (options or MergeOptions.of_table(table)).forced_full()
    return merge(table, manifests, options, io, cluster=True)


def _must_change(meta: Any, target: int) -> bool:
    return bool(meta.num_deleted_files) or meta.file_size < target


def _try_full_compaction(table: Any, inputs: list[Any], options: MergeOptions, io: _Io,
                         written: list[str], cluster: bool = False) -> MergedManifests | None:
    """``ManifestFileMerger.tryFullCompaction``; None when it does not trigger."""
    target = options.target_file_size
    delta_size = sum(m.file_size for m in inputs if _must_change(m, target))
    if delta_size < options.full_compaction_threshold:
        return None

    # 2.1 every DELETE entry of the list (only manifests that hold one are read)
    deleted: set[tuple] = set()
    partitions: set[tuple] = set()
    entries_in = 0
    with_deletes = [m for m in inputs if m.num_deleted_files]
    for entries in io.read_many(with_deletes):
        entries_in += len(entries)
        for e in entries:
            if e.kind != KIND_ADD:
                deleted.add(e.key)
                partitions.add(e.partition)

    # 2.2 manifests no delete can touch (by their partition statistics) are kept
    unpartitioned = not table.partition_keys
    result: list[Any] = []
    to_merge: list[Any] = []
    for meta in inputs:
        if _must_change(meta, target):
            to_merge.append(meta)
        elif not deleted or (not unpartitioned and not _may_hold_any(meta, partitions)):
            result.append(meta)
        else:
            to_merge.append(meta)
    if len(to_merge) <= 1:
        return None

    # 2.3 rewrite: every ADD no DELETE cancels, DELETEs dropped; untouched full ones kept
    pending: list[Any] = []
    new_metas: list[Any] = []
    entries_out = 0
    for meta, entries in zip(to_merge, io.read_many(to_merge), strict=True):
        if not meta.num_deleted_files:
            entries_in += len(entries)
        require = _must_change(meta, target)
        live = []
        for e in entries:
            if e.kind != KIND_ADD:
                continue
            if e.key in deleted:
                require = True
            else:
                live.append(e)
        if not require:
            result.append(meta)
            continue
        pending.extend(live)
        entries_out += len(live)
    if cluster:
        # entries of one partition side by side: each new manifest covers a narrow
        # partition range, so a plan of a few partitions skips most manifests by the
        # list's partition statistics (what Java's manifest-sort does)
        pending.sort(key=lambda e: (tuple((v is None, v) for v in e.partition), e.key[1]))
    new_metas = io.write(pending, target, written)
    return MergedManifests(result + new_metas, list(written), "full", entries_in, entries_out)


def _minor_compaction(inputs: list[Any], options: MergeOptions, io: _Io,
                      written: list[str]) -> MergedManifests:
    """``ManifestFileMerger.tryMinorCompaction``."""
    result: list[Any] = []
    candidates: list[Any] = []
    total = 0
    stats = {"in": 0, "out": 0}
    merged_any = False

    def merge_candidates(group: list[Any]) -> None:
        nonlocal merged_any
        if len(group) == 1:
            result.append(group[0])
            return
        merged_any = True
        if not any(m.num_deleted_files for m in group):
            # nothing can cancel: Java's merge is the entries in order (duplicates aside)
            concatenated = io.concat(group, options.target_file_size, written)
            if concatenated is not None:
                stats["in"] += sum(m.num_added_files for m in group)
                stats["out"] += sum(m.num_added_files for m in group)
                result.extend(concatenated)
                return
        entries = _merge_entries(e for batch in io.read_many(group) for e in _count_in(batch, stats))
        stats["out"] += len(entries)
        result.extend(io.write(entries, options.target_file_size, written))

    for meta in inputs:
        total += meta.file_size
        candidates.append(meta)
        if total >= options.target_file_size:
            merge_candidates(candidates)
            candidates = []
            total = 0
    if len(candidates) >= options.merge_min_count:
        merge_candidates(candidates)
    else:
        result.extend(candidates)
    kind = "minor" if merged_any else "none"
    return MergedManifests(result, list(written), kind, stats["in"], stats["out"])


def _count_in(entries: list[Any], stats: dict[str, int]) -> list[Any]:
    stats["in"] += len(entries)
    return entries


def _merge_entries(entries: Iterable[Any]) -> list[Any]:
    """``FileEntry.mergeEntries``: an ADD and a later DELETE of one file cancel out.

    A DELETE whose ADD is in an earlier manifest is kept; a second ADD of the same
    file is an error, as in Java (the table would list the file twice).
    """
    out: dict[tuple, Any] = {}
    for e in entries:
        key = e.key
        if e.kind == KIND_ADD:
            if key in out:
                raise RuntimeError(
                    f"Trying to add file {e.name} which is already added "
                    "(the manifests list it twice); refusing to merge them"
                )
            out[key] = e
        elif key in out:
            del out[key]
        else:
            out[key] = e
    return list(out.values())


def _may_hold_any(meta: Any, partitions: set[tuple]) -> bool:
    """Java's ``PartitionPredicate.fromMultiple(...).test(stats)`` for ``partitions``.

    As in Java, the deleted partitions are reduced to a per-field range (min, max,
    whether a null is among them) and the manifest is kept only if its partition
    statistics cannot overlap that range on some field.
    """
    stats = meta.partition_stats
    if stats is None or not partitions:
        return True
    arity = len(next(iter(partitions)))
    try:
        lows = [stats.min_values.get_field(i) for i in range(arity)]
        highs = [stats.max_values.get_field(i) for i in range(arity)]
        nulls = list(stats.null_counts or [None] * arity)
    except Exception:  # noqa: BLE001 - unreadable statistics: it may hold them
        return True
    for i in range(arity):
        values = [p[i] for p in partitions]
        present = [v for v in values if v is not None]
        has_null_part = len(present) < len(values)
        may_null = nulls[i] is None or nulls[i] > 0
        if not present:
            if not may_null:
                return False
            continue
        try:
            overlap = (highs[i] is None or highs[i] >= min(present)) and (
                lows[i] is None or lows[i] <= max(present)
            )
        except TypeError:
            overlap = True
        if not overlap and not (has_null_part and may_null):
            return False
    return True


def merge_manifests(table: Any, manifests: list[Any], target_size: int | None = None) -> MergedManifests:
    """Full compaction of ``manifests`` (Java's ``compactManifest`` rules).

    Kept for callers that always want the list compacted (COMPACT commits, the
    ``compact_manifest`` operation): returns the input unchanged when there is nothing
    to gain (no DELETE entry and at most one manifest to rewrite).
    """
    options = MergeOptions.of_table(table)
    if target_size is not None:
        options = MergeOptions(int(target_size), options.merge_min_count,
                               options.full_compaction_threshold)
    if not manifests:
        return MergedManifests(metas=[])
    return full_compaction(table, manifests, options)
