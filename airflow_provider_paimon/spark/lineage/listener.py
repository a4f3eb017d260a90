"""The ``StreamingQueryListener`` that hands a session's query events to its capture.

Lineage must never break Spark's listener bus: every handler's failure is logged and
swallowed here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)


class QueryEvents(Protocol):
    def on_query_started(self, event: Any) -> None: ...
    def on_query_progress(self, progress: Any) -> None: ...
    def on_query_terminated(self, event: Any) -> None: ...


def _guarded(fn: Callable[[Any], None], arg: Any) -> None:
    try:
        fn(arg)
    except Exception:  # lineage must never break Spark's listener bus
        log.exception("lineage capture failed in %s", getattr(fn, "__name__", fn))


def query_listener(target: QueryEvents) -> Any:
    """A listener (pyspark's class, imported here: only streaming captures need it)."""
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:  # noqa: N802
            _guarded(target.on_query_started, event)

        def onQueryProgress(self, event: Any) -> None:  # noqa: N802
            _guarded(target.on_query_progress, event.progress)

        def onQueryIdle(self, event: Any) -> None:  # noqa: N802
            pass

        def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
            _guarded(target.on_query_terminated, event)

    return _Listener()
