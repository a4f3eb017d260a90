"""The Spark-job operators on Airflow's ``spark_connect`` connection, through ``dag.test()``.

``CompactionOperator`` runs the compact job's ``main`` in the task process on a session
of the suite's Connect server (its rewrite tasks run on the server, whose workers get
the package from ``register``); ``PaimonSparkSubmitOperator`` runs a user's callable
and a user's ``.py`` application the same way. No spark-submit, no JVM start per task.
"""

from __future__ import annotations

import json
import textwrap
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from support.dag_files import load_dag_file
from support.pypaimon_writes import commit_arrow
from test_connect_datasource import pypaimon_rows, snapshot_ids

from airflow_provider_paimon.paimon.catalog import load_table

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
TOKEN = "c0nnect-t0ken-Hunter2"


@pytest.fixture
def connections(connect_server, warehouse, monkeypatch):
    """``paimon_default`` on the warehouse, ``spark_connect_tests`` on the Connect server
    (a user id; a token would make pyspark use TLS, which the test server does not speak)."""
    parsed = urlparse(connect_server.url.replace("sc://", "http://"))
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon", "host": warehouse}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT_TESTS", json.dumps(
        {"conn_type": "spark_connect", "host": parsed.hostname, "port": parsed.port, "login": "airflow-tests"}))
    return warehouse


def _small_files(warehouse: str, commits: int = 6) -> None:
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.events", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    table = catalog.get_table("db.events")
    for k in range(commits):
        commit_arrow(table, pa.table({"id": [k * 10 + i for i in range(3)], "dt": ["2026-11-01"] * 3}, schema=SCHEMA))


DAG_SOURCE = textwrap.dedent("""
    import os

    from airflow.sdk import DAG

    from airflow_provider_paimon.operators.compaction import CompactionOperator
    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator


    def user_job(spark, table, rows):
        # a user's job: rows new rows through the paimon source on the Connect session
        df = spark.range(int(rows)).selectExpr("id + 1000 as id", "'2026-11-02' as dt")
        (df.write.format("paimon").mode("append").option("warehouse", os.environ["PAIMON_CONNECTION_WAREHOUSE"])
         .option("table", table).save())
        return {"rows": int(rows)}


    with DAG("paimon_connect_ops", schedule=None) as dag:
        compact = CompactionOperator(task_id="compact", table="db.events", spark_conn_id="spark_connect_tests",
                                     options={"compaction.min.file-num": "2"})
        callable_job = PaimonSparkSubmitOperator(
            task_id="user_callable", python_callable=user_job, application_args=["db.events", 1000],
            paimon_conn_id="paimon_default", spark_conn_id="spark_connect_tests")
        file_job = PaimonSparkSubmitOperator(
            task_id="user_file", application=os.environ["PAIMON_TEST_APP"], application_args=["db.events", 7],
            paimon_conn_id="paimon_default", spark_conn_id="spark_connect_tests")
        compact >> callable_job >> file_job
""")


def user_job(spark, table, rows):
    return {"rows": rows}


def test_compaction_and_user_jobs_through_dag_test(spark, connections, airflow_db, connect_spark, tmp_path,
                                                    caplog, monkeypatch):
    """``spark``: a classic session lives in this process too, as in a ``dag.test()`` of a DAG
    with classic and Connect tasks; the user's file's ``getOrCreate()`` must still get the
    task's Connect session (pyspark refused with SESSION_ALREADY_EXIST; a full CI run
    failed here while the test passed alone)."""
    assert spark is not None
    warehouse = connections
    _small_files(warehouse)
    before = pypaimon_rows(warehouse, "db.events")
    app = tmp_path / "append_job.py"
    app.write_text(textwrap.dedent("""
        import os, sys
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()  # the operator's Connect session
        n = int(sys.argv[2])
        (spark.range(n).selectExpr("id + 5000 as id", "'2026-11-03' as dt").write.format("paimon")
         .mode("append").option("warehouse", os.environ["PAIMON_CONNECTION_WAREHOUSE"])
         .option("table", sys.argv[1]).save())
        print("some output of the job")
        print('PAIMON_RESULT {"rows": %d, "table": "%s"}' % (n, sys.argv[1]), end="")  # no newline
    """))
    monkeypatch.setenv("PAIMON_TEST_APP", str(app))
    dag = load_dag_file("paimon_connect_ops", DAG_SOURCE).dag
    import structlog

    with structlog.testing.capture_logs() as logs:
        run = dag.test()
    from e2e.dag_run_results import task_states, task_xcom

    if run.state != "success":  # name the task and its error (a CI run once failed here alone)
        errors = [e for e in logs if e.get("log_level") in ("error", "critical") or e.get("exc_info")]
        pytest.fail(f"run {run.state}: {task_states(run)}; errors: {errors[-5:]!r}"[-6000:])

    # a .py application's printed result line is its XCom, as under spark-submit
    assert task_xcom(run, "user_file") == {"rows": 7, "table": "db.events"}
    assert task_xcom(run, "user_callable") == {"rows": 1000}
    table = load_table(CatalogFactory.create({"warehouse": warehouse}), "db.events")
    kinds = [s.commit_kind for s in table.snapshot_manager().list_snapshots()]
    assert kinds == ["APPEND"] * 6 + ["COMPACT", "APPEND", "APPEND"], kinds
    after = pypaimon_rows(warehouse, "db.events")
    assert [r for r in after if r[1] == "2026-11-01"] == before  # compaction kept the rows
    assert sorted(r[0] for r in after if r[1] == "2026-11-02") == list(range(1000, 2000))
    assert sorted(r[0] for r in after if r[1] == "2026-11-03") == list(range(5000, 5007))
    assert snapshot_ids(warehouse, "db.events")[-1] == 9
    # the snapshots name the Airflow task try that committed them
    props = [dict(s.properties or {}) for s in table.snapshot_manager().list_snapshots()][6:]
    assert [p.get("airflow.task_id") for p in props] == ["compact", "user_callable", "user_file"], props
    text = "\n".join(str(e.get("event", "")) for e in logs) + "\n".join(r.getMessage() for r in caplog.records)
    assert "on Spark Connect sc://127.0.0.1:" in text, text[-2000:]


def test_the_connect_url_is_logged_without_its_token(monkeypatch):
    from airflow_provider_paimon.hooks.spark_connect_job import connect_url, is_spark_connect
    from airflow_provider_paimon.paimon.secrets import scrub

    monkeypatch.setenv("AIRFLOW_CONN_SC_TOKEN", json.dumps(
        {"conn_type": "spark_connect", "host": "sc://spark.example", "port": 15002, "password": TOKEN,
         "extra": {"use_ssl": True}}))
    url, shown = connect_url("sc_token")
    assert is_spark_connect("sc_token") and not is_spark_connect("sc_missing")
    assert TOKEN in url and shown == "sc://spark.example:15002"  # what the hook logs
    assert TOKEN not in scrub(f"connecting to {url}")  # registered with the masker


def test_python_callable_needs_a_spark_connect_connection(connections, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    op = PaimonSparkSubmitOperator(task_id="t", python_callable=user_job, spark_conn_id="spark_local")
    with pytest.raises(AirflowFailException, match="not a spark_connect connection"):
        op.make_hook({})
    with pytest.raises(ValueError, match="give the job"):
        PaimonSparkSubmitOperator(task_id="u")
