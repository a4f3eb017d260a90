"""Branch audits for the lineage page: the XCom reports of audit tasks, read from Airflow.

``BranchAuditOperator`` and ``CascadeAuditOperator`` (operators/audit.py, cascade.py)
leave their report in XCom: the return value when the audit passed (or
``fail_on_check_failure`` is off), key ``audit`` when a check failed and the task
failed. The page shows, per table, the newest of them: rows added and removed per
partition between the branch and its base, so whoever publishes a branch sees what it
would change.

Bounded whatever the metadata database holds: at most ``MAX_SCAN`` newest audit XComs
are read per request (then filtered by table in Python: the table is inside the JSON
value, which the databases do not query alike), at most ``MAX_PARTITIONS`` partitions
and ``MAX_TEXT`` characters per text are returned. Every value is returned as plain
JSON text or numbers (an XCom may hold anything a task pushed); the page escapes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: Operators whose XComs are audit reports (``TaskInstance.operator``: the class name).
AUDIT_OPERATORS = ("BranchAuditOperator", "CascadeAuditOperator")
#: XCom keys of a report: passed (return value) or failed (operators/audit.py AUDIT_XCOM_KEY).
AUDIT_KEYS = ("return_value", "audit")
MAX_SCAN = 500
MAX_LIMIT = 100
MAX_PARTITIONS = 20
MAX_TEXT = 500
MAX_CHECKS = 20

_TABLE = re.compile(r"^[^\s.]+\.[^\s.]+$")


@dataclass(frozen=True)
class AuditRow:
    """One audit XCom as stored: where it comes from and its (decoded) value."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    key: str
    when: datetime | None
    value: Any


def check_table(table: str | None) -> str:
    """``db.table`` lower-cased, else ValueError saying what to give."""
    name = (table or "").strip()
    if len(name) > 500 or not _TABLE.match(name):
        raise ValueError(f"table must be 'database.table' (one dot, no spaces), got {name[:80]!r}")
    return name.lower()


def _text(value: Any, limit: int = MAX_TEXT) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _partition(value: Any) -> str | None:
    """``{"dt": "2024-01-01", "h": 3}`` -> ``dt=2024-01-01/h=3`` (as Paimon names partitions)."""
    if isinstance(value, dict):
        value = "/".join(f"{k}={v}" for k, v in value.items()) or "(unpartitioned)"
    return _text(value, 200)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def decode(value: Any) -> Any:
    """An XCom value as Airflow stores it (JSON text, or JSON already decoded) -> Python."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def audit_entry(row: AuditRow) -> dict[str, Any] | None:
    """The page's view of one report (bounded, text and numbers only); None: not a report."""
    report = decode(row.value)
    if not isinstance(report, dict) or not isinstance(report.get("diff"), dict):
        return None
    diff = report["diff"]
    parts = raw if isinstance(raw := diff.get("partitions"), list) else []
    shown = [p for p in parts[:MAX_PARTITIONS] if isinstance(p, dict)]
    checks = raw if isinstance(raw := report.get("checks"), dict) else {}
    failed = raw if isinstance(raw := checks.get("failed"), list) else []
    return {
        "dag_id": row.dag_id,
        "run_id": row.run_id,
        "task_id": row.task_id,
        "map_index": row.map_index,
        "when": row.when.isoformat() if row.when else None,
        "table": _text(report.get("table") or diff.get("table"), 200),
        "branch": _text(report.get("branch") or diff.get("branch"), 200),
        "base": _text(report.get("base") or diff.get("base"), 200),
        "passed": report.get("passed") is True,
        "task_failed": row.key != "return_value",
        "summary": _text(report.get("summary")),
        "added": _int(diff.get("added")),
        "removed": _int(diff.get("removed")),
        "changed_partitions": _int(diff.get("changed_partitions")),
        "total_partitions": _int(diff.get("total_partitions")),
        "partitions": [
            {"partition": _partition(p.get("partition")), "added": _int(p.get("added")),
             "removed": _int(p.get("removed"))}
            for p in shown
        ],
        "partitions_truncated": bool(diff.get("truncated")) or len(parts) > len(shown),
        "failed_checks": [_text(name, 200) for name in failed[:MAX_CHECKS]],
    }


def select_audits(rows: Iterable[AuditRow], table: str, branch: str | None, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` reports of ``table`` (and ``branch``) among ``rows`` (newest first)."""
    found: list[dict[str, Any]] = []
    for row in rows:
        entry = audit_entry(row)
        if entry is None or (entry["table"] or "").lower() != table:
            continue
        if branch is not None and entry["branch"] != branch:
            continue
        found.append(entry)
        if len(found) >= limit:
            break
    return found


def read_audit_rows(session: Any, dag_ids: set[str] | None, scan: int = MAX_SCAN) -> list[AuditRow]:
    """The newest ``scan`` audit XComs of ``dag_ids`` (None: every DAG) from Airflow's metadata DB."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from sqlalchemy import and_, select

    if dag_ids is not None and not dag_ids:
        return []
    stmt = (
        select(XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.map_index, XComModel.key,
               XComModel.timestamp, XComModel.value)
        .join(TaskInstance, and_(TaskInstance.dag_id == XComModel.dag_id, TaskInstance.task_id == XComModel.task_id,
                                 TaskInstance.run_id == XComModel.run_id,
                                 TaskInstance.map_index == XComModel.map_index))
        .where(TaskInstance.operator.in_(AUDIT_OPERATORS), XComModel.key.in_(AUDIT_KEYS))
        .order_by(XComModel.timestamp.desc())
        .limit(scan)
    )
    if dag_ids is not None:
        stmt = stmt.where(XComModel.dag_id.in_(sorted(dag_ids)))
    return [AuditRow(*row) for row in session.execute(stmt)]


def audits_answer(rows: list[AuditRow], table: str, branch: str | None, limit: int,
                  scan: int = MAX_SCAN) -> dict[str, Any]:
    """The endpoint's answer: the table's newest reports; ``truncated`` when the scan hit its bound."""
    audits = select_audits(rows, table, branch, limit)
    cut = len(rows) >= scan and len(audits) < limit
    return {
        "table": table,
        "branch": branch,
        "audits": audits,
        "truncated": cut,
        "truncated_reason": (f"only the newest {scan} audit results of the DAGs you may read were searched"
                             if cut else None),
    }
