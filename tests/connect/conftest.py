"""Connect tests: every test here runs against the suite's Spark Connect server.

pyspark switches ``pyspark.sql.functions`` to Connect columns through one process-wide
environment variable; it is on only while a test here runs, so classic-session tests
in the same worker process are unaffected (``session.connect_mode``).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _connect_mode():
    from airflow_provider_paimon.spark.session import connect_mode

    with connect_mode(True):
        yield
