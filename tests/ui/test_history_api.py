"""The table history page's JSON API, served in-process on a real warehouse (pypaimon tables)."""

from __future__ import annotations

import time

import pytest
from fastapi import Header, HTTPException
from fastapi.testclient import TestClient

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.plugins.history_api import CatalogUnavailableError, create_history_app

from .history_tables import history_scenario, many_snapshots


def _user(authorization: str | None = Header(default=None)) -> str:
    """Stands in for Airflow's get_user: any bearer token is a user, none is 401."""
    if not authorization:
        raise HTTPException(status_code=401, detail="Not authenticated")
    return "someone"


class Source:
    """The warehouse as the plugin's connection would give it."""

    def __init__(self, warehouse: str) -> None:
        self.catalog = open_catalog(warehouse)

    def get_table(self, name: str):
        return load_table(self.catalog, name)

    def list_databases(self):
        return sorted(self.catalog.list_databases())

    def list_tables(self, database: str):
        return sorted(self.catalog.list_tables(database))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("wh"))
    history_scenario(wh)
    many_snapshots(wh, "db.big", 10_000)
    return wh


@pytest.fixture
def client(warehouse):
    app = create_history_app(lambda: Source(warehouse), _user)
    return TestClient(app, headers={"Authorization": "Bearer t"})


def test_no_data_without_a_user(client):
    anonymous = TestClient(client.app)
    for path in ("/", "/api/tables", "/api/history/db/orders", "/openapi.json", "/docs"):
        assert anonymous.get(path).status_code == 401, path


def test_tables_and_history(client):
    assert client.get("/api/tables").json() == {"tables": ["db.big", "db.orders"], "truncated": False}
    h = client.get("/api/history/db/orders").json()
    assert h["table"] == {"database": "db", "table": "orders"}
    assert [lane["name"] for lane in h["lanes"]] == ["main", "bk", "ff", "fix"]
    rows = {(r["lane"], r["snapshot_id"]): r for r in h["rows"]}
    assert rows[("main", 3)]["run"]["dag_id"] == "ingest_dag" and rows[("main", 3)]["spark_app_id"] == "local-3"
    assert rows[("main", 5)]["events"][0]["backup"] == {"kind": "branch", "name": "bk"}
    assert rows[("main", 7)]["tags"] == ["release-1"]
    assert "page" in client.get("/").text.lower()


def test_bad_arguments_are_clear_4xx(client):
    assert client.get("/api/history/db/nope").status_code == 404
    assert "nope" in client.get("/api/history/db/nope").json()["detail"]
    assert client.get("/api/history/db/orders", params={"page": 9}).status_code == 400
    assert client.get("/api/history/db/orders", params={"page_size": 501}).status_code == 422
    assert client.get("/api/history/db/orders", params={"page": -1}).status_code == 422


def test_runs_of_unreadable_dags_are_hidden(warehouse):
    app = create_history_app(lambda: Source(warehouse), _user, lambda: (lambda job: job == "ingest_dag.load"))
    h = TestClient(app, headers={"Authorization": "Bearer t"}).get("/api/history/db/orders").json()
    rows = {(r["lane"], r["snapshot_id"]): r for r in h["rows"]}
    assert rows[("main", 3)]["run"]["dag_id"] == "ingest_dag"
    assert rows[("main", 5)]["run"] == {"hidden": True}  # publish_dag
    assert rows[("fix", 4)]["run"] == {"hidden": True} and rows[("fix", 4)]["spark_app_id"] is None
    assert "publish_dag" not in str(h) and "fix_dag" not in str(h)


def test_unusable_warehouse_is_a_503_without_secrets(warehouse):
    def broken():
        raise CatalogUnavailableError("the 'paimon_default' connection cannot be used (ValueError)")

    c = TestClient(create_history_app(broken, _user), headers={"Authorization": "Bearer t"})
    resp = c.get("/api/history/db/orders")
    assert resp.status_code == 503 and "paimon_default" in resp.json()["detail"]


def test_ten_thousand_snapshots_in_bounded_pages(client):
    started = time.monotonic()
    resp = client.get("/api/history/db/big")
    took = time.monotonic() - started
    print(f"10,000-snapshot table, first page over the API: {took:.2f} s, {len(resp.content)} bytes")
    h = resp.json()
    assert h["total_rows"] == 10_000 and h["pages"] == 50 and len(h["rows"]) == 200
    assert len(resp.content) < 250_000 and took < 10
    last = client.get("/api/history/db/big", params={"page": 49}).json()
    assert [r["snapshot_id"] for r in last["rows"]][-1] == 1


def test_plugin_connection_errors_name_the_connection_not_its_values(monkeypatch, tmp_path):
    import json

    from airflow_provider_paimon.plugins.history_plugin import open_source

    monkeypatch.delenv("AIRFLOW_CONN_PAIMON_DEFAULT", raising=False)
    with pytest.raises(CatalogUnavailableError, match="no 'paimon_default' connection"):
        open_source()
    secret = "sekret-value-123"
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({
        "conn_type": "paimon", "host": str(tmp_path),
        "extra": {"metastore": "jdbc", "uri": f"mysql://u:{secret}@nowhere/db"}}))
    with pytest.raises(CatalogUnavailableError) as err:
        open_source()
    assert "paimon_default" in str(err.value) and secret not in str(err.value)
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon", "host": str(tmp_path)}))
    assert open_source().list_databases() == []
