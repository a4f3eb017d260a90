"""Send OpenLineage events without ever getting in the way of the data.

:class:`PaimonLineageEmitter` wraps openlineage-python's ``OpenLineageClient``. Lineage
is a side channel, so the emitter:

- is off unless configured (see :mod:`.config`), and then costs nothing;
- never raises from :meth:`~PaimonLineageEmitter.emit`: a failure is counted and
  logged as a warning (rate-limited), the caller's micro-batch goes on;
- by default sends from one background thread through a bounded queue, so a slow or
  unreachable receiver cannot stall a batch (events keep their order; when the queue
  is full new events are dropped and counted); :meth:`flush` / :meth:`close` wait a
  bounded time, and interpreter exit flushes what is left for up to two seconds;
- uses a short HTTP timeout and few retries for transports it configures itself;
- never logs an API key: messages are scrubbed and ``repr`` shows only the
  transport type and destination.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from openlineage.client import OpenLineageClient
from openlineage.client.transport import get_default_factory

from airflow_provider_paimon.paimon.secrets import (
    register_secret_values,
    scrub,
    scrub_loggers,
    secret_values,
)

from .config import EmitterSettings, describe_transport, resolve_settings
from .events import PaimonJobRun

__all__ = ["PaimonLineageEmitter"]

log = logging.getLogger(__name__)

#: openlineage-python's loggers that show a transport's config (URL, headers, API key
#: holder) or its errors; their records are scrubbed at the source
OPENLINEAGE_LOGGERS = (
    "openlineage.client.client",
    "openlineage.client.transport.http",
    "openlineage.client.transport.async_http",
    "openlineage.client.transport.composite",
    "openlineage.client.transport.factory",
    "openlineage.client.transport.transport",
)

_STOP = object()
_WARN_EVERY = 50
_EXIT_FLUSH_SECONDS = 2.0
_live_emitters: weakref.WeakSet[PaimonLineageEmitter] = weakref.WeakSet()


class PaimonLineageEmitter:
    """Emits OpenLineage events for Paimon jobs; safe to call from the data path.

    Build it with :meth:`from_conf` (a dict of Spark conf keys, plus the environment),
    or pass an ``OpenLineageClient`` directly (``client=None`` means disabled).
    """

    def __init__(
        self,
        client: OpenLineageClient | None = None,
        *,
        job_namespace: str = "default",
        asynchronous: bool = True,
        queue_size: int = 1000,
        secrets: Iterable[str] = (),
        description: str | None = None,
    ) -> None:
        self._client = client
        self.job_namespace = job_namespace or "default"
        self.asynchronous = asynchronous
        # longest first, so a secret that contains another is masked whole
        known = {s for s in [*secrets, *_client_secrets(client)] if s}
        self._secrets = sorted(known, key=len, reverse=True)
        register_secret_values(self._secrets)  # e.g. an API key from openlineage.yml
        self._description = description or ("disabled" if client is None else _kind(client))
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_size))
        self._worker: threading.Thread | None = None
        self._closed = False
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self.last_error: str | None = None
        if client is not None:
            _live_emitters.add(self)

    # -- construction ----------------------------------------------------------------

    @classmethod
    def from_conf(
        cls,
        conf: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        strict: bool = False,
    ) -> PaimonLineageEmitter:
        """An emitter configured from our conf keys, Airflow-injected keys or openlineage's.

        A configuration error disables lineage with a warning (the job itself runs on),
        or raises ``ValueError`` when ``strict``.
        """
        try:
            settings = resolve_settings(conf, environ)
        except ValueError as err:
            if strict:
                raise
            log.warning("OpenLineage is off: invalid configuration (%s)", err)
            return cls(None)
        if not settings.enabled:
            return cls(None, job_namespace=settings.job_namespace)
        secrets = _config_secrets(settings.transport) + _env_secrets(environ)
        try:
            client = _make_client(settings)
        except Exception as err:  # noqa: BLE001 - bad transport config must not kill the job
            message = _scrub(f"{type(err).__name__}: {err}", secrets)
            if strict:
                raise ValueError(f"OpenLineage transport could not be created: {message}") from None
            log.warning("OpenLineage is off: transport could not be created (%s)", message)
            return cls(None, job_namespace=settings.job_namespace)
        emitter = cls(
            client,
            job_namespace=settings.job_namespace,
            asynchronous=settings.asynchronous,
            secrets=secrets,
            description=describe_transport(settings.transport) if settings.transport else None,
        )
        log.info("OpenLineage events for Paimon jobs go to %s", emitter._description)
        return emitter

    # -- state -----------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self._client is not None and not self._closed

    def __repr__(self) -> str:
        return (
            f"PaimonLineageEmitter(enabled={self.enabled}, transport={self._description!r}, "
            f"job_namespace={self.job_namespace!r}, asynchronous={self.asynchronous}, "
            f"sent={self.sent}, failed={self.failed}, dropped={self.dropped})"
        )

    def new_run(
        self,
        job_name: str,
        *,
        streaming: bool,
        parent_conf: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        engine_version: str | None = None,
        run_properties: Mapping[str, str] | None = None,
    ) -> PaimonJobRun:
        """A :class:`PaimonJobRun` in this emitter's job namespace."""
        return PaimonJobRun(
            job_name,
            job_namespace=self.job_namespace,
            streaming=streaming,
            parent_conf=parent_conf,
            run_id=run_id,
            engine_version=engine_version,
            run_properties=run_properties,
        )

    # -- emitting --------------------------------------------------------------------

    def emit(self, event: Any) -> bool:
        """Send (or queue) ``event``. Never raises; False if it was not taken."""
        if not self.enabled:
            return False
        try:
            if not self.asynchronous:
                return self._send(event)
            self._ensure_worker()
            self._queue.put_nowait(event)
            return True
        except queue.Full:
            with self._lock:
                self.dropped += 1
                dropped = self.dropped
            if dropped == 1 or dropped % _WARN_EVERY == 0:
                log.warning(
                    "OpenLineage queue is full (receiver slow or down): %d event(s) dropped so far",
                    dropped,
                )
            return False
        except Exception as err:  # noqa: BLE001 - never into the data path
            self._record_failure(err)
            return False

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` seconds until queued events are sent (or failed)."""
        if self._worker is None:
            return True
        deadline = time.monotonic() + max(0.0, timeout)
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float = 5.0) -> bool:
        """Flush for up to ``timeout`` seconds, then stop; later emits are ignored."""
        if self._client is None or self._closed:
            return True
        start = time.monotonic()
        done = self.flush(timeout)
        self._closed = True
        worker = self._worker
        if worker is not None:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(_STOP)
            worker.join(max(0.0, timeout - (time.monotonic() - start)))
        try:
            self._client.close(0)
        except Exception as err:  # noqa: BLE001
            log.debug("closing the OpenLineage transport failed: %s", self._scrub(str(err)))
        _live_emitters.discard(self)
        return done

    def __enter__(self) -> PaimonLineageEmitter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------

    def _ensure_worker(self) -> None:
        if self._worker is not None and self._worker.is_alive():
            return
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._run_worker, name="paimon-openlineage-emitter", daemon=True
                )
                self._worker.start()

    def _run_worker(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is _STOP:
                    return
                self._send(event)
            finally:
                self._queue.task_done()

    def _send(self, event: Any) -> bool:
        try:
            assert self._client is not None
            self._client.emit(event)
        except Exception as err:  # noqa: BLE001 - counted and logged, never raised
            self._record_failure(err)
            return False
        with self._lock:
            self.sent += 1
        return True

    def _record_failure(self, err: BaseException) -> None:
        message = self._scrub(f"{type(err).__name__}: {err}")
        with self._lock:
            self.failed += 1
            failed = self.failed
            self.last_error = message
        level = logging.WARNING if failed == 1 or failed % _WARN_EVERY == 0 else logging.DEBUG
        log.log(
            level,
            "OpenLineage event could not be sent to %s (%d failure(s) so far): %s",
            self._description,
            failed,
            message,
        )

    def _scrub(self, text: str) -> str:
        return _scrub(text, self._secrets)


def _scrub(text: str, secrets: Iterable[str]) -> str:
    return scrub(text, secrets)


def _make_client(settings: EmitterSettings) -> OpenLineageClient:
    scrub_loggers(*OPENLINEAGE_LOGGERS)  # before the transport logs its config
    if settings.transport is None:
        return OpenLineageClient()
    if os.getenv("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return OpenLineageClient()  # openlineage's own kill switch: a no-op transport
    transport = get_default_factory().create(dict(settings.transport))
    return OpenLineageClient(transport=transport)


def _config_secrets(transport: Any) -> list[str]:
    """Secrets in a transport dict, by the package's secret policy (keys and URLs)."""
    return secret_values(transport) if isinstance(transport, Mapping) else []


def _env_secrets(environ: Mapping[str, str] | None) -> list[str]:
    """Secrets in openlineage-python's environment variables (API key, URL password)."""
    env = os.environ if environ is None else environ
    return secret_values({k: v for k, v in env.items() if k.startswith("OPENLINEAGE")})


def _client_secrets(client: OpenLineageClient | None) -> list[str]:
    """API keys held by the client's transport(s), e.g. from openlineage.yml."""
    if client is None:
        return []
    found: list[str] = []
    pending = [getattr(client, "transport", None)]
    while pending:
        transport = pending.pop()
        if transport is None:
            continue
        pending.extend(getattr(transport, "transports", None) or [])
        auth = getattr(getattr(transport, "config", None), "auth", None)
        key = getattr(auth, "api_key", None)
        if key:
            found.append(str(key))
    return found


def _kind(client: OpenLineageClient) -> str:
    return str(getattr(getattr(client, "transport", None), "kind", "unknown"))


@atexit.register
def _flush_at_exit() -> None:
    """Give queued events a short last chance when the driver exits."""
    for emitter in list(_live_emitters):
        with contextlib.suppress(Exception):  # exiting anyway
            emitter.close(_EXIT_FLUSH_SECONDS)
