"""The ``paimon`` connection's S3 settings reach a submitted Spark job, and nowhere else.

A real Airflow run (``dag.test()`` on the session's metadata DB) of a
``PaimonSparkSubmitOperator`` with ``paimon_conn_id``: the connection names an ``s3://``
warehouse on the loopback server, its endpoint/region/path-style in Extra and the
access key / secret key in Login / Password. The job (real spark-submit, local Spark)
writes and reads a table through the ``paimon`` data source without naming the
warehouse or any credential. Afterwards the table reads back with plain pypaimon, and
the secret is searched for in the task's output (which holds the spark-submit command
line), its XCom, its rendered fields and Spark's event log (what the Spark UI and
history server show: plans, SQL tab, environment).
"""

from __future__ import annotations

import json
import textwrap

import pytest
from support.dag_files import load_dag_file

pytestmark = pytest.mark.spark

DAG_ID = "paimon_s3_submit"
JOB = textwrap.dedent(
    '''
    import json
    from pyspark.sql import SparkSession
    from airflow_provider_paimon.spark import register

    spark = SparkSession.builder.getOrCreate()
    register(spark)
    df = spark.range(50).selectExpr("id", "cast(id % 5 as string) as p")
    (df.write.format("paimon").option("table", "db.t").option("create-table", "true")
       .option("partition-keys", "p").mode("append").save())
    back = spark.read.format("paimon").option("table", "db.t").load()
    print("PAIMON_RESULT " + json.dumps({"rows": back.count(), "sum": back.groupBy().sum("id").first()[0]}))
    spark.stop()
    '''
)
DAG_SOURCE = '''
from airflow.sdk import DAG
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator

with DAG({dag_id!r}, schedule=None) as dag:
    PaimonSparkSubmitOperator(
        task_id="write_and_read", application={app!r}, paimon_conn_id="paimon_s3",
        conf={{"spark.eventLog.enabled": "true", "spark.eventLog.dir": {events!r},
               "spark.eventLog.compress": "false"}},
    )
'''


def _load_dag(source: str):
    return load_dag_file(DAG_ID, source).dag


def test_connection_credentials_reach_the_job_and_no_log(s3_warehouse, airflow_db, tmp_path, monkeypatch, capfd):
    from s3support import ACCESS_KEY, REGION, SECRET_KEY

    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_S3", json.dumps({
        "conn_type": "paimon", "host": s3_warehouse.uri, "login": ACCESS_KEY, "password": SECRET_KEY,
        "extra": {"endpoint": s3_warehouse.server.endpoint, "region": REGION, "path-style-access": "true"},
    }))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    app = tmp_path / "s3_job.py"
    app.write_text(JOB)
    events = tmp_path / "spark-events"
    events.mkdir()

    dag = _load_dag(DAG_SOURCE.format(dag_id=DAG_ID, app=str(app), events=str(events)))
    run = dag.test()
    out = capfd.readouterr()
    ti = run.get_task_instance("write_and_read")
    assert ti.state == "success", out.err[-3000:]

    # the job wrote through the connection's S3 settings: plain pypaimon reads it back
    from pypaimon import CatalogFactory

    table = CatalogFactory.create(s3_warehouse.catalog_options()).get_table("db.t")
    rb = table.new_read_builder()
    ids = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist())
    assert ids == list(range(50))

    # ... and nothing shows the secret key (nor the access key id: a secret by policy)
    import sqlalchemy as sa
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        xcoms = session.execute(sa.select(XComModel.value).where(XComModel.dag_id == DAG_ID)).all()
        rendered = session.execute(sa.text(
            "SELECT rendered_fields FROM rendered_task_instance_fields WHERE dag_id = :d"), {"d": DAG_ID}).all()
    assert any('"rows": 50' in str(x) or "'rows': 50" in str(x) for x in xcoms), xcoms
    event_logs = "".join(p.read_text(errors="replace") for p in events.rglob("*") if p.is_file())
    assert "write_and_read" in out.out + out.err and "spark-submit" in out.out + out.err
    assert "SaveIntoDataSourceCommand" in event_logs or "BatchScan paimon" in event_logs  # plans are there
    for where, text in {
        "task output (with the spark-submit command line)": out.out + out.err,
        "XCom": repr(xcoms),
        "rendered fields": repr(rendered),
        "Spark event log": event_logs,
    }.items():
        for secret in (SECRET_KEY, ACCESS_KEY):
            assert secret not in text, f"{secret} is in the {where}"
