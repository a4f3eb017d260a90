"""Branch audits for the lineage page: the XCom reports of audit tasks, read from Airflow.

``BranchAuditOperator`` and ``CascadeAuditOperator`` (operators/audit.py, cascade.py)
leave their report in XCom (the return value, or key ``audit`` when a check failed the
task) and, beside it, a summary of at most 8 KB under a key named after the table
(``common/audit_summary.py``: ``paimon_audit:<db.table>``). The page shows, per
table, the newest summaries: rows added and removed per partition between the branch
and its base, so whoever publishes a branch sees what it would change.

Bounded whatever the metadata database holds: a request reads the asked table's
summaries only (one query on Airflow's index of the XCom key, the user's DAGs, newest
first): at most ``limit`` of them, or ``MAX_SCAN`` when filtering by branch (the branch
is inside the value); never another table's report. At most ``MAX_PARTITIONS``
partitions and ``MAX_TEXT`` characters per text are returned. Every value is returned
as plain JSON text or numbers (an XCom may hold anything a task pushed); the page
escapes it. Reports of audits run before the summary existed are not listed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..common.audit_summary import bounded_text as _text
from ..common.audit_summary import int_or_none as _int
from ..common.audit_summary import partition_text as _partition
from ..common.audit_summary import summary_key

#: Operators whose XComs are audit reports (``TaskInstance.operator``: the class name).
AUDIT_OPERATORS = ("BranchAuditOperator", "CascadeAuditOperator")
#: Summaries of one table read per request when filtering by branch.
MAX_SCAN = 200
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
        "task_failed": report.get("task_failed") is True,
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
        "expectations": [
            {"name": _text(e.get("name"), 100), "on_violation": _text(e.get("on_violation"), 10),
             "passed": e.get("passed") is True, "violations": _int(e.get("violations"))}
            for e in (report.get("expectations") or [])[:MAX_CHECKS] if isinstance(e, dict)
        ] if isinstance(report.get("expectations"), list) else [],
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


def read_audit_rows(session: Any, table: str, dag_ids: set[str] | None, scan: int) -> list[AuditRow]:
    """The newest ``scan`` audit summaries of ``table`` in ``dag_ids`` (None: every DAG).

    One query on the XCom key (``summary_key(table)``, which Airflow indexes): no other
    table's XCom is read, let alone decoded.
    """
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
        .where(XComModel.key == summary_key(table), TaskInstance.operator.in_(AUDIT_OPERATORS))
        .order_by(XComModel.timestamp.desc())
        .limit(scan)
    )
    if dag_ids is not None:
        stmt = stmt.where(XComModel.dag_id.in_(sorted(dag_ids)))
    return [AuditRow(*row) for row in session.execute(stmt)]


def scan_size(branch: str | None, limit: int) -> int:
    """How many of the table's summaries a request reads: ``limit``, or ``MAX_SCAN`` to find a branch's."""
    return limit if branch is None else max(limit, MAX_SCAN)


def audits_answer(rows: list[AuditRow], table: str, branch: str | None, limit: int) -> dict[str, Any]:
    """The endpoint's answer: the table's newest reports; ``truncated`` when the scan hit its bound."""
    scan = scan_size(branch, limit)
    audits = select_audits(rows, table, branch, limit)
    cut = branch is not None and len(rows) >= scan and len(audits) < limit
    return {
        "table": table,
        "branch": branch,
        "audits": audits,
        "truncated": cut,
        "truncated_reason": (f"only the newest {scan} audits of {table} in the DAGs you may read were searched "
                             f"for branch {branch!r}" if cut else None),
    }
