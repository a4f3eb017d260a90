"""A retried ReplaceMainBranchOperator reaches the job that finishes the interrupted work.

The first try of a replace-main may be killed after it made the backup; the retry must
not fail fast on "backup already exists", because only the job (resuming from the
table's journal) can complete the replacement.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook
from airflow_provider_paimon.operators.base import PaimonPreflightError
from airflow_provider_paimon.operators.branch import ReplaceMainBranchOperator
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.branch import pending_operation, replace_main
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog


def _interrupted_replace_main(warehouse: str) -> None:
    table = load_table(open_catalog(warehouse), "db.events")
    faults.set_fault("replace_main.manifests")
    try:
        with pytest.raises(faults.InjectedFault):
            replace_main(table, "fix", backup_name="old_main")
    finally:
        faults.clear()
    assert pending_operation(table)["branch"] == "fix"


@pytest.fixture
def submit_with_python(monkeypatch):
    """spark-submit replaced by the same application run with plain Python (the branch job
    needs no Spark): the operator's real command arguments and environment reach the job."""
    submitted: list[list[str]] = []

    def submit(self, application="", env=None, **_kwargs):
        argv = [sys.executable, application, *self._application_args]
        submitted.append(argv)
        pythonpath = os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])
        proc = subprocess.run(
            argv, env={**(env or os.environ), "PYTHONPATH": pythonpath},
            capture_output=True, text=True, timeout=180,
        )
        for line in proc.stdout.splitlines() + proc.stderr.splitlines():
            self.capture_line(line)
        assert proc.returncode == 0, proc.stderr[-2000:]

    monkeypatch.setattr(PaimonSparkJobHook, "submit", submit)
    return submitted


def test_retry_after_an_interrupted_try_is_not_refused(wh, submit_with_python):
    _interrupted_replace_main(wh.path)
    branch_rows = wh.table("db.events", "fix")
    op = ReplaceMainBranchOperator(task_id="t", table="db.events", branch="fix", backup_name="old_main")
    # the backup branch exists, but the pending journal says why: the retry submits the job
    result = op.execute({})
    (argv,) = submit_with_python
    assert argv[argv.index("replace-main") - 1 :][:2] == ["branch", "replace-main"]
    assert argv[argv.index("--backup-name") + 1] == "old_main"
    # ... and the job resumed the interrupted replacement and finished it
    assert result["resumed"] is True and result["backup"] == {"kind": "branch", "name": "old_main"}
    table = load_table(open_catalog(wh.path), "db.events")
    assert pending_operation(table) is None
    latest = table.snapshot_manager().get_latest_snapshot()
    assert latest.id == result["main_snapshot_id"] == 4
    assert latest.total_record_count == branch_rows.snapshot_manager().get_latest_snapshot().total_record_count


def test_existing_backup_without_a_pending_operation_is_refused(wh):
    table = load_table(open_catalog(wh.path), "db.events")
    from airflow_provider_paimon.paimon.branch import create_branch

    create_branch(table, "old_main")
    op = ReplaceMainBranchOperator(task_id="t", table="db.events", branch="fix", backup_name="old_main")
    with pytest.raises(PaimonPreflightError, match="backup branch 'old_main' already exists"):
        op.preflight()


def test_replace_main_links_lineage_through_the_environment(wh, submit_with_python, tmp_path):
    """The store URL reaches the job only through its environment, never its command line."""
    from airflow_provider_paimon.lineage import LineageStore
    from airflow_provider_paimon.lineage.queries import upstream

    url = f"sqlite:///{tmp_path}/lineage.sqlite"
    op = ReplaceMainBranchOperator(task_id="t", table="db.events", branch="fix", lineage_url=url,
                                   lineage_database="lin")
    result = op.execute({})
    (argv,) = submit_with_python
    assert url not in " ".join(argv) and argv[argv.index("--lineage-database") + 1] == "lin"
    assert result["lineage"]["job"] == "paimon.replace_main" and result["lineage"]["recorded"] is True
    with LineageStore.from_url(url, "lin") as store:
        (node,) = upstream(store, "db", "events", result["main_snapshot_id"])
    assert (node.branch, node.snapshot_id) == ("fix", result["branch_snapshot_id"])


def test_bad_lineage_url_fails_before_the_submit(wh, submit_with_python):
    op = ReplaceMainBranchOperator(task_id="t", table="db.events", branch="fix", lineage_url="not a url")
    with pytest.raises(PaimonPreflightError, match="lineage_url is not a SQLAlchemy URL"):
        op.execute({})
    assert submit_with_python == []
