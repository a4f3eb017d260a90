"""Pointing the data source's Python workers at one capture.

The workers learn the capture's event log, what it records and its store check file
from the class the session registers (``routing_state``): routing sets the session's
routing and registers the source again; unrouting puts back what was there before and
registers it once more. The session's worker environment is never changed (a new one
would start a new set of Python worker daemons per capture).
"""

from __future__ import annotations

import logging
from typing import Any

from airflow_provider_paimon.lineage.url import default_url

from .. import commit_events
from ..registration import register_data_source
from .config import CaptureConfig
from .direct import SESSION_ENV, session_descriptor
from .guard import PRECOMMIT_ENV, remove_check_file, write_check_file
from .routing_state import clear_route, set_route

log = logging.getLogger(__name__)


class WorkerRouting:
    """What one capture tells the session's workers, and its undoing."""

    def __init__(self, spark: Any, config: CaptureConfig, event_log: str, check_file: str | None) -> None:
        self.spark = spark
        self.config = config
        self.event_log = event_log
        self.check_file = check_file
        self._routed: dict[str, str] | None = None  # what route() set, as unroute() finds it
        self._previous: dict[str, str] | None = None

    def worker_env(self) -> dict[str, str]:
        """What the data source's workers get: the event log, the store check, keyed by
        the names of the variables that can also give them (``commit_events``, ``guard``)."""
        # what this capture records, so a read/write whose options say otherwise fails
        env = {commit_events.EVENT_LOG_ENV: self.event_log, SESSION_ENV: session_descriptor(self.config)}
        if self.check_file is not None:
            env[PRECOMMIT_ENV] = self.check_file
        return env

    def route(self) -> None:
        if self.check_file is not None:
            url = self.config.url or default_url()  # as the recorder resolved it, here
            write_check_file(self.check_file, url, self.config.database, self.config.job)
        self._routed = self.worker_env()
        self._previous = set_route(self.spark, self._routed)
        register_data_source(self.spark)  # the workers see the routing in the class

    def unroute(self) -> None:
        if self.check_file is not None:
            remove_check_file(self.check_file)
        if self._routed is None:
            return
        try:
            if clear_route(self.spark, self._routed, self._previous):
                register_data_source(self.spark)
        except Exception:  # noqa: BLE001 - the session may be stopped already
            pass
