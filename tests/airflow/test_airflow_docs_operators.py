"""The code samples of docs/operators.md run as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "operators.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_python_samples_build_a_dag():
    from airflow.sdk import DAG

    blocks = _blocks("python")
    dags = []
    for source in blocks:
        namespace: dict = {}
        with DAG("doc_sample", schedule=None) as dag:
            exec(compile(source, str(DOC), "exec"), namespace)
        dags.append(dag)
    assert [set(d.task_ids) for d in dags] == [
        {"tag_main", "branch", "replace"}, {"publish_fix", "undo_fix"}, {"enrich_orders"}, {"tag_base"},
    ]
    assert dags[3].get_task("tag_base").run_in == "worker"
    assert dags[0].get_task("replace").upstream_task_ids == {"branch"}
    publish = dags[1].get_task("publish_fix")
    assert publish.parsed_tables()[0] == ("ods.orders", "fix") and publish.job_family == "publish"
    assert dags[1].get_task("undo_fix").upstream_task_ids == {"publish_fix"}
    enrich = dags[2].get_task("enrich_orders")
    assert enrich.lineage_conn_id == "paimon_lineage_default" and enrich.lineage_job == "enrich_orders.fixed"
    assert enrich.application_args[:2] == ["--warehouse", "{{ params.warehouse }}"]


def test_connection_samples_are_valid_connections():
    from airflow.sdk import Connection

    exports = re.findall(r"export (AIRFLOW_CONN_\w+)='(.*?)'", "\n".join(_blocks("bash")), flags=re.S)
    assert {name for name, _ in exports} == {"AIRFLOW_CONN_PAIMON_DEFAULT", "AIRFLOW_CONN_SPARK_DEFAULT"}
    for name, value in exports:
        conn = Connection.from_json(value, conn_id=name.removeprefix("AIRFLOW_CONN_").lower())
        assert conn.conn_type in ("paimon", "spark") and conn.host
        json.loads(value)
