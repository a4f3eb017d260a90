"""Lineage capture in a Spark job: the Paimon lineage proposal's lineage "listener", for the ``paimon`` source.

``enable_lineage_capture(spark)`` (or ``register(spark)`` when the Spark conf asks for
it, see ``lineage_config``) records, for the job (the Spark app name by default):

* table lineage: every Paimon table the job reads (``source_job_lineage``) and writes
  (``sink_job_lineage``), once;
* data lineage per barrier: the last source snapshot each batch consumed
  (``source_snapshot_lineage``) and the sink snapshot its commit created
  (``sink_snapshot_lineage``). A streaming query's barrier is the micro-batch id; a
  batch write takes the next number of the job's sequence in the store.

How the facts reach the driver. The data source plans reads and commits writes in
Python worker processes that Spark starts on the driver host, and publishes each scan
and commit there (``commit_events``). The capture points those workers at a per-run
event log (the ``PAIMON_SPARK_EVENT_LOG`` variable, set through ``sc.environment`` and
a re-registration of the data source, which is how Spark passes environment to them),
and reads it here:

* batch jobs: a background thread picks up each commit and pairs it with the scans
  planned since the previous commit;
* streaming: a ``StreamingQueryListener`` takes each micro-batch's progress (batch id,
  and each source's end offset ``{"nextSnapshot": N}``: snapshot N-1 consumed, or
  ``dataSnapshot`` when N-1 and the ones before it are COMPACT), finds
  the sink commit published with that batch id, and names each source from its offset
  (which carries table, branch and warehouse); for offsets of older checkpoints, from
  the query plan (a source's progress ``description`` is its stream object, which the
  plan links to the relation's options) or the source's scan event.

With ``onStoreFailure=fail`` the capture also has the sinks check the store before
each commit (``lineage_guard``: a 0600 file with the store's address, named by
``PAIMON_LINEAGE_PRECOMMIT_CHECK`` in the workers' environment).

A COMPACT commit is not a data change and is not a sink snapshot. A replayed
micro-batch publishes the snapshot its first attempt committed, so re-recording it
writes the same rows. Store outages: see ``lineage_recorder`` (spool, then ``buffer``
or ``fail``). OpenLineage, when configured (``spark.paimon.openlineage.*``, Airflow's
``spark.openlineage.*`` or openlineage-python's own config): START when a query starts,
RUNNING per micro-batch, COMPLETE/FAIL when it ends; START and COMPLETE per batch write.
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
import dataclasses
import json
import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from . import commit_events
from .lineage_config import FAIL, CaptureConfig, capture_config
from .lineage_guard import PRECOMMIT_ENV, remove_check_file, write_check_file
from .lineage_recorder import (
    BatchRecord,
    LineageCaptureError,
    LineageRecorder,
    RunSequenceRecorder,
    TableAt,
    spool_dir_for,
)

log = logging.getLogger(__name__)

_captures: dict[int, LineageCapture] = {}

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
_captures_lock = threading.Lock()


def _spark_conf(spark: Any) -> dict[str, str]:
    """SparkConf plus runtime SQL conf (``spark.conf.set`` wins)."""
    conf = dict(spark.sparkContext.getConf().getAll())
    try:
        conf.update(spark.conf.getAll)
    except Exception:  # noqa: BLE001 - older sessions: SparkConf is enough
        pass
    return conf


def _session_key(spark: Any) -> int:
    return id(spark.sparkContext)


def enable_lineage_capture(spark: Any, *, force: bool = True) -> LineageCapture | None:
    """Start capturing lineage for ``spark``'s Paimon reads and writes; idempotent.

    ``force=True`` (a direct call) captures even without ``spark.paimon.lineage.*``
    keys (store: ``PAIMON_LINEAGE_URL`` or the default SQLite file); ``force=False``
    (the ``register`` hook) only when the conf enables it. Returns the capture (also a
    context manager; ``close`` flushes), or None when not enabled.
    """
    key = _session_key(spark)
    with _captures_lock:
        existing = _captures.get(key)
        if existing is not None and not existing.closed:
            return existing
        config = capture_config(_spark_conf(spark), spark.sparkContext.appName, force=force)
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


def enable_from_conf(spark: Any) -> LineageCapture | None:
    """The ``register(spark)`` hook: capture only when the Spark conf turns it on."""
    return enable_lineage_capture(spark, force=False)


def active_capture(spark: Any) -> LineageCapture | None:
    capture = _captures.get(_session_key(spark))
    return None if capture is None or capture.closed else capture


class LineageCapture:
    """One session's capture: event log reader, query listener, recorder, OpenLineage."""

    def __init__(
        self, spark: Any, config: CaptureConfig, recorder: LineageRecorder | RunSequenceRecorder | None = None
    ) -> None:
        self.spark = spark
        self.config = config
        self.conf = _spark_conf(spark)
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
        # onStoreFailure=fail: sinks check the store before each commit (lineage_guard).
        self.check_file = (
            os.path.join(spool_dir_for(config), f"precommit-check-{run_id}.json")
            if config.on_store_failure == FAIL and config.store
            else None
        )
        self._offset = 0
        self._partial = b""
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
        self._previous_env: dict[str, str | None] = {}
        # The Airflow run and Spark application behind this job's commits, as their
        # snapshots' properties name them: kept with each barrier and on the events.
        from airflow_provider_paimon.paimon.commit_properties import commit_properties, spark_app_id

        self.run_properties = commit_properties(spark_app_id=spark_app_id(spark))
        self.ol = _OpenLineage(self.conf, config.job, spark, self.run_properties)

    # -- life cycle -------------------------------------------------------------------

    def start(self) -> None:
        self.recorder.open()
        log.info("%s", self.config.describe())
        os.makedirs(os.path.dirname(self.event_log), exist_ok=True)
        open(self.event_log, "a").close()
        self._route_events()
        self._add_listener()
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
            self._unroute_events()
            if self._listener is not None:
                try:
                    self.spark.streams.removeListener(self._listener)
                except Exception:  # noqa: BLE001 - the session may be stopped already
                    pass
            self.ol.close()
            try:
                os.remove(self.event_log)
            except OSError:
                pass
            with _captures_lock:
                if _captures.get(_session_key(self.spark)) is self:
                    _captures.pop(_session_key(self.spark), None)
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

    # -- routing the data source's events here ---------------------------------------

    def _worker_env(self) -> dict[str, str]:
        """What the data source's Python workers get: the event log, the store check."""
        from .lineage_direct import SESSION_ENV, session_descriptor

        # what this capture records, so a read/write whose options say otherwise fails
        env = {commit_events.EVENT_LOG_ENV: self.event_log, SESSION_ENV: session_descriptor(self.config)}
        if self.check_file is not None:
            env[PRECOMMIT_ENV] = self.check_file
        return env

    def _route_events(self) -> None:
        if self.check_file is not None:
            from airflow_provider_paimon.lineage.url import default_url

            url = self.config.url or default_url()  # as the recorder resolved it, here
            write_check_file(self.check_file, url, self.config.database, self.config.job)
        env = self.spark.sparkContext.environment
        for key, value in self._worker_env().items():
            self._previous_env[key] = env.get(key)
            env[key] = value
        self._reregister()

    def _unroute_events(self) -> None:
        if self.check_file is not None:
            remove_check_file(self.check_file)
        try:
            env = self.spark.sparkContext.environment
            changed = False
            for key, value in self._worker_env().items():
                if env.get(key) != value:
                    continue
                previous = self._previous_env.get(key)
                if previous is None:
                    env.pop(key, None)
                else:
                    env[key] = previous
                changed = True
            if changed:
                self._reregister()
        except Exception:  # noqa: BLE001 - the session may be stopped already
            pass

    def _reregister(self) -> None:
        # The data source's Python function carries sc.environment as it was when it was
        # registered; registering again is what makes the workers see the variable.
        # (with the session's branch redirects, as ``register(spark)`` does)
        from .branch_redirect import register_data_source

        register_data_source(self.spark)

    def _add_listener(self) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        capture = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:  # noqa: N802
                capture._guard(capture.on_query_started, event)

            def onQueryProgress(self, event: Any) -> None:  # noqa: N802
                capture._guard(capture.on_query_progress, event.progress)

            def onQueryIdle(self, event: Any) -> None:  # noqa: N802
                pass

            def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
                capture._guard(capture.on_query_terminated, event)

        self._listener = _Listener()
        self.spark.streams.addListener(self._listener)

    def _guard(self, fn: Any, arg: Any) -> None:
        try:
            fn(arg)
        except Exception:  # noqa: BLE001 - lineage must never break Spark's listener bus
            log.exception("lineage capture failed in %s", getattr(fn, "__name__", fn))

    # -- reading the event log --------------------------------------------------------

    def _poll(self) -> None:
        while not self._stop.wait(self.config.poll_interval):
            try:
                self.drain()
            except Exception:  # noqa: BLE001
                log.exception("lineage capture: reading events failed")

    def drain(self) -> None:
        """Handle every event appended to the event log since the last call."""
        with self._lock:
            try:
                with open(self.event_log, "rb") as fh:
                    fh.seek(self._offset)
                    chunk = fh.read()
            except FileNotFoundError:
                return
            if not chunk:
                return
            self._offset += len(chunk)
            data = self._partial + chunk
            lines = data.split(b"\n")
            self._partial = lines.pop()  # an incomplete last line waits for the rest
            for line in lines:
                if line.strip():
                    try:
                        self._on_event(json.loads(line))
                    except ValueError:
                        log.error("unreadable event line: %.200r", line)

    def _on_event(self, raw: Mapping[str, Any]) -> None:
        table = _table_at(raw)
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

    # -- streaming --------------------------------------------------------------------

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
        sinks = [_table_at(c) for c in commits if c.get("commit_kind") != "COMPACT"]
        sources = []
        served: list[tuple[int, TableAt]] = []  # (end offset, table) of each Paimon source
        mapping: dict[str, TableAt] | None = None
        for source in progress.sources:
            offset = _paimon_offset(source.endOffset)
            if offset is None:
                continue  # not a Paimon source
            consumed = _offset_data_snapshot(source.endOffset)
            if consumed is None:
                consumed = offset - 1 if offset > 1 else None
            # The offset names its table (from the first batch on, before the query's
            # plan is readable); older offsets don't: then the plan, then the scan events.
            table = _offset_table(source.endOffset)
            if table is None or not table.warehouse or not table.namespace:
                # offsets name table, branch and warehouse but not the namespace (a REST
                # catalog's differs from its warehouse): the planned source knows it
                if mapping is None:
                    mapping = self._query_sources.get(query_id) or self._resolve_sources(query_id)
                known = mapping.get(str(source.description)) or self._stream_scans.get(offset)
                if table is None:
                    table = known
                elif known is not None and (known.database, known.table) == (table.database, table.table):
                    table = known if not table.warehouse else dataclasses.replace(table, namespace=known.namespace)
            if table is None:
                log.warning("lineage: cannot tell which table source %s is", source.description)
                continue
            sources.append(
                TableAt(table.warehouse, table.database, table.table, table.branch, consumed, table.namespace)
            )
            served.append((offset, table))
        self._forget_scans(served)
        if not sources and not sinks:
            return
        record = BatchRecord(self.config.job, batch_id, sources, sinks, streaming=True, run=self.run_properties)
        self.recorder.record(record)
        self.ol.micro_batch(query_id, record)

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
                mapping = _plan_sources(execution.logical(), self.spark)
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
                except Exception:  # noqa: BLE001
                    log.exception("could not stop query %s", query.id)

        threading.Thread(target=stop_all, name="paimon-lineage-stop", daemon=True).start()

    def raise_if_failed(self) -> None:
        """Raise the ``fail`` policy's error, if lineage could not be recorded."""
        if self.recorder.failure is not None:
            raise self.recorder.failure


def _table_at(raw: Mapping[str, Any]) -> TableAt:
    snapshot = raw.get("snapshot_id")
    return TableAt(
        str(raw.get("warehouse", "")),
        str(raw["database"]),
        str(raw["table"]),
        str(raw.get("branch") or "main"),
        None if snapshot is None else int(snapshot),
        str(raw.get("namespace") or ""),
    )


def _offset_json(end_offset: Any) -> Mapping[str, Any] | None:
    """A Paimon stream offset (JSON text or mapping) as a mapping, else None."""
    if end_offset is None:
        return None
    try:
        value = json.loads(end_offset) if isinstance(end_offset, str) else end_offset
    except ValueError:
        return None
    return value if isinstance(value, Mapping) and "nextSnapshot" in value else None


def _offset_table(end_offset: Any) -> TableAt | None:
    """The table a Paimon stream offset names (``table``, ``branch``, ``warehouse``), if any."""
    value = _offset_json(end_offset)
    name = None if value is None else value.get("table")
    if not isinstance(name, str) or name.count(".") != 1:
        return None  # an offset written before offsets carried their table
    database, table = name.split(".")
    return TableAt(str(value.get("warehouse") or ""), database, table, str(value.get("branch") or "main"))


def _offset_data_snapshot(end_offset: Any) -> int | None:
    """``dataSnapshot`` of a Paimon stream offset: the snapshot read when the last ones were COMPACT.

    A COMPACT snapshot changes no data and is never recorded as a sink snapshot, so the
    source snapshot recorded is the one whose rows the batch read.
    """
    value = _offset_json(end_offset)
    raw = None if value is None else value.get("dataSnapshot")
    try:
        return None if raw is None else int(raw)
    except (TypeError, ValueError):
        return None


def _paimon_offset(end_offset: Any) -> int | None:
    """``nextSnapshot`` of a Paimon stream offset (JSON text), else None."""
    value = _offset_json(end_offset)
    if value is not None:
        try:
            return int(value["nextSnapshot"])
        except (TypeError, ValueError):
            return None
    return None


def _plan_sources(plan: Any, spark: Any = None) -> dict[str, TableAt]:
    """Paimon stream relations of a (JVM) logical plan: stream description -> table.

    The relation holds the options as written; the branch the source reads is the one
    the session's ``spark.paimon.branch.*`` redirect resolves them to.
    """
    from .branch_redirect import apply, session_entries
    from .options import parse_options

    redirects = session_entries(spark) if spark is not None else {}

    found: dict[str, TableAt] = {}
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        try:
            relation = leaf.relation()
            if str(relation.table().name()) != "paimon":
                continue
            options = dict(relation.options().asCaseSensitiveMap())
            stream = str(leaf.stream().toString())
        except Exception:  # noqa: BLE001 - not a DataSource V2 stream relation
            continue
        opts = apply(parse_options(options), redirects)
        found[stream] = TableAt(
            opts.warehouse, opts.database, opts.table_name, opts.branch_name, namespace=opts.lineage_namespace
        )
    return found


class _OpenLineage:
    """The capture's OpenLineage side: one emitter, one run per query or batch write."""

    def __init__(
        self, conf: Mapping[str, Any], job: str, spark: Any, run_properties: Mapping[str, str] | None = None
    ) -> None:
        from airflow_provider_paimon.lineage.openlineage import PaimonLineageEmitter

        self.emitter = PaimonLineageEmitter.from_conf(conf)
        self.conf = dict(conf)
        self.run_properties = dict(run_properties or {})
        self.job = job
        self.version = getattr(spark, "version", None)
        self.runs: dict[str, Any] = {}
        self._schemas: dict[tuple[str, str, str, str], Any] = {}

    @property
    def enabled(self) -> bool:
        return self.emitter.enabled

    def _ref(self, table: TableAt) -> Any:
        from airflow_provider_paimon.lineage.openlineage import PaimonTableRef

        # The namespace the data source computed (it knows the catalog options: a REST
        # catalog's namespace is not its warehouse), so operators and Spark name it alike.
        return PaimonTableRef(
            table.namespace or table.warehouse, table.database, table.table,
            None if table.branch == "main" else table.branch,
            table.snapshot_id, schema_fields=self._schema(table),
        )

    def _schema(self, table: TableAt) -> Any:
        """Schema facet fields, read once per table (None when it cannot be read)."""
        key = (table.warehouse, table.database, table.table, table.branch)
        if key not in self._schemas:
            try:
                from airflow_provider_paimon.lineage.openlineage import schema_fields_from_paimon
                from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

                loaded = load_table(
                    open_catalog(table.warehouse), f"{table.database}.{table.table}", table.branch
                )
                self._schemas[key] = schema_fields_from_paimon(loaded)
            except Exception as err:  # noqa: BLE001 - a facet is not worth failing for
                log.debug("no schema facet for %s: %s", table.display, err)
                self._schemas[key] = None
        return self._schemas[key]

    def _run(self, key: str, streaming: bool) -> Any:
        if key not in self.runs:
            self.runs[key] = self.emitter.new_run(
                self.job, streaming=streaming, parent_conf=self.conf, engine_version=self.version,
                run_properties=self.run_properties,
            )
        return self.runs[key]

    def query_started(self, query_id: str, sources: list[TableAt]) -> None:
        if self.enabled:
            run = self._run(query_id, streaming=True)
            self.emitter.emit(run.start(inputs=[self._ref(s) for s in sources]))

    def micro_batch(self, query_id: str, record: BatchRecord) -> None:
        if self.enabled:
            run = self._run(query_id, streaming=True)
            self.emitter.emit(
                run.batch(
                    int(record.barrier_id or 0),
                    sources=[self._ref(s) for s in record.sources],
                    sinks=[self._ref(s) for s in record.sinks],
                )
            )

    def query_terminated(self, query_id: str, exception: str | None) -> None:
        if self.enabled:
            run = self.runs.pop(query_id, None) or self._run(query_id, streaming=True)
            self.runs.pop(query_id, None)
            self.emitter.emit(run.fail(str(exception)) if exception else run.complete())

    def batch_job(self, record: BatchRecord) -> None:
        if self.enabled:
            run = self.emitter.new_run(
                self.job, streaming=False, parent_conf=self.conf, engine_version=self.version,
                run_properties=self.run_properties,
            )
            sources = [self._ref(s) for s in record.sources]
            sinks = [self._ref(s) for s in record.sinks]
            self.emitter.emit(run.start(inputs=sources, outputs=sinks))
            self.emitter.emit(
                run.batch(int(record.barrier_id or 0), sources, sinks, state="COMPLETE")
            )

    def close(self) -> None:
        try:
            self.emitter.close()
        except Exception:  # noqa: BLE001
            log.exception("closing the OpenLineage emitter failed")
