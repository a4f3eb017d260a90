"""Manifests that name each block's partition, so a filtered plan reads only its blocks.

The manifests this package writes carry, in the Avro header's metadata, the single
partition each block holds (or "mixed"). A plan filtered on partitions skips the other
partitions' blocks without decompressing them: with ``compact_manifest``'s
partition-sorted manifests a plan of one partition reads that partition's blocks, not
the whole manifest. Checked here: the recorded partition is exact for every block;
plans with partition filters equal pypaimon's (the reference); only the selected and
mixed blocks are decompressed; plain pypaimon and pypaimon-rust read the table as
before; concatenating manifests carries the record over; a value this reader does not
know is ignored (every entry is read and tested, as for a file without one).
"""

from __future__ import annotations

import pytest
from independent_reader import read_rows, require
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_provider_paimon.paimon import manifest_reader
from airflow_provider_paimon.paimon.compaction.manifest_compaction import compact_manifest
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot
from airflow_provider_paimon.paimon.manifest_reader import (
    BLOCK_PARTITIONS_KEY,
    build_container,
    concat_manifests,
    decode_manifest,
    encode_manifests,
    read_container,
    read_raw,
)
from airflow_provider_paimon.paimon.merging_commit import merging_commit

from .helpers import batch, make_table, reload, row_multiset, same_plan

PARTITIONS = ("a", "b", "c", "d")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few entries, so a small table's manifest has blocks of every kind."""
    monkeypatch.setattr(manifest_reader, "BLOCK_BYTES", 600)


def _commit(warehouse, start, merging):
    builder = reload(warehouse).new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    if merging:
        commit = merging_commit(commit)
    try:
        write.write_arrow(batch(start, 8, partitions=PARTITIONS))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def _manifest_bytes(warehouse):
    table = reload(warehouse)
    folder = ManifestFileManager(table).manifest_path
    metas = ManifestListManager(table).read_all(latest_snapshot(table))
    out = []
    for meta in metas:
        with open(f"{folder}/{meta.file_name}".removeprefix("file://"), "rb") as f:
            out.append(f.read())
    return out


def _entries(data, accept=None):
    return [e for block in decode_manifest(data, accept) for e in block]


def _sorted_table(warehouse):
    make_table(warehouse, options={"metadata.stats-mode": "full"})
    for i in range(15):
        _commit(warehouse, i * 8, merging=False)
    rows = row_multiset(reload(warehouse))
    assert compact_manifest(reload(warehouse)).committed
    return rows


def test_sorted_manifests_name_each_blocks_partition_and_filtered_plans_match(warehouse, small_blocks):
    require()
    rows = _sorted_table(warehouse)
    [data] = _manifest_bytes(warehouse)
    container = read_container(data)
    tags = container.block_partitions()
    assert tags is not None and len(tags) == len(container.blocks) > len(PARTITIONS)
    singles = [t for t in tags if t is not None]
    assert len(singles) > len(tags) // 2, "partition-sorted entries make most blocks single-partition"
    # exact: every entry of a block named for a partition has that partition
    for block, tag in zip(container.blocks, tags, strict=True):
        one = build_container(
            {k: v for k, v in container.metadata.items() if k != BLOCK_PARTITIONS_KEY}, container.sync, [block])
        parts = {e.partition for e in _entries(one)}
        if tag is not None:
            assert parts == {tag}
    # filtered plans equal pypaimon's
    for text in (None, "p = 'a'", "p IN ('b', 'd')", "p > 'b'", "p = 'zz'", "id < 20 AND p = 'c'", "id > 100"):
        same_plan(warehouse, text)
    # other readers read the same rows
    assert row_multiset(reload(warehouse)) == rows
    assert read_rows(warehouse) == rows


def test_a_filtered_read_decompresses_only_its_blocks(warehouse, small_blocks, monkeypatch):
    _sorted_table(warehouse)
    [data] = _manifest_bytes(warehouse)
    container = read_container(data)
    tags = container.block_partitions()
    wanted = next(t for t in tags if t is not None)
    calls = []
    real = manifest_reader._decompress
    monkeypatch.setattr(manifest_reader, "_decompress", lambda codec, b: calls.append(1) or real(codec, b))
    got = _entries(data, accept=lambda p: p == wanted)
    assert len(calls) == sum(1 for t in tags if t is None or t == wanted) < len(tags)
    assert got == [e for e in _entries(data) if e.partition == wanted]


def test_merging_commits_after_compact_manifest_keep_plans_and_rows(warehouse, small_blocks):
    """Minor merges concatenate the sorted file's blocks with later ones (block records carried)."""
    require()
    _sorted_table(warehouse)
    for i in range(40):
        _commit(warehouse, 1000 + i * 8, merging=True)
    table = reload(warehouse)
    rows = row_multiset(table)
    assert read_rows(warehouse) == rows
    for text in (None, "p = 'a'", "p IN ('b', 'd')", "id < 20 AND p = 'c'"):
        same_plan(warehouse, text)


def test_concatenation_carries_each_blocks_partition(warehouse, small_blocks):
    _sorted_table(warehouse)
    [data] = _manifest_bytes(warehouse)
    raw = read_raw(data)
    records = [r for _e, r in raw.records]
    partitions = [e.partition for e, _r in raw.records]
    [(indexed, _, _)] = encode_manifests(raw.schema, raw.codec, records, 1 << 30, partitions=partitions)
    [(plain, _, _)] = encode_manifests(raw.schema, raw.codec, records, 1 << 30)
    assert BLOCK_PARTITIONS_KEY not in read_container(plain).metadata
    [(both, _, _)] = concat_manifests([indexed, plain], 1 << 30)
    tags = read_container(both).block_partitions()
    assert tags == read_container(indexed).block_partitions() + [None] * len(read_container(plain).blocks)
    wanted = partitions[0]
    expected = [e for e in _entries(indexed) + _entries(plain) if e.partition == wanted]
    assert _entries(both, accept=lambda p: p == wanted) == expected
    # plain files concatenated stay plain (the header is the one they had)
    [(plains, _, _)] = concat_manifests([plain, plain], 1 << 30)
    assert BLOCK_PARTITIONS_KEY not in read_container(plains).metadata


@pytest.mark.parametrize("value", [b"not base64!", b"BAA=", b"AgA=", b""])
def test_a_block_partitions_value_this_reader_does_not_know_is_ignored(warehouse, small_blocks, value):
    """Garbage, another version (2), a list of another length than the file's blocks (0)
    or an empty value: every entry is read and tested, as in a file without one."""
    _sorted_table(warehouse)
    [data] = _manifest_bytes(warehouse)
    container = read_container(data)
    wanted = next(t for t in container.block_partitions() if t is not None)
    changed = build_container(dict(container.metadata, **{BLOCK_PARTITIONS_KEY: value}),
                              container.sync, container.blocks)
    assert read_container(changed).block_partitions() in (None, [])
    assert _entries(changed, accept=lambda p: p == wanted) == _entries(data, accept=lambda p: p == wanted)
