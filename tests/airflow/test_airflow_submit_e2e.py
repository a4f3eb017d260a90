"""End to end: real spark-submit of the real job modules, on local[2] and on a standalone cluster.

Kept few on purpose (each submit starts a JVM): one DAG run through ``dag.test()`` with
a branch-create submit on local[2] (XCom to the next task), one compaction on the
standalone master+worker, and one failing job.
"""

from __future__ import annotations

import json
import re

import pytest
from support.airflow_connections import SECRET, set_connection
from support.dag_files import load_dag_file

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.hooks.spark_job import PaimonJobInputError, PaimonSparkJobHook
from airflow_provider_paimon.operators.compaction import CompactionOperator

pytestmark = [pytest.mark.submit, pytest.mark.airflow]
#: a line of Spark's log4j console layout at INFO (``26/11/24 06:30:00 INFO SparkContext: ...``)
SPARK_INFO_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ")


CORRECTION_DAG = """
import json
import os

from airflow.sdk import DAG, task

from airflow_provider_paimon.operators.branch import BranchCreateOperator

with DAG("paimon_e2e", schedule=None, params={"table": "db.events"}) as dag:
    create = BranchCreateOperator(task_id="create", table="{{ params.table }}", branch="hotfix", tag="t1")

    @task
    def collect(created):
        with open(os.environ["PAIMON_E2E_OUT"], "w") as f:
            json.dump({"create": created}, f)

    collect(create.output)
"""


def test_correction_flow_through_dag_test_with_xcom(wh, airflow_db, tmp_path, monkeypatch):
    """A branch-create submit under dag.test(); its result reaches the next task through XCom."""
    out = tmp_path / "xcom.json"
    monkeypatch.setenv("PAIMON_E2E_OUT", str(out))
    dag = load_dag_file("paimon_e2e", CORRECTION_DAG).dag

    run = dag.test()
    assert run.state == "success", run.state
    results = json.loads(out.read_text())
    assert results["create"]["branch"] == "hotfix"
    assert PaimonHook().list_branches("db.events") == ["fix", "hotfix"]
    # the branch reads as tag t1 did (snapshot 1: 3 rows); main is untouched
    assert wh.read_ids("db.events", branch="hotfix") == [0, 1, 2]
    assert len(wh.read_ids("db.events")) == 9


def test_compaction_on_standalone_cluster(wh, spark_standalone, monkeypatch):
    host, port = spark_standalone.rsplit(":", 1)
    set_connection(monkeypatch, "spark_cluster", {"conn_type": "spark", "host": host, "port": int(port)})
    for _ in range(3):  # more small files in partition 2026-11-01 (now 5 files)
        wh.append("db.events", rows=2, dt="2026-11-01")
    rows_before = wh.read_ids("db.events")
    op = CompactionOperator(
        task_id="compact",
        table="db.events",
        spark_conn_id="spark_cluster",
        options={"compaction.min.file-num": "2"},
        spark_kwargs={"executor_memory": "512m", "driver_memory": "512m", "total_executor_cores": 1},
        spark_name="paimon_tests.compact",
    )
    import structlog

    with structlog.testing.capture_logs() as logs:
        result = op.execute({})
    assert result["committed"] is True, result
    summary = [e["event"] for e in logs if str(e.get("event", "")).startswith("Compaction of db.events:")]
    # Spark's own loggers at WARN (the operators' default spark_log_level): the task log
    # holds the job's lines, not Spark's INFO lines (83 in this run before)
    spark_info = [e["event"] for e in logs if SPARK_INFO_LINE.match(str(e.get("event", "")))]
    assert len(spark_info) <= 5, f"{len(spark_info)} Spark INFO lines, e.g. {spark_info[:3]}"
    assert summary and f"snapshot {result['snapshot_id']}" in summary[0], summary
    assert result["files_after"] < result["files_before"]
    hook = PaimonHook()
    latest = hook.get_latest_snapshot("db.events")
    assert latest["id"] == result["snapshot_id"] and latest["commit_kind"] == "COMPACT"
    assert wh.read_ids("db.events") == rows_before


def test_failing_job_raises_the_jobs_own_error(wh):
    hook = PaimonSparkJobHook(
        "branch",
        ["delete", "--warehouse", wh.path, "--table", "db.events", "--branch", "nope"],
        secret_options={"s3.secret-key": SECRET},
        name="paimon_tests.failing",
    )
    assert not any(SECRET in part for part in hook.build_command())
    before = wh.files()
    with pytest.raises(PaimonJobInputError, match="nope") as err:
        hook.run()
    assert err.value.exit_code == 2 and err.value.bad_input
    assert str(err.value).startswith("Paimon branch job failed (exit 2): ")
    assert SECRET not in str(err.value)
    assert wh.files() == before
