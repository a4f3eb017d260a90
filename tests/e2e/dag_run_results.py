"""What the end-to-end DAG tests read back after ``dag.test()``: files, task states, XComs."""

from __future__ import annotations

import json
from pathlib import Path


def files_by_size(root: str) -> dict[str, int]:
    base = Path(root)
    return {str(p.relative_to(base)): p.stat().st_size for p in base.rglob("*") if p.is_file()}


def task_states(run) -> dict[str, str]:
    from airflow.utils.session import create_session

    with create_session() as session:
        return {ti.task_id: ti.state for ti in run.get_task_instances(session=session)}


def task_xcom(run, task_id: str):
    """The task's return value in this run, from the metadata DB."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        value = session.scalars(
            select(XComModel.value).where(
                XComModel.run_id == run.run_id,
                XComModel.task_id == task_id,
                XComModel.key == "return_value",
            )
        ).first()
    return json.loads(value) if isinstance(value, (str, bytes)) else value
