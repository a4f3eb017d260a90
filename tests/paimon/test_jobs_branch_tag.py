"""The branch/tag job entry points: argument contract, result line, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.branch_tables import load_table, make_table, rows, table_dir, tree, write

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.spark.jobs import branch as branch_job
from airflow_provider_paimon.spark.jobs import launcher
from airflow_provider_paimon.spark.jobs import tag as tag_job


def run(capsys, module, argv: list[str]) -> tuple[int, dict | None, str]:
    code = module.main(argv)
    out, err = capsys.readouterr()
    return code, parse_result(out), err


@pytest.fixture
def table(warehouse):
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    return catalog, t


def test_full_correction_flow_in_process(capsys, warehouse, table):
    catalog, t = table
    common = ["--warehouse", warehouse, "--table", "db.t"]
    code, res, _ = run(capsys, tag_job, ["create", *common, "--tag", "t1"])
    assert code == 0 and res["snapshot_id"] == 2 and res["command"] == "create"
    code, res, _ = run(capsys, branch_job, ["create", *common, "--branch", "fix", "--tag", "t1"])
    assert code == 0 and res["branch"] == "fix" and res["snapshot_id"] == 2
    code, res, _ = run(capsys, branch_job, ["create", *common, "--branch", "s1", "--snapshot-id", "1"])
    assert code == 0 and res["snapshot_id"] == 1
    write(load_table(catalog, "db.t", "fix"), [10], "b")
    write(t, [3])
    code, res, _ = run(capsys, tag_job, ["create", *common, "--tag", "bt", "--branch", "fix"])
    assert code == 0 and res["branch"] == "fix" and res["snapshot_id"] == 3
    code, res, _ = run(capsys, tag_job, ["list", *common, "--branch", "fix"])
    assert [x["name"] for x in res["tags"]] == ["bt", "t1"]
    code, res, _ = run(capsys, branch_job, ["list", *common])
    assert [b["name"] for b in res["branches"]] == ["fix", "s1"]
    assert res["branches"][0]["latest_snapshot_id"] == 3 and res["branches"][0]["create_time_millis"] > 0
    code, res, _ = run(capsys, branch_job, ["rename", *common, "--branch", "s1", "--new-name", "s2"])
    assert code == 0 and res == {"command": "rename", "table": "db.t", "branch": "s2", "previous_name": "s1"}
    code, res, _ = run(capsys, branch_job, ["delete", *common, "--branch", "s2"])
    assert code == 0 and res["deleted"] is True
    code, res, _ = run(
        capsys, branch_job, ["replace-main", *common, "--branch", "fix", "--backup-name", "old_main"]
    )
    assert code == 0
    assert res["main_snapshot_id"] == 4 and res["backup"] == {"kind": "branch", "name": "old_main"}
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (10, "b10")]
    code, res, _ = run(capsys, branch_job, ["replace-main", *common, "--branch", "old_main", "--no-backup"])
    assert code == 0 and res["backup"] is None
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (3, "m3")]
    code, res, _ = run(capsys, branch_job, ["fast-forward", *common, "--branch", "fix"])
    assert code == 0 and res["main_snapshot_id"] == 3 and res["branch_point_snapshot_id"] == 2
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (10, "b10")]
    code, res, _ = run(capsys, tag_job, ["delete", *common, "--tag", "t1"])
    assert code == 0 and res["deleted"] is True
    code, res, _ = run(capsys, branch_job, ["replace-main", *common, "--branch", "fix", "--backup-kind", "tag",
                                            "--backup-name", "pre", "--catalog-option", "cache-enabled=false"])
    assert code == 0 and res["unchanged"] is True and res["backup"] is None  # main already reads as fix
    assert rows(catalog) == [(1, "m1"), (2, "m2"), (10, "b10")]


@pytest.mark.parametrize(
    ("module", "argv", "code", "text"),
    [
        (branch_job, [], 2, "first argument must be a command"),
        (branch_job, ["merge"], 2, "first argument must be a command"),
        (tag_job, ["merge"], 2, "first argument must be a command"),
        (branch_job, ["create", "--table", "db.t", "--branch", "x"], 2, "--warehouse"),
        (branch_job, ["create", "W", "--table", "db.t"], 2, "required"),
        (branch_job, ["create", "W", "--table", "db.t", "--branch", "b", "--tag", "t", "--snapshot-id", "1"], 2,
         "not allowed with"),
        (branch_job, ["create", "W", "--table", "db.t", "--branch", "main"], 2, "reserved"),
        (branch_job, ["create", "W", "--table", "db.t", "--branch", "b", "--tag", "nope"], 2, "does not exist"),
        (branch_job, ["delete", "W", "--table", "db.t", "--branch", "nope"], 2, "does not exist"),
        (branch_job, ["fast-forward", "W", "--table", "db.t", "--branch", "a/b"], 2, "path separators"),
        (branch_job, ["replace-main", "W", "--table", "db.t", "--branch", "x", "--backup-kind", "zip"], 2,
         "invalid choice"),
        (branch_job, ["list", "W", "--table", "nodot"], 2, "database.table"),
        (branch_job, ["list", "W", "--table", "db.missing"], 2, "does not exist"),
        (tag_job, ["create", "W", "--table", "db.t", "--tag", "x", "--snapshot-id", "99"], 2, "snapshot 99"),
        (tag_job, ["delete", "W", "--table", "db.t", "--tag", "x", "--branch", "nope"], 2, "does not exist"),
    ],
)
def test_errors_exit_nonzero_with_clear_message_and_write_nothing(
    capsys, warehouse, table, module, argv, code, text
):
    argv = [("--warehouse" if a == "W" else a) for a in argv]
    if "--warehouse" in argv:
        argv.insert(argv.index("--warehouse") + 1, warehouse)
    before = tree(warehouse)
    got, res, err = run(capsys, module, argv)
    assert got == code
    assert res is None
    assert "PAIMON_ERROR" in err and text in err
    assert tree(warehouse) == before


def test_launcher_subprocess_plain_python(warehouse, table):
    """One real process: ``python launcher.py branch create ...`` then ``list``."""
    catalog, _t = table
    script = launcher.__file__
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, script, "branch", "create", "--warehouse", warehouse, "--table", "db.t",
         "--branch", "fix", "--snapshot-id", "1"],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = parse_result(proc.stdout)
    assert res["branch"] == "fix" and res["snapshot_id"] == 1
    assert os.path.isdir(os.path.join(table_dir(warehouse), "branch", "branch-fix"))
    assert rows(catalog, branch="fix") == [(1, "m1")]
    proc = subprocess.run(
        [sys.executable, script, "branch", "delete", "--warehouse", warehouse, "--table", "db.t", "--branch", "fix",
         "--catalog-option", "bad"],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert proc.returncode == 2
    assert "PAIMON_ERROR" in proc.stderr and "NAME=VALUE" in proc.stderr


@pytest.mark.parametrize("family", sorted(launcher.FAMILIES))
def test_launcher_maps_every_family_to_a_job_module(family):
    """Each family the launcher accepts names an importable module with ``main(argv)``."""
    import importlib

    module = importlib.import_module(launcher.FAMILIES[family])
    assert callable(getattr(module, "main", None)), f"{module.__name__} has no main(argv)"


def test_launcher_refuses_an_unknown_family(capsys):
    assert launcher.main(["nope"]) == 2
    assert "must be a job family (audit, branch, compact, maintenance, publish, tag)" in capsys.readouterr().err
