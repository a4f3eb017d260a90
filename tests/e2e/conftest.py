"""End-to-end fixtures: a temp AIRFLOW_HOME whose DAGs folder is the repo's ``dags/``.

Airflow reads its configuration when first imported, so the environment is set here
at import time, before any test module imports Airflow. No ``__init__.py`` in this
folder (a test package must not shadow real modules); run these tests on their own
(``pytest tests/e2e``): tests/airflow's conftest sets a different AIRFLOW_HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="paimon-e2e-airflow-home-")
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS)
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_AIRFLOW_HOME}/airflow.db"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "False"
VENV_BIN = str(Path(sys.executable).parent)
os.environ["PATH"] = VENV_BIN + os.pathsep + os.environ.get("PATH", "")
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ["PAIMON_PY_FILES_CACHE_DIR"] = os.path.join(_AIRFLOW_HOME, "pyfiles")
os.environ["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps(
    {"conn_type": "spark", "host": "local[2]"}
)
if str(DAGS) not in sys.path:  # Airflow does this for the DAGs folder; imports here need it too
    sys.path.insert(0, str(DAGS))

SOURCE = pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount_cents", pa.int64())])
SINK = pa.schema(
    [("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()), ("size", pa.string())]
)
ORDERS = [
    {"order_id": 1, "customer": "ada", "amount_cents": 1250},
    {"order_id": 2, "customer": "bob", "amount_cents": 25000},
    {"order_id": 3, "customer": "cy", "amount_cents": 999},
    {"order_id": 4, "customer": "dee", "amount_cents": 180000},
]


def write_rows(table, rows: list[dict], schema: pa.Schema) -> None:
    """Commit ``rows`` to a pypaimon table as one APPEND snapshot."""
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


@pytest.fixture()
def orders_warehouse(tmp_path: Path) -> str:
    """``db.orders`` (4 orders) and ``db.orders_enriched`` holding the buggy job's output.

    The buggy output is written with pypaimon from the job's own ``enrich_row`` (saves a
    spark-submit); the correction DAG's job runs under real Spark.
    """
    from correction_tasks import load_job_module
    from pypaimon import CatalogFactory, Schema

    job = load_job_module("enrich_orders")
    warehouse = str(tmp_path / "warehouse")
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.orders", Schema.from_pyarrow_schema(SOURCE), False)
    catalog.create_table("db.orders_enriched", Schema.from_pyarrow_schema(SINK), False)
    write_rows(catalog.get_table("db.orders"), ORDERS, SOURCE)
    buggy = [job.enrich_row(r, "buggy") for r in ORDERS]
    write_rows(catalog.get_table("db.orders_enriched"), buggy, SINK)
    return warehouse


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """Migrate the temp AIRFLOW_HOME's SQLite DB once (``dag.test()`` needs it)."""
    subprocess.run(
        [os.path.join(VENV_BIN, "airflow"), "db", "migrate"],
        check=True, capture_output=True, env=dict(os.environ), timeout=300,
    )
    return os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
