"""An automatic tag per DAG run on the snapshot a writing task committed (``run_tag``).

``run_tag=True`` on a Spark-job operator (or a prefix string) tags the snapshot its job
committed with the run's tag, ``{prefix}-{logical date}`` or ``{prefix}-{run id}``
(``paimon/tag/run_tag.py``, the name ``TagDagRunOperator`` gives; the prefix defaults to
the DAG id), once the job has succeeded, on the table and branch it wrote. One run,
one tag: when the run's tag already exists (a retried try, or another task of the run
that wrote the same table first) it is left as it is and the result says which snapshot
it holds. A job that committed nothing gets no tag.

The tag is made on the Airflow worker with pypaimon (no second spark-submit): a tag is
one small file. If it cannot be made the task fails without a retry (the data is
written; a retry would write it again), naming the tag and the cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.paimon.commit_properties import airflow_properties, snapshots_of_run
from airflow_provider_paimon.paimon.errors import AlreadyExistsError, InvalidArgumentError
from airflow_provider_paimon.paimon.snapshots import TableLayout
from airflow_provider_paimon.paimon.tag.create import create_tag
from airflow_provider_paimon.paimon.tag.run_tag import run_tag_name

__all__ = ["check_run_tag", "run_tag_for", "snapshot_of_try", "tag_committed_snapshot"]


def check_run_tag(value: Any) -> str | None:
    """The ``run_tag`` argument as a prefix: None (off), "" (the DAG id) or the prefix given."""
    if value is None or value is False:
        return None
    if value is True:
        return ""
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise InvalidArgumentError(
        f"run_tag must be True (tag named after the DAG id and the run), a tag prefix "
        f"string, or False; got {value!r}"
    )


def run_tag_for(prefix: str, dag_id: str, context: Mapping[str, Any]) -> str:
    """The run's tag name from the task's Airflow context (logical date, else run id)."""
    dag_run = context.get("dag_run")
    run_id = context.get("run_id") or getattr(dag_run, "run_id", None)
    logical_date = context.get("logical_date") or getattr(dag_run, "logical_date", None)
    return run_tag_name(prefix or dag_id, logical_date, run_id)


def tag_committed_snapshot(
    hook: Any, table: str, branch: str | None, snapshot_id: int, tag: str
) -> dict[str, Any]:
    """Tag ``snapshot_id`` of ``table`` (on ``branch``) as ``tag`` unless the run's tag exists.

    Returns ``{"tag", "branch", "snapshot_id", "existing"}``; ``existing`` True: the tag
    was there already (``snapshot_id`` is the one it holds).
    """
    where = branch or "main"
    existing = hook.get_tag(table, tag, branch)
    if existing is None:
        try:
            create_tag(hook.get_table(table), tag, branch=branch, snapshot_id=int(snapshot_id))
            return {"tag": tag, "branch": where, "snapshot_id": int(snapshot_id), "existing": False}
        except AlreadyExistsError:  # made between our look and our write: the run's tag
            existing = hook.get_tag(table, tag, branch)
    if existing is None:  # pragma: no cover - deleted again in between
        raise AlreadyExistsError(f"tag {tag!r} of {table} ({where}) could not be read back")
    return {"tag": tag, "branch": where, "snapshot_id": int(existing["id"]), "existing": True}


#: how far back from the latest snapshot ``snapshot_of_try`` looks (a bound, not a limit
#: anyone should meet: the try just committed)
MAX_SNAPSHOTS_SCANNED = 1000


def snapshot_of_try(hook: Any, table: str, branch: str | None, try_env: Mapping[str, str]) -> int | None:
    """The latest snapshot of ``table`` (on ``branch``) committed by the task try ``try_env``.

    ``try_env`` is the ``AIRFLOW_CTX_*`` environment the try's job got; a snapshot is the
    try's when its properties (``paimon/commit_properties``) name the same DAG, run, task
    and try. For an application the operator does not know the commits of
    (``PaimonSparkSubmitOperator``). None: the try committed nothing there (within the
    last ``MAX_SNAPSHOTS_SCANNED`` snapshots).
    """
    layout = TableLayout.of(hook.get_table(table))
    found = next(snapshots_of_run(layout, branch, airflow_properties(try_env), limit=MAX_SNAPSHOTS_SCANNED), None)
    return None if found is None else int(found["id"])
