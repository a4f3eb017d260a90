"""The "Marquez" extra link: the task's Spark job in Marquez's web UI, when configured."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.airflow


def _operators():
    from airflow.sdk import DAG

    from airflow_provider_paimon.operators.compaction import CompactionOperator
    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator

    with DAG("orders", schedule=None):
        compact = CompactionOperator(task_id="compact", table="db.events")
        named = CompactionOperator(
            task_id="named", table="db.events",
            conf={"spark.paimon.openlineage.namespace": "spark/prod", "spark.paimon.lineage.job": "nightly:compact"},
        )
        off = CompactionOperator(task_id="off", table="db.events",
                                 conf={"spark.paimon.openlineage.enabled": "false"})
        submit = PaimonSparkSubmitOperator(task_id="enrich", application="job.py", lineage_job="enrich_orders")
        injected = PaimonSparkSubmitOperator(task_id="plain", application="job.py",
                                             conf={"spark.openlineage.namespace": "airflow-ns"})
    return compact, named, off, submit, injected


def test_marquez_link_opens_the_spark_job_page(monkeypatch):
    from airflow_provider_paimon.operators.links import MarquezLink

    compact, named, off, submit, injected = _operators()
    link = MarquezLink()
    assert link.name == "Marquez"
    assert any(isinstance(x, MarquezLink) for x in type(compact).operator_extra_links)
    assert any(isinstance(x, MarquezLink) for x in type(submit).operator_extra_links)
    monkeypatch.delenv("PAIMON_MARQUEZ_URL", raising=False)
    monkeypatch.delenv("AIRFLOW__PAIMON__MARQUEZ_URL", raising=False)
    monkeypatch.delenv("OPENLINEAGE_NAMESPACE", raising=False)
    assert link.get_link(compact, ti_key=None) == ""  # nothing configured: no link

    monkeypatch.setenv("PAIMON_MARQUEZ_URL", "http://user:secret@marquez-web:3000/")
    get = lambda op: link.get_link(op, ti_key=None)  # noqa: E731
    # default: the Spark application name {dag_id}.{task_id} in namespace "default"; no credentials
    assert get(compact) == "http://marquez-web:3000/lineage/job/default/orders.compact"
    # the namespace and job name the Spark side uses, each one path segment
    assert get(named) == "http://marquez-web:3000/lineage/job/spark%2Fprod/nightly%3Acompact"
    assert get(off) == ""  # the job emits nothing
    assert get(submit) == "http://marquez-web:3000/lineage/job/default/enrich_orders"
    assert get(injected) == "http://marquez-web:3000/lineage/job/airflow-ns/orders.plain"
    monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "env-ns")
    assert get(compact) == "http://marquez-web:3000/lineage/job/env-ns/orders.compact"

    # Airflow's config works too; a URL that is not http(s) gives no link
    monkeypatch.delenv("PAIMON_MARQUEZ_URL")
    monkeypatch.setenv("AIRFLOW__PAIMON__MARQUEZ_URL", "https://marquez.example/ui")
    assert get(compact) == "https://marquez.example/ui/lineage/job/env-ns/orders.compact"
    monkeypatch.setenv("AIRFLOW__PAIMON__MARQUEZ_URL", "marquez:3000")
    assert get(compact) == ""
