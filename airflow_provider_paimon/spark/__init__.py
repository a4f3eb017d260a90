"""Spark side: the ``paimon`` PySpark data source, lineage capture and job entry points.

Imports no Airflow (clusters don't have it). ``register(spark)`` makes
``spark.read.format("paimon")`` and friends available on a session.
"""

from __future__ import annotations

from typing import Any

SHORT_NAME = "paimon"


def register(spark: Any) -> None:
    """Register the ``paimon`` data source (and its streaming side) on ``spark``.

    Call it again after changing ``spark.paimon.branch.*`` with ``spark.conf.set``: the
    data source carries the session's branch redirects as they are when it is registered.

    On a Spark Connect session (``SparkSession.builder.remote(...)``) it first ships
    this package to the server's Python workers (``session.ship_package``), so a
    server without it installed runs the source; lineage capture set in the session's
    conf is then recorded by the source at commit (``lineage.connect_capture``).
    """
    # here: `import airflow_provider_paimon.spark` stays light (its names load on first use)
    from .registration import register_data_source
    from .session_info import ship_package  # (as above)

    ship_package(spark)  # Connect only: the workers import the client's package

    register_data_source(spark)  # PaimonDataSource, with the session's branch redirects
    from .lineage.source import PaimonLineageDataSource  # read-only lineage tables

    spark.dataSource.register(PaimonLineageDataSource)
    from .lineage.capture import enable_from_conf  # only when spark.paimon.lineage.* asks

    enable_from_conf(spark)


# The native path (Spark's own file sources move the bytes), imported on first use so
# that importing this package (the Airflow layer does) never loads pyspark.
_NATIVE_EXPORTS = {
    "read_table": ".native",
    "plan_read": ".native",
    "register_views": ".native",
    "write_table": ".native",
    "foreach_batch_writer": ".native",
    "delete_rows": ".cdc",
    "write_changes": ".cdc",
    "with_row_kinds": ".cdc",
}


def __getattr__(name: str) -> Any:
    module = _NATIVE_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
