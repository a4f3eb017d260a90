"""What the package reads of a SparkSession, the same way on a classic session and on a
Spark Connect one, and the few session-scoped settings it makes.

Spark Connect (``SparkSession.builder.remote("sc://host:15002")``) has no
``sparkContext`` (it raises ``JVM_ATTRIBUTE_NOT_SUPPORTED``): the server owns the JVM.
Everything the package reads of a session goes through the helpers below
(``is_connect``, ``spark_conf``, ``app_name``, ``app_id``, ``default_parallelism``,
``session_key``, ``worker_environment``), so no other module touches ``sparkContext``,
and a feature that truly needs the JVM calls ``require_classic`` for a clear error.

Building sessions is ``spark/session.py``'s job (it registers the data source, which
imports these helpers); keeping the two apart keeps the data source's modules out of
an import cycle with the builders.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

from airflow_provider_paimon.packaging import build_py_files_zip
from airflow_provider_paimon.paimon.errors import InvalidArgumentError

#: parallelism assumed on a Connect session whose conf names neither
#: ``spark.default.parallelism`` nor a ``local[N]`` master
CONNECT_DEFAULT_PARALLELISM = 2


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def require_classic(spark: Any, feature: str, alternative: str) -> None:
    """Refuse ``feature`` on a Spark Connect session, naming what to use instead."""
    if is_connect(spark):
        raise InvalidArgumentError(
            f"{feature} needs the Spark driver's JVM, which a Spark Connect session does not "
            f"give its client; {alternative}"
        )


def classic_context(spark: Any) -> Any:
    """The classic session's SparkContext, for what only a classic session has (RDDs);
    on Connect the error says which feature asked and what to use instead."""
    require_classic(spark, "this operation (it uses the SparkContext)",
                    "run it with a classic SparkSession (spark-submit or a local session)")
    return spark.sparkContext


def spark_conf(spark: Any) -> dict[str, str]:
    """The session's Spark conf plus its runtime SQL conf (``spark.conf.set`` wins).

    On Connect the server's runtime conf holds its SparkConf entries as well (the
    session state is seeded from them), so ``spark.conf.getAll`` is all there is.
    """
    conf: dict[str, str] = {}
    if not is_connect(spark):
        with suppress(Exception):  # a stopped session: the runtime conf below, or nothing
            conf.update({str(k): str(v) for k, v in classic_context(spark).getConf().getAll()})
    with suppress(Exception):
        conf.update({str(k): str(v) for k, v in spark.conf.getAll.items()})
    return conf


def conf_value(spark: Any, key: str, default: str | None = None) -> str | None:
    """One conf value (runtime conf first, then the SparkConf on a classic session)."""
    with suppress(Exception):
        value = spark.conf.get(key, None)
        if value is not None:
            return str(value)
    if not is_connect(spark):
        with suppress(Exception):
            value = classic_context(spark).getConf().get(key, None)
            if value is not None:
                return str(value)
    return default


def app_name(spark: Any) -> str:
    """The Spark application name (``spark.app.name``); '' when unknown."""
    if not is_connect(spark):
        with suppress(Exception):
            return str(classic_context(spark).appName or "")
    return conf_value(spark, "spark.app.name", "") or ""


def app_id(spark: Any) -> str | None:
    """The Spark application id (``spark.app.id``), or None when the session has none."""
    if not is_connect(spark):
        with suppress(Exception):
            return str(classic_context(spark).applicationId)
    return conf_value(spark, "spark.app.id")


def default_parallelism(spark: Any) -> int:
    """``sc.defaultParallelism`` on a classic session; on Connect from the conf
    (``spark.default.parallelism``, else the N of a ``local[N]`` master, else 2)."""
    if not is_connect(spark):
        return int(classic_context(spark).defaultParallelism)
    configured = conf_value(spark, "spark.default.parallelism")
    if configured and configured.strip().isdigit():
        return max(1, int(configured))
    master = (conf_value(spark, "spark.master", "") or "").strip()
    if master.startswith("local[") and master.endswith("]"):
        inner = master[len("local["):-1].split(",")[0]
        if inner.isdigit():
            return max(1, int(inner))
        if inner == "*":
            return max(1, os.cpu_count() or 1)
    return CONNECT_DEFAULT_PARALLELISM


def session_key(spark: Any) -> Hashable:
    """What identifies the session's Spark application in per-session registries."""
    if is_connect(spark):
        return ("connect", str(spark.session_id))
    return id(classic_context(spark))


def worker_environment(spark: Any) -> dict[str, str]:
    """The environment the session gives its Python workers (``sc.environment``).

    A Connect client cannot see or change it: always empty there.
    """
    if is_connect(spark):
        return {}
    try:
        return {str(k): str(v) for k, v in dict(classic_context(spark).environment).items()}
    except Exception:  # noqa: BLE001 - a stopped session
        return {}


_shipped: dict[Hashable, str] = {}


def ship_package(spark: Any) -> str | None:
    """On a Connect session, give the server's Python workers this package; idempotent.

    The ``paimon`` source's reader, writer and commit run in the server's Python
    workers, which must import ``airflow_provider_paimon``. A Connect client ships it
    the Connect way: ``spark.addArtifacts(<zip>, pyfile=True)`` of the same zip the
    operators give spark-submit's ``--py-files`` (``packaging.build_py_files_zip``:
    the Airflow-free parts, cached by content hash). Artifacts are per session and go
    first on the workers' ``sys.path``, so the workers run the client's code even when
    the server has another version installed. Returns the zip shipped (None on a
    classic session, or when this session already has this zip).
    """
    if not is_connect(spark):
        return None

    key = session_key(spark)
    path = build_py_files_zip()
    if _shipped.get(key) == path:
        return None
    spark.addArtifacts(path, pyfile=True)
    _shipped[key] = path
    return path


def set_job_description(spark: Any, text: str) -> None:
    """Label the next Spark jobs in the UI (a no-op on Connect, which has no such call)."""
    if not is_connect(spark):
        with suppress(Exception):
            classic_context(spark).setJobDescription(text)


@contextmanager
def session_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Set SQL confs for the duration of one operation, then restore the session's values
    (a conf that was unset is unset again)."""
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


#: what pyspark sets in ``os.environ`` once a Connect session is built; while it is set,
#: ``pyspark.sql.functions`` build Connect columns (so a classic session's break)
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"


@contextmanager
def connect_mode(enabled: bool = True) -> Iterator[None]:
    """Set (or clear) pyspark's process-wide Connect switch for a block, then restore it.

    ``pyspark.sql.functions`` choose Connect or classic columns from one environment
    variable, not from the session, so a process that uses both kinds of session (a
    test run, an Airflow worker running ``dag.test()``) switches it per operation.
    """
    previous = os.environ.get(CONNECT_MODE_ENV)
    if enabled:
        os.environ[CONNECT_MODE_ENV] = "1"
    else:
        os.environ.pop(CONNECT_MODE_ENV, None)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CONNECT_MODE_ENV, None)
        else:
            os.environ[CONNECT_MODE_ENV] = previous
