"""Build SparkSessions with the ``paimon`` data source registered: a local one
(``local_session``), a Spark Connect one (``remote_session``), and the Connect session of
one job run in an Airflow worker (``remote_job_session``).

Used by the demo, the tests, the benchmarks and the Spark Connect hook. What the package
reads of a session (``spark_conf``, ``app_id``, ``is_connect``...) lives in
``session_info`` and is re-exported here, where earlier releases had it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

from . import register
from .connect_pool import SessionPool, leased_session
from .session_info import (
    CONNECT_DEFAULT_PARALLELISM,
    CONNECT_MODE_ENV,
    app_id,
    app_name,
    classic_context,
    conf_value,
    connect_mode,
    default_parallelism,
    is_connect,
    require_classic,
    session_conf,
    session_key,
    set_job_description,
    ship_package,
    spark_conf,
    worker_environment,
)

__all__ = [
    "CONNECT_DEFAULT_PARALLELISM",
    "CONNECT_MODE_ENV",
    "app_id",
    "app_name",
    "classic_context",
    "conf_value",
    "connect_mode",
    "default_parallelism",
    "is_connect",
    "local_session",
    "remote_job_session",
    "remote_session",
    "require_classic",
    "session_conf",
    "session_key",
    "set_job_description",
    "ship_package",
    "spark_conf",
    "worker_environment",
]


def remote_session(url: str, conf: Mapping[str, str] | None = None) -> Any:
    """A Spark Connect session on ``url`` (``sc://host:port``) with ``paimon`` registered.

    ``conf`` becomes the session's runtime conf (``spark.paimon.*`` keys included), set
    through the Connect protocol, never in the URL (which clients log). The caller
    keeps pyspark's Connect switch on while using it (``connect_mode``); it is left as
    it was before this call.
    """
    from pyspark.sql import SparkSession

    with connect_mode(os.environ.get(CONNECT_MODE_ENV) is not None):
        session = SparkSession.builder.remote(url).create()
        with connect_mode(True):
            for key, value in (conf or {}).items():
                session.conf.set(key, value)

            register(session)
    return session


@contextmanager
def remote_job_session(url: str, conf: Mapping[str, str] | None = None,
                       pool: SessionPool | None = None) -> Iterator[Any]:
    """A Connect session on ``url`` for one job run in this process: a fresh one, stopped
    at the end, or with ``pool`` a server session leased from it (``connect_pool``),
    cleaned and kept for the next job.

    While the block runs, pyspark's Connect switch is on, the session is this thread's
    active one and ``SPARK_REMOTE`` names the server (so a job's own
    ``SparkSession.builder.getOrCreate()`` or ``getActiveSession()`` returns it); all three
    are restored afterwards. ``conf`` entries the server refuses to change per session
    (static ones: memory, cores...) are skipped with a warning naming them: a Connect
    server's resources are its own. The URL is never logged (it may hold a token).

    A process that also holds a classic session (``dag.test()`` of a DAG with classic and
    Connect tasks) would make the job's ``getOrCreate()`` fail with pyspark's
    ``SESSION_ALREADY_EXIST``: pyspark's builder takes the Connect path only while no
    classic SparkContext is registered. That registration is set aside for the block
    and put back after it (the classic session itself keeps running).
    """
    import logging

    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    log = logging.getLogger(__name__)
    previous_remote = os.environ.get("SPARK_REMOTE")
    local = RemoteSparkSession._active_session
    previous_active = getattr(local, "session", None)
    with connect_mode(True), ExitStack() as stack:
        if pool is None:
            session = remote_session(url)
        else:
            session = stack.enter_context(leased_session(url, pool)).session
        skipped = []
        for key, value in (conf or {}).items():
            try:
                session.conf.set(str(key), str(value))
            except Exception:  # noqa: BLE001 - a static conf: the server decides it
                skipped.append(str(key))
        if skipped:
            log.warning("Spark Connect: the server's session does not take %s (static; set them "
                        "on the Connect server instead)", ", ".join(sorted(skipped)))
        if pool is not None or any(k.startswith(("spark.paimon.", "spark.openlineage.")) for k in (conf or {})):
            # (again:) the source carries the job's conf (redirects, lineage); a pooled
            # session's registration is the previous job's
            register(session)
        os.environ["SPARK_REMOTE"] = url
        local.session = session
        try:
            with _classic_set_aside():
                yield session
        finally:
            local.session = previous_active
            if previous_remote is None:
                os.environ.pop("SPARK_REMOTE", None)
            else:
                os.environ["SPARK_REMOTE"] = previous_remote
            if pool is None:
                try:
                    session.stop()
                except Exception as err:  # noqa: BLE001 - the job's outcome stands
                    log.warning("Spark Connect: stopping the job's session failed: %s", type(err).__name__)


@contextmanager
def _classic_set_aside() -> Iterator[None]:
    """Hide this process's classic session from pyspark's builder for a block."""
    from pyspark.core.context import SparkContext
    from pyspark.sql import SparkSession

    with SparkContext._lock:
        context, instantiated = SparkContext._active_spark_context, SparkSession._instantiatedSession
        SparkContext._active_spark_context = None
        SparkSession._instantiatedSession = None
    try:
        yield
    finally:
        with SparkContext._lock:
            if SparkContext._active_spark_context is None:
                SparkContext._active_spark_context = context
            if SparkSession._instantiatedSession is None:
                SparkSession._instantiatedSession = instantiated


def local_session(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> Any:
    """A SparkSession for ``local[*]`` (or ``master``) tuned for small machines."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(app_name)
        .master(master or os.environ.get("PAIMON_SPARK_MASTER", "local[2]"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", os.environ.get("PAIMON_SPARK_DRIVER_MEMORY", "2g"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    classic_context(session).setLogLevel("WARN")

    register(session)
    return session
