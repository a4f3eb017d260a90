"""The lineage page in a real Airflow api-server (the run's shared one), driven by headless Chromium.

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

from .airflow_server import login_token
from .seed import seed_chain

pytestmark = pytest.mark.airflow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"


@pytest.fixture(scope="module")
def server(ui_server, tmp_path_factory):
    """The run's api-server (tests/ui/shared_server.py) reading this module's store."""
    home = tmp_path_factory.mktemp("airflow-ui")
    url = f"sqlite:///{home / 'lineage.db'}"
    seed_chain(url, extra_tables=200)
    with ui_server.serving(url):
        yield ui_server.base


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


def _logged_in_page(server, browser, path="/paimon-lineage/"):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    context.add_cookies([{"name": "_token", "value": login_token(server), "url": server}])
    page = context.new_page()
    page.goto(server + path)
    page.wait_for_selector("g.node.table")
    return context, page


def _zoom(page) -> float:
    return float(page.get_attribute("#graph", "data-zoom"))


def test_pan_zoom_find_history_and_cascade_plan(server, browser):
    context, page = _logged_in_page(server, browser)
    wrap = page.locator("#graph-wrap")
    box = wrap.bounding_box()

    page.click("#zoom-in")
    assert _zoom(page) == pytest.approx(1.25)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, 400)  # wheel down: zoom out around the mouse
    page.wait_for_function("parseFloat(document.getElementById('graph').dataset.zoom) < 1.25")
    page.click("#zoom-fit")
    fits = "w => { const s = w.querySelector('svg'); return s.width.baseVal.value <= w.clientWidth + 1 && s.height.baseVal.value <= w.clientHeight + 1; }"
    assert wrap.evaluate(fits)

    # drag the background: the panel scrolls by the distance dragged
    page.click("#zoom-reset")
    wrap.evaluate("w => { w.scrollLeft = 300; w.scrollTop = 300; }")
    page.mouse.move(box["x"] + 500, box["y"] + 300)
    page.mouse.down()
    page.mouse.move(box["x"] + 300, box["y"] + 150, steps=5)
    page.mouse.up()
    assert wrap.evaluate("w => [w.scrollLeft, w.scrollTop]") == [500, 450]

    # find: the node is highlighted and centred in the panel
    page.fill("#find-text", "mart.revenue")
    page.click("#find button")
    node = page.locator('g.node.found[data-id="t:mart.revenue"]')
    node.wait_for()
    nb, wb = node.bounding_box(), wrap.bounding_box()
    assert abs(nb["x"] + nb["width"] / 2 - (wb["x"] + wb["width"] / 2)) < 40
    assert abs(nb["y"] + nb["height"] / 2 - (wb["y"] + wb["height"] / 2)) < 40

    # click the table: its snapshot history; a snapshot there runs the drill-down
    node.click()
    page.wait_for_selector("#history")
    assert [c.strip() for c in page.locator("#history button.snap").all_inner_texts()] == ["103", "102", "101"]
    assert "daily / 2" in page.locator("#history tr").nth(2).inner_text()
    page.click('#history button.snap[data-snap="102"]')
    page.wait_for_function("document.getElementById('up-title')?.textContent.includes('@ 102')")

    # the cascade plan of raw.events@2, in correction order
    page.fill("#d-db", "raw")
    page.fill("#d-table", "events")
    page.fill("#d-snap", "2")
    page.fill("#d-depth", "20")
    page.click("#plan-btn")
    page.wait_for_selector("#plan")
    rows = page.locator("#plan tr").all_inner_texts()[1:]
    assert [r.split("\t")[1] for r in rows] == ["raw.events", "dw.orders$branch_fix", "dw.orders", "mart.revenue"]
    assert "snapshot 11" in rows[2] and "12, 13" in rows[2] and "ingest" in rows[2]
    page.screenshot(path=str(ARTIFACTS / "lineage-cascade-plan.png"))
    page.fill("#d-snap", "99")
    page.click("#plan-btn")
    page.wait_for_selector("#plan-error")
    assert "404" in page.inner_text("#plan-error") and "99" in page.inner_text("#plan-error")
    context.close()


def test_find_asks_the_server_when_the_graph_is_partial(server, browser):
    context, page = _logged_in_page(server, browser, "/paimon-lineage/?jobs=3")
    assert "partial" in page.inner_text("#summary")
    assert page.locator('g.node[data-id="j:load_150"]').count() == 0
    page.fill("#find-text", "no_such_thing")
    page.click("#find button")
    page.wait_for_function("document.getElementById('find-msg').textContent.startsWith('no job or table')")
    assert "partial" in page.inner_text("#summary") and page.locator("g.node").count() > 0  # graph kept
    page.fill("#find-text", "load_150")
    page.click("#find button")
    page.locator('g.node.found[data-id="j:load_150"]').wait_for()
    assert "matching" in page.inner_text("#summary")
    context.close()
