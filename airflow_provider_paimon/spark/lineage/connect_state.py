"""Which Spark Connect sessions capture lineage, and the options their source records with.

``connect_capture`` starts and stops a Connect session's capture (and re-registers the
``paimon`` source each time); the source's registration and the branch redirects only
read the running capture's options (``lineage_defaults``). The registry lives here, apart
from the code that registers the source, so those readers do not import it back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ..session_info import session_key

T = TypeVar("T")

_captures: dict[Hashable, Any] = {}
_lock = threading.Lock()


def get_or_add(spark: Any, make: Callable[[], T]) -> tuple[T, bool]:
    """The session's open capture, or ``make()``'s, kept; True when it is new."""
    key = session_key(spark)
    with _lock:
        existing = _captures.get(key)
        if existing is not None and not existing.closed:
            return existing, False
        capture = make()
        _captures[key] = capture
        return capture, True


def remove(spark: Any, capture: Any) -> None:
    """Forget ``capture`` if it is still the session's."""
    key = session_key(spark)
    with _lock:
        if _captures.get(key) is capture:
            _captures.pop(key, None)


def running(spark: Any) -> Any | None:
    """The session's open capture (with or without a store), else None."""
    capture = _captures.get(session_key(spark))
    return None if capture is None or capture.closed else capture


def drop_capture(spark: Any) -> None:
    """Drop the session's capture from this process (its job ended; the server session
    serves the next job, which starts its own capture or none: ``connect_pool``)."""
    with _lock:
        capture = _captures.pop(session_key(spark), None)
    if capture is not None:
        capture.closed = True
        capture.stop_events()  # its client-side query listener goes with it


def active(spark: Any) -> Any | None:
    """The session's open capture that records to a store, else None."""
    capture = _captures.get(session_key(spark))
    return None if capture is None or capture.closed or not capture.config.store else capture


def openlineage_settings(spark: Any) -> dict[str, Any]:
    """What the session's ``paimon`` source sends OpenLineage events with ({}: none)."""
    capture = running(spark)
    return dict(capture.openlineage) if capture is not None else {}


def lineage_defaults(spark: Any) -> dict[str, str]:
    """The options the session's ``paimon`` source records lineage with ({} without capture)."""
    capture = active(spark)
    return capture.options() if capture is not None else {}
