"""Seed audit reports into a test api-server's metadata DB, as audit tasks leave them.

The DAGs are real (parsed and serialized by Airflow) and hold real ``BranchAuditOperator``
tasks; the runs and task instances are made by Airflow's ``trigger_dag`` and the
reports stored by ``XComModel.set``, so the rows are what a finished audit leaves
(running the audits themselves would start Spark for each, far slower): the report
(return value, or key ``audit`` when the task failed) and its summary under the table's
key (``left_by_audit``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from airflow_provider_paimon.common.audit_summary import audit_summary, summary_key

from .airflow_server import Users, airflow_env

_SEED = """
import json, sys
from airflow.api.common.trigger_dag import trigger_dag
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from airflow.utils.types import DagRunTriggeredByType

import itertools

runs = set()
with open(sys.argv[1]) as fh:
    rows = json.load(fh)
# one session per run of consecutive rows (order kept: XCom timestamps follow it)
for (dag_id, run_id), group in itertools.groupby(rows, key=lambda r: (r["dag_id"], r["run_id"])):
    with create_session() as session:
        if (dag_id, run_id) not in runs:
            trigger_dag(dag_id, run_id=run_id, triggered_by=DagRunTriggeredByType.TEST, session=session)
            runs.add((dag_id, run_id))
            session.flush()
        for row in group:
            XComModel.set(row["key"], row["value"], dag_id=dag_id, task_id=row["task_id"], run_id=run_id,
                          session=session)
"""


def report(table: str, branch: str, partitions: list[tuple[Any, int, int]], passed: bool = True,
           failed: list[str] | None = None, summary: str | None = None) -> dict[str, Any]:
    """An audit result shaped as spark/jobs/audit.py prints it (``BranchAudit.to_dict``)."""
    added, removed = sum(p[1] for p in partitions), sum(p[2] for p in partitions)
    line = summary or f"{table} main..{branch}: +{added} -{removed} rows in {len(partitions)} of 10 partitions"
    return {
        "table": table, "branch": branch, "base": "main", "passed": passed, "summary": line,
        "diff": {"table": table, "base": "main", "branch": branch, "added": added, "removed": removed,
                 "changed_partitions": len(partitions), "total_partitions": 10, "truncated": False,
                 "partitions": [{"partition": p, "added": a, "removed": r} for p, a, r in partitions],
                 "summary": line},
        "checks": None if failed is None else {"passed": passed, "failed": failed, "checks": []},
    }


def left_by_audit(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each report row followed by the summary the audit operator stores beside it."""
    out = []
    for row in rows:
        report_value = row["value"]
        table = report_value["table"]
        out += [row, {**row, "key": summary_key(table),
                      "value": audit_summary(report_value, table, task_failed=row["key"] == "audit")}]
    return out


def seed_audits(home: Path, extra_env: dict[str, str], users: Users, rows: list[dict[str, Any]]) -> None:
    """Store ``rows`` (dag_id, run_id, task_id, key, value) as XComs of triggered runs.

    ``extra_env`` and ``users`` must be the server's (``airflow_env`` rewrites its password file).
    """
    env = airflow_env(home, extra_env, users)
    path = home / "audit-seed.json"
    path.write_text(json.dumps(rows))
    subprocess.run([sys.executable, "-c", _SEED, str(path)], env=env, check=True,
                   capture_output=True, timeout=600)
