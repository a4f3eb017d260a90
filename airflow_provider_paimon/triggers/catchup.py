"""SnapshotCatchUpTrigger: wait in the triggerer until a job has caught up with its sources.

The check itself (``airflow_provider_paimon.paimon.catchup``) is blocking file and
database I/O, so each poll runs in a worker thread (``sync_to_async``) and the
triggerer's event loop never blocks. The trigger ends with exactly one event whose
``status`` tells the sensor what happened:

* ``success``: every source is caught up; ``result`` holds consumed/latest per source;
* ``error``: a permanent problem (unknown table, branch, job or consumer, a source the
  job never read, a store that refuses us); ``message`` says which;
* ``timeout``: ``deadline`` (epoch seconds, fixed when the sensor deferred, so a
  triggerer restart does not extend it) passed first; ``result`` is the last progress.

Transient failures (store or warehouse unreachable) are logged and retried at the next
poll. Only connection ids, never secrets, are serialized: the trigger resolves them in
the triggerer, like the sensor does on the worker. Airflow stores trigger arguments
unencrypted in its ``trigger`` table, so the trigger refuses arguments that carry a
secret (a ``lineage_url`` with a password, secret ``warehouse_options``, a warehouse
URI with credentials): see ``trigger_secret_problems``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_provider_paimon.paimon.catchup import (
    CatchUpResult,
    CatchUpSpec,
    SourceRef,
    check_catch_up,
    is_transient,
)


class CatchUpChecker:
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

    def spec(self) -> CatchUpSpec:
        """The validated check (raises ``InvalidArgumentError`` on bad arguments)."""
        if self._spec is None:
            warehouse, options = self._catalog_config()
            self._spec = CatchUpSpec(
                warehouse=warehouse,
                table=self.table,
                branch=self.branch or "main",
                job=self.job,
                consumer_id=self.consumer_id,
                sources=None if self.sources is None else tuple(SourceRef.parse(s) for s in self.sources),
                max_lag_snapshots=self.max_lag_snapshots,
                warehouse_options=options,
                wait_for_job_start=self.wait_for_job_start,
            )
        return self._spec

    def check(self) -> CatchUpResult:
        spec = self.spec()
        store = None
        if spec.job:
            try:
                store = self._lineage_progress()
            except Exception as err:
                # A job started alongside the wait creates the store with its first batch.
                if not (spec.wait_for_job_start and _store_missing(err)):
                    raise
                store = NoLineageYet()
        return check_catch_up(spec, store)

    def close(self) -> None:
        store, self._store = self._store, None
        if store is not None and hasattr(store, "close"):
            store.close()

    def _catalog_config(self) -> tuple[str, dict[str, str]]:
        """Warehouse and options: ``warehouse`` alone, or through a ``paimon`` connection.

        With neither (e.g. a templated warehouse rendered blank), the default
        ``paimon_default`` connection.
        """
        if self.warehouse and not self.paimon_conn_id:
            return self.warehouse, self.warehouse_options
        from airflow_provider_paimon.hooks.paimon import PaimonHook

        config = PaimonHook.for_task(
            self.warehouse, self.paimon_conn_id, catalog_options=self.warehouse_options
        ).catalog_config
        return config.warehouse, dict(config.options)

    def _lineage_progress(self) -> Any:
        if self._store is None:
            self._store = StoreProgress(self._open_store())
        return self._store

    def _open_store(self) -> Any:
        from airflow_provider_paimon.lineage.store import LineageStore

        url = self.lineage_url
        database = self.lineage_database
        if self.lineage_conn_id:
            url, conn_database = lineage_url_from_connection(self.lineage_conn_id)
            database = database or conn_database
        kwargs = {"database": database} if database else {}
        # create=False: a sensor must never create (or upgrade) a store; a missing one
        # is a permanent error that names 'paimon-lineage init'.
        # Few in-call retries: the next poke is the retry.
        from airflow_provider_paimon.lineage.retry import RetryPolicy

        return LineageStore.from_url(url, create=False, retry=RetryPolicy(attempts=2), **kwargs)


class StoreProgress:
    """``LineageProgressSource`` over a ``LineageStore``: table lineage and max consumed id."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def job_sources(self, job: str) -> list[SourceRef]:
        return [_ref(r) for r in self.store.source_table_lineages(job=job)]

    def job_sinks(self, job: str) -> list[SourceRef]:
        return [_ref(r) for r in self.store.sink_table_lineages(job=job)]

    def consumed(self, job: str, source: SourceRef) -> int | None:
        """Highest snapshot any barrier of ``job`` consumed from ``source`` (one MAX query)."""
        import sqlalchemy as sa

        from airflow_provider_paimon.lineage import schema

        t = schema.source_snapshot_lineage
        query = sa.select(sa.func.max(t.c.snapshot_id)).where(
            t.c.job == job,
            t.c.database == source.database,
            t.c.table == source.table,
            t.c.branch == source.branch,
        )
        value = self.store.run("read consumed snapshot", lambda conn: conn.execute(query).scalar())
        return None if value is None else int(value)

    def close(self) -> None:
        self.store.close()


class NoLineageYet:
    """The progress of a job whose lineage store does not exist yet: nothing recorded."""

    def job_sources(self, job: str) -> list[SourceRef]:
        return []

    def job_sinks(self, job: str) -> list[SourceRef]:
        return []

    def consumed(self, job: str, source: SourceRef) -> int | None:
        return None


def _store_missing(error: BaseException) -> bool:
    from airflow_provider_paimon.lineage.errors import LineageStoreMissingError

    return isinstance(error, LineageStoreMissingError)


def _ref(row: Any) -> SourceRef:
    return SourceRef(row.database, row.table, row.branch or "main")


def lineage_url_from_connection(conn_id: str) -> tuple[Any, str | None]:
    """Store URL and system database of a ``paimon_lineage`` connection (via its hook)."""
    from airflow_provider_paimon.hooks.lineage import PaimonLineageHook

    hook = PaimonLineageHook(conn_id)
    return hook.get_url(), hook.get_database()


def trigger_secret_problems(check: dict[str, Any]) -> list[str]:
    """What in the check's arguments is a secret that must not be serialized (empty: none).

    Never echoes the secret: each entry names the argument (and the option keys).
    """
    from airflow_provider_paimon.operators.templated_secrets import (
        secret_option_keys,
        url_has_secret,
    )
    from airflow_provider_paimon.paimon.secrets import secrets_in_text

    problems = []
    if url_has_secret(check.get("lineage_url")):
        problems.append("lineage_url carries a password (or cannot be parsed)")
    keys = secret_option_keys(check.get("warehouse_options"))
    if keys:
        problems.append(f"warehouse_options holds secrets ({', '.join(keys)})")
    if secrets_in_text(str(check.get("warehouse") or "")):
        problems.append("the warehouse URI carries credentials")
    return problems


def refuse_secrets_message(problems: list[str]) -> str:
    """The error for a deferral whose trigger would store secrets, and how to fix it."""
    return (
        f"cannot defer: {'; '.join(problems)}. Airflow stores trigger arguments unencrypted "
        "in its metadata database, so a deferrable catch-up wait takes secrets from "
        "connections only: put the store URL in a 'paimon_lineage' connection "
        "(lineage_conn_id) and catalog credentials in a 'paimon' connection "
        "(paimon_conn_id), or wait on a worker with deferrable=False"
    )


class SnapshotCatchUpTrigger(BaseTrigger):
    """Poll the catch-up check every ``poll_interval`` seconds until done or ``deadline``.

    :param check: the check's arguments (``CatchUpChecker`` keyword arguments: table,
        branch, job or consumer_id, sources, max_lag_snapshots, warehouse, conn ids,
        lineage URL/database); plain JSON values only, and no secrets (``ValueError``).
    :param poll_interval: seconds between checks.
    :param deadline: epoch seconds after which the trigger reports ``timeout``;
        ``None`` waits for ever (the task's own deferral timeout still applies).
    """

    def __init__(
        self,
        check: dict[str, Any],
        poll_interval: float = 60.0,
        deadline: float | None = None,
    ) -> None:
        super().__init__()
        problems = trigger_secret_problems(check)
        if problems:
            raise ValueError(refuse_secrets_message(problems))
        self.check = dict(check)
        self.poll_interval = float(poll_interval)
        self.deadline = None if deadline is None else float(deadline)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"check": self.check, "poll_interval": self.poll_interval, "deadline": self.deadline},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        checker = CatchUpChecker(**self.check)
        last: CatchUpResult | None = None
        try:
            while True:
                try:
                    last = await sync_to_async(checker.check, thread_sensitive=False)()
                except Exception as err:  # noqa: BLE001 - classified right below
                    if not is_transient(err):
                        yield TriggerEvent(_event("error", last, message=_message(err)))
                        return
                    self.log.warning("catch-up check failed, retrying next poll: %s", _message(err))
                else:
                    if last.caught_up:
                        yield TriggerEvent(_event("success", last))
                        return
                    self.log.info("not caught up yet: %s", last.summary())
                if self.deadline is not None and time.time() >= self.deadline:
                    yield TriggerEvent(
                        _event("timeout", last, message=_timeout_message(self.deadline, last))
                    )
                    return
                await asyncio.sleep(self._sleep_seconds())
        finally:
            await sync_to_async(checker.close, thread_sensitive=False)()

    def _sleep_seconds(self) -> float:
        if self.deadline is None:
            return self.poll_interval
        return max(0.0, min(self.poll_interval, self.deadline - time.time()))


def _event(status: str, result: CatchUpResult | None, message: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"status": status, "result": result.to_dict() if result else None}
    if message:
        payload["message"] = message
    return payload


def _message(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _timeout_message(deadline: float, last: CatchUpResult | None) -> str:
    progress = last.summary() if last else "no successful check"
    return f"sources not caught up by the deadline ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(deadline))}): {progress}"
