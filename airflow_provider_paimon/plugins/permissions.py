"""Which jobs a user of the Paimon pages may see: the auth manager's DAG permissions.

Jobs are named ``{dag_id}.{task_id}``; a user sees a job only if they may read its DAG,
and jobs that belong to no DAG only if they may read every DAG. The lineage page
filters its answers, the table history page hides the runs of other jobs, and the
audits panel reads only readable DAGs' XComs, all by this one rule.
"""

from collections.abc import Callable
from typing import Any

from ..lineage.job_visibility import JobsOfDags

__all__ = ["dag_access", "job_filter_for", "job_visibility_dependency"]


def job_filter_for(can_read_all: bool, readable: set[str], known: set[str]) -> JobsOfDags | None:
    """None (everything) for a user who reads every DAG; else: jobs of DAGs they may read.

    The filter is also a SQL condition (``JobsOfDags.where``): the lineage queries leave
    hidden jobs out in the database, so their budgets (and ``truncated``) count only
    what the user may see.
    """
    if can_read_all:
        return None
    return JobsOfDags(readable, known)


def dag_access(user: Any, session: Any) -> tuple[bool, set[str], set[str]]:
    """(may read every DAG, DAG ids the user may read, DAG ids Airflow knows)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.models.dag import DagModel
    from sqlalchemy import select

    manager = get_auth_manager()
    readable = manager.get_authorized_dag_ids(user=user, method="GET")
    known = set(session.scalars(select(DagModel.dag_id)))
    # "Every DAG" needs both: the general permission (no DAG named) and every known
    # DAG one by one (a multi-team SimpleAuthManager grants the first to everyone).
    can_read_all = manager.is_authorized_dag(method="GET", user=user) and readable >= known
    return can_read_all, readable, known


def job_visibility_dependency() -> Callable[..., Any]:
    """The FastAPI dependency giving, per request, the user's ``job_filter_for``."""
    from airflow.api_fastapi.core_api.security import GetUserDep

    # Not postponed (no __future__ annotations in this module): FastAPI reads GetUserDep.
    def visibility(user: GetUserDep) -> Callable[[str], bool] | None:
        from airflow.utils.session import create_session

        with create_session() as session:
            can_read_all, readable, known = dag_access(user, session)
        return job_filter_for(can_read_all, readable, known)

    return visibility
