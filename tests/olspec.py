"""Test helpers for OpenLineage: spec validation and a Marquez-like HTTP receiver.

Reusable by any test (streaming capture, batch jobs, Airflow operators)::

    from olspec import LineageReceiver, validate_event

    with LineageReceiver() as receiver:
        ... run something configured with receiver.url ...
        for event in receiver.wait_for(3):
            validate_event(event)

``validate_event`` checks an event against the official OpenLineage JSON Schemas in
``../shared/openlineage-spec/`` (override with ``PAIMON_OPENLINEAGE_SPEC_DIR``) and
each facet against its own schema, our ``PaimonBatchRunFacet`` against the schema
file shipped in the package. Everything is resolved locally: no network.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FACETS_DIR = REPO_ROOT / "airflow_provider_paimon" / "lineage" / "facets"

__all__ = [
    "LineageReceiver",
    "ReceivedRequest",
    "spec_dir",
    "validate_event",
    "validate_facet",
]


def spec_dir() -> Path:
    """Folder holding ``OpenLineage.json`` and ``facets/`` (the shared spec copy)."""
    override = os.environ.get("PAIMON_OPENLINEAGE_SPEC_DIR")
    candidates = [Path(override)] if override else []
    candidates += [
        REPO_ROOT.parent / "shared" / "openlineage-spec",
        REPO_ROOT / "shared" / "openlineage-spec",
    ]
    for candidate in candidates:
        if (candidate / "OpenLineage.json").is_file():
            return candidate
    raise FileNotFoundError(
        "OpenLineage spec not found; looked in "
        + ", ".join(str(c) for c in candidates)
        + " (set PAIMON_OPENLINEAGE_SPEC_DIR)"
    )


@lru_cache(maxsize=1)
def _schemas() -> dict[str, dict[str, Any]]:
    """Every local schema document, keyed by its ``$id``."""
    root = spec_dir()
    files = [root / "OpenLineage.json", *sorted((root / "facets").glob("*.json"))]
    files += sorted(PACKAGE_FACETS_DIR.glob("*.json"))
    documents: dict[str, dict[str, Any]] = {}
    for path in files:
        document = json.loads(path.read_text(encoding="utf-8"))
        documents[document["$id"]] = document
    return documents


@lru_cache(maxsize=1)
def _registry() -> Registry:
    return Registry().with_resources(
        (schema_id, Resource.from_contents(doc, default_specification=DRAFT202012))
        for schema_id, doc in _schemas().items()
    )


def _format_checker() -> jsonschema.FormatChecker:
    """jsonschema's checker, plus date-time and uri (which it only checks with extras)."""
    checker = jsonschema.FormatChecker()

    @checker.checks("date-time", raises=ValueError)
    def _date_time(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if "t" not in value.lower():
            raise ValueError("date-time needs a time part")
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            raise ValueError("date-time needs a time zone offset")
        return True

    @checker.checks("uri", raises=ValueError)
    def _uri(value: object) -> bool:
        if not isinstance(value, str):
            return True
        parts = urlsplit(value)
        if not parts.scheme or " " in value:
            raise ValueError(f"not an absolute URI: {value!r}")
        return True

    return checker


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        schema, registry=_registry(), format_checker=_format_checker()
    )


def _as_dict(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return event
    if isinstance(event, (str, bytes)):
        return json.loads(event)
    from openlineage.client.serde import Serde

    return json.loads(Serde.to_json(event))


def validate_facet(key: str, facet: dict[str, Any], *, allow_unknown: bool = False) -> None:
    """Validate one facet against the schema its ``_schemaURL`` names (held locally).

    Also checks the facet sits under the key its schema document declares (e.g. the
    ``SchemaDatasetFacet`` under ``schema``), which catches a mis-keyed facet that the
    event schema alone would accept.
    """
    url = facet.get("_schemaURL")
    if not isinstance(url, str) or "#" not in url:
        raise AssertionError(f"facet {key!r} has no _schemaURL with a JSON pointer: {url!r}")
    document_id, _, pointer = url.partition("#")
    document = _schemas().get(document_id)
    if document is None:
        if allow_unknown:
            return
        known = sorted(d.rsplit("/", 2)[-2] + "/" + d.rsplit("/", 1)[-1] for d in _schemas())
        raise AssertionError(
            f"facet {key!r} points to {document_id}, which is not among the local schemas "
            f"(version mismatch or unknown facet); known: {known}"
        )
    declared = set((document.get("properties") or {}).keys())
    if declared and key not in declared:
        raise AssertionError(
            f"facet stored under {key!r} but its schema {document_id} declares {sorted(declared)}"
        )
    errors = sorted(
        _validator({"$ref": f"{document_id}#{pointer}"}).iter_errors(facet), key=str
    )
    if errors:
        raise jsonschema.ValidationError(
            f"facet {key!r} does not match {url}: {errors[0].message} at "
            f"{list(errors[0].absolute_path)}"
        )


def _facet_groups(event: dict[str, Any]):
    yield "run.facets", (event.get("run") or {}).get("facets")
    yield "job.facets", (event.get("job") or {}).get("facets")
    for side in ("inputs", "outputs"):
        for index, dataset in enumerate(event.get(side) or []):
            yield f"{side}[{index}].facets", dataset.get("facets")
            extra = "inputFacets" if side == "inputs" else "outputFacets"
            yield f"{side}[{index}].{extra}", dataset.get(extra)
    if "dataset" in event:
        yield "dataset.facets", event["dataset"].get("facets")


def validate_event(event: Any, *, allow_unknown_facets: bool = False) -> dict[str, Any]:
    """Validate an event (dict, JSON text or openlineage-python object); return it as a dict.

    Raises ``jsonschema.ValidationError`` (or ``AssertionError`` for an unknown or
    mis-keyed facet) with the first problem found.
    """
    data = _as_dict(event)
    spec_id = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
    kind = "RunEvent" if "run" in data else "DatasetEvent" if "dataset" in data else "JobEvent"
    # The specific definition first (a readable message), then the whole oneOf.
    for schema in ({"$ref": f"{spec_id}#/$defs/{kind}"}, _schemas()[spec_id]):
        errors = list(_validator(schema).iter_errors(data))
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            raise jsonschema.ValidationError(
                f"event does not match OpenLineage.json ({kind}): {best.message} "
                f"at {list(best.absolute_path)}"
            )
    for where, facets in _facet_groups(data):
        for key, facet in (facets or {}).items():
            try:
                validate_facet(key, facet, allow_unknown=allow_unknown_facets)
            except (AssertionError, jsonschema.ValidationError) as err:
                raise type(err)(f"{where}: {err}") from None
    return data


# -- a Marquez-like receiver ----------------------------------------------------------


@dataclass
class ReceivedRequest:
    """One request the receiver got (accepted or not)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    event: dict[str, Any] | None


class LineageReceiver:
    """A threaded HTTP server on 127.0.0.1 speaking Marquez's ``POST /api/v1/lineage``.

    Accepted events (status ``status``, 201 by default like Marquez) are recorded in
    order in :attr:`events`; every request, accepted or not, in :attr:`requests`.
    ``api_key``: requests without ``Authorization: Bearer <api_key>`` get 401.
    ``delay``: seconds to wait before answering (a slow receiver). Gzip bodies are
    decoded. ``status`` can be changed while running (e.g. 503 to simulate an outage).
    """

    LINEAGE_PATH = "/api/v1/lineage"

    def __init__(self, *, status: int = 201, api_key: str | None = None, delay: float = 0.0):
        self.status = status
        self.api_key = api_key
        self.delay = delay
        self._lock = threading.Condition()
        self._requests: list[ReceivedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> LineageReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # http.server API
                receiver._handle(self)

            def do_GET(self) -> None:
                self._reply(404 if self.path != "/healthcheck" else 200)

            def _reply(self, status: int, body: bytes = b"") -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                if body:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                if body:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean; requests are recorded instead

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="lineage-receiver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> LineageReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # what tests read
    @property
    def port(self) -> int:
        assert self._server is not None, "receiver not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Events accepted (2xx), in arrival order."""
        with self._lock:
            return [r.event for r in self._requests if r.event is not None and r.status < 300]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until at least ``count`` events were accepted; return them."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                accepted = [
                    r.event for r in self._requests if r.event is not None and r.status < 300
                ]
                if len(accepted) >= count:
                    return accepted
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"receiver got {len(accepted)} event(s), expected {count} "
                        f"({len(self._requests)} request(s) in all)"
                    )
                self._lock.wait(remaining)

    # request handling
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items()}
        body = raw
        if handler.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(raw)
        status, event = self.status, None
        if handler.path.split("?")[0].rstrip("/") != self.LINEAGE_PATH:
            status = 404
        elif self.api_key is not None and handler.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            status = 401
        else:
            try:
                event = json.loads(body)
            except ValueError:
                status = 400
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            self._requests.append(
                ReceivedRequest("POST", handler.path, headers, body, status, event)
            )
            self._lock.notify_all()
        handler._reply(status)  # type: ignore[attr-defined]
