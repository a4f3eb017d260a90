"""``paimon.commit_properties``: which environment makes which snapshot properties."""

from __future__ import annotations

from airflow_provider_paimon.paimon.commit_properties import (
    airflow_env,
    airflow_properties,
    commit_properties,
    run_of,
)


def test_airflow_env_round_trips_to_properties_and_back():
    env = airflow_env("d", "scheduled__2026-11-24", "t", try_number=3, map_index=4)
    props = commit_properties(env, spark_app_id=" app-7 ")
    assert props == {
        "airflow.dag_id": "d", "airflow.run_id": "scheduled__2026-11-24", "airflow.task_id": "t",
        "airflow.try_number": "3", "airflow.map_index": "4", "spark.app.id": "app-7",
    }
    run = run_of(props)
    assert (run.dag_id, run.run_id, run.task_id, run.try_number, run.map_index, run.spark_app_id) == (
        "d", "scheduled__2026-11-24", "t", 3, 4, "app-7")


def test_outside_airflow_nothing_but_the_app_id():
    assert airflow_properties({}) == {}
    # a run id without a dag id names nothing
    assert airflow_properties({"AIRFLOW_CTX_DAG_RUN_ID": "r", "AIRFLOW_CTX_TASK_ID": " "}) == {}
    assert commit_properties({}, spark_app_id=None) == {}
    assert commit_properties({}, spark_app_id="local-1") == {"spark.app.id": "local-1"}
    assert run_of({"spark.app.id": "local-1"}) is None


def test_unmapped_map_index_is_left_out():
    props = airflow_properties(airflow_env("d", "r", "t", 1, map_index=-1))
    assert "airflow.map_index" not in props and props["airflow.try_number"] == "1"
