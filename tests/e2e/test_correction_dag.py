"""The data-correction DAG end to end: ``dag.test()`` with its Spark jobs on a real server.

Its Spark jobs are the cost here (tag and branch in the failed run; corrected job,
replace-main and the clean-up delete in its rerun), so there is one good run, the
rerun, and it runs them on the suite's Spark Connect server (the DAG's spark-submit
path runs in test_correction_real_airflow.py and test_correction_dag_s3.py); bad
params fail at ``validate`` before any job runs. The buggy "before" state is written
with pypaimon (see conftest).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from dag_run_results import files_by_size, task_states, task_xcom
from support.orders import DAGS, ORDERS, VENV_BIN


def _load_dag():
    """A fresh DAG object: ``dag.test(run_conf=...)`` leaves that conf in the DAG's params,
    so reusing one object lets a run inherit the previous test's params."""
    import importlib

    import data_correction

    return importlib.reload(data_correction).dag


def test_correction_dag_rerun_after_a_failed_job_replaces_main(
    orders_warehouse, connect_server, airflow_db, tmp_path, monkeypatch
):
    """A run whose corrected job fails, then the rerun with ``if_exists="skip"`` that finishes.

    The first run's failure is forced (no job runs for it): the corrected job raises, and
    its sensor, which would wait for a job that never starts until its timeout, too.

    The DAG's Spark jobs run on the suite's Spark Connect server here (``spark_default``
    is a ``spark_connect`` connection): the correction over Connect, end to end. The same
    DAG's spark-submit path runs in tests/e2e/test_correction_real_airflow.py (real
    scheduler) and tests/e2e/test_correction_dag_s3.py (an S3 warehouse).
    """
    from urllib.parse import urlparse

    from airflow.sdk.exceptions import AirflowException
    from correction_tasks import load_job_module, paimon_hook_for, read_rows

    from airflow_provider_paimon.lineage import LineageStore
    from airflow_provider_paimon.lineage.queries import upstream
    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
    from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

    lineage_url = f"sqlite:///{tmp_path / 'lineage.db'}"
    hook = paimon_hook_for(orders_warehouse)
    job = load_job_module("enrich_orders")
    assert job.verify(ORDERS, read_rows(hook, "db.orders_enriched")), "main starts out buggy"
    main_before = hook.get_latest_snapshot_id("db.orders_enriched")
    conf = {
        "warehouse": orders_warehouse,
        "lineage_url": lineage_url,
        "branch": "fix1",
        "tag": "before_fix1",
        "backup_name": "main_before_fix1",
        "cleanup": True,
    }

    server = urlparse(connect_server.url.replace("sc://", "http://"))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark_connect", "host": server.hostname, "port": server.port, "login": "correction-e2e"}))

    def fails(self, context):
        raise AirflowException(f"forced failure of {self.task_id}")

    with monkeypatch.context() as forced:
        forced.setattr(PaimonSparkSubmitOperator, "execute", fails)
        forced.setattr(SnapshotCatchUpSensor, "execute", fails)
        failed = _load_dag().test(run_conf=conf)
    states = task_states(failed)
    assert failed.state == "failed", states
    assert (states["tag_main"], states["create_branch"], states["run_corrected_job"]) == (
        "success", "success", "failed"
    ), states
    assert states["replace_main"] == "upstream_failed", states
    hook = paimon_hook_for(orders_warehouse)
    assert hook.tag_exists("db.orders_enriched", "before_fix1") and hook.branch_exists("db.orders_enriched", "fix1")
    assert hook.get_latest_snapshot_id("db.orders_enriched") == main_before

    # the same conf again is refused at validate (tag and branch exist), nothing changed
    before = files_by_size(orders_warehouse)
    refused = _load_dag().test(run_conf=conf)
    assert refused.state == "failed" and task_states(refused)["validate"] == "failed"
    assert files_by_size(orders_warehouse) == before

    run = _load_dag().test(run_conf={**conf, "if_exists": "skip"})
    states = task_states(run)
    assert run.state == "success", states
    assert states.pop("alter_branch") == "skipped", states  # no branch_schema_changes
    assert all(s == "success" for s in states.values()), states
    assert task_xcom(run, "tag_main")["skipped"] is True and task_xcom(run, "create_branch")["skipped"] is True

    hook = paimon_hook_for(orders_warehouse)
    rows = read_rows(hook, "db.orders_enriched")
    assert job.verify(ORDERS, rows) == []
    assert sorted(r["amount"] for r in rows) == [9.99, 12.5, 250.0, 1800.0]
    branches = hook.list_branches("db.orders_enriched")
    assert "main_before_fix1" in branches and "fix1" not in branches  # backup kept, branch cleaned
    old_main = read_rows(hook, "db.orders_enriched", "main_before_fix1")
    assert job.verify(ORDERS, old_main), "the backup holds the old (buggy) main"
    assert hook.tag_exists("db.orders_enriched", "before_fix1")
    assert hook.get_latest_snapshot_id("db.orders_enriched") > main_before

    job_result = task_xcom(run, "run_corrected_job")
    assert job_result["lineage"] == "capture", job_result  # the Spark-side capture recorded it
    assert job_result["mode"] == "stream" and job_result["micro_batches"] >= 1, job_result
    assert job_result["branch"] == "fix1" and job_result["source_snapshot_id"] == 1
    # the branch started as a copy of the buggy main: the job's first run emptied it
    assert job_result["emptied_branch_snapshot_id"] is not None, job_result
    assert job_result["rows_read"] == len(ORDERS) and job_result["rows"] == len(ORDERS)
    caught_up = task_xcom(run, "wait_catch_up")
    assert caught_up["caught_up"] is True
    assert [(s["source"], s["consumed_snapshot_id"], s["latest_snapshot_id"]) for s in caught_up["sources"]] == [
        ("db.orders", 1, 1)
    ]
    cleaned = task_xcom(run, "delete_checkpoint")
    assert cleaned["deleted"] is True and not Path(cleaned["checkpoint"]).exists()
    assert cleaned["checkpoint"] == f"{orders_warehouse}/_checkpoints/db.orders_enriched/fix1"

    with LineageStore.from_url(lineage_url) as store:
        sources = store.source_data_lineages(job="enrich_orders.fixed.fix1")
        sinks = store.sink_data_lineages(job="enrich_orders.fixed.fix1")
        replaced = task_xcom(run, "replace_main")
        (link,) = upstream(store, "db", "orders_enriched", replaced["main_snapshot_id"], depth=2)[:1]
        deeper = upstream(store, "db", "orders_enriched", replaced["main_snapshot_id"], depth=2)[1:]
    assert [(s.table, s.snapshot_id, s.branch) for s in sources] == [("orders", 1, "main")]
    assert [(s.table, s.branch) for s in sinks] == [("orders_enriched", "fix1")]
    # lineage follows replace-main: main's new snapshot <- the branch's <- the source
    assert (link.branch, link.snapshot_id, link.job) == ("fix1", replaced["branch_snapshot_id"], "paimon.replace_main")
    assert [(n.table, n.branch, n.snapshot_id) for n in deeper] == [("orders", "main", 1)]


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"table": "db.nope"}, "table: "),
        ({"source_table": "nodb.orders"}, "source_table: "),
        ({"branch": "existing"}, "branch 'existing' already exists"),
        ({"branch": "main"}, "main"),
        ({"tag": "before_correction_1"}, "tag 'before_correction_1' already exists"),
        ({"job": "enrich_orderz"}, "no job 'enrich_orderz'"),
        ({"job": "../etl"}, "not a Python identifier"),
        ({"max_lag": -1}, "max_lag"),
        ({"checkpoint": "__EXISTING__"}, "already exists (left by an earlier correction"),
        ({"checkpoint": "__EXISTING__", "if_exists": "skip"}, "exists but branch 'correction' does not"),
        ({"if_exists": "maybe"}, "if_exists must be one of fail, skip"),
        ({"backup_name": "existing"}, "backup branch 'existing' already exists"),
        ({"tag": "bad/tag"}, "tag_main: "),
        ({"lineage_url": "not a url"}, "lineage_url"),
    ],
)
def test_validate_names_the_bad_param(orders_warehouse, conf, message):
    """The validate task: the DAG's params, then every Paimon task's own preflight."""
    from airflow.sdk.exceptions import AirflowFailException
    from data_correction import validate_run

    _existing_branch_and_tag(orders_warehouse)
    if conf.get("checkpoint") == "__EXISTING__":
        conf = {**conf, "checkpoint": orders_warehouse}  # any folder that exists
    params = {**_default_params(), "warehouse": orders_warehouse, **conf}
    before = files_by_size(orders_warehouse)
    with pytest.raises(AirflowFailException, match=r"invalid params|Paimon task") as err:
        validate_run(params, {"params": params})
    assert message in str(err.value)
    assert "nothing was changed" in str(err.value)
    assert files_by_size(orders_warehouse) == before


def test_validate_checks_every_paimon_task_against_the_planned_warehouse(orders_warehouse):
    """create_branch needs the tag tag_main makes, replace_main the branch: both only planned."""
    from data_correction import validate_run

    params = {**_default_params(), "warehouse": orders_warehouse, "cleanup": True}
    result = validate_run(params, {"params": params})
    assert [(c["task_id"], c["preflight"]) for c in result["preflight"]] == [
        ("tag_main", "submit"), ("create_branch", "submit"), ("replace_main", "submit"), ("delete_branch", "submit"),
    ]
    # every problem at once, named by its task
    _existing_branch_and_tag(orders_warehouse)
    params = {**params, "branch": "existing", "tag": "before_correction_1", "backup_name": "existing"}
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException) as err:
        validate_run(params, {"params": params})
    text = str(err.value)
    assert text.startswith("3 Paimon task(s) would fail; nothing was changed")
    for expected in ("tag_main: tag 'before_correction_1' already exists",
                     "create_branch: branch 'existing' already exists",
                     "replace_main: backup branch 'existing' already exists"):
        assert expected in text


def test_optional_schema_change_on_the_branch(orders_warehouse):
    """branch_schema_changes: validate preflights alter_branch (against main's schema, the
    branch being planned), the step runs only when the list is non-empty, and the rendered
    operator alters the branch alone (plain pypaimon reads it); a refused change fails
    validate with nothing changed."""
    from airflow.sdk.exceptions import AirflowFailException
    from data_correction import validate_run
    from pypaimon import CatalogFactory

    dag = _load_dag()
    add = [{"op": "add_column", "name": "discount", "type": "DOUBLE", "if_not_exists": True}]
    params = {**_default_params(), "warehouse": orders_warehouse, "branch_schema_changes": add}
    result = validate_run(params, {"params": params}, dag.tasks)
    assert ("alter_branch", "submit") in [(c["task_id"], c["preflight"]) for c in result["preflight"]]
    plain = validate_run({**params, "branch_schema_changes": []}, {"params": params}, dag.tasks)
    assert "alter_branch" not in [c["task_id"] for c in plain["preflight"]]
    wanted = dag.get_task("schema_change_wanted").python_callable
    assert wanted(params=params) is True and wanted(params={**params, "branch_schema_changes": []}) is False
    for task_id in ("run_corrected_job", "wait_catch_up"):
        task = dag.get_task(task_id)
        assert task.trigger_rule == "none_failed" and {"create_branch", "alter_branch"} <= task.upstream_task_ids

    before = files_by_size(orders_warehouse)
    bad = {**params, "branch_schema_changes": [{"op": "drop_column", "name": "nope"}]}
    with pytest.raises(AirflowFailException, match=r"alter_branch: .*nope"):
        validate_run(bad, {"params": bad}, dag.tasks)
    assert files_by_size(orders_warehouse) == before

    catalog = CatalogFactory.create({"warehouse": orders_warehouse})
    table = catalog.get_table("db.orders_enriched")
    table.create_tag("t0")
    table.branch_manager().create_branch(params["branch"], "t0")
    op = dag.get_task("alter_branch")
    op.render_template_fields({"params": params})
    assert op.execute({})["new_schema_id"] == 1
    main_fields = catalog.get_table("db.orders_enriched").field_names
    branch = catalog.get_table(f"db.orders_enriched$branch_{params['branch']}")
    assert branch.field_names == [*main_fields, "discount"]
    rb = branch.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert rows and all(r["discount"] is None for r in rows)


def _default_params() -> dict:
    return {k: getattr(v, "value", v) for k, v in _load_dag().params.items()}


def _existing_branch_and_tag(warehouse: str) -> None:
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table("db.orders_enriched")
    table.branch_manager().create_branch("existing")
    table.create_tag("before_correction_1")


def test_bad_params_run_fails_at_the_first_task_and_changes_nothing(orders_warehouse, airflow_db):
    _existing_branch_and_tag(orders_warehouse)
    before = files_by_size(orders_warehouse)

    run = _load_dag().test(run_conf={"warehouse": orders_warehouse, "branch": "existing"})
    states = task_states(run)
    assert run.state == "failed"
    assert states["validate"] == "failed", states
    assert all(s == "upstream_failed" for t, s in states.items() if t != "validate"), states
    assert files_by_size(orders_warehouse) == before


def _json_line(stdout: str) -> list:
    """The CLI's JSON output: the last line that is a JSON list (log lines come first)."""
    lines = [line for line in stdout.splitlines() if line.startswith("[") and not line.startswith("[warn")]
    assert lines, stdout[-2000:]
    return json.loads(lines[-1])


def test_every_dag_imports_without_errors(airflow_db):
    env = dict(os.environ, AIRFLOW__CORE__DAGS_FOLDER=str(DAGS))
    airflow = os.path.join(VENV_BIN, "airflow")
    out = subprocess.run(
        [airflow, "dags", "list-import-errors", "--local", "-o", "json"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    errors = _json_line(out.stdout)
    assert errors == [], errors
    listed = subprocess.run(
        [airflow, "dags", "list", "--local", "-o", "json"],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    )
    ids = {d["dag_id"] for d in _json_line(listed.stdout)}
    assert {"paimon_data_correction", "paimon_etl_original"} <= ids
