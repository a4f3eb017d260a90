"""Deliver one batch's lineage to the store, or keep it until the store is back.

Spark-free (the capture in ``capture`` feeds it), so the store-outage policy
is testable without a SparkSession. A ``BatchRecord`` is one barrier of one job: the
source snapshots it consumed and the sink snapshots it committed.

Delivery and outage policy (``spark.paimon.lineage.onStoreFailure``):

* The data commit never waits for the store and is never undone for it: lineage is
  recorded *after* Paimon accepted the commit, so a store outage cannot lose table
  data. What an outage could lose is lineage, so every record that cannot be written
  goes to a spool file first (``<spoolDir>/<job>/pending.jsonl``, one JSON line per
  record, appended and fsynced) and is retried, oldest first, before any newer record
  and at ``close``. A crashed driver leaves the spool behind; the next capture of the
  same job delivers it when it starts.
* ``buffer`` (default): keep running; retry at most every ``retry_interval`` seconds.
* ``fail``: spool the record too, then report the failure (``failure`` is set and
  ``on_failure`` called; the capture stops the streaming query and ``close`` raises),
  so the job stops instead of producing data whose lineage is missing. Streaming
  sinks also check the store *before* each commit under ``fail`` and refuse to commit
  while it is down (``guard``), so this after-the-fact path is only reached
  when the store fails between that check and the recording.

Recording is idempotent: rows are upserted by (job, barrier, table), so a record
delivered twice (a retry after a lost reply, a replayed micro-batch) leaves the same
rows. A batch job's record gets its barrier id from the store's per-job sequence when
it is first delivered; the id is written back to the spool before the rows, so a retry
reuses it instead of taking a second one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_paimon.lineage.entities import BarrierRun, DataLineage, TableLineage
from airflow_provider_paimon.lineage.meta import (
    LineageMetaContext,
    create_lineage_meta,
    next_barrier_id,
    store_options,
    store_rows,
)
from airflow_provider_paimon.lineage.url import scrub
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity

from .config import FAIL, CaptureConfig

log = logging.getLogger(__name__)

SPOOL_FILE = "pending.jsonl"
#: The event / record fields that name a snapshot's identity.
IDENTITY_FIELDS = ("commit_user", "commit_identifier", "commit_time")


class LineageCaptureError(PaimonError):
    """Lineage could not be recorded and the policy is ``fail``."""


@dataclass(frozen=True)
class TableAt:
    """A table (on a branch) and the snapshot a batch consumed or produced (None: none)."""

    warehouse: str
    database: str
    table: str
    branch: str = "main"
    snapshot_id: int | None = None
    # OpenLineage namespace of the warehouse ("" = derive it from ``warehouse``)
    namespace: str = ""
    # the snapshot's identity, read from it where the scan or commit happened
    # (paimon.snapshot_identity); None: unknown
    commit_user: str | None = None
    commit_identifier: int | None = None
    commit_time: int | None = None

    @property
    def identity(self) -> Any:
        """The snapshot's ``SnapshotIdentity``, or None when unknown."""
        return SnapshotIdentity.from_fields(self.commit_user, self.commit_identifier, self.commit_time)

    def with_identity(self, fields: Mapping[str, Any] | None) -> TableAt:
        """This table with the identity ``fields`` name (``commit_user``, ``commit_identifier``, ``commit_time``)."""
        found = SnapshotIdentity.from_fields(*(dict(fields or {}).get(k) for k in IDENTITY_FIELDS))
        if found is None:
            return self
        return dataclasses.replace(self, commit_user=found.commit_user, commit_identifier=found.commit_identifier,
                                   commit_time=found.time_millis)

    @property
    def display(self) -> str:
        name = f"{self.database}.{self.table}"
        name = name if self.branch in ("", "main") else f"{name}$branch_{self.branch}"
        return name if self.snapshot_id is None else f"{name}@{self.snapshot_id}"


@dataclass
class BatchRecord:
    """One barrier of ``job``. ``barrier_id`` None: take the next of the job's sequence."""

    job: str
    barrier_id: int | None
    sources: list[TableAt] = field(default_factory=list)
    sinks: list[TableAt] = field(default_factory=list)
    streaming: bool = True
    tables_only: bool = False  # table lineage only (a query's sources, known at its start)
    #: the Airflow run and Spark application behind the barrier, as the snapshots'
    #: properties name them (``paimon/commit_properties``); {} when unknown
    run: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> BatchRecord:
        data = json.loads(line)
        return cls(
            job=data["job"],
            barrier_id=data.get("barrier_id"),
            sources=[TableAt(**t) for t in data.get("sources", [])],
            sinks=[TableAt(**t) for t in data.get("sinks", [])],
            streaming=bool(data.get("streaming", True)),
            tables_only=bool(data.get("tables_only", False)),
            run={str(k): str(v) for k, v in (data.get("run") or {}).items()},
        )

    def describe(self) -> str:
        srcs = ", ".join(t.display for t in self.sources) or "-"
        snks = ", ".join(t.display for t in self.sinks) or "-"
        return f"job {self.job!r} barrier {self.barrier_id}: {srcs} -> {snks}"


def spool_dir_for(config: CaptureConfig) -> str:
    """``<spoolDir>/<job, URL-quoted>``: one folder per job, safe for any job name."""
    return os.path.join(config.spool_dir, urllib.parse.quote(config.job, safe=""))


class LineageRecorder:
    """Writes ``BatchRecord``s to the lineage store; spools them while it is down.

    Thread-safe: the capture calls it from Spark's listener thread and its own.
    ``store_opener(url, database)`` defaults to the factory ``config.meta`` names
    (``lineage-meta``; ``jdbc``: ``LineageStore.from_url``). ``config.table_lineage``
    and ``config.data_lineage`` decide which rows are written: table lineage alone
    takes no barrier id and writes no snapshot rows; data lineage alone writes no
    job <-> table rows.
    """

    def __init__(
        self,
        config: CaptureConfig,
        store_opener: Callable[[str | None, str], Any] | None = None,
        *,
        retry_interval: float = 5.0,
        on_failure: Callable[[LineageCaptureError], None] | None = None,
    ) -> None:
        self.config = config
        self._open_store = store_opener or _opener_for(config)
        self.retry_interval = retry_interval
        self.on_failure = on_failure
        self.spool_dir = spool_dir_for(config)
        self.spool_path = os.path.join(self.spool_dir, SPOOL_FILE)
        self._lock = threading.RLock()
        self._store: Any = None
        self._next_attempt = 0.0
        self._tables_done: set[tuple[str, str, str, str]] = set()
        self.delivered = 0
        self.delivery_seconds: list[float] = []  # per delivered record (benchmarks)
        self.failure: LineageCaptureError | None = None
        self.last_error: str | None = None

    # -- life cycle -------------------------------------------------------------------

    def open(self) -> None:
        """Connect, and deliver what an earlier run left in the spool.

        With ``fail`` an unreachable store is an error now, before any data moves;
        with ``buffer`` it is a warning and records wait in the spool.
        """
        os.makedirs(self.spool_dir, exist_ok=True)
        with self._lock:
            if not self._connect():
                if self.config.on_store_failure == FAIL:
                    raise LineageCaptureError(
                        f"lineage store {self.config.masked_url} is not reachable "
                        f"({self.last_error}); onStoreFailure=fail stops the job before it starts"
                    )
                log.warning("lineage store unreachable, spooling to %s: %s", self.spool_path, self.last_error)
                return
            self._flush_locked()

    def close(self) -> None:
        """Deliver the spool one last time and disconnect; raise if ``fail`` was hit."""
        with self._lock:
            self._next_attempt = 0.0
            try:
                self._flush_locked()
            finally:
                store, self._store = self._store, None
                if store is not None:
                    store.close()
            pending = self.pending()
            if pending:
                log.warning(
                    "%d lineage record(s) of job %r are waiting in %s; the next capture of "
                    "this job delivers them", pending, self.config.job, self.spool_path,
                )
        if self.failure is not None:
            raise self.failure

    # -- recording --------------------------------------------------------------------

    def record(self, record: BatchRecord) -> bool:
        """Deliver ``record`` (after anything spooled); spool it on failure. True: delivered."""
        with self._lock:
            if record.tables_only and (not self.config.table_lineage or self._known_tables(record)):
                return True  # nothing new: no store round trip (a restarted query's sources)
            if self.failure is not None or not self._flush_locked():
                self._spool_append(record)
                return False
            try:
                self._deliver(record)
                return True
            except Exception as err:  # noqa: BLE001 - any store error: keep the record
                self._spool_append(record)
                self._failed(err)
                return False

    def record_tables(self, job: str, sources: list[TableAt], sinks: list[TableAt] | None = None) -> bool:
        """Record table lineage only (e.g. a streaming query's sources when it starts)."""
        return self.record(BatchRecord(job, None, list(sources), list(sinks or []), tables_only=True))

    def flush(self) -> bool:
        """Try to deliver the spool now; True when it is empty afterwards."""
        with self._lock:
            self._next_attempt = 0.0
            return self._flush_locked()

    def pending(self) -> int:
        return len(self._spool_read())

    # -- internals --------------------------------------------------------------------

    def _known_tables(self, record: BatchRecord) -> bool:
        """Whether every table of ``record`` is already in the store's table lineage."""
        keys = [("source", t.database, t.table, t.branch) for t in record.sources]
        keys += [("sink", t.database, t.table, t.branch) for t in record.sinks]
        return all(key in self._tables_done for key in keys)

    def _connect(self) -> bool:
        if self._store is not None:
            return True
        if time.monotonic() < self._next_attempt:
            return False
        try:
            self._store = self._open_store(self.config.url, self.config.database)
            return True
        except Exception as err:  # noqa: BLE001
            self._note_error(err)
            self._next_attempt = time.monotonic() + self.retry_interval
            return False

    def _flush_locked(self) -> bool:
        records = self._spool_read()
        if not records:
            return self._connect() if self._store is None else True
        if not self._connect():
            return False
        done = 0
        try:
            for record in records:
                self._deliver(record, spooled=(records, done))
                done += 1
        except Exception as err:  # noqa: BLE001
            self._spool_write(records[done:])
            self._failed(err)
            return False
        self._spool_write([])
        log.info("delivered %d spooled lineage record(s) of job %r", done, self.config.job)
        return True

    def _deliver(self, record: BatchRecord, spooled: tuple[list[BatchRecord], int] | None = None) -> None:
        started = time.perf_counter()
        store = self._store
        if store is None:
            raise LineageCaptureError("lineage store is not connected")
        want_tables, want_data = self.config.table_lineage, self.config.data_lineage and not record.tables_only
        if record.barrier_id is None and want_data:
            record.barrier_id = next_barrier_id(store, record.job)
            if spooled is not None:  # keep the id: a retry must not take another one
                records, index = spooled
                self._spool_write(records[index:])
        tables = []
        new_keys = []
        for kind, items in (("source", record.sources), ("sink", record.sinks)):
            for t in items:
                key = (kind, t.database, t.table, t.branch)
                if want_tables and key not in self._tables_done:
                    tables.append((kind, TableLineage(record.job, t.database, t.table, t.branch)))
                    new_keys.append(key)
        barrier = record.barrier_id  # set above whenever data lineage is wanted
        data = {
            kind: [
                DataLineage(record.job, t.database, t.table, barrier, t.snapshot_id, t.branch, identity=t.identity)
                for t in items
                if t.snapshot_id is not None and barrier is not None and want_data
            ]
            for kind, items in (("source", record.sources), ("sink", record.sinks))
        }

        runs = []
        if want_data and record.run and record.barrier_id is not None:
            run = BarrierRun.from_properties(record.job, record.barrier_id, record.run)
            runs = [] if run.empty else [run]
        store_rows(
            store,
            source_tables=[t for kind, t in tables if kind == "source"],
            sink_tables=[t for kind, t in tables if kind == "sink"],
            source_data=data["source"],
            sink_data=data["sink"],
            runs=runs,
        )
        self._tables_done.update(new_keys)
        self.delivered += 1
        if len(self.delivery_seconds) < 10_000:
            self.delivery_seconds.append(time.perf_counter() - started)

    def _failed(self, err: BaseException) -> None:
        self._note_error(err)
        # Drop the connection: the next attempt reconnects (the store may have moved).
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()
        self._next_attempt = time.monotonic() + self.retry_interval
        if self.config.on_store_failure == FAIL and self.failure is None:
            self.failure = LineageCaptureError(
                f"lineage of job {self.config.job!r} could not be recorded in "
                f"{self.config.masked_url} ({self.last_error}); it is kept in "
                f"{self.spool_path} and onStoreFailure=fail stops the job"
            )
            if self.on_failure is not None:
                try:
                    self.on_failure(self.failure)
                except Exception:
                    log.exception("lineage failure callback failed")
        else:
            log.warning(
                "lineage store unavailable (%s); records wait in %s", self.last_error, self.spool_path
            )

    def _note_error(self, err: BaseException) -> None:
        # Store errors are already masked by the store; scrub the URL once more anyway.
        text = f"{type(err).__name__}: {err}"
        if self.config.url:
            text = scrub(text, self.config.url)
        self.last_error = text.splitlines()[0] if text else type(err).__name__

    def _spool_read(self) -> list[BatchRecord]:
        if not os.path.exists(self.spool_path):
            return []
        with open(self.spool_path, encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)
            lines = fh.read().splitlines()
        records = []
        for line in lines:
            if line.strip():
                try:
                    records.append(BatchRecord.from_json(line))
                except (ValueError, KeyError, TypeError):
                    log.error("skipping unreadable spooled lineage record: %.200s", line)
        return records

    def _spool_append(self, record: BatchRecord) -> None:
        with open(self.spool_path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(record.to_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _spool_write(self, records: list[BatchRecord]) -> None:
        """Replace the spool atomically (write a temp file, fsync, rename)."""
        if not records:
            if os.path.exists(self.spool_path):
                os.remove(self.spool_path)
            return
        tmp = self.spool_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("".join(r.to_json() + "\n" for r in records))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.spool_path)


def _opener_for(config: CaptureConfig) -> Callable[[str | None, str], Any]:
    """Open the store ``config.meta`` names, then keep the catalog options in it."""

    def open_store(url: str | None, database: str) -> Any:
        from airflow_provider_paimon.lineage.retry import RetryPolicy

        # A short in-call retry: the spool is the long-term retry.
        context = LineageMetaContext(
            config.meta_options, url, database, retry=RetryPolicy(attempts=3, max_delay=0.2)
        )
        store = create_lineage_meta(config.meta, context)
        if config.meta_options:
            try:  # the proposal's options table (secrets are never stored)
                store_options(store, config.meta_options)
            except Exception:
                store.close()
                raise
        return store

    return open_store


class RunSequenceRecorder:
    """The recorder of a capture without a store (OpenLineage events only).

    Writes nothing anywhere: it only gives each batch write of the run a batch id, its
    number within the run (1, 2, ...), as the store's per-job sequence would; a
    micro-batch keeps its own id. Same interface as ``LineageRecorder``, so the capture
    does not care which one it has.
    """

    def __init__(self, config: CaptureConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._last_barrier = 0
        self.delivered = 0
        self.delivery_seconds: list[float] = []
        self.failure: LineageCaptureError | None = None
        self.last_error: str | None = None

    def open(self) -> None:
        """Nothing to connect to."""

    def close(self) -> None:
        """Nothing to deliver."""

    def record(self, record: BatchRecord) -> bool:
        if record.tables_only:
            return True
        with self._lock:
            if record.barrier_id is None:
                self._last_barrier += 1
                record.barrier_id = self._last_barrier
            self.delivered += 1
        return True

    def record_tables(self, job: str, sources: list[TableAt], sinks: list[TableAt] | None = None) -> bool:
        return True

    def flush(self) -> bool:
        return True

    def pending(self) -> int:
        return 0
