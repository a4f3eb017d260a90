"""Runs and snapshots linked both ways: ``dag.test()`` of a CompactionOperator (real spark-submit).

One submit on purpose (each starts a JVM). The COMPACT snapshot the job commits must
carry the dag id, run id, task id and try number of the task that submitted it, and
the id of the Spark application that committed, read back with plain pypaimon; the
task's "Paimon lineage" extra link must point at that snapshot.
"""

from __future__ import annotations

import pytest
from support.dag_files import load_dag_file

from airflow_provider_paimon.paimon.commit_properties import ENV_KEYS, run_of

pytestmark = [pytest.mark.submit, pytest.mark.airflow]

COMPACT_DAG = """
from airflow.sdk import DAG

from airflow_provider_paimon.operators.compaction import CompactionOperator

with DAG("paimon_runlink", schedule=None) as dag:
    CompactionOperator(
        task_id="compact", table="db.events", options={"compaction.min.file-num": "2"},
        spark_kwargs={"driver_memory": "512m"}, run_tag=True,
    )
"""


def test_compaction_snapshot_names_the_dag_run(wh, airflow_db, monkeypatch):
    # dag.test() exports AIRFLOW_CTX_* into this process; undo that afterwards
    for key in ENV_KEYS:
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    before = wh.table("db.events").snapshot_manager().get_latest_snapshot().id
    dag = load_dag_file("paimon_runlink", COMPACT_DAG).dag

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
    # run_tag=True: the run's tag holds that snapshot (named from the run; dag.test's run
    # has a logical date)
    tags = {name: snap_id for name, snap_id in _tags(wh, "db.events").items() if name.startswith("paimon_runlink-")}
    assert list(tags.values()) == [snap.id], tags
    # ... and the task's "Paimon lineage" extra link opens the lineage page at that snapshot
    assert _extra_link(run, "compact") == (
        f"/paimon-lineage/?database=db&table=events&snapshot={snap.id}"
    )


def _tags(wh, table: str) -> dict[str, int]:
    from airflow_provider_paimon.hooks.paimon import PaimonHook

    hook = PaimonHook(warehouse=wh.path)
    return {name: hook.get_tag(table, name)["id"] for name in hook.list_tags(table)}


def _extra_link(run, task_id: str) -> str:
    """The URL Airflow keeps (in XCom) for the task's "Paimon lineage" link."""
    import json

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_paimon.operators.links import PaimonLineageLink

    with create_session() as session:
        value = session.scalar(
            select(XComModel.value).where(
                XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id,
                XComModel.task_id == task_id, XComModel.key == PaimonLineageLink().xcom_key,
            )
        )
    return json.loads(value) if isinstance(value, str) and value.startswith('"') else value


def test_lineage_link_for_a_branch_snapshot_under_a_base_url():
    from airflow_provider_paimon.operators.links import lineage_page_url

    assert lineage_page_url("sales.orders", 7, "fix 1", base_url="https://af.example/x/") == (
        "https://af.example/x/paimon-lineage/?database=sales&table=orders&snapshot=7&branch=fix+1"
    )
    assert lineage_page_url("sales.orders", 7, "main", base_url="") == (
        "/paimon-lineage/?database=sales&table=orders&snapshot=7"
    )
