"""The bounded summary an audit task stores beside its report, for the lineage page.

``BranchAuditOperator`` (and ``CascadeAuditOperator``) return the full report as XCom;
it may be large (violating rows, many partitions). The lineage page's audits panel
must not decode every audit report of every table to find one table's, so the operator
also stores this summary under a key named after the table
(``summary_key(table)``): the page reads the asked table's summaries only, through
Airflow's index on the XCom key, each at most ``MAX_SUMMARY_BYTES`` of JSON.

The summary has the report's own shape (``table``, ``branch``, ``base``, ``passed``,
``summary``, ``diff`` with counts and partitions, ``checks.failed``) cut to what the
page shows, plus ``task_failed``. Plain Python: no Airflow import, so the api-server's
plugin reads it without loading the operators.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: XCom key prefix of an audit summary; the rest is the table (``db.table``, lower case)
SUMMARY_KEY_PREFIX = "paimon_audit:"
#: Airflow's XCom key column holds 512 characters
MAX_KEY_CHARS = 512
MAX_SUMMARY_BYTES = 8192
MAX_TEXT = 500
MAX_PARTITIONS = 20
MAX_CHECKS = 20


def summary_key(table: str) -> str:
    """The XCom key of ``table``'s audit summaries (a digest of the name if it is too long)."""
    name = str(table).strip().lower()
    key = SUMMARY_KEY_PREFIX + name
    if len(key) <= MAX_KEY_CHARS:
        return key
    return SUMMARY_KEY_PREFIX + "sha256:" + hashlib.sha256(name.encode("utf-8")).hexdigest()


def bounded_text(value: Any, limit: int = MAX_TEXT) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def partition_text(value: Any) -> str | None:
    """``{"dt": "2024-01-01", "h": 3}`` -> ``dt=2024-01-01/h=3`` (as Paimon names partitions)."""
    if isinstance(value, dict):
        value = "/".join(f"{k}={v}" for k, v in value.items()) or "(unpartitioned)"
    return bounded_text(value, 200)


def audit_summary(report: Any, table: str, task_failed: bool) -> dict[str, Any]:
    """``report`` (an audit job's result) cut to at most ``MAX_SUMMARY_BYTES`` of JSON."""
    report = report if isinstance(report, dict) else {}
    diff = raw if isinstance(raw := report.get("diff"), dict) else {}
    parts = raw if isinstance(raw := diff.get("partitions"), list) else []
    checks = raw if isinstance(raw := report.get("checks"), dict) else {}
    failed = raw if isinstance(raw := checks.get("failed"), list) else []
    shown = [
        {"partition": partition_text(p.get("partition")), "added": int_or_none(p.get("added")), "removed": int_or_none(p.get("removed"))}
        for p in parts[:MAX_PARTITIONS] if isinstance(p, dict)
    ]
    summary: dict[str, Any] = {
        "table": bounded_text(report.get("table") or diff.get("table") or table, 200),
        "branch": bounded_text(report.get("branch") or diff.get("branch"), 200),
        "base": bounded_text(report.get("base") or diff.get("base"), 200),
        "passed": report.get("passed") is True,
        "task_failed": bool(task_failed),
        "summary": bounded_text(report.get("summary")),
        "diff": {
            "added": int_or_none(diff.get("added")),
            "removed": int_or_none(diff.get("removed")),
            "changed_partitions": int_or_none(diff.get("changed_partitions")),
            "total_partitions": int_or_none(diff.get("total_partitions")),
            "partitions": shown,
            "truncated": bool(diff.get("truncated")) or len(parts) > len(shown),
        },
        "checks": {"failed": [bounded_text(name, 200) for name in failed[:MAX_CHECKS]]},
        "expectations": expectation_lines(report.get("expectations")),
    }
    while _size(summary) > MAX_SUMMARY_BYTES and summary["diff"]["partitions"]:
        summary["diff"]["partitions"].pop()
        summary["diff"]["truncated"] = True
    while _size(summary) > MAX_SUMMARY_BYTES and summary["checks"]["failed"]:
        summary["checks"]["failed"].pop()
    while _size(summary) > MAX_SUMMARY_BYTES and summary["expectations"]:
        summary["expectations"].pop()
    return summary


def expectation_lines(report: Any) -> list[dict[str, Any]]:
    """Each expectation's outcome, bounded: name, reaction, passed, violations, dropped rows."""
    results = report.get("results") if isinstance(report, dict) else None
    if not isinstance(results, list):
        return []
    return [
        {"name": bounded_text(r.get("name"), 100), "on_violation": bounded_text(r.get("on_violation"), 10),
         "passed": r.get("passed") is True, "violations": int_or_none(r.get("violations"))}
        for r in results[:MAX_CHECKS] if isinstance(r, dict)
    ]


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
