"""The lineage page's JSON API, served in-process with a real SQLite store."""

from __future__ import annotations

import pytest
from fastapi import Header, HTTPException
from fastapi.testclient import TestClient

from airflow_provider_paimon.lineage import LineageStore
from airflow_provider_paimon.plugins.lineage_api import create_app

from .seed import seed_chain


def _user(authorization: str | None = Header(default=None)) -> str:
    """Stands in for Airflow's get_user: any bearer token is a user, none is 401."""
    if not authorization:
        raise HTTPException(status_code=401, detail="Not authenticated")
    return "someone"


@pytest.fixture()
def client(tmp_path):
    url = f"sqlite:///{tmp_path / 'lineage.db'}"
    seed_chain(url)
    with LineageStore.from_url(url, read_only=True) as store:
        app = create_app(lambda: store, _user)
        yield TestClient(app, headers={"Authorization": "Bearer t"})


def test_no_data_without_a_user(client):
    anonymous = TestClient(client.app)
    for path in ("/", "/api/graph", "/api/snapshots/dw/orders/11", "/api/impact/raw/events/1"):
        assert anonymous.get(path).status_code == 401, path


def test_graph_lists_jobs_tables_and_branches(client):
    g = client.get("/api/graph").json()
    assert g["jobs"] == ["daily", "ingest", "ingest_fix"]
    assert {"database": "dw", "table": "orders", "branch": "fix"} in g["tables"]
    kinds = {(e["job"], e["table"], e["kind"]) for e in g["edges"]}
    assert ("daily", "orders", "source") in kinds and ("daily", "revenue", "sink") in kinds


def test_snapshot_drill_down_over_two_hops(client):
    body = client.get("/api/snapshots/mart/revenue/102", params={"depth": 2}).json()
    assert {(n["table"], n["snapshot_id"], n["depth"]) for n in body["upstream"]} == {
        ("orders", 12, 1),
        ("events", 2, 2),
    }
    assert body["downstream"] == []


def test_impact_of_a_source_snapshot(client):
    body = client.get("/api/impact/raw/events/3").json()
    tables = {(t["database"], t["table"], t["branch"]): t["snapshot_ids"] for t in body["tables"]}
    assert tables == {("dw", "orders", "fix"): [2], ("dw", "orders", "main"): [13], ("mart", "revenue", "main"): [103]}


def test_bad_input_is_a_clear_4xx(client):
    assert client.get("/api/snapshots/dw/orders/-1").status_code == 400
    assert client.get("/api/snapshots/dw/orders/11", params={"depth": 0}).status_code == 422
    assert client.get("/api/snapshots/dw/orders/notanumber").status_code == 422


def test_page_is_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "Paimon lineage" in page.text


def test_plugin_reads_the_lineage_connection(tmp_path, monkeypatch):
    """With a paimon_lineage_default connection the page reads that store (and its database)."""
    import json

    from airflow_provider_paimon.plugins import lineage_plugin

    url = f"sqlite:///{tmp_path / 'conn.db'}"
    seed_chain(url)
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_LINEAGE_DEFAULT", json.dumps({"conn_type": "paimon_lineage", "extra": {"url": url}}))
    monkeypatch.setenv("PAIMON_LINEAGE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    store = lineage_plugin._open_store()
    try:
        assert {t.job for t in store.sink_table_lineages()} == {"ingest", "daily", "ingest_fix"}
    finally:
        store.close()
