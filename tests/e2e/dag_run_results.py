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


def rerun_failed_tasks(dag, run):
    """Rerun ``run`` as Airflow's "Clear" with "only failed" does, in this process.

    The failed and upstream-failed task instances are cleared (the succeeded ones keep
    their state and XCom), the run goes back to running, and the cleared tasks run as
    ``dag.test()`` runs tasks (``dag.test()`` itself would delete the run and start
    over). Returns the run, reloaded.
    """
    from airflow.models.dagrun import DagRun
    from airflow.sdk import timezone
    from airflow.sdk.definitions.dag import _run_task
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState, TaskInstanceState
    from sqlalchemy import select

    scheduler_dag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    cleared = scheduler_dag.clear(run_id=run.run_id, only_failed=True, dag_run_state=DagRunState.RUNNING)
    assert cleared, f"nothing failed in {run.run_id}"
    with create_session() as session:
        dr = session.scalar(select(DagRun).where(DagRun.dag_id == dag.dag_id, DagRun.run_id == run.run_id))
        dr.dag = scheduler_dag
        for _ in range(1000):  # a bound, not a wait: each round runs every ready task
            if dr.state != DagRunState.RUNNING:
                break
            session.expire_all()
            schedulable, _ = dr.update_state(session=session)
            for ti in schedulable:
                if ti.state != TaskInstanceState.UP_FOR_RESCHEDULE:
                    ti.try_number += 1
                ti.state = TaskInstanceState.SCHEDULED
                ti.scheduled_dttm = timezone.utcnow()
            session.commit()
            for ti in [t for t in dr.get_task_instances(session=session) if t.state == TaskInstanceState.SCHEDULED]:
                _run_task(ti=ti, task=dag.task_dict[ti.task_id], run_triggerer=True)
    with create_session() as session:  # the tasks ran in sessions of their own: read it afresh
        dr = session.scalar(select(DagRun).where(DagRun.dag_id == dag.dag_id, DagRun.run_id == run.run_id))
        session.expunge(dr)
    return dr


def table_rows(warehouse: str, name: str, sort_key: str, branch: str | None = None) -> list[dict]:
    """Every row of ``name`` (on ``branch``) read with plain pypaimon, sorted by ``sort_key``."""
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    table = load_table(open_catalog(warehouse), name, branch)
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    out = builder.new_read().to_arrow(splits).to_pylist() if splits else []
    return sorted(out, key=lambda r: r[sort_key])
