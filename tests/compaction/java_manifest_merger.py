"""Paimon Java's ``ManifestFileMerger`` (release-2.0, non-sorting path), transcribed.

The reference the manifest-merge tests compare ``paimon.manifests.merge`` with. It is
written from the Java source, method by method, and shares no code with the module
under test: it reads entries through a callable, and instead of writing manifests it
returns what Java would put in the new list, in order:

* ``("keep", file_name)``: an input manifest kept as it is;
* ``("write", [entries])``: entries Java hands to its (rolling) manifest writer.

Java sources: ``paimon-core/.../operation/ManifestFileMerger.java`` (``merge``,
``tryMinorCompaction``, ``mergeCandidates``, ``tryFullCompaction``,
``readForFullCompaction``), ``FileEntry.mergeEntries`` / ``readDeletedEntries`` and
``PartitionPredicate.MultiplePartitionPredicate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ADD, DELETE = 0, 1


def identifier(e: Any) -> tuple:
    """``FileEntry.identifier()``: partition, bucket, level, file name, extra files,
    embedded index, external path."""
    f = e.file
    return (tuple(e.partition.values), e.bucket, f.level, f.file_name,
            tuple(f.extra_files or ()), f.embedded_index, f.external_path)


def merge(inputs: list[Any], read: Callable[[Any], list[Any]], suggested_meta_size: int,
          suggested_min_meta_count: int, manifest_full_compaction_size: int,
          partitioned: bool) -> list[tuple]:
    """``ManifestFileMerger.merge``: tryFullCompaction, orElseGet tryMinorCompaction."""
    full = try_full_compaction(inputs, read, suggested_meta_size,
                               manifest_full_compaction_size, partitioned)
    if full is not None:
        return full
    return try_minor_compaction(inputs, read, suggested_meta_size, suggested_min_meta_count)


def try_minor_compaction(inputs, read, suggested_meta_size, suggested_min_meta_count):
    result: list[tuple] = []
    candidates: list[Any] = []
    total_size = 0
    # merge existing small manifest files
    for manifest in inputs:
        total_size += manifest.file_size
        candidates.append(manifest)
        if total_size >= suggested_meta_size:
            # reach suggested file size, perform merging and produce new file
            merge_candidates(candidates, read, result)
            candidates = []
            total_size = 0
    # merge the last bit of manifests if there are too many
    if len(candidates) >= suggested_min_meta_count:
        merge_candidates(candidates, read, result)
    else:
        result.extend(("keep", m.file_name) for m in candidates)
    return result


def merge_candidates(candidates, read, result):
    if len(candidates) == 1:
        result.append(("keep", candidates[0].file_name))
        return
    merged: dict[tuple, Any] = {}  # LinkedHashMap
    for manifest in candidates:
        merge_entries(read(manifest), merged)
    if merged:
        result.append(("write", list(merged.values())))


def merge_entries(entries, map_):
    """``FileEntry.mergeEntries(Iterable, Map)``."""
    for entry in entries:
        key = identifier(entry)
        if entry.kind == ADD:
            assert key not in map_, f"Trying to add file {key} which is already in the map"
            map_[key] = entry
        elif key in map_:
            del map_[key]
        else:
            map_[key] = entry


def try_full_compaction(inputs, read, suggested_meta_size, size_trigger, partitioned):
    assert size_trigger > 0, "Manifest full compaction size trigger cannot be zero."

    # 1. should trigger full compaction
    def must_change(file):
        return file.num_deleted_files > 0 or file.file_size < suggested_meta_size

    total_delta_file_size = sum(f.file_size for f in inputs if must_change(f))
    if total_delta_file_size < size_trigger:
        return None

    # 2.1. read all delete entries
    delete_entries = {
        identifier(e)
        for f in inputs if f.num_deleted_files > 0
        for e in read(f) if e.kind == DELETE
    }

    # 2.2. try to skip base files by partition filter
    if not delete_entries:
        predicate = lambda file: False  # noqa: E731 - PartitionPredicate.ALWAYS_FALSE
    elif partitioned:
        predicate = multiple_partition_predicate({k[0] for k in delete_entries})
    else:
        predicate = lambda file: True  # noqa: E731 - PartitionPredicate.ALWAYS_TRUE

    result: list[tuple] = []
    to_be_merged = list(inputs)
    kept = []
    for file in to_be_merged:
        if must_change(file):
            continue
        if not predicate(file):
            kept.append(file)
            result.append(("keep", file.file_name))
    to_be_merged = [f for f in to_be_merged if f not in kept]

    # 2.2. merge
    if len(to_be_merged) <= 1:
        return None
    written: list[Any] = []
    for file in to_be_merged:
        # readForFullCompaction: ADD entries only (FileEntry.addFilter())
        require_change = must_change(file)
        entries = []
        for entry in read(file):
            if entry.kind != ADD:
                continue
            if identifier(entry) in delete_entries:
                require_change = True
            else:
                entries.append(entry)
        if require_change:
            written.extend(entries)
        else:
            result.append(("keep", file.file_name))
    if written:
        result.append(("write", written))
    return result


def multiple_partition_predicate(partitions):
    """``PartitionPredicate.fromMultiple(type, partitions).test(rowCount, min, max, nulls)``."""
    field_num = len(next(iter(partitions)))
    tests = []
    for i in range(field_num):
        values = [p[i] for p in partitions]
        present = [v for v in values if v is not None]
        null_count = len(values) - len(present)
        if null_count == len(partitions):
            tests.append(("is_null", i, None, None))
        else:
            tests.append(("range", i, min(present), max(present), null_count > 0))

    def test(file):
        stats = file.partition_stats
        nulls = list(stats.null_counts or [])
        for t in tests:
            i = t[1]
            low, high = stats.min_values.get_field(i), stats.max_values.get_field(i)
            is_null = nulls[i] is None or nulls[i] > 0
            if t[0] == "is_null":
                if not is_null:
                    return False
                continue
            _, _, dmin, dmax, or_null = t
            ge = high is None or high >= dmin  # greaterOrEqual(i, min) on the stats
            le = low is None or low <= dmax  # lessOrEqual(i, max) on the stats
            if or_null:
                ge, le = ge or is_null, le or is_null
            if not (ge and le):
                return False
        return True

    return test
