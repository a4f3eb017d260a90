"""The ``maintenance`` job family in process: arguments reach ``paimon.maintenance``, results are small."""

from __future__ import annotations

import os
import time

import pytest
from support.branch_tables import make_table, rows, table_dir, tree, write

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.spark.jobs import maintenance as job
from airflow_provider_paimon.spark.jobs import tag as tag_job


def run(capsys, module, argv: list[str]) -> tuple[int, dict | None, str]:
    code = module.main(argv)
    out, err = capsys.readouterr()
    return code, parse_result(out), err


@pytest.fixture
def table(warehouse):
    catalog, t = make_table(warehouse)
    for i in range(1, 6):
        write(t, [i])
    return catalog, t


def test_each_command_runs_its_operation(capsys, warehouse, table):
    catalog, _ = table
    common = ["--warehouse", warehouse, "--table", "db.t"]
    code, res, _ = run(capsys, job, ["expire-snapshots", *common, "--retain-min", "2", "--older-than", "0", "--dry-run"])
    assert code == 0 and res["dry_run"] is True and res["expired_snapshot_ids"] == [1, 2, 3]
    assert res["command"] == "expire-snapshots" and res["table"] == "db.t" and res["duration_s"] >= 0
    code, res, _ = run(capsys, job, ["expire-snapshots", *common, "--retain-min", "2", "--older-than", "1 h"])
    assert code == 0 and res["expired_snapshot_ids"] == [] and "older_than" in res["stopped_because"]
    code, res, _ = run(capsys, job, ["expire-snapshots", *common, "--retain-max", "3", "--retain-min", "1", "--max-deletes", "1"])
    assert code == 0 and res["expired_snapshot_ids"] == [1]
    code, res, _ = run(capsys, tag_job, ["create", *common, "--tag", "keep", "--time-retained", "0.05"])
    assert code == 0 and res["time_retained_seconds"] == 0.05
    time.sleep(0.1)
    code, res, _ = run(capsys, job, ["expire-tags", *common])
    assert code == 0 and res["expired_tags"] == ["keep"]
    code, res, _ = run(capsys, job, ["rollback", *common, "--snapshot-id", "3", "--as-latest"])
    assert code == 0 and res["snapshot_id"] == 6 and res["target_snapshot_id"] == 3
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (3, "m3")]
    stray = os.path.join(table_dir(warehouse), "bucket-0", "data-stray.parquet")
    with open(stray, "wb") as fh:
        fh.write(b"x" * 10)
    os.utime(stray, (time.time() - 3 * 86400,) * 2)
    code, res, _ = run(capsys, job, ["remove-orphan-files", *common, "--dry-run"])
    assert code == 0 and [f["path"] for f in res["deleted_files"]] == ["bucket-0/data-stray.parquet"]
    assert os.path.exists(stray)
    code, res, _ = run(capsys, job, ["remove-orphan-files", *common, "--older-than", "2 d"])
    assert code == 0 and res["deleted_file_count"] == 1 and not os.path.exists(stray)


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        ([], "first argument must be a command"),
        (["vacuum"], "first argument must be a command"),
        (["expire-snapshots", "W", "--retain-min", "0"], "retain_min must be >= 1"),
        (["expire-snapshots", "W", "--older-than", "1 hr"], "--older-than '1 hr' is not a duration"),
        (["expire-snapshots", "W", "--branch", "nope"], "branch 'nope' does not exist"),
        (["remove-orphan-files", "W", "--branch", "x"], "unrecognized arguments"),
        (["rollback", "W"], "exactly one of snapshot_id or tag"),
        (["rollback", "W", "--snapshot-id", "9"], "snapshot 9 does not exist"),
        (["expire-tags", "W", "--dry-run", "yes"], "unrecognized arguments"),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(capsys, warehouse, table, argv, text):
    argv = [a for part in argv for a in (["--warehouse", warehouse, "--table", "db.t"] if part == "W" else [part])]
    before = tree(warehouse)
    code, res, err = run(capsys, job, argv)
    assert code == 2 and res is None and text in err, err
    assert tree(warehouse) == before


def test_long_lists_are_cut_but_counts_stay_whole():
    result = {"deleted_files": list(range(500)), "expired_snapshot_ids": [1, 2], "deleted_file_count": 500}
    cut = job.trim_lists(result, limit=200)
    assert cut["deleted_files"] == list(range(200)) and cut["deleted_files_listed"] == 200
    assert cut["expired_snapshot_ids"] == [1, 2] and "expired_snapshot_ids_listed" not in cut
    assert cut["deleted_file_count"] == 500 and result["deleted_files"] == list(range(500))
