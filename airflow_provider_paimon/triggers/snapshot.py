"""PaimonSnapshotTrigger: wake DAGs on every new snapshot of a Paimon table, from any writer.

An Airflow 3 ``AssetWatcher`` trigger (``BaseEventTrigger``). It polls a table's (or a
branch's) ``snapshot/`` folder, so a commit by pypaimon, our Spark data source or Paimon
Java is seen alike, and fires one event per new snapshot of the chosen commit kinds
(``APPEND`` and ``OVERWRITE`` by default; ``COMPACT`` only rewrites files). The event's
payload (the asset event's ``extra["payload"]``) is ``SnapshotEvent.to_payload()``:
table, branch, snapshot id, kind, commit user and identifier, time, record counts.

**Position.** The watcher's position is a Paimon consumer: ``consumer/consumer-<id>``
in the watched branch's folder, holding the first snapshot not yet delivered. It
survives triggerer restarts and, because expiry keeps every snapshot from the smallest
consumer position on (ours and Paimon Java's), also keeps undelivered snapshots from
expiring. The first start without a saved position begins after the latest snapshot
(or at ``start_snapshot``) and saves that position at once, so snapshots committed
while the watcher starts or restarts are not lost.

**Delivery (Airflow 3.3+ ack mode).** The trigger opts into the triggerer's shared
stream with a producer (``SnapshotFeedProducer``): the triggerer moves the consumer
position (``advance``) only after the asset events derived from a snapshot were
stored in the metadata database. Killed at any moment, the triggerer redelivers from
the saved position: no snapshot is missed. A snapshot is delivered twice only if the
triggerer dies after its event was stored and before the position was saved (a window
of about one state sync, a second or two); the payload's ``snapshot_id`` lets a DAG
skip a repeat. On an older Airflow (no shared streams) ``run()`` saves the position
right after handing each event to the triggerer, so a crash before the event is stored
could lose that one event; the docs (docs/assets.md) say so.

**Partitions** (``partition_keys=True``). Each event's payload also lists the
partitions the snapshot changed, ``partition_keys`` (Paimon's folder names,
``dt=2026-11-03/region=eu``), read from the snapshot's delta manifests. Airflow 3.3
stores a watcher's events without a partition key (``Trigger.submit_event`` has no
place for one), so they cannot queue a DAG on ``PartitionedAssetTimetable`` directly:
``PaimonPartitionRelayOperator`` re-emits them as one partitioned event per key. One
event per snapshot, not per partition: Airflow 3.3 gives events that arrive together a
run for the first only (apache/airflow#56050), which would strand the others.

Arguments are plain values and connection ids; secrets stay in the ``paimon``
connection, resolved in the triggerer (``trigger_secret_problems`` refuses anything
else). Metadata reads and the position write run in worker threads (``sync_to_async``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Hashable, Sequence
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_provider_paimon.common.templated_secrets import trigger_secret_problems
from airflow_provider_paimon.paimon.consumers import (
    read_next_snapshot,
    save_next_snapshot,
    validate_consumer_id,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.names import (
    UNICODE_PROFILE,
    is_main,
    parse_table_name,
    validate_branch_name,
)
from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.paimon.secrets import scrub, secret_values
from airflow_provider_paimon.paimon.snapshot_feed import (
    DEFAULT_BATCH,
    FeedPage,
    SnapshotGapError,
    snapshots_after,
    start_position,
    validate_commit_kinds,
)
from airflow_provider_paimon.paimon.snapshots import TableLayout

try:  # Airflow 3.3+: shared streams with persistence-gated advance ("ack mode")
    from airflow.triggers.shared_stream import SharedStreamProducer
except ImportError:  # pragma: no cover - older Airflow: run() alone
    SharedStreamProducer = None  # type: ignore[assignment,misc]  # a class on newer Airflow only

log = logging.getLogger(__name__)

_STREAM = "paimon-snapshot-feed"


class SnapshotWatch:
    """The blocking side: open the table once, read/save the position, list new snapshots.

    Built from the trigger's serialized arguments, in the triggerer. The connection is
    resolved here, so its secrets never leave the process.
    """

    def __init__(
        self,
        table: str,
        consumer_id: str,
        branch: str | None = None,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        start_snapshot: int | None = None,
        **_ignored: Any,
    ) -> None:
        self.table_name = table
        self.consumer_id = consumer_id
        self.branch = None if is_main(branch) else branch
        self.warehouse = warehouse
        self.warehouse_options = dict(warehouse_options or {})
        self.paimon_conn_id = paimon_conn_id
        self.start_snapshot = start_snapshot
        self._table: Any = None
        self._layout: Any = None
        self._secrets: list[str] = []

    def _load(self) -> None:
        if self._table is not None:
            return
        from airflow_provider_paimon.hooks.paimon import resolve_catalog_config
        from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

        warehouse, options = resolve_catalog_config(
            self.warehouse, self.paimon_conn_id, self.warehouse_options
        )
        self._secrets = secret_values(options)
        table = load_table(open_catalog(warehouse, options), self.table_name, self.branch)
        self._layout = TableLayout.of(table)
        self._table = table

    def open_position(self) -> int:
        """The saved position; on first use, pin the start (after the latest) and save it."""
        self._load()
        saved = read_next_snapshot(self._table, self.consumer_id)
        if saved is not None:
            return saved
        start = start_position(self._layout, self.branch, self.start_snapshot)
        save_next_snapshot(self._table, self.consumer_id, start)
        return start

    def poll(self, next_snapshot: int, limit: int = DEFAULT_BATCH) -> FeedPage:
        self._load()
        return snapshots_after(self._layout, self.table_name, self.branch, next_snapshot, limit)

    def save(self, next_snapshot: int) -> None:
        self._load()
        save_next_snapshot(self._table, self.consumer_id, next_snapshot)

    def partition_keys(self, snapshot_id: int) -> list[str]:
        """The partitions ``snapshot_id`` changed (its delta manifests), as partition keys."""
        from airflow_provider_paimon.paimon.partition_keys import changed_partition_keys

        self._load()
        return changed_partition_keys(self._table, [int(snapshot_id)], self.branch)

    def describe(self, error: BaseException) -> str:
        """``error`` as a log line, with any catalog secret scrubbed out."""
        return scrub(f"{type(error).__name__}: {error}", self._secrets)

    def where(self) -> str:
        branch = f" branch {self.branch}" if self.branch else ""
        return f"{self.table_name}{branch} (consumer {self.consumer_id})"


def _thread(fn: Any) -> Any:
    return sync_to_async(fn, thread_sensitive=False)


class SnapshotFeedProducer(SharedStreamProducer or object):  # type: ignore[misc]  # base chosen at import
    """The broker side of the shared stream: snapshots out, consumer position on advance.

    ``open_stream`` yields ``(payload, snapshot_id)`` for EVERY new snapshot (the
    subscribers' filters drop the kinds they do not want, which still counts as
    handled), in id order. ``advance`` moves the saved position past the contiguous
    run of snapshots every subscriber has handled and whose events are stored; a
    snapshot that was not handled cleanly (ack timeout, no subscriber) rewinds the
    stream to it, so it is delivered again.
    """

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.watch = SnapshotWatch(**kwargs)
        self.poll_interval = float(kwargs.get("poll_interval", 30.0))
        self.batch = DEFAULT_BATCH
        self._next: int | None = None  # next snapshot to yield
        self._committed: int | None = None  # next snapshot not yet handled by everyone
        self._saved: int | None = None  # what the consumer file holds
        self._rewind_to: int | None = None

    async def open_stream(self) -> AsyncIterator[tuple[dict[str, Any], int]]:
        while True:
            page = None
            try:
                if self._next is None:
                    position = await _thread(self.watch.open_position)()
                    self._next = self._committed = self._saved = position
                    log.info("watching %s from snapshot %d", self.watch.where(), position)
                self._apply_rewind()
                page = await _thread(self.watch.poll)(self._next, self.batch)
            except SnapshotGapError as err:
                # Waits for a person to move the consumer: read it again at the next poll.
                log.error("%s; retrying in %ss", self.watch.describe(err), self.poll_interval)
                self._next = None
            except Exception as err:  # noqa: BLE001 - logged; the position does not move
                log.error("cannot read new snapshots of %s, retrying in %ss: %s",
                          self.watch.where(), self.poll_interval, self.watch.describe(err))
            for event in page.events if page else ():
                if self._apply_rewind():
                    break
                self._next = event.snapshot_id + 1
                yield event.to_payload(), event.snapshot_id
            if page is None or len(page.events) < self.batch:
                await asyncio.sleep(self.poll_interval)

    def _apply_rewind(self) -> bool:
        target, self._rewind_to = self._rewind_to, None
        if target is None or self._next is None or target >= self._next:
            return False
        log.warning("redelivering %s from snapshot %d", self.watch.where(), target)
        self._next = target
        return True

    async def advance(self, batch: Sequence[Any]) -> None:
        for item in batch:
            snapshot_id = int(item.broker_payload)
            if self._committed is None or snapshot_id != self._committed:
                continue  # delivered before a rewind: it comes again, handled then
            if item.outcome.is_clean:
                self._committed = snapshot_id + 1
            else:
                self._rewind_to = snapshot_id if self._rewind_to is None else min(self._rewind_to, snapshot_id)
        await self.save_position()

    async def save_position(self) -> None:
        """Write the handled position to the consumer file (a failed write is retried later)."""
        target = self._committed
        if target is None or target == self._saved:
            return
        try:
            await _thread(self.watch.save)(target)
        except Exception as err:  # noqa: BLE001 - the next advance writes a later position
            log.warning("cannot save the position of %s (%d), retrying at the next snapshot: %s",
                        self.watch.where(), target, self.watch.describe(err))
            return
        self._saved = target

    def handled(self, snapshot_id: int) -> None:
        """Mark ``snapshot_id`` handled outside ack mode (``run()``: no persistence gate)."""
        if self._committed == snapshot_id:
            self._committed = snapshot_id + 1


class PaimonSnapshotTrigger(BaseEventTrigger):
    """Fire an asset event for each new snapshot of ``table`` (on ``branch``).

    Use in an asset watcher; the asset should be the table's ``paimon://`` asset
    (``airflow_provider_paimon.assets.asset_for``), the same one our operators emit::

        Asset(asset_uri(WAREHOUSE, "sales.orders"), watchers=[AssetWatcher(
            name="orders_snapshots",
            trigger=PaimonSnapshotTrigger(table="sales.orders", warehouse=WAREHOUSE,
                                          consumer_id="airflow-orders-report"))])

    :param table: ``db.table``.
    :param consumer_id: the Paimon consumer keeping the watcher's position (letters,
        digits, ``_ . -``); one per watcher. It also protects undelivered snapshots
        from expiry: delete it (``consumer/consumer-<id>``) when the watcher goes.
    :param branch: the branch to watch (default main).
    :param commit_kinds: kinds that fire an event: any of ``APPEND``, ``OVERWRITE``,
        ``COMPACT``, ``ANALYZE`` (default ``APPEND`` and ``OVERWRITE``).
    :param warehouse: the warehouse URI (no credentials); else from the connection.
    :param warehouse_options: extra catalog options (no secrets).
    :param paimon_conn_id: a ``paimon`` connection for the warehouse and its secrets.
    :param poll_interval: seconds between looks at the table (> 0).
    :param start_snapshot: where a watcher without a saved position begins (default:
        the snapshot after the latest one at its first start).
    :param partition_keys: ``True``: each event's payload also has ``partition_keys``,
        the partitions the snapshot changed (``[]`` for an unpartitioned table), for
        ``PaimonPartitionRelayOperator``. Default ``False``.
    """

    def __init__(
        self,
        table: str,
        consumer_id: str,
        branch: str | None = None,
        commit_kinds: Sequence[str] | str | None = None,
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        poll_interval: float = 30.0,
        start_snapshot: int | None = None,
        partition_keys: bool = False,
    ) -> None:
        super().__init__()
        partition_keys = parse_bool(partition_keys, "partition_keys")  # fails closed, names the words
        parse_table_name(table)
        if not consumer_id:
            raise InvalidArgumentError(
                "consumer_id is required: it names the Paimon consumer that keeps this "
                "watcher's position (e.g. 'airflow-orders-report')"
            )
        validate_consumer_id(consumer_id)
        if not is_main(branch):
            validate_branch_name(str(branch), UNICODE_PROFILE)  # a reference: the table's ops apply its profile
        kinds = validate_commit_kinds(commit_kinds)
        try:
            interval = float(poll_interval)
        except (TypeError, ValueError):
            interval = math.nan
        if not math.isfinite(interval) or interval <= 0:
            raise InvalidArgumentError(f"poll_interval must be a number of seconds > 0, got {poll_interval!r}")
        if start_snapshot is not None and (
            isinstance(start_snapshot, bool) or not isinstance(start_snapshot, int) or start_snapshot < 1
        ):
            raise InvalidArgumentError(f"start_snapshot must be a snapshot id >= 1, got {start_snapshot!r}")
        problems = trigger_secret_problems({"warehouse": warehouse, "warehouse_options": warehouse_options})
        if problems:
            raise InvalidArgumentError(
                f"PaimonSnapshotTrigger arguments would store secrets: {'; '.join(problems)}. "
                "Airflow keeps trigger arguments unencrypted in its metadata database: put "
                "credentials in a 'paimon' connection and pass paimon_conn_id"
            )
        self.table = table
        self.consumer_id = consumer_id
        self.branch = None if is_main(branch) else str(branch)
        self.commit_kinds = kinds
        self.warehouse = warehouse or None
        self.warehouse_options = {str(k): str(v) for k, v in (warehouse_options or {}).items()}
        self.paimon_conn_id = paimon_conn_id or None
        self.poll_interval = interval
        self.start_snapshot = start_snapshot
        self.partition_keys = partition_keys
        self._partitions: SnapshotWatch | None = None  # the triggerer's reader, made on first use

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "table": self.table,
            "consumer_id": self.consumer_id,
            "branch": self.branch,
            "commit_kinds": list(self.commit_kinds),
            "warehouse": self.warehouse,
            "warehouse_options": dict(self.warehouse_options),
            "paimon_conn_id": self.paimon_conn_id,
            "poll_interval": self.poll_interval,
            "start_snapshot": self.start_snapshot,
        }
        if self.partition_keys:  # absent when off: a watcher's serialized form (its identity) stays as it was
            kwargs["partition_keys"] = True
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs

    # -- ack mode (Airflow 3.3+) -------------------------------------------------------

    def shared_stream_key(self) -> Hashable | None:
        """One poll (and one position writer) per consumer: its warehouse, table, branch, id."""
        if SharedStreamProducer is None:
            return None
        return (_STREAM, self.warehouse, self.paimon_conn_id, self.table, self.branch or "main",
                self.consumer_id)

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> SnapshotFeedProducer:
        return SnapshotFeedProducer(kwargs)

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        async for payload in shared_stream:
            if payload.get("commit_kind") in self.commit_kinds:
                yield TriggerEvent(await self.with_partitions(payload))
            # other kinds: nothing to yield; looping back marks the snapshot handled

    async def with_partitions(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` plus ``partition_keys`` when asked; a failed read is retried every
        ``poll_interval`` (logged), never skipped: the position waits for it."""
        if not self.partition_keys:
            return payload
        if self._partitions is None:
            self._partitions = SnapshotWatch(**self.serialize()[1])
        reader = self._partitions
        while True:
            try:
                keys = await _thread(reader.partition_keys)(int(payload["snapshot_id"]))
                return {**payload, "partition_keys": keys}
            except Exception as err:  # noqa: BLE001 - logged, retried: the event waits
                log.error("cannot read the partitions of snapshot %s of %s, retrying in %ss: %s",
                          payload.get("snapshot_id"), reader.where(), self.poll_interval, reader.describe(err))
                await asyncio.sleep(self.poll_interval)

    # -- standalone (no shared stream) -------------------------------------------------

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Without ack mode: the position is saved right after each event is handed over."""
        producer = SnapshotFeedProducer(self.serialize()[1])
        async for payload, snapshot_id in producer.open_stream():
            if payload.get("commit_kind") in self.commit_kinds:
                yield TriggerEvent(await self.with_partitions(payload))
            producer.handled(snapshot_id)
            await producer.save_position()
