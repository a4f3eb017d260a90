"""Connect tests: every test here runs against the suite's Spark Connect server.

pyspark switches ``pyspark.sql.functions`` to Connect columns through one process-wide
environment variable; it is on only while a test here runs, so classic-session tests
in the same worker process are unaffected (``session.connect_mode``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the differential test helpers (tests/spark/differential.py and its test module) are
# reused as they are, over Connect
_SPARK_TESTS = str(Path(__file__).resolve().parents[1] / "spark")
if _SPARK_TESTS not in sys.path:
    sys.path.append(_SPARK_TESTS)


@pytest.fixture(autouse=True, scope="module")
def _connect_mode():
    from airflow_provider_paimon.spark.session import connect_mode

    with connect_mode(True):
        yield
