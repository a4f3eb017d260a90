"""``paimon.manifests.merge`` against Paimon Java's ManifestFileMerger, transcribed.

Real manifests (written by pypaimon commits, COMPACT commits and overwrites on a real
table) are merged by our module and by the line-by-line transcription of Java's rules
in ``java_manifest_merger.py``; both must produce the same list: the same manifests
kept in the same places and the same entries, in the same order, where Java writes new
ones. Random tables and random option values cover minor merges, full compactions,
partition skipping and DELETE entries whose ADD is in an earlier manifest.
"""

from __future__ import annotations

import random

import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_provider_paimon.paimon.compaction.commit import CompactChange, commit_compaction
from airflow_provider_paimon.paimon.compaction.rewrite import FILE_SOURCE_COMPACT, rewrite_files
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.manifests import MergeOptions, full_compaction, merge
from airflow_provider_paimon.paimon.merging_commit import merging_commit

from . import java_manifest_merger as java
from .helpers import append, batch, make_table, overwrite_partition, reload, row_multiset


def _read(table):
    files = ManifestFileManager(table)
    return lambda meta: files.read(meta.file_name, drop_stats=False, file_size=meta.file_size)


def _normalise(items):
    """Consecutive ``write`` items as one (Java's writer rolls; so does ours)."""
    out: list[tuple] = []
    for kind, value in items:
        if kind == "write":
            ids = [(e.kind, java.identifier(e)) for e in value]
            if out and out[-1][0] == "write":
                out[-1][1].extend(ids)
            else:
                out.append(("write", ids))
        else:
            out.append(("keep", value))
    return out


def _ours(table, result, read):
    written = set(result.written)
    return _normalise(
        ("write", read(m)) if m.file_name in written else ("keep", m.file_name) for m in result.metas
    )


def _compare(table, options: MergeOptions):
    metas = ManifestListManager(table).read_all(latest_snapshot(table))
    read = _read(table)
    expected = _normalise(java.merge(
        metas, read, options.target_file_size, options.merge_min_count,
        options.full_compaction_threshold, bool(table.partition_keys),
    ))
    result = merge(table, metas, options)
    try:
        assert _ours(table, result, read) == expected, (options, [m.file_name for m in metas])
        # the merged list lists the same live files as the input
        live_in = {java.identifier(e) for e in _live(metas, read)}
        live_out = {java.identifier(e) for e in _live(result.metas, read)}
        assert live_out == live_in
    finally:
        for name in result.written:
            table.file_io.delete_quietly(f"{table.table_path.rstrip('/')}/manifest/{name}")
    KINDS.append(result.kind)
    return expected


KINDS: list[str] = []  # what the merges compared did (the random tests check they varied)


def _live(metas, read):
    state: dict[tuple, object] = {}
    for m in metas:
        for e in read(m):
            if e.kind == java.ADD:
                state[java.identifier(e)] = e
            else:
                state.pop(java.identifier(e), None)
    return list(state.values())


def _compact_partition(table, partition: str):
    """A COMPACT commit of one partition's files (its deletes are not folded)."""
    key = (partition,) if table.partition_keys else ()
    entries = [e for e in live_entries(table, latest_snapshot(table)) if tuple(e.partition.values) == key]
    if len(entries) < 2:
        return
    files = [e.file for e in entries]
    new = rewrite_files(table, key, 0, files, 1 << 30, FILE_SOURCE_COMPACT, "data-test-")
    commit_compaction(table, [CompactChange(key, 0, entries[0].total_buckets, files, new)], fold=False)


def test_minor_merge_of_small_manifests_matches_java(warehouse):
    table = make_table(warehouse)
    for i in range(7):
        append(table, batch(i * 10, 10))
    table = reload(warehouse)
    expected = _compare(table, MergeOptions(target_file_size=1 << 20, merge_min_count=5,
                                            full_compaction_threshold=1 << 30))
    assert [k for k, _ in expected] == ["write"]  # seven small ones -> one
    # fewer than merge-min-count at the tail: Java leaves them, so do we
    expected = _compare(table, MergeOptions(target_file_size=1 << 20, merge_min_count=8,
                                            full_compaction_threshold=1 << 30))
    assert [k for k, _ in expected] == ["keep"] * 7


def test_full_compaction_drops_deletes_and_keeps_untouched_partitions(warehouse):
    table = make_table(warehouse, options={"target-file-size": "1mb"})
    for i in range(4):
        append(table, batch(i * 100, 30, partitions=("a",)))
    # one merged manifest of partition 'a' (the largest, the target below)
    table = reload(warehouse)
    commit = merging_commit(table.new_batch_write_builder().new_commit(),
                            {"manifest.merge-min-count": "2", "manifest.target-file-size": "20kb"})
    write = table.new_batch_write_builder().new_write()
    write.write_arrow(batch(1000, 30, partitions=("a",)))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    for i in range(3):
        append(reload(warehouse), batch(2000 + i * 10, 10, partitions=("b",)))
    overwrite_partition(reload(warehouse), "b", 3000, rows=5)  # DELETE entries for every file of 'b'
    table = reload(warehouse)
    metas = ManifestListManager(table).read_all(latest_snapshot(table))
    merged_a = [m for m in metas if m.num_added_files == 4]
    assert len(merged_a) == 1  # the merging commit merged the four earlier appends
    target = merged_a[0].file_size  # ... the one "full" manifest of this list
    expected = _compare(table, MergeOptions(target, 30, 1))
    assert expected[0][0] == "keep"  # partition 'a' is untouched by the deletes: kept
    assert all(k == "keep" for k, _ in expected[:-1]) and expected[-1][0] == "write"
    assert all(kind == java.ADD for kind, _ in expected[-1][1])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_tables_and_options_match_java(warehouse, seed):
    rng = random.Random(seed)
    table = make_table(warehouse, partitioned=seed != 3, options={"target-file-size": "1mb"})
    parts = ("a", "b", "c") if seed != 3 else ("a",)
    next_id = 0
    compared = 0
    KINDS.clear()
    for step in range(40):
        table = reload(warehouse)
        action = rng.random()
        if action < 0.55:
            append(table, batch(next_id, rng.randint(1, 12), partitions=tuple(rng.sample(parts, rng.randint(1, len(parts))))))
        elif action < 0.7 and seed != 3:
            overwrite_partition(table, rng.choice(parts), next_id, rows=5)
        elif action < 0.85:
            _compact_partition(table, rng.choice(parts))
        else:  # a merging commit: merged manifests of all sizes appear in the list
            opts = {"manifest.merge-min-count": str(rng.randint(2, 6)),
                    "manifest.target-file-size": f"{rng.randint(1, 6)}kb",
                    "manifest.full-compaction-threshold-size": f"{rng.randint(1, 30)}kb"}
            commit = merging_commit(table.new_batch_write_builder().new_commit(), opts)
            write = table.new_batch_write_builder().new_write()
            write.write_arrow(batch(next_id, 4, partitions=parts))
            commit.commit(write.prepare_commit())
            write.close()
            commit.close()
        next_id += 20
        if step % 4 == 3:
            table = reload(warehouse)
            _compare(table, MergeOptions(rng.randint(1, 8) * 1024, rng.randint(1, 6),
                                         rng.choice([1, 2048, 8192, 1 << 30])))
            compared += 1
    assert compared == 10
    assert {"minor", "full"} <= set(KINDS), KINDS  # both of Java's paths were compared
    table = reload(warehouse)
    expected = row_multiset(table)
    merged = full_compaction(table, ManifestListManager(table).read_all(latest_snapshot(table)))
    assert all(m.num_deleted_files == 0 for m in merged.metas)
    for name in merged.written:
        table.file_io.delete_quietly(f"{table.table_path.rstrip('/')}/manifest/{name}")
    assert row_multiset(reload(warehouse)) == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"manifest.merge-min-count": "many"}, "'manifest.merge-min-count' must be a whole number"),
        ({"manifest.target-file-size": "big"}, "'manifest.target-file-size' must be a size"),
        ({"manifest.merge-min-count": "0"}, "manifest.merge-min-count must be at least 1"),
        ({"manifest.full-compaction-threshold-size": "0 b"}, "must be at least 1"),
    ],
)
def test_bad_merge_options_are_refused_and_nothing_is_committed(warehouse, options, message):
    table = make_table(warehouse)
    append(table, batch(0, 5))
    before = row_multiset(reload(warehouse))
    with pytest.raises(InvalidArgumentError, match=message):
        merging_commit(reload(warehouse).new_batch_write_builder().new_commit(), options)
    assert latest_snapshot(reload(warehouse)).id == 1 and row_multiset(reload(warehouse)) == before
