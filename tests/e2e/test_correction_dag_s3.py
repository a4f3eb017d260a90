"""The data-correction DAG end to end on an ``s3://`` warehouse (the loopback S3 server).

The same DAG as tests/e2e/test_correction_dag.py, with ``dag.test()`` and real
spark-submits on local Spark, but the tables live in a bucket of the loopback S3 server
and the DAG finds them through the ``paimon_default`` connection (warehouse URI in
Host, access key and secret key in Login and Password, endpoint/region/path-style in
Extra), as ``scripts/demo.sh --warehouse s3`` runs it. The corrected job's streaming
checkpoint stays on local disk (Spark writes checkpoints through Hadoop, which needs
hadoop-aws for ``s3a://``; docs/storage.md). Afterwards the tables read back with plain
pypaimon on S3, lineage links the corrected snapshots, and no output, XCom or rendered
field shows the secret.
"""

from __future__ import annotations

import json

import pytest
from dag_run_results import task_states, task_xcom
from orders_tables import SINK, create_orders_tables
from support.orders import ORDERS
from support.pypaimon_writes import commit_rows

pytestmark = [pytest.mark.spark, pytest.mark.airflow]


def _load_dag():
    import importlib

    import data_correction

    return importlib.reload(data_correction).dag


def test_correction_dag_on_s3_replaces_main(s3_warehouse, airflow_db, tmp_path, monkeypatch, capfd):
    from correction_tasks import load_job_module, paimon_hook_for, read_rows
    from s3support import ACCESS_KEY, REGION, SECRET_KEY

    from airflow_provider_paimon.lineage import LineageStore
    from airflow_provider_paimon.lineage.queries import upstream

    job = load_job_module("enrich_orders")
    catalog = create_orders_tables(s3_warehouse.uri, ORDERS, s3_warehouse.options)
    commit_rows(catalog.get_table("db.orders_enriched"), [job.enrich_row(r, "buggy") for r in ORDERS], SINK)
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({
        "conn_type": "paimon", "host": s3_warehouse.uri, "login": ACCESS_KEY, "password": SECRET_KEY,
        "extra": {"endpoint": s3_warehouse.server.endpoint, "region": REGION, "path-style-access": "true"},
    }))
    hook = paimon_hook_for(None)  # the connection's warehouse, as the DAG resolves it
    assert hook.warehouse == s3_warehouse.uri
    assert job.verify(ORDERS, read_rows(hook, "db.orders_enriched")), "main starts out buggy"
    main_before = hook.get_latest_snapshot_id("db.orders_enriched")
    lineage_url = f"sqlite:///{tmp_path / 'lineage.db'}"
    checkpoint = tmp_path / "checkpoints" / "orders_enriched.fix_s3"

    run = _load_dag().test(run_conf={
        "warehouse": "",  # blank: the paimon_default connection's, with its S3 options
        "lineage_url": lineage_url, "branch": "fix_s3", "tag": "before_fix_s3",
        "backup_name": "main_before_fix_s3", "checkpoint": str(checkpoint), "cleanup": True,
    })
    out = capfd.readouterr()
    states = task_states(run)
    assert run.state == "success", (states, out.err[-3000:])
    assert states.pop("alter_branch") == "skipped", states
    assert all(s == "success" for s in states.values()), states

    # plain pypaimon on S3: main holds the corrected rows, the backup the buggy ones
    from pypaimon import CatalogFactory

    table = CatalogFactory.create(s3_warehouse.catalog_options()).get_table("db.orders_enriched")
    builder = table.new_read_builder()
    main_rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    assert job.verify(ORDERS, main_rows) == []
    assert sorted(r["amount"] for r in main_rows) == [9.99, 12.5, 250.0, 1800.0]
    hook = paimon_hook_for(None)
    branches = hook.list_branches("db.orders_enriched")
    assert "main_before_fix_s3" in branches and "fix_s3" not in branches  # backup kept, branch cleaned
    assert job.verify(ORDERS, read_rows(hook, "db.orders_enriched", "main_before_fix_s3")), "backup: the buggy main"
    assert hook.tag_exists("db.orders_enriched", "before_fix_s3")
    assert hook.get_latest_snapshot_id("db.orders_enriched") > main_before
    keys = s3_warehouse.object_keys()
    assert not any("/branch/branch-fix_s3/" in key for key in keys)  # no prefix left

    job_result = task_xcom(run, "run_corrected_job")
    assert job_result["lineage"] == "capture" and job_result["branch"] == "fix_s3", job_result
    assert job_result["rows_read"] == len(ORDERS) and job_result["rows"] == len(ORDERS)
    assert task_xcom(run, "wait_catch_up")["caught_up"] is True
    with LineageStore.from_url(lineage_url) as store:
        sinks = store.sink_data_lineages(job="enrich_orders.fixed.fix_s3")
        replaced = task_xcom(run, "replace_main")
        link = upstream(store, "db", "orders_enriched", replaced["main_snapshot_id"], depth=2)
    assert [(s.table, s.branch) for s in sinks] == [("orders_enriched", "fix_s3")]
    assert [(n.table, n.branch) for n in link] == [("orders_enriched", "fix_s3"), ("orders", "main")]

    # the credentials reached pypaimon and Spark through the connection only
    import sqlalchemy as sa
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        xcoms = session.execute(sa.select(XComModel.value).where(XComModel.run_id == run.run_id)).all()
        rendered = session.execute(sa.text(
            "SELECT rendered_fields FROM rendered_task_instance_fields WHERE run_id = :r"), {"r": run.run_id}).all()
    assert "spark-submit" in out.out + out.err
    for where, text in {"task output": out.out + out.err, "XCom": repr(xcoms), "rendered fields": repr(rendered)}.items():
        for secret in (SECRET_KEY, ACCESS_KEY):
            assert secret not in text, f"{secret} is in the {where}"
