"""Lineage follows replace-main and fast-forward: main's new snapshot leads to the branch's.

The branch job (with ``$PAIMON_LINEAGE_URL``) records the link; the real
``paimon-lineage`` command then finds the branch snapshot upstream of main's new
snapshot, and with ``--depth 2`` the branch snapshot's own upstream.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from support.branch_tables import load_table, make_table, rows, write

from airflow_provider_paimon.job_contract import LINEAGE_URL_ENV, parse_result
from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.tag import create_tag
from airflow_provider_paimon.spark.jobs import branch as branch_job

CLI = shutil.which("paimon-lineage", path=os.path.dirname(sys.executable)) or "paimon-lineage"


def _scenario(warehouse: str):
    """Main 1,2 (tag t1), branch fix from t1 with two corrected commits, main 3."""
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    fix = load_table(catalog, "db.t", "fix")
    write(fix, [100], "b")
    write(fix, [101], "b")
    write(t, [3])
    return catalog, t


@pytest.fixture
def store_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/lineage.sqlite"
    with LineageStore.from_url(url) as store:
        # the corrected job's capture: branch fix's snapshot 4 came from ods.raw@7
        store.record_batch("correct_t", 0, [SnapshotRef("ods", "raw", 7)], [SnapshotRef("db", "t", 4, "fix")])
    monkeypatch.setenv(LINEAGE_URL_ENV, url)
    return url


def _job(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = branch_job.main(list(argv))
    out, err = capsys.readouterr()
    return code, parse_result(out), err


def _cli(url: str, *argv: str) -> list[dict]:
    proc = subprocess.run([CLI, *argv, "--url", url, "--json"], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != LINEAGE_URL_ENV})
    assert proc.returncode == 0, proc.stderr
    return [(n["table"], n["branch"], n["snapshot_id"], n["depth"]) for n in json.loads(proc.stdout)]


def test_upstream_of_main_after_replace_main_is_the_branch_snapshot(warehouse, store_url, capsys):
    catalog, _ = _scenario(warehouse)
    common = ["--warehouse", warehouse, "--table", "db.t", "--branch", "fix"]
    code, result, err = _job(capsys, "replace-main", *common, "--backup-name", "bk")
    assert code == 0, err
    main_n = result["main_snapshot_id"]
    assert (main_n, result["branch_snapshot_id"]) == (4, 4)
    assert rows(catalog) == rows(catalog, branch="fix")
    from airflow_provider_paimon.paimon.catalog import load_table
    from airflow_provider_paimon.paimon.snapshot_identity import table_identity

    # the link names both snapshots by identity too (ids are reused; commits are not)
    fix_id = table_identity(load_table(catalog, "db.t", "fix"), 4)
    main_id = table_identity(load_table(catalog, "db.t"), 4)
    assert result["lineage"] == {"job": "paimon.replace_main", "barrier_id": 1, "source": "db.t@fix:4",
                                 "sink": "db.t@main:4", "recorded": True,
                                 "source_identity": fix_id.digest, "sink_identity": main_id.digest}
    # the real command line, as a person would ask it
    assert _cli(store_url, "upstream", "db.t", str(main_n)) == [("t", "fix", 4, 1)]
    assert _cli(store_url, "upstream", "db.t", str(main_n), "--depth", "2") == [("t", "fix", 4, 1), ("raw", "main", 7, 2)]
    assert ("t", "main", main_n, 2) in _cli(store_url, "downstream", "ods.raw", "7", "--depth", "2")
    # a retried task: nothing replaced again, the link not recorded twice
    code, again, err = _job(capsys, "replace-main", *common, "--backup-name", "bk2")
    assert code == 0, err
    assert again["unchanged"] is True and again["lineage"]["recorded"] is False
    with LineageStore.from_url(store_url) as store:
        assert len(store.sink_data_lineages(job="paimon.replace_main")) == 1


def test_fast_forward_links_main_to_the_branch_snapshot(warehouse, store_url, capsys):
    _scenario(warehouse)
    code, result, err = _job(capsys, "fast-forward", "--warehouse", warehouse, "--table", "db.t", "--branch", "fix")
    assert code == 0, err
    assert result["lineage"]["job"] == "paimon.fast_forward"
    assert _cli(store_url, "upstream", "db.t", str(result["main_snapshot_id"]), "--depth", "2") == [
        ("t", "fix", 4, 1), ("raw", "main", 7, 2)
    ]


def test_store_failure_fails_the_job_after_the_replacement_and_a_rerun_records(warehouse, tmp_path, monkeypatch, capsys):
    catalog, _ = _scenario(warehouse)
    monkeypatch.setenv(LINEAGE_URL_ENV, f"sqlite:///{tmp_path}/no/such/dir/lineage.sqlite")
    common = ["--warehouse", warehouse, "--table", "db.t", "--branch", "fix"]
    code, result, err = _job(capsys, "replace-main", *common)
    assert code == 1 and result is None
    assert "replace-main of db.t to branch 'fix' is done (main snapshot 4)" in err
    assert "rerun the task" in err
    assert rows(catalog) == rows(catalog, branch="fix")
    url = f"sqlite:///{tmp_path}/lineage.sqlite"
    monkeypatch.setenv(LINEAGE_URL_ENV, url)
    code, result, err = _job(capsys, "replace-main", *common)
    assert code == 0, err
    assert result["unchanged"] is True and result["lineage"]["recorded"] is True
    assert _cli(url, "upstream", "db.t", "4") == [("t", "fix", 4, 1)]


def test_without_a_store_nothing_is_recorded(warehouse, monkeypatch, capsys):
    monkeypatch.delenv(LINEAGE_URL_ENV, raising=False)
    _scenario(warehouse)
    code, result, err = _job(capsys, "replace-main", "--warehouse", warehouse, "--table", "db.t", "--branch", "fix")
    assert code == 0, err
    assert "lineage" not in result
