"""A DAG run's commit names that run: ``dag.test()`` of a CompactionOperator (real spark-submit).

One submit on purpose (each starts a JVM). The COMPACT snapshot the job commits must
carry the dag id, run id, task id and try number of the task that submitted it, and
the id of the Spark application that committed, read back with plain pypaimon.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from airflow_provider_paimon.paimon.commit_properties import ENV_KEYS, run_of

pytestmark = [pytest.mark.submit, pytest.mark.airflow]

COMPACT_DAG = """
from airflow.sdk import DAG

from airflow_provider_paimon.operators.compaction import CompactionOperator

with DAG("paimon_runlink", schedule=None) as dag:
    CompactionOperator(
        task_id="compact", table="db.events", options={"compaction.min.file-num": "2"},
        spark_kwargs={"driver_memory": "512m"},
    )
"""


def _load_dag(name: str, source: str):
    folder = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def test_compaction_snapshot_names_the_dag_run(wh, airflow_db, monkeypatch):
    # dag.test() exports AIRFLOW_CTX_* into this process; undo that afterwards
    for key in ENV_KEYS:
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    before = wh.table("db.events").snapshot_manager().get_latest_snapshot().id
    dag = _load_dag("paimon_runlink", COMPACT_DAG)

    run = dag.test()

    assert run.state == "success", run.state
    snap = wh.table("db.events").snapshot_manager().get_latest_snapshot()
    assert snap.id == before + 1 and snap.commit_kind == "COMPACT"
    link = run_of(snap.properties)
    assert (link.dag_id, link.run_id, link.task_id, link.try_number) == (
        "paimon_runlink", run.run_id, "compact", 1
    )
    assert link.map_index is None  # not a mapped task
    assert link.spark_app_id and link.spark_app_id.startswith("local-"), snap.properties
