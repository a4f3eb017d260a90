"""``onStoreFailure=fail`` before the commit: no data is committed whose lineage cannot be recorded.

Lineage is recorded after Paimon accepted a commit (``recorder``), so on its
own the ``fail`` policy can only stop a job *after* a batch whose lineage was lost.
This guard closes that gap: just before a sink commits (micro-batch ``B`` of a
streaming query, or a batch write), it checks that the lineage store answers (connect
and ``SELECT 1``, a few seconds at most) and raises ``LineageStoreUnreachableError``
otherwise. The sink then commits nothing and deletes the files it wrote; Spark fails
the query, and restarting it once the store is back commits ``B`` exactly once (the
sink's replay protocol, docs/streaming.md).

Sinks commit in a Python worker process that Spark starts on the driver host, which
knows neither the Spark conf nor the capture. The capture (policy ``fail`` only)
writes the store's address to a small file readable by its owner only (the URL may
hold a password, which must not travel in the environment to every executor) in the
job's spool folder, and names that file under ``PAIMON_LINEAGE_PRECOMMIT_CHECK`` in
its routing, given to the workers inside the registered class exactly like the event
log (``routing_state``). No file named (``buffer``, or no capture): no check, nothing
changes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.lineage.url import backend_of, default_url, parse_url, scrub
from airflow_provider_paimon.paimon.secrets import mask_url

from .recorder import LineageCaptureError
from .routing_state import worker_view

log = logging.getLogger(__name__)

PRECOMMIT_ENV = "PAIMON_LINEAGE_PRECOMMIT_CHECK"
CONNECT_TIMEOUT_S = 3
IO_TIMEOUT_S = 5

_engines: dict[tuple[str, str], Any] = {}
_engines_lock = threading.Lock()


class LineageStoreUnreachableError(LineageCaptureError):
    """The lineage store did not answer before a commit and the policy is ``fail``."""


def write_check_file(path: str, url: str | None, database: str, job: str) -> str:
    """Write the store's address for the sinks' pre-commit check to ``path``; returns it.

    Created with mode 0600 (the URL may carry a password) and replaced atomically.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": url, "database": database, "job": job, "policy": "fail"}, fh)
    os.replace(tmp, path)
    return path


def remove_check_file(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def check_before_commit(what: str, routing: Mapping[str, str] | None = None) -> None:
    """Raise ``LineageStoreUnreachableError`` if the capture's store is down (policy ``fail``).

    ``what`` names the commit for the message (e.g. ``"micro-batch 3 of db.dst"``);
    ``routing`` is what the options carry from the session's capture
    (``PaimonOptions.capture_routing``). A no-op unless the capture asked for the check
    (``PAIMON_LINEAGE_PRECOMMIT_CHECK`` there, or in this process's environment).
    """
    path = worker_view(routing).get(PRECOMMIT_ENV, "").strip()
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as fh:
            target = json.load(fh)
    except FileNotFoundError:
        # The capture has closed (it removes the file): nothing records lineage now.
        log.warning("lineage pre-commit check: %s is gone (capture closed); not checking", path)
        return
    except (OSError, ValueError) as err:
        raise LineageStoreUnreachableError(
            f"lineage pre-commit check file {path} is unreadable ({type(err).__name__}); "
            f"onStoreFailure=fail: {what} was not committed"
        ) from None
    url, database = target.get("url"), str(target.get("database") or "paimon")
    require_store(url, database, target.get("job"), what)


def require_store(url: str | None, database: str, job: Any, what: str) -> None:
    """Raise ``LineageStoreUnreachableError`` unless the store at ``url`` answers."""
    error = ping_store(url, database)
    if error is None:
        return

    raise LineageStoreUnreachableError(
        f"lineage store {mask_url(url or default_url())} of job {job!r} is not "
        f"reachable ({error}); spark.paimon.lineage.onStoreFailure=fail: {what} was NOT "
        "committed and its files were deleted, so no data exists whose lineage is missing. "
        "Once the store is back, restart the query (it commits this batch exactly once) "
        "or re-run the write; or use onStoreFailure=buffer to record lineage later"
    )


def ping_store(url: str | None, database: str) -> str | None:
    """None when the store answers ``SELECT 1`` within seconds, else the (masked) reason."""
    import sqlalchemy as sa

    from airflow_provider_paimon.lineage.retry import RetryPolicy, with_retry

    try:
        parsed = parse_url(url)
        if backend_of(parsed) == "sqlite":
            path = parsed.database or ""
            if path not in ("", ":memory:") and not os.path.exists(os.path.expanduser(path)):
                # The capture created the file when it started; connecting would create an
                # empty one (or fail on a missing folder): either way the store is gone.
                return f"SQLite file {path} does not exist"
        engine = _engine(parsed, database)

        def ping() -> None:
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))

        with_retry(
            ping, RetryPolicy(attempts=2, base_delay=0.05, max_delay=0.2), "lineage store ping"
        )
        return None
    except Exception as err:  # noqa: BLE001 - any failure means: not reachable
        _drop_engine(database)
        detail = getattr(err, "orig", None) or err
        text = f"{type(detail).__name__}: {detail}".strip().splitlines()[0]
        return scrub(text, url) if url else text


def _engine(parsed: Any, database: str) -> Any:
    from airflow_provider_paimon.lineage.engine import create_store_engine

    key = (parsed.render_as_string(hide_password=False), database)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            backend = backend_of(parsed)
            connect_args: dict[str, Any] = {}
            if backend == "mysql":
                connect_args = {
                    "connect_timeout": CONNECT_TIMEOUT_S,
                    "read_timeout": IO_TIMEOUT_S,
                    "write_timeout": IO_TIMEOUT_S,
                }
            elif backend == "postgresql":
                connect_args = {"connect_timeout": CONNECT_TIMEOUT_S}
            options: dict[str, Any] = {"connect_args": connect_args} if connect_args else {}
            if backend != "sqlite":
                options.update(pool_size=1, max_overflow=1)
            engine = create_store_engine(parsed, database, options)
            _engines[key] = engine
        return engine


def _drop_engine(database: str) -> None:
    """Forget the cached engine after a failure: the next check connects afresh."""
    with _engines_lock:
        for key in [k for k in _engines if k[1] == database]:
            with contextlib.suppress(Exception):
                _engines.pop(key).dispose()
