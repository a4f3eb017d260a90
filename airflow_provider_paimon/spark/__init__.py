"""Spark side: the ``paimon`` PySpark data source, lineage capture and job entry points.

Imports no Airflow (clusters don't have it). ``register(spark)`` makes
``spark.read.format("paimon")`` and friends available on a session.
"""

from __future__ import annotations

from typing import Any

SHORT_NAME = "paimon"


def register(spark: Any) -> None:
    """Register the ``paimon`` data source (and its streaming side) on ``spark``."""
    from .datasource import PaimonDataSource

    spark.dataSource.register(PaimonDataSource)
    from .lineage_source import PaimonLineageDataSource  # read-only lineage tables

    spark.dataSource.register(PaimonLineageDataSource)
    from .lineage_capture import enable_from_conf  # only when spark.paimon.lineage.* asks

    enable_from_conf(spark)
