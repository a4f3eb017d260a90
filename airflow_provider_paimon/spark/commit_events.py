"""Tell interested code which snapshot a Spark write committed and a Spark read scanned.

Lineage capture needs "this job produced snapshot Y of table T" and "this job read
snapshot X of table S". The data source knows both at exactly one place: the
driver-side commit (writes) and the driver-side split planning (reads). It calls
``publish(event)`` there; this module fans the event out to:

1. listeners added in the same Python process with ``add_listener(callback)``;
2. listeners named by the option ``event-listeners`` (``"pkg.module:function,..."``)
   or the environment variable ``PAIMON_SPARK_EVENT_LISTENERS``, imported in the
   process that commits; and
3. the JSON-lines file named by the option ``event-log`` (else the session's lineage
   capture's, ``lineage.routing_state``, else the environment variable
   ``PAIMON_SPARK_EVENT_LOG``), one event per line.

Why 2 and 3: Spark runs a Python data source's planning and commit in a Python
worker process that Spark starts on the driver host, not in the notebook's or job
script's own process, so a callback added there with ``add_listener`` only sees
events when code calls the reader/writer directly. An importable listener or the
event log reaches the driver script reliably (``read_event_log(path)``).

A failing listener is logged and ignored: lineage must never fail a commit that has
already happened.
"""

from __future__ import annotations

import dataclasses
import fcntl
import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity

if TYPE_CHECKING:
    from .options import PaimonOptions

log = logging.getLogger(__name__)

LISTENERS_ENV = "PAIMON_SPARK_EVENT_LISTENERS"
EVENT_LOG_ENV = "PAIMON_SPARK_EVENT_LOG"


@dataclass(frozen=True)
class CommitEvent:
    """A Spark write committed ``snapshot_id`` on ``database.table`` (branch ``branch``)."""

    warehouse: str
    database: str
    table: str
    branch: str
    snapshot_id: int
    commit_kind: str
    row_count: int
    commit_user: str = ""
    app_name: str = ""
    # OpenLineage namespace of the warehouse (PaimonOptions.lineage_namespace)
    namespace: str = ""
    # the committed snapshot's identity with commit_user (paimon.snapshot_identity)
    commit_identifier: int | None = None
    commit_time: int | None = None
    kind: str = field(default="commit", init=False)
    time_millis: int = field(default_factory=lambda: int(time.time() * 1000))


def identity_fields(snapshot: Any) -> dict[str, Any]:
    """The event fields naming a snapshot's identity (pypaimon ``Snapshot``; None: none)."""
    found = SnapshotIdentity.of(snapshot)
    if found is None:
        return {}
    return {"commit_user": found.commit_user, "commit_identifier": found.commit_identifier,
            "commit_time": found.time_millis}


@dataclass(frozen=True)
class ScanEvent:
    """A Spark read planned its splits on ``snapshot_id`` (``None``: the table was empty)."""

    warehouse: str
    database: str
    table: str
    branch: str
    snapshot_id: int | None
    split_count: int = 0
    app_name: str = ""
    # OpenLineage namespace of the warehouse (PaimonOptions.lineage_namespace)
    namespace: str = ""
    # the scanned snapshot's identity (paimon.snapshot_identity); empty/None: unknown
    commit_user: str = ""
    commit_identifier: int | None = None
    commit_time: int | None = None
    kind: str = field(default="scan", init=False)
    time_millis: int = field(default_factory=lambda: int(time.time() * 1000))


Event = CommitEvent | ScanEvent
Listener = Callable[[Event], None]
E = TypeVar("E", CommitEvent, ScanEvent)

_lock = threading.Lock()
_listeners: list[Listener] = []


def add_listener(listener: Listener) -> Listener:
    """Call ``listener(event)`` for every event published in this process; returns it."""
    with _lock:
        if listener not in _listeners:
            _listeners.append(listener)
    return listener


def remove_listener(listener: Listener) -> None:
    """Stop calling ``listener``; unknown listeners are ignored."""
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def publish(event: Event, listener_specs: Iterable[str] = (), event_log: str | None = None) -> None:
    """Deliver ``event`` to in-process listeners, named listeners and the event log."""
    with _lock:
        callbacks = list(_listeners)
    specs = list(listener_specs) + [s for s in os.environ.get(LISTENERS_ENV, "").split(",") if s.strip()]
    for spec in specs:
        try:
            callbacks.append(_import_listener(spec.strip()))
        except Exception:  # a bad listener must not fail the job
            log.exception("cannot import event listener %r", spec)
    for callback in callbacks:
        try:
            callback(event)
        except Exception:
            log.exception("event listener %r failed on %r", callback, event)
    path = event_log or os.environ.get(EVENT_LOG_ENV)
    if path:
        try:
            append_event_log(path, event)
        except OSError:
            log.exception("cannot append to event log %s", path)


def publish_for(opts: PaimonOptions, event_type: type[E], **fields: Any) -> E:
    """Build an ``event_type`` event on the table ``opts`` names and publish it.

    The table is the options' own: warehouse, OpenLineage namespace, database, table
    and branch; ``fields`` are the rest (snapshot, counts, ...). It goes to the
    options' ``event-listeners`` and ``event-log``; returns the event.
    """
    event = event_type(
        warehouse=opts.warehouse,
        namespace=opts.lineage_namespace,
        database=opts.database,
        table=opts.table_name,
        branch=opts.branch_name,
        **fields,
    )
    # the option, else the session's capture (its routing, carried by the registered class)
    publish(event, opts.event_listeners, opts.event_log or opts.capture_routing.get(EVENT_LOG_ENV))
    return event


def _import_listener(spec: str) -> Listener:
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"event listener {spec!r} must be 'package.module:function'")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def to_dict(event: Event) -> dict[str, Any]:
    return dataclasses.asdict(event)


def from_dict(data: dict[str, Any]) -> Event:
    data = dict(data)
    kind = data.pop("kind", "commit")
    cls = CommitEvent if kind == "commit" else ScanEvent
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    event = cls(**{k: v for k, v in data.items() if k in names})
    if "time_millis" in data:
        object.__setattr__(event, "time_millis", data["time_millis"])
    return event


def append_event_log(path: str, event: Event) -> None:
    """Append ``event`` as one JSON line, under an exclusive lock (safe across processes)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    line = json.dumps(to_dict(event), sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            fh.write(line)
            fh.flush()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_event_log(path: str) -> list[Event]:
    """Events appended to ``path`` so far, oldest first (``[]`` if it does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [from_dict(json.loads(line)) for line in fh if line.strip()]
