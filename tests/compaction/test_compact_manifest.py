"""``compact_manifest`` (Paimon's procedure) and a compaction folding its own deletes.

compact_manifest commits one COMPACT snapshot whose base lists only live files and
whose delta is empty; rows (plain pypaimon and pypaimon-rust), the record count and
the schema stay the same, and nothing is committed when nothing would change. A
compaction that removed at least ``manifest.merge-min-count`` files follows its COMPACT
snapshot with one, so a planner reads fewer entries after it than before; its DELETE
entries stay in the COMPACT snapshot's delta, where expiry finds the replaced files.
Killed at either step (in-process fault or SIGKILL), the table reads as before and a
rerun finishes. ``--manifests-only`` runs it from the compact job without Spark.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from independent_reader import read_rows, require

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.compaction.manifest_compaction import compact_manifest
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.paimon.maintenance import expire_snapshots

from .helpers import (
    SMALL,
    append,
    append_many,
    batch,
    make_table,
    manifest_entries,
    manifest_lists,
    overwrite_partition,
    reload,
    row_multiset,
)


def _manifest_files(warehouse):
    return set(os.listdir(os.path.join(warehouse, "db.db", "t", "manifest")))


def test_compact_manifest_lists_live_files_only_in_a_compact_snapshot(warehouse):
    require()
    table = make_table(warehouse)
    next_id = append_many(table, 12, rows=10)
    overwrite_partition(reload(warehouse), "a", next_id)  # DELETE entries for partition a
    table = reload(warehouse)
    before = latest_snapshot(table)
    rows = row_multiset(table)
    live = {e.file.file_name for e in live_entries(table, before)}

    result = compact_manifest(table, properties={"airflow.dag_id": "d", "other": "dropped"})
    assert result.committed and result.based_on == before.id and result.snapshot_id == before.id + 1
    assert result.manifests_before == 13 and result.manifests_after == 1
    assert result.entries_after == len(live) < result.entries_before

    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert snap.commit_kind == "COMPACT" and snap.total_record_count == before.total_record_count
    assert snap.delta_record_count == 0 and snap.schema_id == before.schema_id
    assert snap.properties == {"airflow.dag_id": "d"}  # only the run's own keys
    base, delta = manifest_lists(table, snap)
    assert delta == []
    entries = manifest_entries(table, base)
    assert all(e.kind == 0 for e in entries) and {e.file.file_name for e in entries} == live
    assert row_multiset(table) == rows
    assert read_rows(warehouse) == rows
    # time travel to the snapshot before still reads its own manifests
    assert row_multiset(table.copy({"scan.snapshot-id": str(before.id)})) == rows

    again = compact_manifest(reload(warehouse))
    assert not again.committed and "nothing to compact" in again.message
    assert latest_snapshot(reload(warehouse)).id == snap.id


@pytest.mark.parametrize("point", ["compact_manifest.after_manifests", "compact_manifest.after_manifest_lists"])
def test_fault_inside_compact_manifest_changes_nothing_and_a_rerun_finishes(warehouse, point):
    table = make_table(warehouse)
    append_many(table, 6, rows=10)
    rows, latest, files = row_multiset(reload(warehouse)), latest_snapshot(reload(warehouse)).id, _manifest_files(warehouse)
    faults.clear()
    faults.set_fault(point)
    try:
        with pytest.raises(faults.InjectedFault):
            compact_manifest(reload(warehouse))
    finally:
        faults.clear()
    assert latest_snapshot(reload(warehouse)).id == latest and row_multiset(reload(warehouse)) == rows
    assert _manifest_files(warehouse) == files  # the failed attempt removed what it wrote
    assert compact_manifest(reload(warehouse)).committed
    assert row_multiset(reload(warehouse)) == rows


KILL_SCRIPT = textwrap.dedent("""
    import sys
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.compaction.manifest_compaction import compact_manifest
    print(compact_manifest(load_table(open_catalog(sys.argv[1]), "db.t")).message)
""")


def test_sigkill_inside_compact_manifest(warehouse):
    require()
    table = make_table(warehouse)
    append_many(table, 8, rows=10)
    rows = row_multiset(reload(warehouse))
    env = dict(os.environ, PAIMON_FAULT="compact_manifest.after_manifest_lists", PAIMON_FAULT_MODE="kill")
    killed = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse], env=env,
                            capture_output=True, text=True, check=False, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert latest_snapshot(reload(warehouse)).id == 8 and row_multiset(reload(warehouse)) == rows
    assert read_rows(warehouse) == rows
    env.pop("PAIMON_FAULT")
    done = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse], env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0 and "8 -> 1 manifest(s)" in done.stdout, done.stderr[-2000:]
    assert latest_snapshot(reload(warehouse)).id == 9 and row_multiset(reload(warehouse)) == rows
    assert read_rows(warehouse) == rows


def test_compaction_of_many_files_folds_its_deletes(warehouse):
    require()
    table = make_table(warehouse, options=SMALL)
    append_many(table, 36, rows=12)  # 72 small files
    table = reload(warehouse)
    rows = row_multiset(table)
    before = latest_snapshot(table)
    entries_before = sum(len(manifest_entries(table, m)) for m in manifest_lists(table, before))

    result = compact(table, CompactionOptions.from_table(table))
    assert result.committed and result.files_before == 72
    table = reload(warehouse)
    data_snap = table.snapshot_manager().get_snapshot_by_id(result.snapshot_id)
    folded = latest_snapshot(table)
    assert (data_snap.commit_kind, folded.commit_kind) == ("COMPACT", "COMPACT")
    assert folded.id == data_snap.id + 1
    # the data snapshot records what it removed; the fold lists only what is alive
    _base, delta = manifest_lists(table, data_snap)
    assert sum(e.kind == 1 for e in manifest_entries(table, delta)) == 72
    base, delta = manifest_lists(table, folded)
    assert delta == [] and len(manifest_entries(table, base)) == result.files_after < entries_before
    assert row_multiset(table) == rows and read_rows(warehouse) == rows

    # expiry still finds the replaced files through the data snapshot's delta
    old_files = {e.file.file_name for e in live_entries(table, before)}
    expire_snapshots(table, retain_min=1, retain_max=1, older_than=timedelta(0), max_deletes=100)
    on_disk = {f for _d, _s, fs in os.walk(os.path.join(warehouse, "db.db", "t")) for f in fs}
    assert not old_files & on_disk
    assert row_multiset(reload(warehouse)) == rows


def test_a_small_compaction_does_not_add_a_snapshot(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 4)  # 8 files: fewer deletes than manifest.merge-min-count
    result = compact(reload(warehouse), CompactionOptions.from_table(reload(warehouse)))
    assert result.committed and latest_snapshot(reload(warehouse)).id == result.snapshot_id


def test_a_rerun_folds_what_a_killed_run_left(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 20, rows=12)  # 40 files
    rows = row_multiset(reload(warehouse))
    faults.clear()
    faults.set_fault("compact_manifest.after_manifests")  # the fold fails; the compaction landed
    try:
        first = compact(reload(warehouse), CompactionOptions.from_table(reload(warehouse)))
    finally:
        faults.clear()
    assert first.committed and latest_snapshot(reload(warehouse)).id == first.snapshot_id
    again = compact(reload(warehouse), CompactionOptions.from_table(reload(warehouse)))
    assert not again.committed and again.extra["manifests"]["committed"], again.to_dict()
    table = reload(warehouse)
    assert latest_snapshot(table).id == first.snapshot_id + 1
    assert manifest_lists(table, latest_snapshot(table))[1] == [] and row_multiset(table) == rows


def test_compact_job_manifests_only_needs_no_spark(warehouse):
    from airflow_provider_paimon.spark.jobs.compact import build_parser, run

    table = make_table(warehouse, primary_keys=["id"], bucket=1)  # any table type
    append_many(table, 5, rows=6)
    rows = row_multiset(reload(warehouse))
    args = build_parser().parse_args(["--warehouse", warehouse, "--table", "db.t", "--manifests-only",
                                      "--dry-run"])
    preview = run(args, spark=object())  # Spark is never touched
    assert preview["operation"] == "compact_manifest" and not preview["committed"]
    assert preview["manifests_before"] == 5 and preview["entries_after"] == 10  # two partitions a commit
    assert latest_snapshot(reload(warehouse)).id == 5
    args = build_parser().parse_args(["--warehouse", warehouse, "--table", "db.t", "--manifests-only"])
    done = run(args, spark=object())
    assert done["committed"] and done["snapshot_id"] == 6 and done["manifests_after"] == 1
    assert row_multiset(reload(warehouse)) == rows
    for bad, message in ((["--partition", "p=a"], "leave out --partition and --where"),
                         (["--option", "target-file-size=1mb"], "only manifest.\\* options")):
        args = build_parser().parse_args(["--warehouse", warehouse, "--table", "db.t", "--manifests-only", *bad])
        with pytest.raises(Exception, match=message):
            run(args, spark=object())
    assert latest_snapshot(reload(warehouse)).id == 6


def test_plain_appends_of_another_writer_then_compact_manifest(warehouse):
    table = make_table(warehouse)
    for i in range(3):
        append(table, batch(i * 10, 5))
    assert compact_manifest(reload(warehouse)).manifests_after == 1
