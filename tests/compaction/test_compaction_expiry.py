"""Compaction expires after its commit, as Paimon Java's compaction jobs do.

A table maintained only by compaction must not grow without bound: after the COMPACT
commit the run applies the table's snapshot retention exactly as the writers do
(``expire_after_commit``), checked against Paimon Java's rule (transcribed in
``support.maintenance.java_expire``) on a twin table compacted with
``write-only=true``. ``write-only``, a dry run, and tags/branches/consumers keep
snapshots; bad retention values are refused before anything is written.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, table_dir, tree, write
from support.maintenance import java_expire, meta_ids, read_rows

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.consumers import save_next_snapshot
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.maintenance.options import now_ms
from airflow_provider_paimon.paimon.tag import create_tag

RETAIN = {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1",
          "snapshot.time-retained": "1 ms", "compaction.min.file-num": "2"}
LOGGER = "airflow_provider_paimon.paimon.maintenance.after_commit"


def _snap_ids(tdir: str, branch: str | None = None) -> list[int]:
    return sorted(int(s) for s in meta_ids(tdir, branch, "snapshot", "snapshot-"))


def _files(tdir: str, sub: str) -> list[str]:
    out = []
    for root, _dirs, files in os.walk(tdir):
        if os.path.relpath(root, tdir).split(os.sep)[0].startswith(sub):
            out.extend(f for f in files if not f.startswith("."))
    return sorted(out)


def _compact(catalog, run_options=None, dry_run=False, branch=None) -> dict:
    table = load_table(catalog, "db.t", branch)
    return compact(table, CompactionOptions.from_table(table), dry_run=dry_run,
                   run_options=run_options).to_dict()


def _appends(catalog, n: int, name: str = "db.t") -> dict[int, list[tuple]]:
    """``n`` pypaimon appends (no writer expiry); the rows each snapshot reads."""
    rows_at = {}
    for i in range(1, n + 1):
        write(load_table(catalog, name), [i])
        rows_at[i] = read_rows(load_table(catalog, name))
    return rows_at


@pytest.mark.parametrize(("time_retained", "kept"), [("1 ms", [6]), ("1 h", [4, 5, 6])])
def test_compaction_keeps_what_paimon_keeps(warehouse, caplog, time_retained, kept):
    options = dict(RETAIN, **{"snapshot.time-retained": time_retained})
    catalog, _ = make_table(warehouse, "db.t", options=options)
    make_table(warehouse, "db.ref", options=dict(options, **{"write-only": "true"}))
    rows_at = _appends(catalog, 5)
    _appends(catalog, 5, "db.ref")
    time.sleep(0.01)  # every append is older than time-retained's 1 ms
    caplog.set_level(logging.INFO, logger=LOGGER)
    result = _compact(catalog)
    ref = compact(load_table(catalog, "db.ref"), CompactionOptions.from_table(load_table(catalog, "db.ref")))
    assert result["committed"] and result["snapshot_id"] == 6 and ref.snapshot_id == 6
    rows_at[6] = rows_at[5]
    ta, tr = table_dir(warehouse, "db.t"), table_dir(warehouse, "db.ref")
    assert _snap_ids(tr) == [1, 2, 3, 4, 5, 6]  # write-only: the compaction expired nothing
    cut = now_ms() - (1 if time_retained == "1 ms" else 3_600_000)
    want_ids, want_deleted = java_expire(tr, 1, 3, cut, 10)
    for sid in want_ids:
        os.remove(os.path.join(tr, "snapshot", f"snapshot-{sid}"))
    for rel in want_deleted:
        os.remove(os.path.join(tr, rel))
    # same snapshots, hint and number of data files and manifests as Paimon's rule leaves
    assert _snap_ids(ta) == [s for s in range(1, 7) if s not in want_ids] == kept
    assert Path(os.path.join(ta, "snapshot", "EARLIEST")).read_text().strip() == str(kept[0])
    assert len(_files(ta, "bucket-")) == len(_files(tr, "bucket-"))
    assert len(_files(ta, "manifest")) == len(_files(tr, "manifest"))
    # the result says what went (JSON-able for XCom), the message too, one log line
    expired = json.loads(json.dumps(result["expired"]))
    assert expired["expired_snapshot_ids"] == want_ids
    assert expired["deleted_file_count"] == len(want_deleted) and "deleted_files" not in expired
    assert result["message"].endswith(f"; expired snapshots 1-{want_ids[-1]}")
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 1 and f"expired snapshots 1-{want_ids[-1]} of db.t (branch main)" in lines[0]
    # plain pypaimon reads every retained snapshot as it read when committed
    base = load_table(catalog, "db.t")
    for sid in kept:
        assert read_rows(base.copy({"scan.snapshot-id": str(sid)})) == rows_at[sid]


def test_write_only_and_run_options(warehouse):
    catalog, _ = make_table(warehouse, options=dict(RETAIN, **{"write-only": "true"}))
    tdir = table_dir(warehouse)
    _appends(catalog, 4)
    time.sleep(0.01)
    result = _compact(catalog)
    assert result["committed"] and result["expired"] is None
    assert _snap_ids(tdir) == [1, 2, 3, 4, 5]
    # the run's options override the table's (Paimon's dynamic options), both ways
    write(load_table(catalog, "db.t"), [10])
    write(load_table(catalog, "db.t"), [11])
    time.sleep(0.01)
    result = _compact(catalog, run_options={"write-only": "false", "snapshot.num-retained.min": "2"})
    assert result["committed"] and result["expired"]["expired_snapshot_ids"] == [1, 2, 3, 4, 5, 6]
    assert _snap_ids(tdir) == [7, 8]


def test_run_option_write_only_and_dry_run_expire_nothing(warehouse):
    catalog, _ = make_table(warehouse, options=RETAIN)
    tdir = table_dir(warehouse)
    _appends(catalog, 4)
    time.sleep(0.01)
    before = tree(tdir)
    result = _compact(catalog, dry_run=True)
    assert result["dry_run"] and not result["committed"] and result["expired"] is None
    assert tree(tdir) == before
    result = _compact(catalog, run_options={"write-only": "true"})
    assert result["committed"] and result["expired"] is None
    assert _snap_ids(tdir) == [1, 2, 3, 4, 5]


def test_tags_branches_and_consumers_keep_their_snapshots(warehouse):
    catalog, _t = make_table(warehouse, options=RETAIN)
    tdir = table_dir(warehouse)
    _appends(catalog, 5)
    create_tag(load_table(catalog, "db.t"), "first", snapshot_id=1)
    bops.create_branch(load_table(catalog, "db.t"), "fork", snapshot_id=2)
    save_next_snapshot(load_table(catalog, "db.t"), "reader", 3)
    views = {"first": read_rows(load_table(catalog, "db.t").copy({"scan.tag-name": "first"})),
             "fork": read_rows(load_table(catalog, "db.t", "fork"))}
    time.sleep(0.01)
    result = _compact(catalog)
    # the consumer holds 3 and later; without it only the COMPACT snapshot 6 would be left
    assert result["expired"]["expired_snapshot_ids"] == [1, 2]
    assert _snap_ids(tdir) == [3, 4, 5, 6]
    assert read_rows(load_table(catalog, "db.t").copy({"scan.tag-name": "first"})) == views["first"]
    assert read_rows(load_table(catalog, "db.t", "fork")) == views["fork"]
    # compacting the branch expires the branch's own snapshots only (options from main)
    for i in (100, 101, 102):
        write(load_table(catalog, "db.t", "fork"), [i], "b")
    fork_rows = read_rows(load_table(catalog, "db.t", "fork"))
    time.sleep(0.01)
    result = _compact(catalog, branch="fork")
    assert result["committed"] and result["expired"]["branch"] == "fork"
    assert _snap_ids(tdir, "fork") == [6]
    assert read_rows(load_table(catalog, "db.t", "fork")) == fork_rows
    assert _snap_ids(tdir) == [3, 4, 5, 6]
    assert read_rows(load_table(catalog, "db.t").copy({"scan.tag-name": "first"})) == views["first"]


@pytest.mark.parametrize(
    ("table_options", "run_options", "named"),
    [({}, {"write-only": "yes please"}, "write-only"),
     ({"snapshot.time-retained": "soon"}, {}, "snapshot.time-retained")],
)
def test_bad_retention_value_is_refused_before_anything_is_written(warehouse, table_options, run_options, named):
    catalog, _ = make_table(warehouse, options=dict(RETAIN, **table_options))
    _appends(catalog, 4)
    before = tree(table_dir(warehouse))
    with pytest.raises(InvalidArgumentError, match=named):
        _compact(catalog, run_options=run_options)
    assert tree(table_dir(warehouse)) == before


@pytest.mark.spark
def test_spark_job_expires_with_its_options_and_reports_it(spark, warehouse, capsys):
    """The CompactionOperator's job: ``--option`` reaches the expiry; the result has ``expired``."""
    from airflow_provider_paimon.job_contract import parse_result
    from airflow_provider_paimon.spark.jobs import compact as job

    catalog, _ = make_table(warehouse, options={"compaction.min.file-num": "2"})  # default retention
    rows_at = _appends(catalog, 5)
    code = job.main(["--warehouse", warehouse, "--table", "db.t", "--option", "snapshot.num-retained.min=2",
                     "--option", "snapshot.num-retained.max=2"])
    out = capsys.readouterr()
    result = parse_result(out.out)
    assert code == 0, out.err
    assert result["committed"] and result["snapshot_id"] == 6
    assert result["expired"]["expired_snapshot_ids"] == [1, 2, 3, 4]
    assert _snap_ids(table_dir(warehouse)) == [5, 6]
    base = load_table(catalog, "db.t")
    for sid in (5, 6):
        assert read_rows(base.copy({"scan.snapshot-id": str(sid)})) == rows_at[5]
