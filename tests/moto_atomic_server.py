"""moto's S3 server with conditional writes made atomic, as they are on S3.

moto checks ``If-None-Match: *`` / ``If-Match`` and then stores the object in two steps
while its threaded server handles requests in parallel, so two racing conditional PUTs
of one key can both succeed (seen: two winners of a racing tag creation). S3 decides a
conditional write atomically against every other writer, and the provider's commits rely
on it. Here every request carrying a condition runs under one lock, so the server keeps
S3's guarantee; other requests stay parallel.

Run as ``python moto_atomic_server.py HOST PORT`` (``s3support.start_loopback_s3`` does).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

_CONDITIONS = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


class SerializeConditionalWrites:
    """WSGI middleware: one conditional write at a time; everything else passes through."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        conditional = environ.get("REQUEST_METHOD") in ("PUT", "POST") and any(
            environ.get(h) for h in _CONDITIONS
        )
        if not conditional:
            return self._app(environ, start_response)
        with self._lock:
            # the body is produced inside the lock, so the check and the store are one step
            return list(self._app(environ, start_response))


def main(host: str, port: int) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    os.environ.setdefault("MOTO_PORT", str(port))  # as moto.server does: links it builds
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerializeConditionalWrites(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
