"""Pointing the data source's Python workers at one capture.

Spark passes environment to Python data source workers through ``sc.environment`` as
it was when the data source was registered, so routing sets the variables (the event
log, what this capture records, the pre-commit check file) and registers the source
again; unrouting restores what was there before and registers it once more.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import commit_events
from ..session_info import classic_context
from .config import CaptureConfig
from .direct import SESSION_ENV, session_descriptor
from .guard import PRECOMMIT_ENV, remove_check_file, write_check_file

log = logging.getLogger(__name__)


class WorkerRouting:
    """The worker variables one capture sets on a session, and their undoing."""

    def __init__(self, spark: Any, config: CaptureConfig, event_log: str, check_file: str | None) -> None:
        self.spark = spark
        self.config = config
        self.event_log = event_log
        self.check_file = check_file
        self._previous_env: dict[str, str | None] = {}

    def worker_env(self) -> dict[str, str]:
        """What the data source's Python workers get: the event log, the store check."""
        # what this capture records, so a read/write whose options say otherwise fails
        env = {commit_events.EVENT_LOG_ENV: self.event_log, SESSION_ENV: session_descriptor(self.config)}
        if self.check_file is not None:
            env[PRECOMMIT_ENV] = self.check_file
        return env

    def route(self) -> None:
        if self.check_file is not None:
            from airflow_provider_paimon.lineage.url import default_url

            url = self.config.url or default_url()  # as the recorder resolved it, here
            write_check_file(self.check_file, url, self.config.database, self.config.job)
        env = classic_context(self.spark).environment
        for key, value in self.worker_env().items():
            self._previous_env[key] = env.get(key)
            env[key] = value
        self._reregister()

    def unroute(self) -> None:
        if self.check_file is not None:
            remove_check_file(self.check_file)
        try:
            env = classic_context(self.spark).environment
            changed = False
            for key, value in self.worker_env().items():
                if env.get(key) != value:
                    continue
                previous = self._previous_env.get(key)
                if previous is None:
                    env.pop(key, None)
                else:
                    env[key] = previous
                changed = True
            if changed:
                self._reregister()
        except Exception:  # noqa: BLE001 - the session may be stopped already
            pass

    def _reregister(self) -> None:
        # The data source's Python function carries sc.environment as it was when it was
        # registered; registering again is what makes the workers see the variable.
        # (with the session's branch redirects, as ``register(spark)`` does)
        from ..registration import register_data_source

        register_data_source(self.spark)
