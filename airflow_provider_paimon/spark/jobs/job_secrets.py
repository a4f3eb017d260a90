"""A job's secrets: known from the start, and scrubbed from everything the job prints.

The operators hand a job its secrets through private channels only (never argv): the
catalog options in ``$PAIMON_CATALOG_OPTIONS_JSON``, the lineage store URL in
``$PAIMON_LINEAGE_URL`` (and ``$PAIMON_LINEAGE_PASSWORD``), OpenLineage's settings in
``OPENLINEAGE_*`` variables, and secret Spark conf (an ``apiKey``, a transport URL with
a password) in a private properties file that spark-submit turns into the driver's
Spark conf. ``register_private_secrets`` registers each of those secrets, by its whole
value, with the secret policy (``paimon/secrets.py``) before the job does anything, so
that a library echoing one (a driver's error, a REST client's retry warning) is masked
whatever punctuation the secret holds.

``scrubbed_output`` then puts ``secrets.ScrubFilter`` on the job's log handlers, which
scrubs every record (message, arguments, exception text, stack), and routes
Python warnings through logging so they are scrubbed too. The result line and the
error a job prints are scrubbed by ``common.print_result``/``print_error``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from ...job_contract import CATALOG_OPTIONS_ENV, LINEAGE_PASSWORD_ENV, LINEAGE_URL_ENV
from ...lineage.url import register_url
from ...paimon import secrets
from ..session_info import spark_conf

#: openlineage-python's own settings (``OPENLINEAGE_URL``, ``OPENLINEAGE_API_KEY``...)
OPENLINEAGE_ENV_PREFIX = "OPENLINEAGE"


def register_private_secrets(environ: Mapping[str, str] | None = None, spark_conf: Mapping[str, Any] | None = None) -> None:
    """Register the secrets that reached this job through its private channels.

    ``spark_conf`` defaults to the driver's Spark conf when one can be read without
    starting a JVM (under spark-submit, or with a session already running).
    """
    env = os.environ if environ is None else environ
    raw = env.get(CATALOG_OPTIONS_ENV)
    if raw:
        with contextlib.suppress(ValueError):  # malformed: the job refuses it with its own message
            doc = json.loads(raw)
            if isinstance(doc, dict):
                secrets.register_secret_options({str(k): v for k, v in doc.items()})
    register_url(env.get(LINEAGE_URL_ENV))
    secrets.register_secret(env.get(LINEAGE_PASSWORD_ENV))
    secrets.register_secret_options({k: v for k, v in env.items() if k.startswith(OPENLINEAGE_ENV_PREFIX)})
    conf = _driver_conf(env) if spark_conf is None else spark_conf
    secrets.register_secret_options(dict(conf))


def _driver_conf(env: Mapping[str, str]) -> dict[str, str]:
    """The driver's Spark conf (where the private properties file's entries land), read
    only when a JVM already runs: under spark-submit (``PYSPARK_GATEWAY_PORT``) or in a
    process with an active SparkSession. A metadata-only job run as a plain Python
    process starts no JVM for this."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pyspark is a dependency of the spark layer
        return {}
    active = SparkSession.getActiveSession()
    if active is not None:
        return spark_conf(active)
    if not env.get("PYSPARK_GATEWAY_PORT"):
        return {}
    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, starts nothing
    return dict(SparkConf().getAll())


@contextlib.contextmanager
def scrubbed_output() -> Iterator[None]:
    """Scrub every log record of the job (all handlers of all loggers) and its warnings
    while the block runs; the filters come off afterwards (a job run in a test process
    leaves that process's logging as it was)."""
    scrubber = secrets.ScrubFilter()
    handlers = set(logging.getLogger().handlers)
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            handlers.update(logger.handlers)
    added = [h for h in handlers if scrubber not in h.filters]
    for handler in added:
        handler.addFilter(scrubber)
    capturing = getattr(logging, "_warnings_showwarning", None) is not None  # already on: leave it on
    logging.captureWarnings(True)
    try:
        yield
    finally:
        if not capturing:
            logging.captureWarnings(False)
        for handler in added:
            handler.removeFilter(scrubber)


def scrub_value(value: Any) -> Any:
    """``value`` (a job result: dicts, lists, strings...) with every string scrubbed."""
    if isinstance(value, str):
        return secrets.scrub(value)
    if isinstance(value, Mapping):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_value(v) for v in value]
    return value
