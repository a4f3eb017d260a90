"""Lineage capture in a Spark job: the Paimon lineage proposal's lineage "listener", for the ``paimon`` source.

``enable_lineage_capture(spark)`` (or ``register(spark)`` when the Spark conf asks for
it, see ``config``) records, for the job (the Spark app name by default):

* table lineage: every Paimon table the job reads (``source_job_lineage``) and writes
  (``sink_job_lineage``), once;
* data lineage per barrier: the last source snapshot each batch consumed
  (``source_snapshot_lineage``) and the sink snapshot its commit created
  (``sink_snapshot_lineage``). A streaming query's barrier is the micro-batch id; a
  batch write takes the next number of the job's sequence in the store.

How the facts reach the driver. The data source plans reads and commits writes in
Python worker processes that Spark starts on the driver host, and publishes each scan
and commit there (``commit_events``). The capture points those workers at a per-run
event log (``worker_routing``: carried inside the class the session registers, which
Spark pickles into every worker; ``routing_state`` says why not their environment),
and reads it here (``event_log``):

* batch jobs: a background thread picks up each commit and pairs it with the scans
  planned since the previous commit;
* streaming: a ``StreamingQueryListener`` (``listener``) takes each micro-batch's
  progress (batch id, and each source's end offset ``{"nextSnapshot": N}``: snapshot
  N-1 consumed, or ``dataSnapshot`` when N-1 and the ones before it are COMPACT), finds
  the sink commit published with that batch id, and names each source from its offset
  (``offsets``: it carries table, branch and warehouse); for offsets of older
  checkpoints, from the query plan (``plan_sources``: a source's progress
  ``description`` is its stream object, which the plan links to the relation's
  options) or the source's scan event.

With ``onStoreFailure=fail`` the capture also has the sinks check the store before
each commit (``guard``: a 0600 file with the store's address, named in the routing
under ``PAIMON_LINEAGE_PRECOMMIT_CHECK``).

A COMPACT commit is not a data change and is not a sink snapshot. A replayed
micro-batch publishes the snapshot its first attempt committed, so re-recording it
writes the same rows. Store outages: see ``recorder`` (spool, then ``buffer``
or ``fail``). OpenLineage (``openlineage``), when configured
(``spark.paimon.openlineage.*``, Airflow's ``spark.openlineage.*`` or
openlineage-python's own config): START when a query starts, RUNNING per micro-batch,
COMPLETE/FAIL when it ends; START and COMPLETE per batch write.
OpenLineage configured in the Spark conf is enough on its own: without a store the
capture runs for the events (``CaptureConfig.store`` False, ``RunSequenceRecorder``:
nothing written, a batch write's id is its number within the run).

Memory: a streaming job runs for months, so nothing here grows per micro-batch. The
per-batch entries (sink commits waiting for their batch's progress, stream scan events
waiting to name a source) are dropped once their batch is recorded, and at most
``MAX_PENDING_BATCHES`` of each are kept while waiting (oldest dropped first: a batch
whose progress never came). ``pending_sizes()`` reports them (tests, benchmarks).

Limits: one streaming query per job name at a time (two queries would share barrier
ids); give each query its own ``spark.paimon.lineage.job`` via separate apps.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from ..session_info import app_id, app_name, is_connect, session_key, spark_conf
from . import connect_capture, connect_state
from .config import FAIL, CaptureConfig, capture_config
from .connect_capture import ConnectCapture
from .event_log import EventLogTail, event_table
from .listener import query_listener
from .offsets import data_snapshot, next_snapshot, offset_commit, offset_table
from .openlineage import CaptureOpenLineage
from .plan_sources import plan_sources
from .recorder import (
    BatchRecord,
    LineageCaptureError,
    LineageRecorder,
    RunSequenceRecorder,
    TableAt,
    spool_dir_for,
)
from .worker_routing import WorkerRouting

log = logging.getLogger(__name__)

# Per-batch entries kept while they wait for their micro-batch's progress (see the
# module docstring): far more than the batches in flight, and a bound on memory.
MAX_PENDING_BATCHES = 256


class _BoundedDict(OrderedDict):
    """An insertion-ordered dict that forgets its oldest entries beyond ``limit``."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        while len(self) > self.limit:
            dropped, _ = self.popitem(last=False)
            log.warning("lineage capture: dropped the unclaimed entry of batch/offset %s", dropped)


# -- one capture per SparkContext -------------------------------------------------------

_captures: dict[Hashable, LineageCapture] = {}
_captures_lock = threading.Lock()


def enable_lineage_capture(spark: Any, *, force: bool = True) -> LineageCapture | ConnectCapture | None:
    """Start capturing lineage for ``spark``'s Paimon reads and writes; idempotent.

    ``force=True`` (a direct call) captures even without ``spark.paimon.lineage.*``
    keys (store: ``PAIMON_LINEAGE_URL`` or the default SQLite file); ``force=False``
    (the ``register`` hook) only when the conf enables it. Returns the capture (also a
    context manager; ``close`` flushes), or None when not enabled. On a Spark Connect
    session the ``paimon`` source records at commit instead (``connect_capture``).
    """
    key = session_key(spark)
    if is_connect(spark):
        conf = spark_conf(spark)
        connect_config = capture_config(conf, app_name(spark), force=force)
        return connect_capture.enable(spark, connect_config, conf) if connect_config.enabled else None
    with _captures_lock:
        existing = _captures.get(key)
        if existing is not None and not existing.closed:
            return existing
        config = capture_config(spark_conf(spark), app_name(spark), force=force)
        if not config.enabled:
            return None
        capture = LineageCapture(spark, config)
        _captures[key] = capture
    try:
        capture.start()
    except BaseException:
        with _captures_lock:
            _captures.pop(key, None)
        raise
    return capture


def enable_from_conf(spark: Any) -> LineageCapture | ConnectCapture | None:
    """The ``register(spark)`` hook: capture only when the Spark conf turns it on."""
    return enable_lineage_capture(spark, force=False)


def active_capture(spark: Any) -> LineageCapture | ConnectCapture | None:
    """The session's running capture, or None: a job asks so it can report (and close) it.

    On a Spark Connect session that is the capture its ``paimon`` source records with
    (``connect_capture``); a job's ``capture.close()`` and ``capture.config.job`` work
    on either kind.
    """
    if is_connect(spark):
        return connect_state.running(spark)
    capture = _captures.get(session_key(spark))
    return None if capture is None or capture.closed else capture


class LineageCapture:
    """One session's capture: event log reader, query listener, recorder, OpenLineage."""

    def __init__(
        self, spark: Any, config: CaptureConfig, recorder: LineageRecorder | RunSequenceRecorder | None = None
    ) -> None:
        self.spark = spark
        self.config = config
        self.conf = spark_conf(spark)
        if recorder is None:
            # no store (OpenLineage only): batch ids from the run, nothing written
            recorder = (
                LineageRecorder(config, on_failure=self._on_store_failure)
                if config.store
                else RunSequenceRecorder(config)
            )
        self.recorder = recorder
        self.closed = False
        run_id = uuid.uuid4().hex
        self.event_log = os.path.join(spool_dir_for(config), f"events-{run_id}.jsonl")
        # onStoreFailure=fail: sinks check the store before each commit (guard).
        self.check_file = (
            os.path.join(spool_dir_for(config), f"precommit-check-{run_id}.json")
            if config.on_store_failure == FAIL and config.store
            else None
        )
        self.routing = WorkerRouting(spark, config, self.event_log, self.check_file)
        self._events = EventLogTail(self.event_log)
        self._lock = threading.RLock()
        self._pending_scans: dict[tuple[str, str, str, str], TableAt] = {}
        # sink commits by micro-batch id, until that batch's progress records them
        self._stream_commits: dict[int, list[dict[str, Any]]] = _BoundedDict(MAX_PENDING_BATCHES)
        # stream scan events by end offset (nextSnapshot), to name a source of old offsets
        self._stream_scans: dict[int, TableAt] = _BoundedDict(MAX_PENDING_BATCHES)
        self._query_sources: dict[str, dict[str, TableAt]] = {}
        self._queries: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener: Any = None
        # The Airflow run and Spark application behind this job's commits, as their
        # snapshots' properties name them: kept with each barrier and on the events.
        from airflow_provider_paimon.paimon.commit_properties import commit_properties

        self.run_properties = commit_properties(spark_app_id=app_id(spark))
        self.ol = CaptureOpenLineage(self.conf, config.job, spark, self.run_properties)

    # -- life cycle -------------------------------------------------------------------

    def start(self) -> None:
        self.recorder.open()
        log.info("%s", self.config.describe())
        os.makedirs(os.path.dirname(self.event_log), exist_ok=True)
        open(self.event_log, "a").close()
        self.routing.route()
        self._listener = query_listener(self)
        self.spark.streams.addListener(self._listener)
        self._thread = threading.Thread(target=self._poll, name="paimon-lineage-capture", daemon=True)
        self._thread.start()
        atexit.register(self._close_quietly)

    def close(self) -> None:
        """Pick up the last events, deliver the spool, end OpenLineage; raise on ``fail``."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self.drain()
        finally:
            self.routing.unroute()
            if self._listener is not None:
                with contextlib.suppress(Exception):  # the session may be stopped already
                    self.spark.streams.removeListener(self._listener)
            self.ol.close()
            with contextlib.suppress(OSError):
                os.remove(self.event_log)
            with _captures_lock:
                if _captures.get(session_key(self.spark)) is self:
                    _captures.pop(session_key(self.spark), None)
            self.recorder.close()

    def __enter__(self) -> LineageCapture:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _close_quietly(self) -> None:
        try:
            self.close()
        except Exception as err:  # noqa: BLE001 - at exit: report, don't mask the real exit
            log.error("lineage capture: %s", err)

    # -- the workers' events ----------------------------------------------------------

    def _poll(self) -> None:
        while not self._stop.wait(self.config.poll_interval):
            try:
                self.drain()
            except Exception:
                log.exception("lineage capture: reading events failed")

    def drain(self) -> None:
        """Handle every event appended to the event log since the last call."""
        with self._lock:
            for raw in self._events.read_new():
                self._on_event(raw)

    def _on_event(self, raw: Mapping[str, Any]) -> None:
        table = event_table(raw)
        if raw.get("kind") == "scan":
            if "next_snapshot" in raw:  # a streaming source committed a range
                offset = int(raw["next_snapshot"])
                self._stream_scans.pop(offset, None)  # re-inserted as the newest
                self._stream_scans[offset] = table
            else:
                key = (table.warehouse, table.database, table.table, table.branch)
                known = self._pending_scans.get(key)
                if known is None or (table.snapshot_id or 0) > (known.snapshot_id or 0):
                    self._pending_scans[key] = table
            return
        if raw.get("kind") != "commit":
            return
        if "batch_id" in raw:  # a streaming sink committed micro-batch batch_id
            batch_id = int(raw["batch_id"])
            commits = self._stream_commits.get(batch_id)
            if commits is None:
                commits = self._stream_commits[batch_id] = []
            commits.append(dict(raw))
            return
        self._on_batch_commit(raw, table)

    def _on_batch_commit(self, raw: Mapping[str, Any], sink: TableAt) -> None:
        sources = list(self._pending_scans.values())
        self._pending_scans.clear()
        sinks = [] if raw.get("commit_kind") == "COMPACT" else [sink]
        record = BatchRecord(self.config.job, None, sources, sinks, streaming=False, run=self.run_properties)
        self.recorder.record(record)
        self.ol.batch_job(record)

    # -- streaming (the listener's calls) ---------------------------------------------

    def on_query_started(self, event: Any) -> None:
        query_id = str(event.id)
        try:
            # Keep the JVM handle: it stays readable after the query ends (availableNow).
            self._queries[query_id] = self.spark.streams.get(query_id)
        except Exception as err:  # noqa: BLE001
            log.debug("lineage: query %s not found (%s)", query_id, err)
        sources = self._resolve_sources(query_id)
        if sources:
            self.recorder.record_tables(self.config.job, list(sources.values()))
        self.ol.query_started(query_id, list(sources.values()))

    def on_query_progress(self, progress: Any) -> None:
        self.drain()
        batch_id = int(progress.batchId)
        query_id = str(progress.id)
        with self._lock:
            commits = self._stream_commits.pop(batch_id, [])
            # batches up to this one are done: a commit still waiting for one of them
            # lost its progress event and will never be claimed
            for stale in [b for b in self._stream_commits if b < batch_id]:
                del self._stream_commits[stale]
        sinks = [event_table(c) for c in commits if c.get("commit_kind") != "COMPACT"]
        sources = []
        served: list[tuple[int, TableAt]] = []  # (end offset, table) of each Paimon source
        # the query plan's sources, read at most once per batch and only if an offset needs them
        plan = functools.cache(lambda: self._resolve_sources(query_id))
        for source in progress.sources:
            offset = next_snapshot(source.endOffset)
            if offset is None:
                continue  # not a Paimon source
            consumed = data_snapshot(source.endOffset)
            if consumed is None:
                consumed = offset - 1 if offset > 1 else None
            table = self._source_table(source, offset, plan)
            if table is None:
                log.warning("lineage: cannot tell which table source %s is", source.description)
                continue
            sources.append(
                TableAt(table.warehouse, table.database, table.table, table.branch, consumed, table.namespace)
                .with_identity(offset_commit(source.endOffset))
            )
            served.append((offset, table))
        self._forget_scans(served)
        if not sources and not sinks:
            return
        record = BatchRecord(self.config.job, batch_id, sources, sinks, streaming=True, run=self.run_properties)
        self.recorder.record(record)
        self.ol.micro_batch(query_id, record)

    def _source_table(self, source: Any, offset: int, plan: Callable[[], dict[str, TableAt]]) -> TableAt | None:
        """The table a progress source read: from its offset, else the plan or scan events.

        The offset names its table (from the first batch on, before the query's plan is
        readable); older offsets don't. Offsets name table, branch and warehouse but not
        the namespace (a REST catalog's differs from its warehouse): the planned source
        knows it.
        """
        table = offset_table(source.endOffset)
        if table is not None and table.warehouse and table.namespace:
            return table
        known = plan().get(str(source.description)) or self._stream_scans.get(offset)
        if table is None:
            return known
        if known is not None and (known.database, known.table) == (table.database, table.table):
            return known if not table.warehouse else dataclasses.replace(table, namespace=known.namespace)
        return table

    def _forget_scans(self, served: list[tuple[int, TableAt]]) -> None:
        """Drop each source's scan events up to the offset this batch reached.

        Later batches of that source end further on, so these entries are never asked
        for again (one that arrives after its batch's progress goes with the next batch).
        """
        with self._lock:
            for offset, table in served:
                key = (table.database, table.table, table.branch)
                done = [
                    o for o, t in self._stream_scans.items()
                    if o <= offset and (t.database, t.table, t.branch) == key
                ]
                for o in done:
                    del self._stream_scans[o]

    def pending_sizes(self) -> dict[str, int]:
        """Sizes of the per-batch and per-query structures (bounded; see the module doc)."""
        with self._lock:
            return {
                "stream_commits": len(self._stream_commits),
                "stream_scans": len(self._stream_scans),
                "pending_scans": len(self._pending_scans),
                "queries": len(self._queries),
                "query_sources": len(self._query_sources),
                "openlineage_runs": len(self.ol.runs),
            }

    def on_query_terminated(self, event: Any) -> None:
        self.drain()
        self._queries.pop(str(event.id), None)
        self._query_sources.pop(str(event.id), None)
        self.recorder.flush()
        self.ol.query_terminated(str(event.id), getattr(event, "exception", None))

    def _resolve_sources(self, query_id: str) -> dict[str, TableAt]:
        """Stream description -> Paimon table, from the running query's plan (cached)."""
        if query_id in self._query_sources:
            return self._query_sources[query_id]
        mapping: dict[str, TableAt] = {}
        query = self._queries.get(query_id)
        try:
            # The last executed plan only: asking for ``logicalPlan`` would make this
            # thread build the query's sources if the query had not yet done so.
            execution = None if query is None else query._jsq.streamingQuery().lastExecution()
            if execution is not None:
                mapping = plan_sources(execution.logical(), self.spark)
        except Exception as err:  # noqa: BLE001 - fall back to the sources' own events
            log.debug("lineage: query plan not readable (%s)", err)
        if mapping:
            self._query_sources[query_id] = mapping
        return mapping

    def _on_store_failure(self, error: LineageCaptureError) -> None:
        """``fail`` policy: stop the streaming queries (off the listener thread)."""
        log.error("%s", error)

        def stop_all() -> None:
            for query in list(self.spark.streams.active):
                try:
                    query.stop()
                except Exception:
                    log.exception("could not stop query %s", query.id)

        threading.Thread(target=stop_all, name="paimon-lineage-stop", daemon=True).start()

    def raise_if_failed(self) -> None:
        """Raise the ``fail`` policy's error, if lineage could not be recorded."""
        if self.recorder.failure is not None:
            raise self.recorder.failure
