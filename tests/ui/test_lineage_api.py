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


@pytest.fixture
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
    monkeypatch.setattr(lineage_plugin, "_stores", lineage_plugin.StoreCache())
    try:
        store = lineage_plugin._open_store()
        assert {t.job for t in store.sink_table_lineages()} == {"ingest", "daily", "ingest_fix"}
    finally:
        lineage_plugin._stores.close()


# -- the plugin's store: read-only, one per store, errors on the page ----------------------


@pytest.fixture
def plugin_client(monkeypatch):
    """The app over the plugin's real store resolution (connection, env, default)."""
    from airflow_provider_paimon.plugins import lineage_plugin

    monkeypatch.delenv("AIRFLOW_CONN_PAIMON_LINEAGE_DEFAULT", raising=False)
    monkeypatch.setattr(lineage_plugin, "_stores", lineage_plugin.StoreCache())
    yield TestClient(create_app(lineage_plugin._open_store, _user), headers={"Authorization": "Bearer t"})
    lineage_plugin._stores.close()


def _use_connection(monkeypatch, extra: dict) -> None:
    import json

    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_LINEAGE_DEFAULT", json.dumps({"conn_type": "paimon_lineage", "extra": extra}))


def test_a_page_view_creates_no_sqlite_file(plugin_client, tmp_path, monkeypatch):
    missing = tmp_path / "nothing-here.sqlite"
    monkeypatch.setenv("PAIMON_LINEAGE_URL", f"sqlite:///{missing}")
    resp = plugin_client.get("/api/graph")
    assert resp.status_code == 503 and "does not exist" in resp.json()["detail"]
    assert list(tmp_path.iterdir()) == []


def test_a_page_view_does_not_migrate_a_seed_schema(plugin_client, tmp_path, monkeypatch):
    import sqlalchemy as sa

    from airflow_provider_paimon.lineage import schema

    path = tmp_path / "seed.sqlite"
    engine = sa.create_engine(f"sqlite:///{path}")
    schema.proposal_metadata.create_all(engine)

    def layout() -> dict:
        inspector = sa.inspect(engine)
        return {t: [c["name"] for c in inspector.get_columns(t)] for t in inspector.get_table_names()}

    before = layout()
    monkeypatch.setenv("PAIMON_LINEAGE_URL", f"sqlite:///{path}")
    resp = plugin_client.get("/api/graph")
    assert resp.status_code == 503 and "paimon-lineage init" in resp.json()["detail"]
    assert layout() == before and "schema_version" not in before
    engine.dispose()


@pytest.mark.mysql
def test_a_page_view_creates_no_mysql_database(plugin_client, mysql_server_url, unique_name, monkeypatch):
    import sqlalchemy as sa

    _use_connection(monkeypatch, {"url": mysql_server_url, "database": unique_name})
    resp = plugin_client.get("/api/graph")
    assert resp.status_code == 503 and unique_name in resp.json()["detail"]
    engine = sa.create_engine(mysql_server_url)
    with engine.connect() as conn:
        found = conn.execute(sa.text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :n"),
                             {"n": unique_name}).first()
    engine.dispose()
    assert found is None


@pytest.mark.parametrize(("extra", "says"), [
    ({"url": "oracle://scott@db/orcl"}, "oracle"),
    ({"backend": "mongodb", "path": "x"}, "mongodb"),
    ({"url": "sqlite:////tmp", "database": "bad name; DROP"}, "database"),
    ({"url": "not a url at all"}, "not a url"),
])
def test_a_bad_connection_is_a_clear_503_not_the_default_store(plugin_client, tmp_path, monkeypatch, extra, says):
    fallback = f"sqlite:///{tmp_path / 'fallback.db'}"
    seed_chain(fallback)
    monkeypatch.setenv("PAIMON_LINEAGE_URL", fallback)
    _use_connection(monkeypatch, extra)
    resp = plugin_client.get("/api/graph")
    assert resp.status_code == 503, resp.text
    detail = resp.json()["detail"]
    assert "paimon_lineage_default" in detail and says in detail.lower()


def test_an_unreadable_connection_is_a_503_not_the_default_store(plugin_client, tmp_path, monkeypatch):
    fallback = f"sqlite:///{tmp_path / 'fallback.db'}"
    seed_chain(fallback)
    monkeypatch.setenv("PAIMON_LINEAGE_URL", fallback)
    # Airflow reads it, but its extra is broken (extra_dejson would quietly give {}).
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_LINEAGE_DEFAULT", '{"conn_type": "paimon_lineage", "extra": "{broken"}')
    resp = plugin_client.get("/api/graph")
    assert resp.status_code == 503 and "cannot be read" in resp.json()["detail"]


def test_one_store_and_engine_serve_every_request(plugin_client, tmp_path, monkeypatch):
    from airflow_provider_paimon.plugins import lineage_plugin

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    seed_chain(url)
    monkeypatch.setenv("PAIMON_LINEAGE_URL", url)
    first = lineage_plugin._open_store()
    for _ in range(3):
        assert plugin_client.get("/api/graph").status_code == 200
    assert lineage_plugin._open_store() is first and first.engine is lineage_plugin._open_store().engine
    # one connection per use, none kept open: each decides afresh how to open the file
    # read-only (engine._sqlite_read_only_uri), and none leaves -wal/-shm files behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.db"]


def test_jobs_belong_to_the_longest_dag_id_that_prefixes_them():
    from airflow_provider_paimon.plugins.lineage_plugin import job_filter_for

    known = {"etl", "etl.daily", "other"}
    visible = job_filter_for(False, readable={"etl"}, known=known)
    assert visible("etl.load") and visible("etl.group.task")
    assert not visible("etl.daily.load")  # DAG etl.daily, not etl
    assert not visible("other.x") and not visible("adhoc") and not visible("etlx.load")
    assert job_filter_for(True, readable=set(), known=known) is None


def test_hidden_jobs_are_neither_shown_nor_walked_through(tmp_path):
    url = f"sqlite:///{tmp_path / 'lineage.db'}"
    seed_chain(url)
    with LineageStore.from_url(url, read_only=True) as store:
        app = create_app(lambda: store, _user, lambda: (lambda job: job != "ingest"))
        client = TestClient(app, headers={"Authorization": "Bearer t"})
        assert "ingest" not in client.get("/api/graph").json()["jobs"]
        impact = client.get("/api/impact/raw/events/3").json()
        # ingest is hidden: dw.orders@13 is not reached, nor mart.revenue@103 after it
        assert {(t["table"], t["branch"]) for t in impact["tables"]} == {("orders", "fix")}


# -- snapshot history, graph search and bounds, the cascade plan (issue 18) ----------------


def test_history_lists_a_tables_snapshots_newest_first_with_writers_and_readers(client):
    body = client.get("/api/history/dw/orders").json()
    assert (body["database"], body["table"], body["branch"]) == ("dw", "orders", "main")
    assert [s["snapshot_id"] for s in body["snapshots"]] == [13, 12, 11]
    newest = body["snapshots"][0]
    assert newest["writers"] == [{"job": "ingest", "barrier_id": 3}]
    assert newest["readers"] == [{"job": "daily", "barriers": 1}]
    assert body["next_before"] is None and body["truncated"] is False
    # a table only ever read (no recorded writer) has a history too
    assert [s["snapshot_id"] for s in client.get("/api/history/raw/events").json()["snapshots"]] == [3, 2, 1]
    fix = client.get("/api/history/dw/orders", params={"branch": "fix"}).json()
    assert [(s["snapshot_id"], s["writers"]) for s in fix["snapshots"]] == [(2, [{"job": "ingest_fix", "barrier_id": 1}])]


def test_history_pages_with_before(client):
    first = client.get("/api/history/mart/revenue", params={"limit": 2}).json()
    assert [s["snapshot_id"] for s in first["snapshots"]] == [103, 102] and first["next_before"] == 102
    rest = client.get("/api/history/mart/revenue", params={"limit": 2, "before": 102}).json()
    assert [s["snapshot_id"] for s in rest["snapshots"]] == [101] and rest["next_before"] is None


def test_history_bad_input_and_unknown_table(client):
    unknown = client.get("/api/history/dw/nothing")
    assert unknown.status_code == 404 and "no snapshots of dw.nothing" in unknown.json()["detail"]
    assert client.get("/api/history/dw/orders", params={"branch": "nope"}).status_code == 404
    before = client.get("/api/history/dw/orders", params={"before": -1})
    assert before.status_code == 400 and "before" in before.json()["detail"]
    for limit in (0, 501):
        assert client.get("/api/history/dw/orders", params={"limit": limit}).status_code == 422


def test_history_hides_jobs_the_user_may_not_read(tmp_path):
    url = f"sqlite:///{tmp_path / 'lineage.db'}"
    seed_chain(url)
    with LineageStore.from_url(url, read_only=True) as store:
        app = create_app(lambda: store, _user, lambda: (lambda job: job != "ingest"))
        client = TestClient(app, headers={"Authorization": "Bearer t"})
        snaps = client.get("/api/history/dw/orders").json()["snapshots"]
        assert [(s["snapshot_id"], s["writers"]) for s in snaps] == [(13, []), (12, []), (11, [])]
        # raw.events@1 and @2 were read only by ingest: not listed; @3 by ingest_fix too
        events = client.get("/api/history/raw/events").json()["snapshots"]
        assert [(s["snapshot_id"], s["readers"]) for s in events] == [(3, [{"job": "ingest_fix", "barriers": 1}])]


def test_graph_search_and_job_bound(client):
    found = client.get("/api/graph", params={"q": "REVENUE"}).json()
    assert found["jobs"] == ["daily"] and found["tables"] == [{"database": "mart", "table": "revenue", "branch": "main"}]
    assert client.get("/api/graph", params={"q": "a_b%"}).json()["edges"] == []  # % and _ are literal
    first = client.get("/api/graph", params={"max_jobs": 2}).json()
    assert first["jobs"] == ["daily", "ingest"] and first["truncated"] is True
    assert "more than 2 jobs" in first["truncated_reason"]
    # a job keeps all its edges: ingest's read and both its writes' tables
    assert {(e["table"], e["kind"]) for e in first["edges"] if e["job"] == "ingest"} == {("events", "source"), ("orders", "sink")}
    whole = client.get("/api/graph", params={"max_jobs": 3}).json()
    assert whole["truncated"] is False and whole["truncated_reason"] is None
    blank = client.get("/api/graph", params={"q": " "})
    assert blank.status_code == 400 and "search text" in blank.json()["detail"]
    assert client.get("/api/graph", params={"max_jobs": 0}).status_code == 422


def test_cascade_plan_and_its_errors(client):
    plan = client.get("/api/cascade/raw/events/2").json()
    assert plan["order"] == ["raw.events", "dw.orders$branch_fix", "dw.orders", "mart.revenue"]
    by_name = {t["name"]: t for t in plan["tables"]}
    assert by_name["dw.orders"]["branch_point"] == 11 and by_name["dw.orders"]["jobs"] == ["ingest"]
    assert by_name["dw.orders"]["bad_snapshots"] == [12, 13]
    assert by_name["mart.revenue"]["branch_point"] == 101 and by_name["mart.revenue"]["upstreams"] == ["dw.orders"]
    assert client.get("/api/cascade/raw/events/99").status_code == 404
    assert client.get("/api/cascade/raw/events/-1").status_code == 400
    assert client.get("/api/cascade/raw/events/2", params={"depth": 101}).status_code == 422
    anonymous = TestClient(client.app)
    for path in ("/api/history/dw/orders", "/api/cascade/raw/events/2", "/api/graph?q=x"):
        assert anonymous.get(path).status_code == 401, path


def test_audits_need_the_airflow_metadata_db_and_check_input(client):
    """In-process there is no metadata DB: a clear 503; bad input is refused before that."""
    body = client.get("/api/audits", params={"table": "dw.orders"})
    assert body.status_code == 503 and "metadata database" in body.json()["detail"]
    assert client.get("/api/audits", params={"table": "dw.orders.x"}).status_code == 400
    assert client.get("/api/audits", params={"table": "dw.orders", "limit": 500}).status_code == 422
    assert TestClient(client.app).get("/api/audits", params={"table": "dw.orders"}).status_code == 401


def test_audit_entries_are_bounded_text_whatever_the_xcom_holds():
    from datetime import datetime, timezone

    from airflow_provider_paimon.plugins.audits import (
        MAX_PARTITIONS,
        MAX_TEXT,
        AuditRow,
        audits_answer,
        scan_size,
    )

    def row(value, key="return_value"):
        return AuditRow("d", "r", "t", -1, key, datetime(2026, 1, 1, tzinfo=timezone.utc), value)

    parts = [{"partition": {"dt": i}, "added": i, "removed": True} for i in range(50)]
    rows = [
        row("not json"), row(None), row([1, 2]), row({"table": "db.t", "diff": "x"}),  # not reports: skipped
        row('{"table": "db.t", "passed": "yes", "summary": "' + "s" * 5000 + '", "diff": {"partitions": 3}}'),
        row({"table": "DB.T", "passed": True, "task_failed": True, "diff": {"partitions": parts, "added": 1.5},
             "checks": {"failed": [1]}}, key="paimon_audit:db.t"),
    ]
    answer = audits_answer(rows, "db.t", None, 10)
    long_summary, many = answer["audits"]
    assert long_summary["passed"] is False and len(long_summary["summary"]) == MAX_TEXT
    assert long_summary["partitions"] == [] and long_summary["when"] == "2026-01-01T00:00:00+00:00"
    assert len(many["partitions"]) == MAX_PARTITIONS and many["partitions_truncated"] is True
    assert many["partitions"][3] == {"partition": "dt=3", "added": 3, "removed": None}
    assert many["added"] is None and many["failed_checks"] == ["1"] and many["task_failed"] is True
    # without a branch the newest summaries are all there is to show: nothing is cut
    assert answer["truncated"] is False and answer["truncated_reason"] is None
    # a branch is searched among the newest scan_size(branch, limit) summaries: if they
    # hold fewer than asked, the answer says the search was cut
    others = [row({"table": "db.t", "branch": "other", "passed": True, "diff": {}})] * scan_size("fix", 10)
    cut = audits_answer(others, "db.t", "fix", 10)
    assert cut["truncated"] is True and f"newest {scan_size('fix', 10)}" in cut["truncated_reason"]
    assert audits_answer(others[:5], "db.t", "fix", 10)["truncated"] is False
