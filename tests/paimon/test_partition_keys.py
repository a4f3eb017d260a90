"""Partition keys of a commit, read from its delta manifests, against Paimon's own folders.

The reference for each snapshot is what plain pypaimon reads from the same delta
manifest list (its own Avro reader, not ours) and the directory on disk each of those
data files was written in: the key must be that directory, for ADD and DELETE entries,
for a DATE column, a string that needs escaping and the null partition.
"""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest
from pypaimon import Schema
from support.pypaimon_writes import commit_arrow, commit_rows

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partition_keys import (
    changed_partition_keys,
    delta_partitions,
    parse_partition_key,
    partition_key,
    partition_values,
)
from airflow_provider_paimon.paimon.partition_status import partition_status

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("region", pa.string())])
D3, D4 = dt.date(2026, 11, 3), dt.date(2026, 11, 4)


def make_table(warehouse, name="db.t", **options):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    options = {"target-file-size": "32kb", "compaction.min.file-num": "2", **options}
    catalog.create_table(
        name, Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt", "region"], options=options), False
    )
    return load_table(catalog, name)


@pytest.fixture
def table(warehouse):
    # readable DATE folders (Paimon's default legacy names write the day number)
    return make_table(warehouse, **{"partition.legacy-name": "false"})


def commit(table, rows, overwrite=None) -> int:
    return commit_rows(table, rows, SCHEMA, overwrite=overwrite)


def empty_partitions(table, partitions) -> int:
    """One OVERWRITE snapshot that leaves ``partitions`` empty (deletes, no adds)."""
    from airflow_provider_paimon.paimon.overwrite import overwrite_partitions

    committer = table.new_batch_write_builder().new_commit()
    overwrite_partitions(committer, [], partitions)
    committer.close()
    return table.snapshot_manager().get_latest_snapshot().id


def reference_keys(table, snapshot_id) -> list[str]:
    """pypaimon's own read of the snapshot's delta manifests, mapped to the folders the
    data files sit in on disk (their partition directory, without ``bucket-N``)."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    names = set()
    for meta in ManifestListManager(table).read_delta(snapshot):
        names.update(e.file.file_name for e in ManifestFileManager(table).read(meta.file_name))
    root = table.table_path.rstrip("/")
    keys = set()
    for directory, _, files in os.walk(root):
        if names & set(files):
            relative = os.path.relpath(directory, root).split(os.sep)
            assert relative[-1].startswith("bucket-"), relative
            keys.add("/".join(relative[:-1]))
    return sorted(keys)


def test_keys_are_the_folders_of_the_files_each_commit_added_or_deleted(table):
    first = commit(table, [
        {"id": 1, "dt": D3, "region": "eu"},
        {"id": 2, "dt": D3, "region": "us/west"},  # '/' escaped in the folder name
        {"id": 3, "dt": D3, "region": None},  # the null partition
        {"id": 4, "dt": D4, "region": "eu"},
    ])
    second = commit(table, [{"id": 5, "dt": D4, "region": "eu"}])
    rewrite = commit(table, [{"id": 6, "dt": D3, "region": "eu"}], overwrite={"dt": "2026-11-03", "region": "eu"})
    emptied = empty_partitions(table, [{"dt": D3, "region": "us/west"}, {"dt": D3, "region": None}])

    keys = {s: changed_partition_keys(table, [s]) for s in (first, second, rewrite, emptied)}
    for snapshot_id, found in keys.items():
        assert sorted(found) == reference_keys(table, snapshot_id), snapshot_id
    assert keys[first] == [
        "dt=2026-11-03/region=eu", "dt=2026-11-03/region=us%2Fwest",
        "dt=2026-11-03/region=__DEFAULT_PARTITION__", "dt=2026-11-04/region=eu",
    ]
    assert keys[second] == ["dt=2026-11-04/region=eu"]
    assert keys[rewrite] == ["dt=2026-11-03/region=eu"]
    # an OVERWRITE that only deleted files: those partitions changed (they are empty now)
    assert keys[emptied] == ["dt=2026-11-03/region=us%2Fwest", "dt=2026-11-03/region=__DEFAULT_PARTITION__"]
    assert len({first, second, rewrite, emptied}) == 4
    # typed values, in the order the commit's manifests name them
    assert delta_partitions(table, first)[0] == (D3, "eu")
    # several snapshots: each partition once, in commit order; the snapshot JSON works too
    from airflow_provider_paimon.paimon.snapshots import TableLayout, read_snapshot

    doc = read_snapshot(TableLayout.of(table), None, second)
    assert changed_partition_keys(table, [second, doc, rewrite]) == [
        "dt=2026-11-04/region=eu", "dt=2026-11-03/region=eu"
    ]


def test_a_key_reads_back_as_the_values_every_partition_argument_takes(table, warehouse):
    legacy = make_table(warehouse, "db.legacy")  # Paimon's default: partition.legacy-name=true
    rows = [{"id": 1, "dt": D3, "region": "us/west"}, {"id": 2, "dt": D3, "region": None}]
    for tbl, folder in ((table, "dt=2026-11-03"), (legacy, "dt=20760")):
        snapshot_id = commit(tbl, rows)
        assert {k.split("/")[0] for k in changed_partition_keys(tbl, [snapshot_id])} == {folder}
        for values in ((D3, "us/west"), (D3, None)):
            key = partition_key(tbl, values)
            assert partition_values(tbl, key) == {"dt": D3, "region": values[1]}
            status = partition_status(tbl, partition_values(tbl, key))  # the sensor's reading
            assert status.path == key and status.row_count == 1
        assert partition_key(tbl, (D3,)) == folder  # a leading prefix: the dt folder
    assert parse_partition_key("dt=2026-11-03/region=us%2Fwest") == {"dt": "2026-11-03", "region": "us/west"}
    for bad in ("", "  ", "dt", "dt=1/dt=2", "=x", None):
        with pytest.raises(InvalidArgumentError, match="partition key"):
            parse_partition_key(bad)
    for bad in ("region=eu", "dt=2026-11-03/zone=eu", "dt=2026-13-03", "dt=2026-11-3"):
        with pytest.raises(InvalidArgumentError, match="partition"):
            partition_values(table, bad)


def test_compaction_and_unpartitioned_tables(table, warehouse):
    from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
    from airflow_provider_paimon.paimon.compaction.runner import compact

    for i in range(3):
        commit(table, [{"id": i, "dt": D4, "region": "eu"}])
    commit(table, [{"id": 9, "dt": D3, "region": "eu"}])
    assert compact(table, CompactionOptions.from_table(table)).committed
    compacted = table.snapshot_manager().get_latest_snapshot()
    assert compacted.commit_kind == "COMPACT"
    # a COMPACT rewrote only dt=2026-11-04's files (the other partition has one file)
    assert changed_partition_keys(table, [compacted.id]) == reference_keys(table, compacted.id) == [
        "dt=2026-11-04/region=eu"
    ]

    catalog = open_catalog(warehouse)
    catalog.create_table("db.flat", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)
    flat = load_table(catalog, "db.flat")
    commit_arrow(flat, pa.table({"id": [1]}))
    assert delta_partitions(flat, 1) == [()]
    assert changed_partition_keys(flat, [1]) == []
    with pytest.raises(InvalidArgumentError, match="snapshot 7 of main does not exist"):
        delta_partitions(flat, 7)


def test_partitions_between_two_states_are_those_whose_files_differ(table):
    """States are snapshot JSONs read at the time (a replace-main or rollback reuses ids):
    an empty state, appends, an overwrite, a manifest merge (the same live files: no
    change), and a rollback-like move back to an older state."""
    from airflow_provider_paimon.paimon.compaction.manifest_compaction import compact_manifest
    from airflow_provider_paimon.paimon.partition_keys import partition_keys_between
    from airflow_provider_paimon.paimon.snapshots import TableLayout, read_snapshot

    layout = TableLayout.of(table)

    def state(snapshot_id):
        return read_snapshot(layout, None, snapshot_id)

    s1 = commit(table, [{"id": 1, "dt": D3, "region": "eu"}, {"id": 2, "dt": D3, "region": "us/west"}])
    s2 = commit(table, [{"id": 3, "dt": D4, "region": "eu"}])
    s3 = commit(table, [{"id": 4, "dt": D3, "region": "eu"}], overwrite={"dt": D3, "region": "eu"})
    s4 = commit(table, [{"id": 5, "dt": D4, "region": "eu"}])
    assert partition_keys_between(table, None, state(s1)) == changed_partition_keys(table, [s1])
    # consecutive commits: the union of their deltas, each once
    assert sorted(partition_keys_between(table, state(s1), state(s4))) == sorted(
        changed_partition_keys(table, [s2, s3, s4])
    ) == ["dt=2026-11-03/region=eu", "dt=2026-11-04/region=eu"]
    # back to an older state (what a rollback or replace-main does to readers)
    assert sorted(partition_keys_between(table, state(s4), state(s2))) == [
        "dt=2026-11-03/region=eu", "dt=2026-11-04/region=eu"
    ]
    assert partition_keys_between(table, state(s2), state(s2)) == []
    # merging manifests rewrites the lists, not the live files: no partition changed
    before_merge = state(s4)
    assert compact_manifest(table).committed
    merged = read_snapshot(layout, None, table.snapshot_manager().get_latest_snapshot().id)
    assert merged["baseManifestList"] != before_merge["baseManifestList"]
    assert partition_keys_between(table, before_merge, merged) == []
