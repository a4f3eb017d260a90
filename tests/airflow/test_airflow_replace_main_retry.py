"""A retried ReplaceMainBranchOperator reaches the job that finishes the interrupted work.

The first try of a replace-main may be killed after it made the backup; the retry must
not fail fast on "backup already exists", because only the job (resuming from the
table's journal) can complete the replacement.
"""

from __future__ import annotations

import pytest

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


def test_retry_after_an_interrupted_try_is_not_refused(wh):
    _interrupted_replace_main(wh.path)
    op = ReplaceMainBranchOperator(task_id="t", table="db.events", branch="fix", backup_name="old_main")
    op.preflight()  # the backup branch exists, but the pending journal says why


def test_existing_backup_without_a_pending_operation_is_refused(wh):
    table = load_table(open_catalog(wh.path), "db.events")
    from airflow_provider_paimon.paimon.branch import create_branch

    create_branch(table, "old_main")
    op = ReplaceMainBranchOperator(task_id="t", table="db.events", branch="fix", backup_name="old_main")
    with pytest.raises(PaimonPreflightError, match="backup branch 'old_main' already exists"):
        op.preflight()
