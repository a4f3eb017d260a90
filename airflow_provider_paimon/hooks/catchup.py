"""CatchUpHook: the catch-up question, asked the same way by the sensor and the trigger.

The check itself (``paimon.catchup.check_catch_up``) needs a catalog and, for a job's
progress, a lineage store. This hook resolves both from Airflow connections in
whichever process runs the check (a worker for the sensor, the triggerer for the
trigger), so only connection ids travel between them, never secrets.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_paimon.hooks.lineage import PaimonLineageHook
from airflow_provider_paimon.hooks.paimon import resolve_catalog_config
from airflow_provider_paimon.lineage.errors import LineageStoreMissingError
from airflow_provider_paimon.lineage.progress import NoLineageYet, StoreProgress
from airflow_provider_paimon.lineage.retry import RetryPolicy
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.paimon.catchup import (
    CatchUpResult,
    CatchUpSpec,
    SourceRef,
    check_catch_up,
)
from airflow_provider_paimon.paimon.secrets import register_url_secrets


class CatchUpHook(BaseHook):
    """Resolve connections once, then run ``check_catch_up`` as often as asked.

    Shared by the sensor (poke/reschedule on a worker) and the trigger (in the
    triggerer), so both answer the same question the same way. Arguments are plain
    values (the trigger serializes them); secrets stay in Airflow connections and are
    looked up here, in whichever process runs the check.
    """

    def __init__(
        self,
        table: str,
        branch: str | None = None,
        job: str | None = None,
        consumer_id: str | None = None,
        sources: list[Any] | None = None,
        max_lag_snapshots: int = 0,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        lineage_url: str | None = None,
        lineage_conn_id: str | None = None,
        lineage_database: str | None = None,
        wait_for_job_start: bool = False,
    ) -> None:
        super().__init__()
        self.table = table
        self.branch = branch
        self.job = job or None
        self.consumer_id = consumer_id or None
        self.sources = sources
        self.max_lag_snapshots = int(max_lag_snapshots)
        self.warehouse = warehouse
        self.warehouse_options = dict(warehouse_options or {})
        self.paimon_conn_id = paimon_conn_id
        self.lineage_url = lineage_url
        self.lineage_conn_id = lineage_conn_id
        self.lineage_database = lineage_database
        self.wait_for_job_start = bool(wait_for_job_start)
        self._spec: CatchUpSpec | None = None
        self._store: Any = None

    def validate(self) -> None:
        """Check the arguments without any I/O (``InvalidArgumentError`` names the
        problem), so a trigger refuses bad ones when it is built, not in the triggerer."""
        self._build_spec(self.warehouse or "", self.warehouse_options)

    def spec(self) -> CatchUpSpec:
        """The validated check (raises ``InvalidArgumentError`` on bad arguments)."""
        if self._spec is None:
            self._spec = self._build_spec(*self._catalog_config())
        return self._spec

    def _build_spec(self, warehouse: str, options: dict[str, str]) -> CatchUpSpec:
        return CatchUpSpec(
                warehouse=warehouse,
                table=self.table,
                branch=self.branch or "main",
                job=self.job,
                consumer_id=self.consumer_id,
                sources=None if self.sources is None else tuple(SourceRef.parse(s) for s in self.sources),
                max_lag_snapshots=self.max_lag_snapshots,
                catalog_options=options,
                wait_for_job_start=self.wait_for_job_start,
            )

    def check(self) -> CatchUpResult:
        spec = self.spec()
        store: StoreProgress | NoLineageYet | None = None
        if spec.job:
            try:
                store = self._lineage_progress()
            except Exception as err:
                # A job started alongside the wait creates the store with its first batch.
                if not (spec.wait_for_job_start and isinstance(err, LineageStoreMissingError)):
                    raise
                store = NoLineageYet()
        return check_catch_up(spec, store)

    def close(self) -> None:
        store, self._store = self._store, None
        if store is not None and hasattr(store, "close"):
            store.close()

    def _catalog_config(self) -> tuple[str, dict[str, str]]:
        return resolve_catalog_config(self.warehouse, self.paimon_conn_id, self.warehouse_options)

    def _lineage_progress(self) -> StoreProgress:
        if self._store is None:
            self._store = StoreProgress(self._open_store())
        return self._store

    def _open_store(self) -> LineageStore:
        url: Any = self.lineage_url
        database = self.lineage_database
        if isinstance(url, str):
            register_url_secrets(url)  # read here: known before any message could name it
        if self.lineage_conn_id:
            hook = PaimonLineageHook(self.lineage_conn_id)
            url, database = hook.get_url(), database or hook.get_database()
        kwargs: dict[str, Any] = {"database": database} if database else {}
        # create=False: a sensor must never create (or upgrade) a store; a missing one
        # is a permanent error that names 'paimon-lineage init'.
        # Few in-call retries: the next poke is the retry.
        return LineageStore.from_url(url, create=False, retry=RetryPolicy(attempts=2), **kwargs)
