"""MarkPartitionDoneOperator: declare a partition complete, as Paimon Java's mark-done does.

Writes the partition's ``_SUCCESS`` file (``partition.mark-done-action=success-file``)
through the table's file IO, with ``airflow_provider_paimon.paimon.partition_status``:
a small metadata write, so it runs on the worker with pypaimon, no Spark job. Paimon
Java's readers (and ``PaimonPartitionSensor(wait_for="done")``) agree on the result.
Marking twice keeps the first ``creationTime`` and moves ``modificationTime``.
With ``asset_partitions=True`` the table's ``paimon://`` asset gets one Airflow asset
event for the partition marked, its key the partition's folder (``dt=2026-11-03``), so
a DAG on ``PartitionedAssetTimetable`` runs for that partition (docs/assets.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.asset_partitions import (
    announce_partition,
    check_asset_partitions,
)
from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.triggers.partition import check_partition_arg


class MarkPartitionDoneOperator(MaskRenderedSecrets, BaseOperator):
    """Write ``_SUCCESS`` in ``partition``'s directory of ``table``.

    :param table: ``db.table``.
    :param partition: partition column -> value, templated (``{"dt": "{{ ds }}"}``);
        a leading prefix of the partition columns.
    :param branch: checks the spec against this branch's schema (it must exist); the
        file is the table's, as in Paimon Java.
    :param warehouse: warehouse path/URI; blank: the ``paimon_conn_id`` connection's.
    :param warehouse_options: extra catalog options.
    :param paimon_conn_id: a ``paimon`` connection.
    :param asset_partitions: ``True``: emit a partitioned asset event of the table's
        (main's: the mark is the table's) ``paimon://`` asset for the partition marked,
        key = its folder (``dt=2026-11-03``), extra ``{"paimon": {"event": "partition_done", ...}}``.

    Returns (XCom) the partition path and the success file's times. A bad partition
    spec, an unknown table or branch, or a table whose ``partition.mark-done-action``
    leaves out ``success-file`` fail the task with nothing written.
    """

    template_fields: Sequence[str] = ("table", "partition", "branch", "warehouse", "warehouse_options", "paimon_conn_id")
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse",)
    secret_option_fields: ClassVar[tuple[str, ...]] = ("warehouse_options",)
    ui_color = "#c8e6f5"

    def __init__(
        self,
        *,
        table: str,
        partition: dict[str, Any],
        branch: str | None = None,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        asset_partitions: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.asset_partitions = check_asset_partitions(asset_partitions, self.task_id)
        self.partition = check_partition_arg(partition)
        self.table = table
        self.branch = branch
        self.warehouse = warehouse
        self.warehouse_options = warehouse_options
        self.paimon_conn_id = paimon_conn_id
        self.check_literal_locations()

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_paimon.hooks.paimon import PaimonHook
        from airflow_provider_paimon.paimon.partition_status import (
            mark_partition_done,
            partition_path,
        )

        try:
            spec = check_partition_arg(self.partition)
            hook = PaimonHook.for_task(self.warehouse, self.paimon_conn_id, catalog_options=self.warehouse_options)
            table = hook.get_table(self.table)
            success = mark_partition_done(table, spec, branch=(self.branch or "").strip() or None)
            path = partition_path(table, spec)
        except (PaimonError, ValueError) as err:
            raise AirflowFailException(f"{type(err).__name__}: {err}") from None
        self.log.info("marked %s partition %s done (_SUCCESS)", self.table, path)
        result = {
            "table": self.table,
            "path": path,
            "creationTime": success.creation_time,
            "modificationTime": success.modification_time,
        }
        if self.asset_partitions:
            result["asset_partitions"] = announce_partition(
                self, context, hook, self.table, None, path,
                {"event": "partition_done", "partition": {k: None if v is None else str(v) for k, v in spec.items()},
                 "creationTime": success.creation_time, "modificationTime": success.modification_time},
            )
        return result
