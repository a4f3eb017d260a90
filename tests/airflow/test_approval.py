"""The approval gate: what the reviewer is shown, and how each answer ends.

The body is built from audit results as the audit job prints them; sensitive columns
are masked and table cells cannot carry Markdown. Every answer that is not "Approve"
(a rejection, a timeout, an error) fails closed. The real HITL round trip through an
api-server is in tests/e2e (it needs a running Airflow)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_paimon.operators.approval import (
    PublishApprovalOperator,
    PublishRejectedError,
    approval_body,
    check_answer,
    evidence_from_xcom,
)
from airflow_provider_paimon.operators.branch import ReplaceMainBranchOperator
from airflow_provider_paimon.operators.publish import PublishBranchesOperator

AUDIT = {
    "table": "shop.orders", "branch": "fix", "base": "main", "passed": True,
    "summary": "shop.orders main..fix: +2 -1 rows in 1 of 3 partitions",
    "diff": {
        "table": "shop.orders", "branch": "fix", "base": "main", "branch_snapshot": 7,
        "partition_keys": ["dt"], "changed_partitions": 1,
        "partitions": [{"partition": {"dt": "2026-11-01"}, "added": 2, "removed": 1}],
        "sample_added": [{"id": 1, "card": "4111-1111", "note": "a|b **x**"}],
        "sample_removed": [{"id": 2, "card": "5500-0000", "note": None}],
    },
    "checks": None,
    "expectations": {
        "dropped": 3, "quarantine": {"branch": "fix__quarantine"},
        "results": [{"name": "positive", "content": "amount >= 0", "on_violation": "drop", "passed": False,
                     "violations": 3}],
    },
}


def test_body_shows_the_evidence_masks_sensitive_columns_and_escapes_markdown():
    body = approval_body([AUDIT], tables=["shop.orders", "shop.daily"], sensitive_columns=["CARD"],
                         base_url="http://airflow:8080")
    assert "publish `fix` over `main`" in body and "| dt=2026-11-01 | 2 | 1 |" in body
    assert "4111" not in body and "5500" not in body and "***" in body
    assert "a\\|b \\*\\*x\\*\\*" in body  # a value cannot break the table or add markup
    assert "positive" in body and "| drop | violated | 3 |" in body and "fix\\_\\_quarantine" in body
    assert "http://airflow:8080/paimon-history/?table=shop.orders" in body
    assert "http://airflow:8080/paimon-lineage/?database=shop&table=orders&snapshot=7&branch=fix" in body
    assert "### shop.daily" in body and "No audit result" in body  # a table without evidence says so


def test_evidence_is_taken_from_audit_results_only():
    assert evidence_from_xcom([None, {"approved": True}, AUDIT, [AUDIT, "x"]]) == [AUDIT, AUDIT]
    assert "No audit ran" in approval_body([])


def test_only_approve_publishes_every_other_answer_fails_closed():
    approve = {"chosen_options": ["Approve"], "params_input": {"comment": "looks right"},
               "responded_by_user": {"id": "1", "name": "ana"}}
    assert check_answer("replace", approve) == "looks right"
    reject = {**approve, "chosen_options": ["Reject"], "params_input": {"comment": "d2 is wrong"}}
    with pytest.raises(PublishRejectedError, match=r"rejected by ana: d2 is wrong; nothing was published"):
        check_answer("replace", reject)
    with pytest.raises(PublishRejectedError, match=r"nobody approved the publish \(timeout\)"):
        check_answer("replace", {"error": "timed out", "error_type": "timeout"})
    with pytest.raises(PublishRejectedError, match="nobody approved"):
        check_answer("replace", None)
    with pytest.raises(PublishRejectedError, match="rejected"):
        check_answer("replace", {"chosen_options": ["Approve", "Reject"]})


def test_gate_arguments_are_checked_when_the_dag_is_parsed():
    op = ReplaceMainBranchOperator(task_id="r", table="db.t", branch="fix", approve=True,
                                   approval_timeout="2 h", sensitive_columns="card")
    assert op.approve and op.approval_timeout == timedelta(hours=2) and op.sensitive_columns == ["card"]
    assert ReplaceMainBranchOperator(task_id="r2", table="db.t", branch="fix").approve is False
    with pytest.raises(ValueError, match="approve must be True or False"):
        ReplaceMainBranchOperator(task_id="r3", table="db.t", branch="fix", approve="yes")
    with pytest.raises(ValueError, match="approval_timeout"):
        ReplaceMainBranchOperator(task_id="r4", table="db.t", branch="fix", approve=True, approval_timeout=0)
    publish = PublishBranchesOperator(task_id="p", tables={"db.a": "fix", "db.b": "fix"},
                                      approve=True)
    assert publish.approval_tables() == ["db.a", "db.b"] and publish.approval_subject() == "Publish db.a, db.b?"
    gate = PublishApprovalOperator(task_id="ok", tables=["db.a"])
    assert gate.approve and gate.approval_timeout == timedelta(hours=24)
