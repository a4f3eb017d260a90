"""End-to-end fixtures: the example DAGs run against real local Spark.

No ``__init__.py`` in this folder (a test package must not shadow real modules). The
Airflow environment is the session's (tests/conftest.py); DAG files are imported from
the repo's ``dags/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from orders_tables import SINK, create_orders_tables
from support.orders import DAGS, ORDERS
from support.pypaimon_writes import commit_rows

# AIRFLOW_HOME, PATH, PYSPARK_PYTHON, the py-files cache and dags/ on sys.path are set
# for the whole session in tests/conftest.py; the connection to local Spark is ours.
os.environ["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": "local[2]"})

@pytest.fixture
def orders_warehouse(tmp_path: Path) -> str:
    """``db.orders`` (4 orders) and ``db.orders_enriched`` holding the buggy job's output.

    The buggy output is written with pypaimon from the job's own ``enrich_row`` (saves a
    spark-submit); the correction DAG's job runs under real Spark.
    """
    from correction_tasks import load_job_module

    job = load_job_module("enrich_orders")
    warehouse = str(tmp_path / "warehouse")
    catalog = create_orders_tables(warehouse, ORDERS)
    buggy = [job.enrich_row(r, "buggy") for r in ORDERS]
    commit_rows(catalog.get_table("db.orders_enriched"), buggy, SINK)
    return warehouse




@pytest.fixture(autouse=True)
def _repo_dags_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example DAGs live in the repo's dags/: make it the DAGs folder for these tests.

    ``dag.test()`` serializes a DAG only when its file is inside the configured DAGs
    folder (the session's default is an empty temp folder other tests write into).
    """
    import airflow.settings

    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(DAGS))
    # The default dags-folder bundle reads settings.DAGS_FOLDER, fixed at import time.
    monkeypatch.setattr(airflow.settings, "DAGS_FOLDER", str(DAGS))
