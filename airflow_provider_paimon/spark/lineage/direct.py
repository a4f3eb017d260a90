"""Lineage turned on by a read's or write's own options (the proposal's catalog options).

``spark.read/write.format("paimon").option("table-lineage", "true")...`` (or the same
keys in the ``paimon`` connection's extra, which the data source takes as defaults)
asks for lineage of that table, in the store its options name. Two cases:

* **A capture runs in the session** (``capture``, turned on by the Spark conf,
  the connection or ``enable_lineage_capture``): the capture records everything, in
  its store. The options must then agree with it: a read or write whose options name
  another store, another ``lineage-meta`` or other flags fails when it is planned,
  before any data moves (``check_session``), instead of recording somewhere else.
  The capture tells the data source's workers what it records under
  ``PAIMON_LINEAGE_SESSION`` in its routing (``routing_state``; no password: the URL
  is masked).
* **No capture**: the data source records what it knows itself, in the Python worker
  where Spark plans the read or commits the write (``on_scan``, ``on_commit``). A scan
  records its table lineage at once and leaves the snapshot it read in a small
  per-job file (``<spoolDir>/<job>/direct-scans.jsonl``); the next commit of the job
  takes those as its sources (same store only) and records its barrier (the job's
  next barrier id) with ``LineageRecorder``, so a store outage spools the rows as the
  capture does. The job name is ``spark.paimon.lineage.job`` or the Spark
  application name, as when the source was registered.

Recording never fails a read or a commit that happened: errors are logged (with the
store's secrets removed) and the rows wait in the spool.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from airflow_provider_paimon.lineage.meta_options import safe_text, store_identity
from airflow_provider_paimon.lineage.url import default_url, parse_url
from airflow_provider_paimon.paimon.errors import InvalidArgumentError

from ..commit_events import EVENT_LOG_ENV
from ..options import OWN_OPTIONS
from ..session_info import app_name
from . import guard
from .config import (
    BUFFER,
    FAIL,
    KEY_JOB,
    KEY_ON_STORE_FAILURE,
    KEY_SPOOL_DIR,
    CaptureConfig,
    default_spool_root,
)
from .connect_openlineage import emit_commit
from .recorder import LineageRecorder, TableAt
from .routing_state import worker_view

log = logging.getLogger(__name__)

#: what the session's capture records (JSON, no secrets), for the workers' check
SESSION_ENV = "PAIMON_LINEAGE_SESSION"
SCANS_FILE = "direct-scans.jsonl"
OPENLINEAGE_SCANS = "openlineage"


def session_descriptor(config: CaptureConfig) -> str:
    """The capture's settings as the workers compare them (masked URL, no password).

    A capture without a store (OpenLineage only) records nothing: it says so, and a
    read or write whose options ask for lineage records it itself (``direct``).
    """
    if not config.store:
        return json.dumps({"store": None, "openlineage_only": True}, sort_keys=True)
    return json.dumps(
        {
            "store": _store_key(config.url, config.database, config.meta),
            "table": config.table_lineage,
            "data": config.data_lineage,
            "meta": config.meta,
            "database": config.database,
            "url": config.masked_url,
        },
        sort_keys=True,
    )


def _store_key(url: Any, database: str, meta: str) -> str:
    parsed = parse_url(url if url is not None else default_url())
    return json.dumps([meta, *[str(p) for p in store_identity(parsed, database)]])


def _routing(opts: Any, environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """Where to look for the session's capture: ``environ`` when given (the driver's
    view, ``routing_state.routed_environment``), else this process's environment with
    the routing the options carry from the registered class on top (a worker)."""
    return environ if environ is not None else worker_view(getattr(opts, "capture_routing", None))


def _session(environ: Mapping[str, str]) -> dict[str, Any] | None:
    raw = environ.get(SESSION_ENV)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def check_session(opts: Any, environ: Mapping[str, str] | None = None) -> None:
    """Refuse options whose lineage settings contradict the session's capture."""
    settings = getattr(opts, "lineage", None)
    session = _session(_routing(opts, environ))
    if settings is None or session is None or session.get("openlineage_only"):
        return
    problems = []
    if settings.meta != session.get("meta"):
        problems.append(f"lineage-meta {settings.meta!r} (capture: {session.get('meta')!r})")
    if (settings.table_lineage, settings.data_lineage) != (session.get("table"), session.get("data")):
        problems.append(
            f"table-lineage={str(settings.table_lineage).lower()} data-lineage="
            f"{str(settings.data_lineage).lower()} (capture: table-lineage="
            f"{str(session.get('table')).lower()} data-lineage={str(session.get('data')).lower()})"
        )
    if settings.database_given and settings.database != session.get("database"):
        problems.append(f"jdbc.database {settings.database!r} (capture: {session.get('database')!r})")
    if settings.url is not None and _store_key(settings.url, session.get("database", ""), settings.meta) != session.get("store"):
        problems.append(f"jdbc.url {settings.masked_url} (capture: {session.get('url')})")
    if problems:
        raise InvalidArgumentError(
            f"the lineage options of {opts.table} disagree with the session's lineage capture: "
            f"{'; '.join(problems)}. The capture records every read and write of the job in "
            "one store: drop these options from the read/write or make them match the "
            "capture's (spark.paimon.catalog.* / spark.paimon.lineage.*)"
        )


def direct(opts: Any, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the data source records this read/write itself (options on, no capture)."""
    env = _routing(opts, environ)
    settings = getattr(opts, "lineage", None)
    if settings is None or not settings.enabled:
        return False
    if (_session(env) or {}).get("openlineage_only"):
        return True  # the session's capture only emits OpenLineage events: no store rows
    return not env.get(SESSION_ENV) and not env.get(EVENT_LOG_ENV)


def config_for(opts: Any) -> CaptureConfig:
    """Recorder settings from the options' lineage settings and the registering session."""
    settings = opts.lineage
    job, spool_dir = _job_and_spool(opts)
    return CaptureConfig(
        enabled=True,
        job=job,
        url=None if settings.url is None else settings.url.render_as_string(hide_password=False),
        database=settings.database,
        on_store_failure=BUFFER,
        spool_dir=spool_dir,
        table_lineage=settings.table_lineage,
        data_lineage=settings.data_lineage,
        meta=settings.meta,
        meta_options=_catalog_options(settings.options, opts.warehouse),
    )


def _job_and_spool(opts: Any) -> tuple[str, str]:
    """The job's name and spool folder, as the registering session gave them."""
    session = dict(getattr(opts, "lineage_session", None) or {})
    return (str(session.get("job") or session.get("app_name") or "spark"),
            str(session.get("spool_dir") or default_spool_root()))


def sends_openlineage(opts: Any) -> bool:
    """Whether this read's or write's commits send OpenLineage events themselves (a Spark
    Connect session's capture: ``connect_openlineage``)."""
    return bool(getattr(opts, "openlineage", None))


def _catalog_options(options: Mapping[str, str], warehouse: str) -> dict[str, str]:
    """The options that describe the catalog (for the factory and the options table):
    not what this one read or write asked for (``table``, ``columns``, ``branch``...)."""
    kept = {k: v for k, v in options.items() if k not in OWN_OPTIONS}
    kept["warehouse"] = warehouse
    return kept


def _scans_path(job: str, spool_dir: str) -> str:
    return os.path.join(spool_dir, urllib.parse.quote(job, safe=""), SCANS_FILE)


def _scans_key(config: CaptureConfig | None) -> str:
    """Whose scans a line is: the store's (the job's reads in another store are not this
    commit's sources) or, with OpenLineage events only, the events'."""
    return OPENLINEAGE_SCANS if config is None else _store_key(config.url, config.database, config.meta)


def _table_at(opts: Any, snapshot_id: int | None, identity: Mapping[str, Any] | None = None) -> Any:
    return TableAt(opts.warehouse, opts.database, opts.table_name, opts.branch_name, snapshot_id).with_identity(identity)


def _record(config: CaptureConfig, record: Any) -> None:
    recorder = LineageRecorder(config, retry_interval=0.0)
    try:
        recorder.open()
        recorder.record(record)
    finally:
        recorder.close()


def on_scan(opts: Any, snapshot_id: int | None, environ: Mapping[str, str] | None = None, *,
            identity: Mapping[str, Any] | None = None) -> None:
    """A planned read: its table lineage now, its snapshot for the job's next commit.

    ``environ``: where to look for a running capture (default: what a data source
    worker sees, ``_routing``). ``identity``: the
    scanned snapshot's identity fields (``commit_events.identity_fields``).
    """
    store = direct(opts, environ)
    events = sends_openlineage(opts)
    if not store and not events:
        return
    try:
        from .recorder import BatchRecord

        config = config_for(opts) if store else None
        table = _table_at(opts, snapshot_id, identity)
        if config is not None and config.table_lineage:
            _record(config, BatchRecord(config.job, None, [table], [], streaming=False, tables_only=True))
        if snapshot_id is not None and (events or (config is not None and config.data_lineage)):
            path = _scans_path(*_job_and_spool(opts))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            line = json.dumps({"store": _scans_key(config), "table": asdict(table)}, sort_keys=True)
            with open(path, "a", encoding="utf-8") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                fh.write(line + "\n")
    except Exception as err:  # noqa: BLE001 - lineage never fails a read
        log.error("lineage of the read of %s not recorded: %s", opts.table, _safe(err, opts))


def _take_scans(job: str, spool_dir: str, key: str) -> list[Any]:
    """The job's scans since its last commit for the same store (and forget them)."""
    path = _scans_path(job, spool_dir)
    if not os.path.exists(path):
        return []
    with open(path, "r+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        lines = fh.read().splitlines()
        fh.seek(0)
        fh.truncate()
    latest: dict[tuple[str, str, str], Any] = {}
    for line in lines:
        try:
            doc = json.loads(line)
            table = TableAt(**doc["table"])
        except (ValueError, KeyError, TypeError):
            continue
        if doc.get("store") != key:
            continue  # another store's read: that store has its table lineage
        ident = (table.database, table.table, table.branch)
        known = latest.get(ident)
        if known is None or (table.snapshot_id or 0) > (known.snapshot_id or 0):
            latest[ident] = table
    return list(latest.values())


def on_commit(
    opts: Any, snapshot_id: int, commit_kind: str, batch_id: int | None = None,
    run: Mapping[str, str] | None = None, identity: Mapping[str, Any] | None = None,
    stream_run: str | None = None,
) -> None:
    """A committed write: one barrier with the job's scans since its last commit.

    ``run``: the commit's run properties (Airflow run, Spark application), kept with
    the barrier (``barrier_run``). With a Connect capture's OpenLineage settings the
    commit's events are sent too (``stream_run``: the streaming query's Spark ``runId``).
    """
    store = direct(opts)
    events = sends_openlineage(opts)
    if not store and not events:
        return
    try:
        from .recorder import BatchRecord

        config = config_for(opts) if store else None
        job, spool_dir = _job_and_spool(opts)
        wants_sources = events or (config is not None and config.data_lineage)
        sources = _take_scans(job, spool_dir, _scans_key(config)) if wants_sources else []
        sinks = [] if str(commit_kind).upper().endswith("COMPACT") else [_table_at(opts, snapshot_id, identity)]
        if not sources and not sinks:
            return
        record = BatchRecord(job, batch_id, sources, sinks, streaming=batch_id is not None, run=dict(run or {}))
        if config is not None:
            # the store takes the barrier's id from its sequence (and sets it on the record)
            _record(config, record if config.data_lineage else dataclasses.replace(record, sources=[]))
        if events:
            emit_commit(opts.openlineage, record, stream_run, spool_dir=spool_dir, numbered=config is None)
    except Exception as err:  # noqa: BLE001 - the commit happened; lineage never undoes it
        log.error("lineage of the write to %s not recorded: %s", opts.table, _safe(err, opts))


def check_store_before_commit(opts: Any, what: str) -> None:
    """``onStoreFailure=fail`` where the source records lineage itself (a Spark Connect
    session's capture): refuse to commit while the store does not answer.

    The classic capture's sinks check through ``guard.check_before_commit`` (its check
    file); here the store is the one the options record to, and the policy comes with
    the session's settings (``session_info``). A no-op otherwise.
    """
    session = dict(getattr(opts, "lineage_session", None) or {})
    if session.get("on_store_failure") != FAIL or not direct(opts):
        return
    config = config_for(opts)
    guard.require_store(config.url, config.database, config.job, what)


def _safe(err: BaseException, opts: Any) -> str:
    return safe_text(f"{type(err).__name__}: {err}", opts.lineage)


def session_info(spark: Any) -> dict[str, str]:
    """What a worker needs of the session to record on its own (no secrets): job, spool."""
    def conf(key: str) -> str:
        try:
            return str(spark.conf.get(key, "") or "")
        except Exception:  # noqa: BLE001 - a stopped session: defaults
            return ""

    policy = conf(KEY_ON_STORE_FAILURE).strip().lower()
    info = {"app_name": app_name(spark), "job": conf(KEY_JOB).strip(),
            "spool_dir": conf(KEY_SPOOL_DIR).strip(), "on_store_failure": policy if policy == FAIL else ""}
    return {k: v for k, v in info.items() if v}
