"""PaimonPartitionTrigger: wait in the triggerer until a partition has data or is done.

The poll loop, the events (``success`` / ``error`` / ``timeout``), the deadline and the
refusal of secrets are ``PollingCheckTrigger``'s (``triggers/polling.py``). What is
this trigger's own: the check (``PartitionCheck``, over
``airflow_provider_paimon.paimon.partition_status``) reads manifests and a ``_SUCCESS``
file; ``wait_for`` picks ``has_data`` or ``done``; ``result`` is the partition's status;
"permanent" covers an unknown table or branch and a bad partition spec; error texts are
scrubbed of the catalog's secrets, which stay in the ``paimon`` connection and are
resolved in the triggerer. The check helpers here (``check_wait_for``,
``check_partition_arg``, ``PartitionCheck``) are shared with the sensor and
``MarkPartitionDoneOperator``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.paimon.names import parse_table_name
from airflow_provider_paimon.paimon.secrets import scrub, secret_values
from airflow_provider_paimon.triggers.polling import PollingCheckTrigger

#: what a partition sensor waits for
WAIT_CONDITIONS = ("has_data", "done")


def check_wait_for(value: Any) -> str:
    """``has_data`` or ``done``; anything else is refused (fail closed)."""
    if value not in WAIT_CONDITIONS:
        raise ValueError(
            f"wait_for must be one of {', '.join(map(repr, WAIT_CONDITIONS))}, got {value!r}: "
            "'has_data' waits for a live data file in the partition, 'done' for its _SUCCESS file"
        )
    return value


def check_partition_arg(partition: Any) -> dict[str, Any]:
    """A non-empty mapping of column name to value (text, templates allowed)."""
    if not isinstance(partition, Mapping) or not partition:
        raise ValueError(
            f"partition must be a non-empty dict of partition column to value, e.g. "
            f"{{'dt': '{{{{ ds }}}}'}}; got {partition!r}"
        )
    bad = [k for k in partition if not isinstance(k, str) or not k.strip()]
    if bad:
        raise ValueError(f"partition column names must be non-blank strings, got {bad!r}")
    return dict(partition)


class PartitionCheck:
    """The blocking side: open the table once and read the partition's status.

    Built from plain values (the trigger's serialized arguments, or the sensor's
    rendered fields); the connection is resolved here, so its secrets never leave the
    process that runs the check.
    """

    def __init__(
        self,
        table: str,
        partition: Mapping[str, Any],
        wait_for: str = "has_data",
        branch: str | None = None,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
    ) -> None:
        self.table_name = table
        self.partition = dict(partition)
        self.wait_for = wait_for
        self.branch = branch or None
        self.warehouse = warehouse or None
        self.warehouse_options = dict(warehouse_options or {})
        self.paimon_conn_id = paimon_conn_id or None
        self._table: Any = None
        self._secrets: list[str] = []

    def validate(self) -> None:
        """Argument checks that need no I/O (raise ``ValueError``)."""
        parse_table_name(self.table_name)
        check_wait_for(self.wait_for)
        check_partition_arg(self.partition)

    def kwargs(self) -> dict[str, Any]:
        return {
            "table": self.table_name,
            "partition": self.partition,
            "wait_for": self.wait_for,
            "branch": self.branch,
            "warehouse": self.warehouse,
            "warehouse_options": self.warehouse_options or None,
            "paimon_conn_id": self.paimon_conn_id,
        }

    def check(self) -> tuple[bool, dict[str, Any]]:
        """(condition met?, the partition's status as plain values)."""
        from airflow_provider_paimon.paimon.partition_status import partition_status

        status = partition_status(self._load(), self.partition, branch=self.branch)
        met = status.has_data if self.wait_for == "has_data" else status.done
        return met, status.to_dict()

    def describe(self, error: BaseException) -> str:
        """``error`` as one line, with any catalog secret scrubbed out."""
        return scrub(f"{type(error).__name__}: {error}", self._secrets)

    def _load(self) -> Any:
        if self._table is None:
            from airflow_provider_paimon.hooks.paimon import resolve_catalog_config
            from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

            warehouse, options = resolve_catalog_config(self.warehouse, self.paimon_conn_id, self.warehouse_options)
            self._secrets = secret_values(options)
            self._table = load_table(open_catalog(warehouse, options), self.table_name)
        return self._table  # reused: every check reads the branch's LATEST snapshot afresh


class PaimonPartitionTrigger(PollingCheckTrigger[PartitionCheck, dict[str, Any]]):
    """Poll a partition every ``poll_interval`` seconds until the condition holds or ``deadline``.

    :param check: ``PartitionCheck`` keyword arguments (table, partition, wait_for,
        branch, warehouse, warehouse_options, paimon_conn_id): plain JSON values, no
        secrets (``ValueError``).
    :param poll_interval: seconds between checks.
    :param deadline: epoch seconds after which the trigger reports ``timeout``;
        ``None`` waits for ever (the task's own deferral timeout still applies).
    """

    check_name = "partition check"

    @classmethod
    def secrets_refusal(cls, problems: list[str]) -> str:
        return (
            f"cannot defer: {'; '.join(problems)}. Airflow stores trigger arguments "
            "unencrypted; put catalog credentials in a 'paimon' connection (paimon_conn_id) "
            "or wait on a worker with deferrable=False"
        )

    def build_checker(self, check: dict[str, Any]) -> PartitionCheck:
        return PartitionCheck(**check)

    def check_once(self, checker: PartitionCheck) -> tuple[bool, dict[str, Any]]:
        return checker.check()

    def describe_error(self, checker: PartitionCheck, error: BaseException) -> str:
        return checker.describe(error)

    def not_yet_message(self, checker: PartitionCheck, result: dict[str, Any]) -> str:
        return f"partition not {_said(checker.wait_for)} yet: {result.get('path')}"

    def timeout_message(self, checker: PartitionCheck, last: dict[str, Any] | None, deadline_utc: str) -> str:
        return f"partition {checker.partition!r} of {checker.table_name} not {_said(checker.wait_for)} by {deadline_utc}"


def _said(wait_for: str) -> str:
    return "holding data" if wait_for == "has_data" else "done"
