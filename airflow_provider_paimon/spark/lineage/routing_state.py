"""What a classic session's lineage capture tells the data source's workers.

A capture points the ``paimon`` source's workers at its event log, at what it records
(the session descriptor, ``direct.SESSION_ENV``) and, with ``onStoreFailure=fail``, at
its store check file (``guard.PRECOMMIT_ENV``). These travel inside the class the
session registers (``PaimonDataSource.capture_routing``, pickled into every worker),
keyed by the same names the variables have.

Why not the workers' environment (``sc.environment``), as before: Spark keeps one
Python worker daemon per (python, worker module, environment). A per-run event log in
the environment made each capture start a new daemon for every kind of work (planning,
writes, commits, streaming), ~60 MB each plus their workers, and none of them ever
stopped: a long-lived session that captured again and again (a pooled session, the test
suite's) grew by ~950 MB and five daemons per capture. The class attribute changes no
environment, so every capture reuses the session's daemons.

The registry lives here, apart from the capture (``worker_routing``) and the
registration that reads it, so neither imports the other back. It is keyed by the
session's SparkContext object itself (weakly), so a routing dies with its context and
never reaches a later context that happens to get the same id.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from ..session_info import classic_context, is_connect, worker_environment

__all__ = ["capture_routing", "clear_route", "routed_environment", "set_route", "worker_view"]

_routes: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _context(spark: Any) -> Any | None:
    """The classic session's SparkContext (None on Connect: nothing is routed there)."""
    return None if is_connect(spark) else classic_context(spark)


def set_route(spark: Any, routing: Mapping[str, str]) -> dict[str, str] | None:
    """Make ``routing`` the session's; returns the one it replaces (None: none)."""
    key = _context(spark)
    if key is None:
        raise ValueError("a Spark Connect session's workers are not routed (connect_capture)")
    with _lock:
        previous = _routes.get(key)
        _routes[key] = dict(routing)
        return previous


def clear_route(spark: Any, routing: Mapping[str, str], previous: Mapping[str, str] | None) -> bool:
    """Put ``previous`` back if ``routing`` is still the session's; True when it was.

    A capture started inside another one and closed first gives the outer one its
    workers back; one closed after a newer capture took over leaves the newer one alone.
    """
    key = _context(spark)
    with _lock:
        if key is None or _routes.get(key) != dict(routing):
            return False
        if previous is None:
            _routes.pop(key, None)
        else:
            _routes[key] = dict(previous)
        return True


def capture_routing(spark: Any) -> dict[str, str]:
    """The session's capture routing ({}: no capture routes its workers)."""
    key = _context(spark)
    if key is None:
        return {}
    with _lock:
        return dict(_routes.get(key, {}))


def worker_view(routing: Mapping[str, str] | None) -> Mapping[str, str]:
    """What a data source worker goes by: its own environment with the routing its
    options carry (``PaimonOptions.capture_routing``) on top. The environment still
    counts, so a variable a user set there (``PAIMON_SPARK_EVENT_LOG``) keeps working."""
    return {**os.environ, **routing} if routing else os.environ


def routed_environment(spark: Any) -> dict[str, str]:
    """What a worker of ``spark`` sees: its environment with the capture's routing on top.

    For code that runs the data source's steps in the driver itself (the native
    helpers' reads and commits, ``foreach_batch``), which must route exactly as a worker.
    """
    return {**worker_environment(spark), **capture_routing(spark)}
