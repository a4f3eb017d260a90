"""SnapshotCatchUpSensor: wait until a job writing a branch has caught up with its sources.

The correction workflow of the Paimon branch proposal runs a corrected job into a branch while the old job
keeps writing main, and may only replace main once the branch job has consumed what
its sources hold. This sensor answers "caught up?" from the lineage store's data
lineage (``job=``) or from a Paimon consumer file (``consumer_id=``); the work is in
``airflow_provider_paimon.paimon.catchup``, asked through ``CatchUpHook`` by both
the sensor and the trigger.

Modes follow Airflow 3 sensors: ``poke`` and ``reschedule`` run the check on a worker;
``deferrable=True`` (default: Airflow's ``[operators] default_deferrable``) checks once
and, when not caught up yet, hands the wait to ``SnapshotCatchUpTrigger`` in the
triggerer (no worker slot held). Whichever way, the XCom result is the per-source
consumed and latest snapshot ids.

Every argument naming *what* to check is templated (table, branch, job, consumer,
sources, warehouse, connection ids, lineage URL and database, allowed lag), so a DAG
can take them from params; a blank ``warehouse`` means "the ``paimon_conn_id``
connection's".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.configuration import conf
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.deferral import DeferrableCheckSensor, blank_to_none
from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.hooks.catchup import CatchUpHook
from airflow_provider_paimon.paimon.secrets import scrub
from airflow_provider_paimon.triggers.catchup import SnapshotCatchUpTrigger


class SnapshotCatchUpSensor(MaskRenderedSecrets, DeferrableCheckSensor):
    """Succeed when, for every source the job reads, consumed >= latest - max_lag_snapshots.

    :param table: the table (``db.table``) the job writes.
    :param branch: the branch of ``table`` it writes (``main`` allowed).
    :param job: the job's name in the lineage store (its Spark app name or
        ``spark.paimon.lineage.job``); progress comes from ``source_snapshot_lineage``.
    :param consumer_id: instead of ``job``: a Paimon ``consumer-id``; progress comes from
        ``consumer/consumer-<id>`` on each source's branch (then ``sources`` is required).
    :param sources: the sources to check, ``"db.t"`` / ``"db.t$branch_b"`` /
        ``{"table": "db.t", "branch": "b"}``; default: all the job reads.
    :param max_lag_snapshots: allowed number of data snapshots not yet consumed
        (COMPACT snapshots never count).
    :param warehouse: warehouse path/URI; blank: the ``paimon_conn_id`` connection's
        (``paimon_default`` when none is named).
    :param warehouse_options: extra catalog options.
    :param paimon_conn_id: a ``paimon`` connection (warehouse and catalog options).
    :param lineage_conn_id: a connection naming the lineage store (preferred: keeps the
        password out of the DAG and the trigger table).
    :param lineage_url: or the store's SQLAlchemy URL directly.
    :param lineage_database: the store's database (``paimon`` on MySQL by default).
    :param wait_for_job_start: a job the lineage store knows nothing of yet counts as
        "not caught up" instead of failing (for a job launched in parallel with this
        sensor); a wrong job name then waits until ``timeout``.
    :param deferrable: wait in the triggerer instead of a worker (default: Airflow's
        ``[operators] default_deferrable``). Airflow stores trigger arguments in clear,
        so a deferrable sensor refuses (fails at once, before any check) a
        ``lineage_url`` with a password, secret ``warehouse_options`` or a warehouse
        URI with credentials: give them through ``lineage_conn_id`` / ``paimon_conn_id``,
        which the triggerer resolves itself.

    Secrets in ``lineage_url`` and ``warehouse_options`` (e.g. from Variables) are
    masked when the fields are rendered, so the Rendered Template tab shows ``***``.

    Unknown table, branch, job or consumer, a source the job never read, or a store that
    refuses the connection fail the task at once (no retries); a store or warehouse that
    is briefly unreachable is retried at the next poke.
    """

    template_fields: Sequence[str] = (
        "table",
        "branch",
        "job",
        "consumer_id",
        "sources",
        "max_lag_snapshots",
        "warehouse",
        "warehouse_options",
        "paimon_conn_id",
        "lineage_conn_id",
        "lineage_url",
        "lineage_database",
    )
    #: a URL with credentials is refused there (at parse, or once rendered); secret
    #: options are masked before Airflow stores the rendered fields
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse", "lineage_url")
    secret_option_fields: ClassVar[tuple[str, ...]] = ("warehouse_options",)
    ui_color = "#c8e6f5"
    check_name = "catch-up check"
    trigger_class = SnapshotCatchUpTrigger

    def __init__(
        self,
        *,
        table: str,
        branch: str = "main",
        job: str | None = None,
        consumer_id: str | None = None,
        sources: list[Any] | None = None,
        max_lag_snapshots: int | str = 0,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        lineage_conn_id: str | None = None,
        lineage_url: str | None = None,
        lineage_database: str | None = None,
        wait_for_job_start: bool = False,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if bool(job) == bool(consumer_id):
            raise ValueError("SnapshotCatchUpSensor needs exactly one of job and consumer_id")
        if consumer_id and not sources:
            raise ValueError("consumer_id needs sources (the tables whose consumer/ holds its progress)")
        if job and not (lineage_conn_id or lineage_url):
            raise ValueError("job needs the lineage store: give lineage_conn_id or lineage_url")
        if isinstance(max_lag_snapshots, int) and max_lag_snapshots < 0:
            raise ValueError("max_lag_snapshots must be >= 0")
        self.table = table
        self.branch = branch
        self.job = job
        self.consumer_id = consumer_id
        self.sources = sources
        self.max_lag_snapshots = max_lag_snapshots
        self.warehouse = warehouse
        self.warehouse_options = warehouse_options
        self.paimon_conn_id = paimon_conn_id
        self.lineage_conn_id = lineage_conn_id
        self.lineage_url = lineage_url
        self.lineage_database = lineage_database
        self.wait_for_job_start = wait_for_job_start
        self.deferrable = deferrable
        self._checker: CatchUpHook | None = None
        self.check_literal_locations()

    def check_kwargs(self) -> dict[str, Any]:
        """The check's arguments as plain values (what the trigger serializes).

        Templated values arrive as strings: blanks mean "not given", the lag becomes an
        int (a bad one fails the task with a message naming it).
        """
        return {
            "table": self.table,
            "branch": blank_to_none(self.branch) or "main",
            "job": blank_to_none(self.job),
            "consumer_id": blank_to_none(self.consumer_id),
            "sources": self.sources or None,
            "max_lag_snapshots": _lag(self.max_lag_snapshots),
            "warehouse": blank_to_none(self.warehouse),
            "warehouse_options": self.warehouse_options,
            "paimon_conn_id": blank_to_none(self.paimon_conn_id),
            "lineage_url": blank_to_none(self.lineage_url),
            "lineage_conn_id": blank_to_none(self.lineage_conn_id),
            "lineage_database": blank_to_none(self.lineage_database),
            "wait_for_job_start": bool(self.wait_for_job_start),
        }

    def poke(self, context: Any) -> bool | PokeReturnValue:
        if self._checker is None:
            self._checker = CatchUpHook(**self.check_kwargs())
        try:
            result = self._checker.check()
        except Exception as err:  # noqa: BLE001 - retried next poke or failed (scrubbed), never swallowed
            return self.poke_failed(err, scrub(f"{type(err).__name__}: {err}"))
        if result.caught_up:
            self.log.info("caught up: %s", result.summary())
            return PokeReturnValue(is_done=True, xcom_value=result.to_dict())
        self.log.info("not caught up yet: %s", result.summary())
        return False

    def on_kill(self) -> None:
        self.close_checker()

    def close_checker(self) -> None:
        checker, self._checker = self._checker, None
        if checker is not None:
            checker.close()


def _lag(value: Any) -> int:
    """``max_lag_snapshots`` as an int >= 0 (templated values arrive as strings)."""
    try:
        lag = int(value)
    except (TypeError, ValueError):
        raise AirflowFailException(f"max_lag_snapshots must be an integer >= 0, got {value!r}") from None
    if lag < 0:
        raise AirflowFailException(f"max_lag_snapshots must be an integer >= 0, got {value!r}")
    return lag
