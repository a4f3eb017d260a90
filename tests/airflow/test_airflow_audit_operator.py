"""BranchAuditOperator: a real spark-submit of the ``audit`` job; a failed check fails the task.

The ``wh`` fixture (conftest): ``db.events`` main has ids 0-2 twice in 2026-11-01 and
once in 2026-11-02; branch ``fix`` has ids 0-2 once plus ids 0-4 in 2026-11-01. So
main..fix is +2 rows (ids 3 and 4 in 2026-11-01) and -3 rows (2026-11-02).
"""

from __future__ import annotations

import json

import pytest
import structlog
from support.airflow_connections import SECRET

from airflow_provider_paimon.common.audit_summary import (
    MAX_SUMMARY_BYTES,
    audit_summary,
    summary_key,
)
from airflow_provider_paimon.operators.audit import (
    AUDIT_XCOM_KEY,
    BranchAuditOperator,
    PaimonAuditFailedError,
)
from airflow_provider_paimon.operators.base import PaimonPreflightError

pytestmark = [pytest.mark.airflow]


class _TaskInstance:
    """What the operator uses of Airflow's task instance: ``xcom_push``."""

    def __init__(self) -> None:
        self.pushed: dict = {}

    def xcom_push(self, key: str, value: object) -> None:
        self.pushed[key] = value


def test_audit_fails_the_task_on_a_failed_check_and_changes_nothing(wh):
    before = wh.files()
    with pytest.raises(PaimonPreflightError, match=r"branch 'nope' does not exist.*branches: fix"):
        BranchAuditOperator(task_id="audit", table="db.events", branch="nope").execute({})
    with pytest.raises(PaimonPreflightError, match="branch and base are both 'fix'"):
        BranchAuditOperator(task_id="audit", table="db.events", branch="fix", base="fix").execute({})
    with pytest.raises(ValueError, match="must be a query"):
        BranchAuditOperator(task_id="audit", table="db.events", branch="fix", checks=["DELETE FROM db.events"])

    op = BranchAuditOperator(
        task_id="audit", table="db.events", branch="fix",
        checks={"no_new_ids": "SELECT id, dt FROM {branch_rows} WHERE id >= 3", "ids_set": "SELECT * FROM {branch_rows} WHERE id IS NULL"},
    )
    ti = _TaskInstance()
    with structlog.testing.capture_logs() as logs, pytest.raises(PaimonAuditFailedError, match="no_new_ids") as err:
        op.execute({"ti": ti})
    result = ti.pushed[AUDIT_XCOM_KEY]
    assert result == op.last_result and result["passed"] is False
    assert result["diff"]["summary"] == "db.events main..fix: +2 -3 rows in 2 of 2 partitions"
    assert [(p["partition"], p["added"], p["removed"]) for p in result["diff"]["partitions"]] == [
        ({"dt": "2026-11-02"}, 0, 3), ({"dt": "2026-11-01"}, 2, 0)]
    checks = {c["name"]: c for c in result["checks"]["checks"]}
    assert checks["ids_set"]["passed"] and not checks["no_new_ids"]["passed"]
    assert checks["no_new_ids"]["violations"] == 2
    assert sorted(r["id"] for r in checks["no_new_ids"]["sample"]) == [3, 4]
    assert "nothing was changed" in str(err.value)
    # beside the report, a bounded summary under the table's key: what the lineage page reads
    summary = ti.pushed[summary_key("db.events")]
    assert summary_key("DB.Events") == "paimon_audit:db.events"
    assert summary["task_failed"] is True and summary["passed"] is False and summary["branch"] == "fix"
    assert summary["diff"]["partitions"] == [{"partition": "dt=2026-11-02", "added": 0, "removed": 3},
                                             {"partition": "dt=2026-11-01", "added": 2, "removed": 0}]
    assert summary["checks"] == {"failed": ["no_new_ids"]} and "sample" not in str(summary)
    assert len(json.dumps(summary).encode()) <= MAX_SUMMARY_BYTES
    logged = " ".join(str(e.get("event", "")) for e in logs)
    assert SECRET not in logged and SECRET not in str(result) and SECRET not in str(err.value)
    assert wh.files() == before


def test_audit_summary_stays_within_its_byte_bound():
    """A report with huge texts, many partitions and failed checks: the summary keeps under 8 KB."""
    report = {
        "table": "db.t", "branch": "fix", "base": "main", "passed": False, "summary": "s" * 10_000,
        "diff": {"added": 5, "removed": 1, "changed_partitions": 5000, "total_partitions": 9000,
                 "partitions": [{"partition": {"dt": "x" * 300, "h": i}, "added": i, "removed": 0} for i in range(5000)]},
        "checks": {"failed": ["\u00e9" * 400] * 500, "checks": [{"sample": ["row"] * 10_000}]},
    }
    summary = audit_summary(report, "db.t", task_failed=True)
    assert len(json.dumps(summary, ensure_ascii=False).encode()) <= MAX_SUMMARY_BYTES
    assert summary["diff"]["truncated"] is True and summary["diff"]["changed_partitions"] == 5000
    assert summary["summary"].endswith("…") and len(summary["summary"]) == 500


def test_expectations_reach_the_job_change_the_outputs_and_become_quality_facets():
    """Rules are checked at parse time, travel to the audit job as JSON its parser takes,
    make the branch and its quarantine outputs when a rule drops, and the report's
    results become the branch's data quality facets and the page summary's lines."""
    from airflow_provider_paimon.spark.branch.expectations import expect_not_null, expect_row
    from airflow_provider_paimon.spark.jobs import audit as job

    with pytest.raises(ValueError, match="needs a SQL condition"):
        BranchAuditOperator(task_id="a", table="db.events", branch="fix", expectations=[{"name": "x", "kind": "row"}])
    rules = [expect_row("positive", "amount >= 0", "drop"), expect_not_null("cust", "customer")]
    op = BranchAuditOperator(task_id="a", table="db.events", branch="fix", expectations=rules)
    args = job.build_parser().parse_args(["--warehouse", "/w", "--table", "db.events", *op.job_args()])
    assert [r.to_dict() for r in job.parse_expectation_arg(args.expectations)] == [r.to_dict() for r in rules]
    assert op.output_tables() == [("db.events", "fix"), ("db.events", "fix__quarantine")]
    assert BranchAuditOperator(task_id="b", table="db.events", branch="fix").output_tables() == []
    report = {"table": "db.events", "branch": "fix", "rows": 10, "dropped": 2, "results": [
        {"name": "positive", "kind": "row", "on_violation": "drop", "passed": False, "violations": 2,
         "content": "amount >= 0", "columns": []},
        {"name": "cust", "kind": "not_null", "on_violation": "fail", "passed": True, "violations": 0,
         "content": "customer IS NOT NULL", "columns": ["customer"]},
    ]}
    facets = op.ol_input_facets("db.events", "fix", {"expectations": report})
    assert [a.name for a in facets["dataQualityAssertions"].assertions] == ["positive", "cust"]
    assert op.ol_input_facets("db.events", None, {"expectations": report}) == {}
    summary = audit_summary({"diff": {}, "expectations": report}, "db.events", task_failed=False)
    assert summary["expectations"][0] == {"name": "positive", "on_violation": "drop", "passed": False, "violations": 2}
