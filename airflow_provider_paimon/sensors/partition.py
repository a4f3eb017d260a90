"""PaimonPartitionSensor: wait until a partition (``dt={{ ds }}``) has data, or is done.

Two conditions, chosen with ``wait_for`` (``mode`` is taken: it is Airflow's
poke/reschedule switch):

* ``has_data``: the latest snapshot of the branch has a live data file in the
  partition (an overwrite that emptied it counts as no data);
* ``done``: the partition's ``_SUCCESS`` file exists, as Paimon Java's
  ``partition.mark-done-action=success-file`` writes it (Flink/Spark writers with
  ``partition.mark-done-when-end-input``, the ``mark_partition_done`` procedure, or our
  ``MarkPartitionDoneOperator``).

The work is in ``airflow_provider_paimon.paimon.partition_status``. ``deferrable=True``
checks once on the worker and hands the wait to ``PaimonPartitionTrigger`` (no worker
slot held); only connection ids are serialized, never secrets. The XCom result is the
partition's status (path, snapshot id, file and row counts, success file times).
``asset_partitions=True`` emits, on success, one partitioned asset event of the table's
``paimon://`` asset for the partition (key: its folder, ``dt=2026-11-03``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.configuration import conf
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.asset_partitions import (
    announce_partition,
    check_asset_partitions,
)
from airflow_provider_paimon.common.deferral import DeferrableCheckSensor, blank_to_none
from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.triggers.partition import (
    PaimonPartitionTrigger,
    PartitionCheck,
    check_partition_arg,
    check_wait_for,
)


class PaimonPartitionSensor(MaskRenderedSecrets, DeferrableCheckSensor):
    """Succeed when ``partition`` of ``table`` (on ``branch``) has data, or is done.

    :param table: ``db.table``.
    :param partition: partition column -> value, templated, e.g. ``{"dt": "{{ ds }}"}``;
        a leading prefix of the partition columns (``{"dt": ...}`` of a ``dt, hr`` table).
        Values are text as in a partition spec; the table's ``partition.default-name``
        selects the null partition.
    :param wait_for: ``"has_data"`` (default) or ``"done"``; anything else fails at once.
    :param branch: the branch whose latest snapshot is read (default main). A done mark
        is the table's (Paimon Java writes ``_SUCCESS`` under the table root for every
        branch).
    :param warehouse: warehouse path/URI; blank: the ``paimon_conn_id`` connection's.
    :param warehouse_options: extra catalog options (no secrets when deferrable).
    :param paimon_conn_id: a ``paimon`` connection (warehouse, catalog options, secrets).
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``).
    :param asset_partitions: ``True``: when the partition is there (or done), emit one
        partitioned asset event of ``table``'s ``paimon://`` asset on ``branch`` for it,
        key = its folder (``dt=2026-11-03``), extra ``{"paimon": {"event":
        "partition_has_data" | "partition_done", ...the status}}``; DAGs on
        ``PartitionedAssetTimetable`` then run for that partition. Default ``False``.

    An unknown table or branch, or a partition spec the table's columns do not accept,
    fails the task at once; a warehouse that is briefly unreachable is retried next poke.
    """

    template_fields: Sequence[str] = (
        "table",
        "partition",
        "wait_for",
        "branch",
        "warehouse",
        "warehouse_options",
        "paimon_conn_id",
    )
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse",)
    secret_option_fields: ClassVar[tuple[str, ...]] = ("warehouse_options",)
    ui_color = "#c8e6f5"
    check_name = "partition check"
    trigger_class = PaimonPartitionTrigger

    def __init__(
        self,
        *,
        table: str,
        partition: dict[str, Any],
        wait_for: str = "has_data",
        branch: str | None = None,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        asset_partitions: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.asset_partitions = check_asset_partitions(asset_partitions, self.task_id)
        check_wait_for(wait_for)
        self.partition = check_partition_arg(partition)
        self.table = table
        self.wait_for = wait_for
        self.branch = branch
        self.warehouse = warehouse
        self.warehouse_options = warehouse_options
        self.paimon_conn_id = paimon_conn_id
        self.deferrable = deferrable
        self._checker: PartitionCheck | None = None
        self.check_literal_locations()

    def check_kwargs(self) -> dict[str, Any]:
        """The rendered arguments as plain values (what the trigger serializes)."""
        return PartitionCheck(
            table=self.table,
            partition={k: (None if v is None else str(v)) for k, v in check_partition_arg(self.partition).items()},
            wait_for=check_wait_for(self.wait_for),
            branch=blank_to_none(self.branch),
            warehouse=blank_to_none(self.warehouse),
            warehouse_options=self.warehouse_options or None,
            paimon_conn_id=blank_to_none(self.paimon_conn_id),
        ).kwargs()

    def poke(self, context: Any) -> bool | PokeReturnValue:
        if self._checker is None:
            try:
                self._checker = PartitionCheck(**self.check_kwargs())
            except ValueError as err:
                raise AirflowFailException(str(err)) from None
        try:
            met, status = self._checker.check()
        except Exception as err:  # noqa: BLE001 - retried next poke or failed, never swallowed
            return self.poke_failed(err, self._checker.describe(err))
        if met:
            self.log.info("partition %s is %s", status["path"], _said(self.wait_for))
            return PokeReturnValue(is_done=True, xcom_value=status)
        self.log.info(
            "partition %s not %s yet (snapshot %s, %s file(s))",
            status["path"], _said(self.wait_for), status["snapshot_id"], status["file_count"],
        )
        return False

    def on_done(self, context: Any, status: Any) -> Any:
        """With ``asset_partitions``: the partitioned asset event for the partition found;
        returns ``status`` (the XCom value) unchanged."""
        if not self.asset_partitions or not isinstance(status, dict) or not status.get("path"):
            return status
        from airflow_provider_paimon.hooks.paimon import PaimonHook

        check = self.check_kwargs()
        hook = PaimonHook.for_task(check["warehouse"], check["paimon_conn_id"], check["warehouse_options"])
        details = {"event": f"partition_{check['wait_for']}", "partition": status.get("partition"),
                   "snapshot_id": status.get("snapshot_id"), "row_count": status.get("row_count")}
        announce_partition(self, context, hook, check["table"], check["branch"], status["path"], details)
        return status


def _said(wait_for: str) -> str:
    return "holding data" if wait_for == "has_data" else "done"

