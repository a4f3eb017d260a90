"""Primary-key compaction's commit: concurrent writers kept, conflicts re-planned, crashes safe.

Plain pypaimon writes a deduplicate table with a ``sequence.field`` (deletes, late rows)
and the model follows; then:

- a writer committing between the rewrite and the COMPACT commit keeps its rows;
- a competing compaction that wrote the same level meanwhile is an LSM conflict: the
  attempt's files are deleted and it re-plans on the new tree;
- killed (an injected fault, then a real SIGKILL in a child process) after the rewrite
  and at the commit's steps, the table reads as before, no snapshot is added, and a
  rerun finishes;
- the files written carry what readers rely on (level, file source, key range and
  statistics, sequence range, retract count, schema id) and match their rows;
- files of an older schema are merged by field id (an added column reads null).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow.compute as pc
import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot
from airflow_provider_paimon.paimon.lsm.compact import FAULT_AFTER_REWRITE, compact_primary_keys
from airflow_provider_paimon.paimon.lsm.rewrite import read_kv_files

from . import lsm_checks, tables
from .scenarios import Feed, model_for

VARIANT = "deduplicate-seq"
COMMIT_POINTS = (
    FAULT_AFTER_REWRITE,
    "compaction.commit.after_manifests",
    "compaction.commit.after_manifest_lists",
)


def written(warehouse: str, commits: int = 12, seed: int = 7, extra: dict | None = None):
    model = model_for(VARIANT)
    table = tables.create(warehouse, "db.t", VARIANT, extra)
    feed = Feed(model, seed)
    for _ in range(commits):
        rows = feed.commit()
        tables.write(table, rows)
        model.commit(rows)
    return model, feed


def files_on_disk(warehouse: str) -> set[str]:
    return {os.path.join(r, f) for r, _d, fs in os.walk(warehouse) if "bucket-" in r for f in fs}


def test_a_writer_committing_meanwhile_keeps_its_rows(warehouse):
    model, feed = written(warehouse)
    late = feed.commit()

    def concurrent_write(attempt: int) -> None:
        if attempt == 1:
            tables.write(tables.reload(warehouse, "db.t"), late)

    result = compact_primary_keys(tables.reload(warehouse, "db.t"), "full", before_commit=concurrent_write)
    assert result.committed and result.attempts == 1
    model.commit(late)  # the compaction merged only what it planned; those deletes are gone
    table = tables.reload(warehouse, "db.t")
    snapshots = table.snapshot_manager().list_snapshots()
    assert [s.commit_kind for s in snapshots[-2:]] == ["APPEND", "COMPACT"]
    assert tables.read(table) == model.rows()
    assert rust_rows(warehouse, "db.t") == model.rows()
    lsm_checks.check_levels(table)


def test_a_competing_compaction_is_a_conflict_and_the_attempt_replans(warehouse):
    model, _ = written(warehouse)
    before_files = files_on_disk(warehouse)

    def competing(attempt: int) -> None:
        if attempt == 1:  # another job compacts the same buckets to the same level first
            assert compact_primary_keys(tables.reload(warehouse, "db.t"), "full").committed

    table = tables.reload(warehouse, "db.t")
    result = compact_primary_keys(table, "full", before_commit=competing)
    # attempt 1 conflicted (its inputs were gone); attempt 2 found nothing left to do
    assert result.attempts == 2 and not result.committed
    table = tables.reload(warehouse, "db.t")
    assert tables.read(table) == model.rows()
    live = {f.file_name for files in lsm_checks.buckets(table).values() for f in files}
    stray = {p for p in files_on_disk(warehouse) - before_files if os.path.basename(p) not in live}
    assert not stray  # the conflicting attempt deleted its files


def test_lsm_conflict_on_a_level_written_meanwhile(warehouse):
    """Files alive but a level overlapping: another job upgraded a file into our output level."""
    import dataclasses

    from airflow_provider_paimon.paimon.compaction.commit import CompactChange, commit_compaction
    from airflow_provider_paimon.paimon.compaction.errors import CompactionConflictError
    from airflow_provider_paimon.paimon.lsm.compact import lsm_conflicts
    from airflow_provider_paimon.paimon.lsm.rewrite import rewrite_unit

    written(warehouse)
    table = tables.reload(warehouse, "db.t")
    (partition, bucket), files = next(iter(lsm_checks.buckets(table).items()))
    first, rest = files[0], files[1:]
    assert rest
    ours = rewrite_unit(table, partition, bucket, rest, 3, False, 1 << 30, "data-ours-")
    theirs = [dataclasses.replace(f, level=3) for f in rewrite_unit(
        table, partition, bucket, [first], 3, False, 1 << 30, "data-theirs-")]
    commit_compaction(table, [CompactChange(partition, bucket, 2, [first], theirs)], rows_change=True)
    with pytest.raises(CompactionConflictError, match="LSM conflict"):
        commit_compaction(tables.reload(warehouse, "db.t"), [CompactChange(partition, bucket, 2, rest, ours)],
                          rows_change=True, check=lsm_conflicts(table))


@pytest.mark.parametrize("point", COMMIT_POINTS)
def test_a_fault_at_every_step_leaves_the_table_as_it_was_and_a_rerun_finishes(warehouse, point):
    written(warehouse)
    table = tables.reload(warehouse, "db.t")
    before = (latest_snapshot(table).id, tables.read(table))
    faults.set_fault(point)
    try:
        with pytest.raises(faults.InjectedFault):
            compact_primary_keys(table, "full")
    finally:
        faults.clear()
    table = tables.reload(warehouse, "db.t")
    assert (latest_snapshot(table).id, tables.read(table)) == before
    assert compact_primary_keys(table, "full").committed
    assert tables.read(tables.reload(warehouse, "db.t")) == tables.read(table) == before[1]


KILL_SCRIPT = """
import sys
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
table = load_table(open_catalog(sys.argv[1]), "db.t")
compact(table, CompactionOptions(), mode=sys.argv[2])
"""


def test_sigkill_before_the_snapshot_stays_readable_and_a_rerun_finishes(warehouse):
    """A real kill (every step is covered in-process above) after files and manifests exist."""
    point = "compaction.commit.after_manifest_lists"
    model, _ = written(warehouse, commits=8)
    table = tables.reload(warehouse, "db.t")
    before = (latest_snapshot(table).id, tables.read(table))
    env = dict(os.environ, PAIMON_FAULT=point, PAIMON_FAULT_MODE="kill")
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse, "full"], env=env,
                          capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    table = tables.reload(warehouse, "db.t")
    assert (latest_snapshot(table).id, tables.read(table)) == before
    assert rust_rows(warehouse, "db.t") == model.rows()
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse, "full"],
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    table = tables.reload(warehouse, "db.t")
    assert latest_snapshot(table).commit_kind == "COMPACT"
    assert tables.read(table) == model.rows()


def test_compacted_files_carry_what_readers_rely_on(warehouse):
    model, _ = written(warehouse, commits=20, extra={"metadata.stats-mode": "full"})
    assert compact_primary_keys(tables.reload(warehouse, "db.t"), "full").committed
    table = tables.reload(warehouse, "db.t")
    for (partition, bucket), files in lsm_checks.buckets(table).items():
        for f in files:
            rows = read_kv_files(table, partition, bucket, [f])
            keys = rows.column("_KEY_k").to_pylist()
            assert keys == sorted(keys) and len(set(keys)) == len(keys)
            # top level: num-levels defaults to num-sorted-run.compaction-trigger (5) + 1
            assert (f.level, f.file_source, f.schema_id) == (5, 1, table.table_schema.id)
            assert (f.min_key.values[0], f.max_key.values[0]) == (keys[0], keys[-1])
            seqs = rows.column("_SEQUENCE_NUMBER")
            assert (f.min_sequence_number, f.max_sequence_number) == (
                pc.min(seqs).as_py(), pc.max(seqs).as_py())
            assert f.row_count == rows.num_rows and f.delete_row_count == 0  # dropped at the top
            assert f.key_stats.null_counts == [0]
            # value statistics as pypaimon's writer keeps them (metadata.stats-mode=full)
            assert len(f.value_stats.null_counts) == len(table.fields)
            n_index = table.field_names.index("n")
            assert f.value_stats.null_counts[n_index] == rows.column("n").null_count
            ts_stats = (f.value_stats.min_values.get_field(5), f.value_stats.max_values.get_field(5))
            assert ts_stats == (pc.min(rows.column("ts")).as_py(), pc.max(rows.column("ts")).as_py())
    assert tables.read(table) == model.rows()


def test_files_of_an_older_schema_merge_by_field_id(warehouse):
    from airflow_provider_paimon.paimon.schema import alter_table

    model, _ = written(warehouse, commits=6)
    alter_table(tables.reload(warehouse, "db.t"), [{"op": "add_column", "name": "extra", "type": "STRING"}])
    table = tables.reload(warehouse, "db.t")
    assert compact_primary_keys(table, "full").committed
    table = tables.reload(warehouse, "db.t")
    builder = table.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert got.column("extra").null_count == got.num_rows
    assert tables.read(table) == model.rows()
