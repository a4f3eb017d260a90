"""The COMPACT commit merges manifests (paimon/manifests.py), as Paimon Java does.

After compaction the new snapshot's base manifest list holds merged manifests with
the live ADD entries only; its delta holds the commit's own DELETE/ADD entries. Older
snapshots keep their manifest lists (time travel reads the old files), plain pypaimon
reads the table identically, and a commit killed after writing merged manifests leaves
no visible change.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.paimon.manifests import merge_manifests

from .helpers import (
    SMALL,
    append,
    append_many,
    batch,
    checksum,
    make_table,
    read_all,
    reload,
    row_multiset,
)


def _compact(table):
    return compact(table, CompactionOptions.from_table(table))


def _manifests(table, snapshot):
    lists = ManifestListManager(table)
    return lists.read_base(snapshot), lists.read_delta(snapshot)


def _entries(table, metas):
    files = ManifestFileManager(table)
    return [e for m in metas for e in files.read(m.file_name, file_size=m.file_size)]


def _manifest_dir_files(warehouse):
    return set(os.listdir(os.path.join(warehouse, "db.db", "t", "manifest")))


def _at_snapshot(table, snapshot_id):
    return table.copy({"scan.snapshot-id": str(snapshot_id)})


def test_compact_snapshot_base_holds_merged_live_entries_only(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 8)
    before = latest_snapshot(table)
    base_before, delta_before = _manifests(table, before)
    assert len(base_before) + len(delta_before) == 8  # pypaimon: one manifest per commit
    live_before = {e.file.file_name for e in live_entries(table, before)}

    result = _compact(table)
    assert result.committed

    table = reload(warehouse)
    snap = latest_snapshot(table)
    base, delta = _manifests(table, snap)
    assert len(base) == 1  # 8 manifests merged into one
    base_entries = _entries(table, base)
    assert all(e.kind == 0 for e in base_entries)
    assert {e.file.file_name for e in base_entries} == live_before
    # The delta is this commit's own change: DELETE every replaced file, ADD the new ones.
    delta_entries = _entries(table, delta)
    assert sum(e.kind == 1 for e in delta_entries) == result.files_before
    assert sum(e.kind == 0 for e in delta_entries) == result.files_after
    assert base[0].num_deleted_files == 0 and base[0].num_added_files == len(live_before)


def test_reads_identical_and_time_travel_reads_old_files(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 8)
    expected = row_multiset(table)
    at_4 = row_multiset(_at_snapshot(table, 4))
    old_files = {e.file.file_name for e in live_entries(table, latest_snapshot(table))}

    assert _compact(table).committed
    table = reload(warehouse)
    assert row_multiset(table) == expected
    # Older snapshots keep their own manifest lists: they still read their old files.
    assert row_multiset(_at_snapshot(table, 8)) == expected
    assert row_multiset(_at_snapshot(table, 4)) == at_4
    sm = table.snapshot_manager()
    assert {e.file.file_name for e in live_entries(table, sm.get_snapshot_by_id(8))} == old_files
    for sid in range(1, 9):  # no manifest an older snapshot names was removed
        base, delta = _manifests(table, sm.get_snapshot_by_id(sid))
        for m in base + delta:
            assert os.path.exists(os.path.join(warehouse, "db.db", "t", "manifest", m.file_name))


def test_appends_and_a_second_compaction_after_merged_manifests(warehouse):
    table = make_table(warehouse, options=SMALL)
    next_id = append_many(table, 8)
    assert _compact(table).committed
    table = reload(warehouse)
    next_id = append_many(table, 6, start=next_id)
    expected = row_multiset(table)
    assert read_all(table).num_rows == next_id

    assert _compact(table).committed
    table = reload(warehouse)
    assert row_multiset(table) == expected
    snap = latest_snapshot(table)
    base, _delta = _manifests(table, snap)
    # The first COMPACT's DELETE entries and the ADDs they cancel are gone from the base.
    base_entries = _entries(table, base)
    assert len(base) == 1 and all(e.kind == 0 for e in base_entries)
    prev = table.snapshot_manager().get_snapshot_by_id(snap.id - 1)
    assert {e.file.file_name for e in base_entries} == {
        e.file.file_name for e in live_entries(table, prev)
    }


def test_merge_keeps_leading_full_manifests_untouched(warehouse):
    """Java keeps a leading run of full manifests with no deleted file; so do we."""
    table = make_table(warehouse, options=dict(SMALL, **{"manifest.target-file-size": "1kb"}))
    for i in range(3):
        append(table, batch(i * 100, 60, partitions=("a",)))
    for i in range(3, 9):
        append(table, batch(i * 100, 60, partitions=("b",)))
    metas = ManifestListManager(table).read_all(latest_snapshot(table))
    assert all(m.file_size >= 1024 for m in metas)
    # No DELETE entry and every manifest full: nothing to merge, nothing written.
    merged = merge_manifests(table, metas)
    assert not merged.changed and [m.file_name for m in merged.metas] == [m.file_name for m in metas]

    expected = row_multiset(table)
    result = compact(table, CompactionOptions.from_table(table),
                     partition_filter=lambda p: p["p"] == "b")
    assert result.committed
    table = reload(warehouse)
    snap = latest_snapshot(table)
    metas = ManifestListManager(table).read_all(snap)
    merged = merge_manifests(table, metas)
    try:
        assert merged.changed
        # The three manifests of partition 'a' are kept; the rest is rewritten.
        assert [m.file_name for m in merged.metas[:3]] == [m.file_name for m in metas[:3]]
        assert all(m.num_deleted_files == 0 for m in merged.metas)
        live = {e.file.file_name for e in live_entries(table, snap)}
        got = [e.file.file_name for e in _entries(table, merged.metas)]
        assert sorted(got) == sorted(live)  # every live file once, no DELETE
    finally:
        for name in merged.written:
            table.file_io.delete_quietly(f"{table.table_path.rstrip('/')}/manifest/{name}")
    assert row_multiset(table) == expected


# Fault points after the merged manifests (and then their lists) are written, before
# the snapshot that names them.
MERGED_MANIFEST_POINTS = ["compaction.commit.after_manifests", "compaction.commit.after_manifest_lists"]


def _eight_appends(warehouse):
    """A table of eight small appends: (table, checksum, latest snapshot id, manifest files)."""
    table = make_table(warehouse, options=SMALL)
    append_many(table, 8)
    return table, checksum(table), latest_snapshot(table).id, _manifest_dir_files(warehouse)


@pytest.mark.parametrize("point", MERGED_MANIFEST_POINTS)
def test_fault_after_merged_manifests_changes_nothing(warehouse, point):
    table, before_sum, before_snap, manifests_before = _eight_appends(warehouse)
    faults.clear()
    faults.set_fault(point)
    try:
        with pytest.raises(faults.InjectedFault):
            _compact(table)
        assert point in faults.seen_points()
    finally:
        faults.clear()
    table = reload(warehouse)
    assert latest_snapshot(table).id == before_snap
    assert checksum(table) == before_sum
    assert _manifest_dir_files(warehouse) == manifests_before  # the attempt cleaned up
    assert _compact(table).committed
    assert checksum(reload(warehouse)) == before_sum


KILL_SCRIPT = """
import sys
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
table = load_table(open_catalog(sys.argv[1]), "db.t")
compact(table, CompactionOptions.from_table(table))
"""


@pytest.mark.parametrize("point", MERGED_MANIFEST_POINTS)
def test_sigkill_after_merged_manifests_leaves_orphans_only(warehouse, point):
    table, before_sum, before_snap, manifests_before = _eight_appends(warehouse)
    env = dict(os.environ, PAIMON_FAULT=point, PAIMON_FAULT_MODE="kill")
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse], env=env,
                          capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    leftovers = _manifest_dir_files(warehouse) - manifests_before
    assert leftovers  # merged manifests (and lists) written, no snapshot names them
    table = reload(warehouse)
    assert latest_snapshot(table).id == before_snap
    assert checksum(table) == before_sum
    # Leftover manifests break nothing: compaction runs again and commits.
    result = _compact(table)
    assert result.committed and result.snapshot_id == before_snap + 1
    table = reload(warehouse)
    assert checksum(table) == before_sum
    assert len(_manifests(table, latest_snapshot(table))[0]) == 1
