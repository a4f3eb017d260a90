"""Every commit path we own merges manifests inside the commit, as Paimon Java does.

200 commits through the ``paimon`` data source's batch sink commit
(``PaimonWriter.commit``, which ``write_table`` uses) and its streaming sink commit
(``PaimonStreamWriter.commit``, which ``foreach_batch_writer`` uses), driven in-process (the Spark paths are in
tests/spark/test_merging_commits_spark.py). After every commit the latest snapshot's
base manifest list stays under ``manifest.merge-min-count`` (plain pypaimon: one more
manifest per commit), no extra snapshot is made, and plain pypaimon plans exactly the
files written so far (and reads their rows every 20 commits); pypaimon-rust, an independent reader, reads the same rows at
checkpoints. A process SIGKILLed inside a merging commit (after the merged manifests
are written) leaves the table reading as before, and the next commit finishes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter

import pyarrow as pa
from independent_reader import read_rows, require
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot
from airflow_provider_paimon.paimon.manifests import DEFAULT_MERGE_MIN_COUNT
from airflow_provider_paimon.paimon.merging_commit import FAULT_AFTER_MERGE, merging_commit
from airflow_provider_paimon.spark.options import parse_options

from .helpers import SCHEMA, append, make_table, reload, row_multiset

COMMITS = 200
RUST_CHECKPOINTS = {31, 120, COMMITS}


def _spark_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("id", LongType()), StructField("p", StringType()),
                       StructField("v", StringType())])


def _rows(i: int) -> pa.Table:
    ids = [2 * i, 2 * i + 1]
    return pa.table({"id": ids, "p": [f"p{i % 3}", f"p{(i + 1) % 3}"], "v": [f"v{x}" for x in ids]},
                    schema=SCHEMA)


def _expected(n: int) -> Counter:
    out: Counter = Counter()
    for i in range(n):
        data = _rows(i)
        out.update(zip(*(data.column(c).to_pylist() for c in data.column_names), strict=True))
    return out


def _check(warehouse: str, step: int) -> None:
    """The latest snapshot after commit ``step``: merged, and read as written.

    Plain pypaimon plans exactly the files written so far at every step (files are
    immutable, so the same files are the same rows) and reads the rows every 20
    commits; pypaimon-rust reads them at checkpoints.
    """
    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert snap.id == step, "one snapshot per commit: the merge makes no extra snapshot"
    lists = ManifestListManager(table)
    base = lists.read_base(snap)
    assert len(base) < DEFAULT_MERGE_MIN_COUNT, (step, len(base))
    assert len(base) + len(lists.read_delta(snap)) <= DEFAULT_MERGE_MIN_COUNT
    splits = table.new_read_builder().new_scan().plan().splits()
    planned = sorted(f.file_name for s in splits for f in s.files)
    assert planned == sorted(_data_files(warehouse)), step
    assert sum(f.row_count for s in splits for f in s.files) == 2 * step
    if step % 20 == 0 or step in RUST_CHECKPOINTS:
        assert row_multiset(table) == _expected(step), step
    if step in RUST_CHECKPOINTS:
        assert read_rows(warehouse) == _expected(step), f"pypaimon-rust at commit {step}"


def _data_files(warehouse: str) -> list[str]:
    """Every data file on disk (these tests never leave an uncommitted one)."""
    root = os.path.join(warehouse, "db.db", "t")
    return [f for _d, _s, files in os.walk(root) for f in files if f.startswith("data-")]


def _batch_sink_commit(warehouse: str, i: int) -> None:
    from airflow_provider_paimon.spark.datasource.write_setup import plan_write
    from airflow_provider_paimon.spark.datasource.writer import PaimonWriter

    opts = parse_options({"warehouse": warehouse, "table": "db.t", "write-only": "true"})
    writer = PaimonWriter(plan_write(opts, _spark_schema(), False))
    writer.commit([writer.write(iter(_rows(i).to_batches()))])


def test_batch_sink_commits_merge(warehouse):
    require()
    make_table(warehouse)
    for i in range(COMMITS):
        _batch_sink_commit(warehouse, i)
        _check(warehouse, i + 1)


def test_stream_sink_commits_merge(warehouse, tmp_path):
    from airflow_provider_paimon.spark.datasource.streaming_writer import create_stream_writer

    require()
    make_table(warehouse)
    opts = parse_options({"warehouse": warehouse, "table": "db.t", "write-only": "true",
                          "checkpointLocation": str(tmp_path / "ck")})
    sink = create_stream_writer(opts, _spark_schema(), False)
    for i in range(COMMITS):
        sink.commit([sink.write(iter(_rows(i).to_batches()))], i)
        _check(warehouse, i + 1)
    assert [s.commit_identifier for s in reload(warehouse).snapshot_manager().list_snapshots()][-3:] == [
        COMMITS - 3, COMMITS - 2, COMMITS - 1]


def test_another_writers_table_is_merged_by_our_next_commit(warehouse):
    table = make_table(warehouse)
    for i in range(45):  # plain pypaimon: one more manifest per commit
        append(table, _rows(i))
    snap = latest_snapshot(reload(warehouse))
    assert len(ManifestListManager(table).read_base(snap)) == 44
    _batch_sink_commit(warehouse, 45)
    table = reload(warehouse)
    assert len(ManifestListManager(table).read_base(latest_snapshot(table))) == 1
    assert row_multiset(table) == _expected(46)


KILL_SCRIPT = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.merging_commit import merging_commit
    sys.path.insert(0, sys.argv[2])
    from compaction.helpers import SCHEMA
    table = load_table(open_catalog(sys.argv[1]), "db.t")
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), merging_commit(builder.new_commit())
    write.write_arrow(pa.table({"id": [9000], "p": ["p0"], "v": ["late"]}, schema=SCHEMA))
    commit.commit(write.prepare_commit())
    print("committed")
""")


def test_sigkill_inside_a_merging_commit_leaves_the_table_readable_and_a_rerun_finishes(warehouse):
    require()
    table = make_table(warehouse)
    for i in range(40):
        append(table, _rows(i))
    before = row_multiset(reload(warehouse))
    manifest_dir = os.path.join(warehouse, "db.db", "t", "manifest")
    files_before = set(os.listdir(manifest_dir))
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PAIMON_FAULT=FAULT_AFTER_MERGE, PAIMON_FAULT_MODE="kill")
    killed = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse, tests_dir], env=env,
                            capture_output=True, text=True, check=False, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    # the merge had written its manifests: they are there, but nothing names them
    left = set(os.listdir(manifest_dir)) - files_before
    assert any(name.startswith("manifest-") and not name.startswith("manifest-list") for name in left)
    table = reload(warehouse)
    assert latest_snapshot(table).id == 40 and row_multiset(table) == before
    assert read_rows(warehouse) == before

    env.pop("PAIMON_FAULT")
    rerun = subprocess.run([sys.executable, "-c", KILL_SCRIPT, warehouse, tests_dir], env=env,
                           capture_output=True, text=True, check=False, timeout=300)
    assert rerun.returncode == 0 and "committed" in rerun.stdout, rerun.stderr[-2000:]
    table = reload(warehouse)
    snap = latest_snapshot(table)
    assert snap.id == 41 and len(ManifestListManager(table).read_base(snap)) == 1
    expected = before + Counter({(9000, "p0", "late"): 1})
    assert row_multiset(table) == expected
    assert read_rows(warehouse) == expected


def test_a_lost_race_deletes_the_merged_manifests_and_retries(warehouse):
    """Another writer takes the snapshot id between our merge and our snapshot commit."""
    table = make_table(warehouse)
    for i in range(35):
        append(table, _rows(i))
    manifest_dir = os.path.join(warehouse, "db.db", "t", "manifest")
    builder = reload(warehouse).new_batch_write_builder()
    write, commit = builder.new_write(), merging_commit(builder.new_commit())
    lists = commit.file_store_commit.manifest_list_manager
    original = lists.read_all
    raced = []

    def read_all_then_race(snapshot):
        metas = original(snapshot)
        if not raced and lists._merging:
            raced.append(set(lists.last.written))
            append(reload(warehouse), _rows(100))  # takes the snapshot id we prepared
        return metas

    lists.read_all = read_all_then_race
    try:
        write.write_arrow(_rows(101))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    assert raced and raced[0], "the first attempt merged"
    assert not raced[0] & set(os.listdir(manifest_dir)), "the losing attempt's merged manifests are gone"
    table = reload(warehouse)
    assert latest_snapshot(table).id == 37
    ids = sorted(r[0] for r in row_multiset(table).elements())
    assert ids == sorted([*range(70), 200, 201, 202, 203])

