"""Secrets stay out of Airflow's metadata database: the ``trigger`` and rendered-fields rows.

A real Airflow run (``dag.test()`` on the session's SQLite metadata DB: the task SDK,
its in-process execution API, the trigger run in line) of a DAG whose tasks get the
lineage store's password and a catalog secret the ways users give them: through
connections, and through Variables templated into ``lineage_url`` and
``warehouse_options``. Then the ``trigger`` and ``rendered_task_instance_fields`` rows
are read back with SQL and searched for the secrets.

The lineage store is a fresh PostgreSQL database (trust auth: the password in the URL
is accepted and ignored, so it can be any string the test can look for).
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

JOB = "secrets.run_fixed"
DAG_ID = "paimon_secrets_in_metadata"
LINEAGE_PASSWORD = "LineagePw7f3a9c21"
CATALOG_SECRET = "CatalogSecret5d8e0b44"
CONN_CATALOG_SECRET = "ConnCatalogSecret91c2"

DAG_SOURCE = '''
from airflow.sdk import DAG

from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

with DAG({dag_id!r}, schedule=None) as dag:
    # secrets in connections: only the conn ids may reach the trigger row
    SnapshotCatchUpSensor(
        task_id="wait_conn", table="db.sink", job={job!r}, paimon_conn_id="wh_secret",
        lineage_conn_id="lineage_secret", deferrable=True, poke_interval=0.2, timeout=2,
        soft_fail=True,
    )
    # secrets in Variables templated into the fields
    SnapshotCatchUpSensor(
        task_id="wait_var", table="db.sink", job={job!r}, warehouse={warehouse!r},
        lineage_url="{{{{ var.value.paimon_lineage_url }}}}",
        warehouse_options={{
            "s3.secret-key": "{{{{ var.value.paimon_catalog_value }}}}",
            "header.Authorization": "Bearer {{{{ var.value.paimon_catalog_value }}}}",
        }},
        deferrable=True, poke_interval=0.2, timeout=2,
    )
    # fails at once (no such application): only its rendered fields matter here
    PaimonSparkSubmitOperator(
        task_id="submit", application="/nonexistent/paimon_job.py",
        lineage_url="{{{{ var.value.paimon_lineage_url }}}}",
    )
    # a mapped task renders through the unmapped copy: masked the same way
    PaimonSparkSubmitOperator.partial(
        task_id="submit_mapped", application="/nonexistent/paimon_job.py",
    ).expand(lineage_url=["{{{{ var.value.paimon_lineage_url }}}}"])
'''


@pytest.fixture
def lineage_db(postgres_server_url: str, unique_name: str):
    """A fresh PostgreSQL database for the lineage store; its URL carries the password."""
    import sqlalchemy as sa

    admin = sa.create_engine(postgres_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{unique_name}"'))
    url = sa.engine.make_url(postgres_server_url).set(database=unique_name, password=LINEAGE_PASSWORD)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{unique_name}" WITH (FORCE)'))
        admin.dispose()


def _load_dag(source: str):
    folder = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{DAG_ID}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(DAG_ID, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def _metadata_rows():
    """Every trigger row (raw columns and decrypted kwargs) and our rendered-fields rows."""
    import sqlalchemy as sa
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session

    with create_session() as session:
        raw_triggers = [tuple(r) for r in session.execute(sa.text("SELECT * FROM trigger")).all()]
        triggers = [(t.classpath, t.kwargs) for t in session.scalars(sa.select(Trigger)).all()]
        rendered = {
            task_id: json.loads(fields) if isinstance(fields, str) else fields
            for task_id, fields in session.execute(
                sa.text("SELECT task_id, rendered_fields FROM rendered_task_instance_fields WHERE dag_id = :d"),
                {"d": DAG_ID},
            ).all()
        }
    return raw_triggers, triggers, rendered


def test_trigger_and_rendered_fields_rows_hold_no_secret(tables, lineage_db, airflow_db, monkeypatch):
    from airflow_provider_paimon.lineage.entities import SnapshotRef
    from airflow_provider_paimon.lineage.store import LineageStore

    tables.create("db.src")
    tables.create("db.sink")
    tables.append("db.src")
    tables.append("db.src")
    tables.append("db.sink")
    store = LineageStore.from_url(lineage_db)
    store.record_batch(JOB, 0, sources=[SnapshotRef("db", "src", 1)], sinks=[SnapshotRef("db", "sink", 1)])
    store.close()  # consumed 1 of 2: the sensors defer

    monkeypatch.setenv("AIRFLOW_VAR_PAIMON_LINEAGE_URL", lineage_db)
    monkeypatch.setenv("AIRFLOW_VAR_PAIMON_CATALOG_VALUE", CATALOG_SECRET)
    monkeypatch.setenv("AIRFLOW_CONN_LINEAGE_SECRET", json.dumps(
        {"conn_type": "paimon_lineage", "extra": {"url": lineage_db}}))
    monkeypatch.setenv("AIRFLOW_CONN_WH_SECRET", json.dumps(
        {"conn_type": "paimon", "host": tables.warehouse, "extra": {"s3.secret-key": CONN_CATALOG_SECRET}}))

    dag = _load_dag(DAG_SOURCE.format(dag_id=DAG_ID, job=JOB, warehouse=tables.warehouse))
    run = dag.test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}

    raw_triggers, triggers, rendered = _metadata_rows()
    dump = repr(raw_triggers) + repr(triggers) + json.dumps(rendered, default=str)
    for secret in (LINEAGE_PASSWORD, CATALOG_SECRET, CONN_CATALOG_SECRET):
        assert secret not in dump, f"{secret} is stored in Airflow's metadata database"

    # the connection-based sensor really deferred: its trigger row names conn ids only
    ours = [kw for path, kw in triggers if path.endswith("SnapshotCatchUpTrigger")
            and kw.get("check", {}).get("lineage_conn_id") == "lineage_secret"]
    assert ours, f"no trigger row for wait_conn: {triggers}"
    assert ours[0]["check"]["paimon_conn_id"] == "wh_secret" and ours[0]["check"]["lineage_url"] is None
    assert states["wait_conn"] == "skipped"  # soft_fail after the trigger's timeout event

    # the Variable-based sensor refused to defer (it would store the password) and failed
    assert states["wait_var"] == "failed"
    assert not [kw for path, kw in triggers if "paimon_lineage_url" in json.dumps(kw)
                or (kw.get("check", {}).get("warehouse") == tables.warehouse and kw["check"].get("lineage_url"))]

    # the rendered fields were stored, masked
    assert rendered["wait_var"]["lineage_url"] == "***"
    assert "***" in json.dumps(rendered["wait_var"]["warehouse_options"])
    assert rendered["submit"]["lineage_url"] == "***"
    assert rendered["submit_mapped"]["lineage_url"] == "***"
    assert rendered["wait_conn"]["lineage_conn_id"] == "lineage_secret"  # non-secrets stay readable
