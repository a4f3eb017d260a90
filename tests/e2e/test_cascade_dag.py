"""The cascade DAG end to end: ``raw -> clean -> mart`` corrected and published as one change.

The original pipeline runs first, in this process, on the shared local Spark session
with the lineage capture on (one capture per job name, as the jobs' own submits would
record them): ingest batch 1, clean (streaming), mart; then a buggy batch 2 and batch
3, clean, mart. So the store says which snapshots read the bad ``ods.raw`` snapshot 2.
Then ``dags/cascade_correction.py`` runs with ``dag.test()`` against real local Spark
(its jobs and audits run on the suite's Spark Connect server, the publish in the worker). Its first run fails at the mart's
job (a failure injected once, after the raw and clean jobs wrote their branches): main
must be untouched; then the failed run is rerun the way Airflow's "Clear" (only failed) does (the
succeeded tasks keep their state and XCom, the failed one and everything after it run
again) and must finish the correction. The references are plain Python:
each table recomputed from scratch on the corrected input (``cascade_chain.reference_*``),
read back with plain pypaimon.

``dwd.clean`` is a primary-key table fed with the raw events' updates and deletes
(``sequence.field``, row kinds), the others are append tables: the correction, the
catch-up waits, the audit and the publish (replace-main) run on both kinds, and the
primary-key table's main, branch and backup are also read with pypaimon-rust.
"""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from dag_run_results import rerun_failed_tasks, table_rows, task_states, task_xcom
from independent_reader import require, rust_rows

pytestmark = [pytest.mark.spark, pytest.mark.airflow]

SORT = {"ods.raw": "seq", "dwd.clean": "order_id", "ads.mart": "customer"}
CLEAN_COLUMNS = ("order_id", "customer", "amount_cents", "large", "seq", "kind")


def _load():
    import importlib

    import cascade_correction
    from jobs import cascade_chain

    return importlib.reload(cascade_correction).dag, cascade_chain


def rows(warehouse: str, name: str, branch: str | None = None) -> list[dict]:
    """A table read with plain pypaimon (the reference reader)."""
    return table_rows(warehouse, name, SORT[name], branch)


def check_clean_with_rust(warehouse: str, branch: str | None, expected: list[dict]) -> None:
    """The primary-key table read by pypaimon-rust (shares no code with pypaimon) holds ``expected``."""
    want = sorted((tuple(r[c] for c in CLEAN_COLUMNS) for r in expected), key=repr)
    assert rust_rows(warehouse, "dwd.clean", branch=branch) == want, branch


@contextlib.contextmanager
def captured(spark, url: str, job: str, spool):
    """The lineage capture on ``spark`` for one job, closed (and drained) afterwards."""
    from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture

    conf = {
        "spark.paimon.lineage.url": url,
        "spark.paimon.lineage.job": job,
        "spark.paimon.lineage.spoolDir": str(spool),
        "spark.paimon.lineage.pollIntervalMs": "100",
    }
    for key, value in conf.items():
        spark.conf.set(key, value)
    capture = enable_lineage_capture(spark, force=False)
    try:
        yield capture
    finally:
        capture.close()
        for key in conf:
            spark.conf.unset(key)


def run_original_pipeline(spark, chain, warehouse: str, url: str, tmp_path) -> None:
    checkpoint = str(tmp_path / "checkpoints" / "clean-main")

    def step(job: str, action) -> None:
        with captured(spark, url, job, tmp_path / f"spool-{job}") as capture:
            before = capture.recorder.delivered
            action()
            deadline = time.monotonic() + 60
            while capture.recorder.delivered <= before and time.monotonic() < deadline:
                time.sleep(0.2)

    step("pipeline.ingest", lambda: chain.ingest(spark, warehouse, 1, "buggy"))  # raw@1
    step("pipeline.clean", lambda: chain.clean(spark, warehouse, checkpoint))  # clean@1
    step("pipeline.mart", lambda: chain.mart(spark, warehouse))  # mart@1
    step("pipeline.ingest", lambda: chain.ingest(spark, warehouse, 2, "buggy"))  # raw@2: the bad batch
    step("pipeline.ingest", lambda: chain.ingest(spark, warehouse, 3, "buggy"))  # raw@3
    step("pipeline.clean", lambda: chain.clean(spark, warehouse, checkpoint))  # clean@2, read raw (1, 3]
    step("pipeline.mart", lambda: chain.mart(spark, warehouse))  # mart@2


def test_cascade_fails_reruns_and_corrects_raw_clean_and_mart_as_one_change(
    spark, connect_server, airflow_db, tmp_path, monkeypatch
):
    from urllib.parse import urlparse

    from airflow_provider_paimon.lineage import LineageStore
    from airflow_provider_paimon.lineage.queries import upstream
    from airflow_provider_paimon.spark import register

    require()
    dag, chain = _load()
    warehouse = str(tmp_path / "warehouse")
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    chain.create_tables(warehouse)
    register(spark)
    run_original_pipeline(spark, chain, warehouse, url, tmp_path)

    buggy_raw = [r for b in (1, 2, 3) for r in chain.batch_rows(b, "buggy")]
    assert rows(warehouse, "ods.raw") == sorted(buggy_raw, key=lambda r: r["seq"])
    old = {name: rows(warehouse, name) for name in SORT}
    buggy_clean = chain.reference_clean(buggy_raw)
    # the primary-key table took the events' updates and deletes (202 deleted, 201 and 101 updated)
    assert old["dwd.clean"] == buggy_clean and 202 not in {r["order_id"] for r in buggy_clean}
    check_clean_with_rust(warehouse, None, buggy_clean)
    assert old["ads.mart"] == chain.reference_mart(buggy_clean)  # main is wrong

    conf = {
        "snapshot_id": 2, "correction": "fix", "reingest_batches": "2,3", "warehouse": warehouse,
        "lineage_url": url, "checkpoint_root": str(tmp_path / "checkpoints"),
    }
    # the DAG's Spark jobs and audits run on the suite's Spark Connect server (the
    # operators' spark_connect path; the correction DAG's tests run them as spark-submits)
    server = urlparse(connect_server.url.replace("sc://", "http://"))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark_connect", "host": server.hostname, "port": server.port, "login": "cascade-e2e"}))
    flag = tmp_path / "fail-mart-once"
    flag.write_text("")
    monkeypatch.setenv(chain.FAIL_ONCE_ENV, f"mart:{flag}")
    failed = dag.test(run_conf=conf)
    states = task_states(failed)
    assert failed.state == "failed", states
    assert states["cascade.run_ads__mart"] == "failed", states
    assert states["cascade.run_dwd__clean"] == "success", states  # the branches were written
    assert states["cascade.publish"] == "upstream_failed", states
    assert not flag.exists()
    for name in SORT:
        assert rows(warehouse, name) == old[name], name  # nothing published

    # Rerun as Airflow's "Clear failed tasks" does: the succeeded tasks keep state and XCom
    succeeded = {task for task, state in states.items() if state == "success"}
    assert {"cascade.plan", "cascade.branch", "cascade.run_ods__raw"} <= succeeded, states
    run = rerun_failed_tasks(dag, failed)
    states = task_states(run)
    assert run.state == "success", states

    plan = task_xcom(run, "cascade.plan")
    assert [(t["name"], t["branch_point"]) for t in plan] == [("ods.raw", 1), ("dwd.clean", 1), ("ads.mart", 1)]

    # every table equals a from-scratch recomputation on the corrected input
    fixed_raw = [r for b in (1, 2, 3) for r in chain.batch_rows(b, "fixed")]
    fixed_clean = chain.reference_clean(fixed_raw)
    expected = {
        "ods.raw": sorted(fixed_raw, key=lambda r: r["seq"]),
        "dwd.clean": sorted(fixed_clean, key=lambda r: r["order_id"]),
        "ads.mart": chain.reference_mart(fixed_clean),
    }
    for name in SORT:
        assert rows(warehouse, name) == expected[name], name
        assert rows(warehouse, name, "fix") == expected[name], name
        assert rows(warehouse, name, "before_fix") == old[name], name  # the old main, kept
    assert fixed_clean != buggy_clean
    for branch, want in ((None, fixed_clean), ("fix", fixed_clean), ("before_fix", buggy_clean)):
        check_clean_with_rust(warehouse, branch, want)

    published = task_xcom(run, "cascade.publish")
    assert [e["table"] for e in published["tables"]] == ["ods.raw", "dwd.clean", "ads.mart"]
    audit = task_xcom(run, "cascade.audit_ads__mart")
    assert audit["passed"] is True

    # lineage: the corrected snapshots read the corrected upstream branches ...
    with LineageStore.from_url(url) as store:
        mart_fix = published["tables"][2]["branch_snapshot_id"]
        (up,) = [n for n in upstream(store, "ads", "mart", mart_fix, branch="fix") if n.table == "clean"]
        assert (up.database, up.branch) == ("dwd", "fix")
        clean_fix = published["tables"][1]["branch_snapshot_id"]
        assert {(n.database, n.table, n.branch) for n in upstream(store, "dwd", "clean", clean_fix, branch="fix")} \
            >= {("ods", "raw", "fix")}
        # ... and each new main snapshot is linked to the branch snapshot it came from
        for entry in published["tables"]:
            db, tbl = entry["table"].split(".")
            linked = upstream(store, db, tbl, entry["main_snapshot_id"])
            assert any(n.branch == "fix" and n.snapshot_id == entry["branch_snapshot_id"] for n in linked), entry

