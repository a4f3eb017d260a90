"""PaimonLineageHook and the delete operators with real Airflow and real stores.

Connections come from ``AIRFLOW_CONN_*`` environment variables; the operators run
their ``execute`` directly (no scheduler), against SQLite, MariaDB and PostgreSQL.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile

import pytest

# Airflow reads its configuration on first import: keep it out of ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="paimon-lineage-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.hooks.lineage import PaimonLineageHook, url_from_connection
from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.operators.lineage import (
    DeleteDataLineageOperator,
    DeleteTableLineageOperator,
)

pytestmark = pytest.mark.airflow
SECRET = "n0t-In-L0gs"


def connection_for(target) -> dict:
    """An Airflow connection (JSON form) for a test target, in host/port/... form."""
    if target.backend == "sqlite":
        return {"conn_type": "paimon_lineage", "extra": {"backend": "sqlite",
                                                         "path": target.url[len("sqlite:///"):]}}
    from sqlalchemy.engine import make_url

    url = make_url(target.url)
    return {"conn_type": "paimon_lineage", "host": url.host, "port": url.port, "login": url.username,
            "schema": url.database, "extra": {"backend": target.backend, "database": target.database}}


def test_connection_fields_map_to_a_url():
    url, database = url_from_connection("db", 3307, "u", "p@ss", "meta", {"database": "lin"})
    assert url.render_as_string(hide_password=False) == "mysql+pymysql://u:p%40ss@db:3307/meta"
    assert database == "lin"
    assert SECRET not in str(url_from_connection("h", None, "u", SECRET, None, {"backend": "postgresql"})[0])
    url, database = url_from_connection(None, None, "u", "pw", None, {"url": "postgresql://h/x"})
    assert (url.drivername, url.username, url.password, database) == ("postgresql+psycopg2", "u", "pw", "paimon")
    url, _ = url_from_connection(None, None, None, None, None, {"backend": "sqlite", "path": "/tmp/x.sqlite"})
    assert url.database == "/tmp/x.sqlite"


def test_operators_delete_a_jobs_lineage_through_a_real_connection(target, monkeypatch, caplog):
    with LineageStore.from_url(target.url, target.database) as store:
        store.record_batch("dag.clean", 1, [SnapshotRef("ods", "raw", 1)], [SnapshotRef("dwd", "orders", 11)])
        store.record_batch("dag.clean", 2, [SnapshotRef("ods", "raw", 2)], [SnapshotRef("dwd", "orders", 12)])
        store.record_batch("dag.agg", 1, [SnapshotRef("dwd", "orders", 11)], [SnapshotRef("dws", "daily", 1)])
    monkeypatch.setenv("AIRFLOW_CONN_LINEAGE_TEST", json.dumps(connection_for(target)))
    caplog.set_level(logging.INFO)

    data = DeleteDataLineageOperator(task_id="d", job="dag.clean", lineage_conn_id="lineage_test")
    assert data.execute(context={}) == 4
    assert data.execute(context={}) == 0  # nothing left: still a success
    table = DeleteTableLineageOperator(task_id="t", job="dag.clean", lineage_conn_id="lineage_test")
    assert table.execute(context={}) == 2
    with LineageStore.from_url(target.url, target.database) as store:
        assert {e.job for e in store.source_data_lineages()} == {"dag.agg"}
        assert {e.job for e in store.sink_table_lineages()} == {"dag.agg"}
    assert DeleteTableLineageOperator.template_fields == ("job",)

    blank = DeleteDataLineageOperator(task_id="b", job="  ", lineage_conn_id="lineage_test")
    with pytest.raises(AirflowFailException, match="job"):
        blank.execute(context={})


@pytest.mark.mysql
def test_hook_with_password_keeps_it_out_of_logs_and_errors(monkeypatch, caplog):
    conn = {"conn_type": "paimon_lineage", "host": "127.0.0.1", "port": 1, "login": "root",
            "password": SECRET, "extra": {"backend": "mysql"}}
    monkeypatch.setenv("AIRFLOW_CONN_LINEAGE_DOWN", json.dumps(conn))
    caplog.set_level(logging.DEBUG)
    hook = PaimonLineageHook(lineage_conn_id="lineage_down")
    assert SECRET not in str(hook.get_url()) and hook.get_url().password == SECRET
    ok, message = hook.test_connection()
    assert not ok and "cannot reach lineage store" in message and SECRET not in message
    op = DeleteDataLineageOperator(task_id="x", job="j", lineage_conn_id="lineage_down")
    with pytest.raises(Exception) as info:  # noqa: PT011 - any error: the test is about what it shows
        op.execute(context={})
    assert SECRET not in str(info.value) + repr(info.value) + caplog.text
    assert "root:***@127.0.0.1:1" in str(info.value)
