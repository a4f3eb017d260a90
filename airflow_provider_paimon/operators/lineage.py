"""The Paimon lineage proposal's lineage actions as operators: delete a job's table or data lineage.

Thin on purpose: the work is ``LineageStore.delete_table_lineage`` /
``delete_data_lineage``. Deleting a job that has no rows succeeds and returns 0 (the
task's XCom value is the number of rows deleted). A malformed job name fails the task
without retries; an unreachable store fails it with retries (it may come back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.hooks.lineage import PaimonLineageHook
from airflow_provider_paimon.lineage.errors import InvalidLineageArgumentError
from airflow_provider_paimon.lineage.store import LineageStore


class _DeleteLineageOperator(BaseOperator):
    """Shared shape: open the store from the connection, delete ``job``'s rows, return the count.

    :param job: the job whose lineage goes (templated); Spark jobs are named
        ``{dag_id}.{task_id}`` by this provider's operators.
    :param lineage_conn_id: ``paimon_lineage`` connection (default ``paimon_lineage_default``).
    """

    what: ClassVar[str] = ""
    template_fields: Sequence[str] = ("job",)
    ui_color = "#f4e3d7"

    def __init__(self, *, job: str, lineage_conn_id: str = PaimonLineageHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job = job
        self.lineage_conn_id = lineage_conn_id

    def delete(self, store: LineageStore, job: str) -> int:
        raise NotImplementedError

    def execute(self, context: Context) -> int:
        hook = PaimonLineageHook(lineage_conn_id=self.lineage_conn_id)
        try:
            with hook.get_store() as store:
                deleted = self.delete(store, self.job)
        except InvalidLineageArgumentError as err:
            raise AirflowFailException(str(err)) from None
        self.log.info("deleted %d %s row(s) of job %r", deleted, self.what, self.job)
        return deleted


class DeleteTableLineageOperator(_DeleteLineageOperator):
    """Delete the table lineage (source and sink) created by ``job`` (the lineage proposal's ``delete-table-lineage``)."""

    what = "table lineage"

    def delete(self, store: LineageStore, job: str) -> int:
        return store.delete_table_lineage(job)


class DeleteDataLineageOperator(_DeleteLineageOperator):
    """Delete the data lineage (source and sink snapshots) created by ``job`` (the lineage proposal's ``delete-data-lineage``)."""

    what = "data lineage"

    def delete(self, store: LineageStore, job: str) -> int:
        return store.delete_data_lineage(job)
