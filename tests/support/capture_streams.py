"""Logging handlers left on pytest's captured streams are taken off when pytest ends.

Code run in the test process may put a ``logging.StreamHandler`` on ``sys.stderr`` while
pytest captures it (Airflow's logging setup, a job's ``logging.basicConfig``): the
handler keeps pytest's capture file, which pytest closes as it ends. Objects destroyed
at interpreter exit still log (py4j's connections say "Closing down clientserver
connection"), and every such record printed a "--- Logging error ---" traceback at the
end of the run. Loaded by tests/conftest.py as a plugin.
"""

from __future__ import annotations

import logging

import pytest


def _on_capture(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    return type(stream).__module__.split(".")[0] == "_pytest"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    loggers = [logging.getLogger()] + [
        logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    for logger in loggers:
        for handler in [h for h in logger.handlers if _on_capture(h)]:
            logger.removeHandler(handler)
