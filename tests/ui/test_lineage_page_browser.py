"""The lineage page in a real Airflow api-server, driven by headless Chromium.

Checks: the plugin is registered through get_provider_info(), anonymous requests get
no data, a logged-in user sees the seeded graph, the snapshot drill-down works, and
200 tables do not break the layout on a laptop-sized screen. Screenshots are saved
in test-artifacts/ui/.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .airflow_server import api_server, login_token
from .seed import seed_chain

pytestmark = pytest.mark.airflow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow-ui")
    url = f"sqlite:///{home / 'lineage.db'}"
    seed_chain(url, extra_tables=200)
    with api_server(home, {"PAIMON_LINEAGE_URL": url}) as base:
        yield base


def test_anonymous_gets_no_lineage(server):
    for path in ("/paimon-lineage/api/graph", "/paimon-lineage/"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(server + path, timeout=10)
        assert err.value.code in (401, 403), path


def test_logged_in_api_returns_graph(server):
    req = urllib.request.Request(
        server + "/paimon-lineage/api/graph", headers={"Authorization": "Bearer " + login_token(server)}
    )
    graph = json.loads(urllib.request.urlopen(req, timeout=10).read())
    assert {"ingest", "daily", "ingest_fix"} <= set(graph["jobs"])
    assert len(graph["tables"]) == 4 + 400


def test_page_shows_graph_and_drill_down(server, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    context.add_cookies([{"name": "_token", "value": login_token(server), "url": server}])
    page = context.new_page()
    page.goto(server + "/paimon-lineage/")
    page.wait_for_selector("g.node.table")
    labels = page.eval_on_selector_all("g.node title", "els => els.map(e => e.textContent)")
    assert {"raw.events", "dw.orders", "mart.revenue", "dw.orders$branch_fix", "ingest", "daily"} <= set(labels)
    # No layout break with 200+ tables: the page itself never scrolls sideways,
    # the graph scrolls inside its own panel.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(ARTIFACTS / "lineage-graph.png"))

    page.locator('g.node.table[data-id="t:mart.revenue"]').click()
    assert page.input_value("#d-db") == "mart" and page.input_value("#d-table") == "revenue"
    page.fill("#d-snap", "102")
    page.fill("#d-depth", "2")
    page.click("#drill button")
    page.wait_for_selector("#up-title")
    upstream = page.locator("#drill-out table.list").first.inner_text()
    assert "dw.orders" in upstream and "raw.events" in upstream
    page.screenshot(path=str(ARTIFACTS / "lineage-drilldown.png"), full_page=False)

    page.fill("#d-db", "raw")
    page.fill("#d-table", "events")
    page.fill("#d-branch", "")
    page.fill("#d-snap", "3")
    page.click("#drill button")
    page.wait_for_selector("#impact")
    impact = page.locator("#impact").inner_text()
    assert "dw.orders$branch_fix" in impact and "mart.revenue" in impact

    # a task's "Paimon lineage" extra link (operators/links.py) opens the drill-down
    from airflow_provider_paimon.operators.links import lineage_page_url

    page.goto(lineage_page_url("mart.revenue", 102, base_url=server))
    page.wait_for_selector("#up-title")
    assert "mart.revenue @ 102" in page.inner_text("#up-title")
    assert "dw.orders" in page.locator("#drill-out table.list").first.inner_text()
    context.close()
