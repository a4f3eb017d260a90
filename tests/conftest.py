"""Shared fixtures: one SparkSession for all in-process tests, real database servers.

Database fixtures fail (rather than skip) when ``CI=true`` and the server is not
reachable, so a CI run can never pass by silently skipping the MySQL/PostgreSQL tests.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
MYSQL_ROOT_URL = os.environ.get("PAIMON_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
POSTGRES_ROOT_URL = os.environ.get(
    "PAIMON_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)

# Airflow reads its configuration when first imported: give every test run a throwaway
# AIRFLOW_HOME with a SQLite metadata DB, so no test touches ~/airflow. (tests/airflow's
# conftest sets its own before any test module imports Airflow.)
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="paimon-tests-airflow-")
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_AIRFLOW_HOME}/airflow.db"

# Spark's Python workers must run this interpreter (it has pyarrow and pypaimon).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _unavailable(what: str, err: Exception) -> None:
    msg = f"{what} is not reachable ({type(err).__name__}: {err})"
    if IN_CI:
        pytest.fail(f"{msg}; CI=true requires it (see .ci/run for how it is started)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def spark():
    """The one local SparkSession of the test run, with our data source registered."""
    from airflow_provider_paimon.spark.session import local_session

    session = local_session("airflow-provider-paimon-tests")
    yield session
    session.stop()


@pytest.fixture()
def warehouse(tmp_path):
    """A fresh file warehouse (a local path) for one test."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture(scope="session")
def mysql_server_url() -> str:
    """URL of the MariaDB/MySQL server (root, no password), checked reachable."""
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(MYSQL_ROOT_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
    except Exception as err:  # noqa: BLE001
        _unavailable(f"MySQL/MariaDB at {MYSQL_ROOT_URL}", err)
    return MYSQL_ROOT_URL


@pytest.fixture(scope="session")
def postgres_server_url() -> str:
    """URL of the PostgreSQL server (trust auth), checked reachable."""
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(POSTGRES_ROOT_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
    except Exception as err:  # noqa: BLE001
        _unavailable(f"PostgreSQL at {POSTGRES_ROOT_URL}", err)
    return POSTGRES_ROOT_URL


@pytest.fixture()
def unique_name() -> str:
    """A short unique name for databases/schemas a test creates on a shared server."""
    return "t_" + uuid.uuid4().hex[:10]
