"""OpenLineage events of a Spark Connect session's capture: sent where each fact is known.

On a classic session the capture's driver thread sends every event (``openlineage``).
A Connect client has no driver: what a commit read and wrote is known in the server's
Python worker that commits, and when a streaming query starts and ends is known to the
client (Spark 4's client-side ``StreamingQueryListener``). So the events are split:

* **the client** (``ConnectCapture``) turns the session's OpenLineage settings
  (``spark.paimon.openlineage.*``, Airflow's ``spark.openlineage.*``, or
  ``OPENLINEAGE_URL`` / ``OPENLINEAGE_API_KEY`` of its own environment) into
  ``carried_settings``, which the registered ``paimon`` class carries to the workers
  (pickled with the class, like the store's options: never in options, plans or logs),
  and sends START when a query starts and COMPLETE / FAIL when it ends
  (``QueryRunEvents``);
* **the source's commit** (``direct.on_commit``, in the server's worker) sends a batch
  write's START and COMPLETE (inputs: the job's scans since its last commit; outputs:
  the snapshot written; the ``paimon_batch`` facet with the barrier id) and a
  micro-batch's RUNNING event (``emit_commit``).

A streaming query's events share one run id: the query's Spark ``runId``, which the
client's listener is given and the write tasks read from their task's job group
(``stream_run_id``). Events are sent synchronously from the worker (it may exit right
after the commit), with the transport's short timeout and retries; sending never fails
a commit.
"""

from __future__ import annotations

import fcntl
import logging
import os
import urllib.parse
import uuid
from collections.abc import Mapping
from typing import Any

from .openlineage import CaptureOpenLineage
from .recorder import BatchRecord

log = logging.getLogger(__name__)

SPARK_OL_PREFIX = "spark.openlineage."
#: the local property Spark's streaming execution sets to the query's ``runId``
JOB_GROUP_PROPERTY = "spark.jobGroup.id"
STREAM_QUERY_PROPERTY = "sql.streaming.queryId"
SEQUENCE_FILE = "openlineage-{capture}.seq"


def carried_settings(
    conf: Mapping[str, Any], job: str, engine_version: str | None, environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What the source's workers need to send the capture's events ({}: OpenLineage off).

    The server's workers do not see the client's environment, so openlineage-python's
    ``OPENLINEAGE_URL`` (+ ``OPENLINEAGE_API_KEY``, ``OPENLINEAGE_ENDPOINT``,
    ``OPENLINEAGE_NAMESPACE``) becomes our own conf keys here. A transport set only in an
    ``openlineage.yml`` is not carried (the server cannot read the client's file): said
    once in the log, and the client's events (START, COMPLETE) still go out.
    """
    # the client's side only; the package's __init__ loads openlineage-python, which the
    # data source's workers (that import this module) load only when they send events
    from airflow_provider_paimon.lineage.openlineage.config import (
        CONF_PREFIX,
        KEY_API_KEY,
        KEY_ASYNC,
        KEY_ENDPOINT,
        KEY_NAMESPACE,
        KEY_TYPE,
        KEY_URL,
        resolve_settings,
    )

    env = os.environ if environ is None else environ
    settings = resolve_settings(conf, env)
    if not settings.enabled:
        return {}
    carried = {str(k): str(v) for k, v in conf.items() if str(k).startswith((CONF_PREFIX, SPARK_OL_PREFIX))}
    if settings.source == "openlineage-config":
        if not env.get("OPENLINEAGE_URL"):
            log.warning(
                "lineage capture on Spark Connect: OpenLineage is configured by an openlineage.yml "
                "or OPENLINEAGE__ variables, which the server's workers cannot read: their events "
                "(each commit's) are not sent; set spark.paimon.openlineage.transport.* (or "
                "OPENLINEAGE_URL) for them"
            )
            return {}
        carried[KEY_TYPE] = "http"
        carried[KEY_URL] = env["OPENLINEAGE_URL"]
        for env_key, key in (("OPENLINEAGE_API_KEY", KEY_API_KEY), ("OPENLINEAGE_ENDPOINT", KEY_ENDPOINT)):
            if env.get(env_key):
                carried[key] = env[env_key]
    if env.get("OPENLINEAGE_NAMESPACE") and not carried.get(KEY_NAMESPACE):
        # the namespace the client resolved (spark.openlineage.namespace wins over the env)
        carried[KEY_NAMESPACE] = settings.job_namespace
    carried[KEY_ASYNC] = "false"  # a worker sends before its commit returns
    return {
        "conf": carried,
        "job": job,
        "engine_version": engine_version,
        "capture": uuid.uuid4().hex,  # this capture's batch-write numbering (no store)
    }


def stream_run_id(task_context: Any) -> str | None:
    """The streaming query's Spark ``runId``, as a write task of a micro-batch sees it."""
    if task_context is None:
        return None
    if not task_context.getLocalProperty(STREAM_QUERY_PROPERTY):
        return None  # not a streaming query's task
    value = task_context.getLocalProperty(JOB_GROUP_PROPERTY)
    try:
        return str(uuid.UUID(str(value)))
    except (TypeError, ValueError):
        return None


def emit_commit(
    settings: Mapping[str, Any], record: BatchRecord, run_id: str | None = None, *,
    spool_dir: str | None = None, numbered: bool = True,
) -> None:
    """Send one commit's events from the worker that committed (never raises).

    A batch write: START and COMPLETE of its own run, the barrier id from the store (or,
    without one, the write's number within this capture). A micro-batch: RUNNING of the
    query's run (``run_id``: the query's Spark ``runId``). ``numbered``: without a store,
    batch writes are numbered within the capture in a file under ``spool_dir``.
    """
    if not settings:
        return
    events = CaptureOpenLineage(
        settings.get("conf") or {}, str(settings.get("job") or record.job), None,
        run_properties=record.run, engine_version=settings.get("engine_version"),
    )
    try:
        if not events.enabled:
            return
        if record.streaming:
            key = run_id or f"stream-{record.job}"
            events.micro_batch(key, record, run_id=run_id)
        else:
            if record.barrier_id is None and numbered:
                record.barrier_id = _next_write_number(settings, record.job, spool_dir)
            events.batch_job(record)
    except Exception as err:  # noqa: BLE001 - lineage never fails a commit that happened
        log.error("OpenLineage events of the commit to %s not sent: %s",
                  ", ".join(t.display for t in record.sinks) or "a table", type(err).__name__)
    finally:
        events.close()


def _next_write_number(settings: Mapping[str, Any], job: str, spool: str | None) -> int | None:
    """The next batch write's number within this capture (1, 2, ...), as the classic
    capture without a store numbers them; workers share it through a locked file."""
    capture = str(settings.get("capture") or "")
    if not spool or not capture:
        return None
    path = os.path.join(spool, urllib.parse.quote(job, safe=""), SEQUENCE_FILE.format(capture=capture))
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(0)
            text = fh.read().strip()
            number = (int(text) if text.isdigit() else 0) + 1
            fh.seek(0)
            fh.truncate()
            fh.write(str(number))
        return number
    except OSError as err:
        log.warning("no batch number for the OpenLineage events of job %s: %s", job, err)
        return None


class QueryRunEvents:
    """The client's side of a Connect capture's streaming runs: START and COMPLETE / FAIL.

    A client-side ``StreamingQueryListener`` (Spark 4 runs it in the client, fed by the
    server): each query's run id is its Spark ``runId``, the one its micro-batches'
    RUNNING events (sent by the server's workers) carry.
    """

    def __init__(self, spark: Any, settings: Mapping[str, Any], run_properties: Mapping[str, str]) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        events = CaptureOpenLineage(
            settings.get("conf") or {}, str(settings.get("job")), spark, run_properties=run_properties,
        )

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's name
                events.query_started(str(event.id), [], run_id=str(event.runId))

            def onQueryProgress(self, event: Any) -> None:  # noqa: N802
                """RUNNING events come from the commits on the server."""

            def onQueryIdle(self, event: Any) -> None:  # noqa: N802
                """Nothing ran: no event."""

            def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
                events.query_terminated(str(event.id), event.exception, run_id=str(event.runId))

        self.spark = spark
        self.events = events
        self.listener = _Listener()
        spark.streams.addListener(self.listener)

    def close(self) -> None:
        """Stop listening and send what is queued (a run still going gets no COMPLETE)."""
        try:
            self.spark.streams.removeListener(self.listener)
        except Exception as err:  # noqa: BLE001 - a stopped session: nothing to remove
            log.debug("removing the OpenLineage query listener: %s", err)
        self.events.close()
