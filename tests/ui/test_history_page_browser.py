"""The table history page in a real Airflow api-server, driven by headless Chromium.

One server (the run's shared one, tests/ui/shared_server.py; its ``paimon_default``
connection names a warehouse with a table that has branches, tags, a replace-main and
a fast-forward; a 10,000-snapshot table; a table whose branch, tag and run names are
markup) checks: the nav entry, no data without a
login, a 10,000-snapshot table answered in bounded pages, the lanes and kinds drawn,
a click on a snapshot opening its lineage drill-down, and hostile names shown as text.
Screenshots go to test-artifacts/ui/, or with PAIMON_UPDATE_DOCS_IMAGES=1 to
docs/images/ (the ones README.md and docs/ui.md show).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef

from .airflow_server import login_token
from .history_tables import XSS, history_scenario, hostile_table, many_snapshots
from .seed import seed_chain
from .shared_server import ALICE

pytestmark = pytest.mark.airflow
ROOT = Path(__file__).resolve().parents[2]
#: PAIMON_UPDATE_DOCS_IMAGES=1 refreshes the committed screenshots; other runs leave docs/ alone
IMAGES = ROOT / ("docs/images" if os.environ.get("PAIMON_UPDATE_DOCS_IMAGES") == "1" else "test-artifacts/ui")


@pytest.fixture(scope="module")
def server(ui_server, tmp_path_factory):
    """The run's api-server (tests/ui/shared_server.py: ingest_dag, which alice may read,
    and publish_dag, which she may not) reading this module's warehouse and store."""
    home = tmp_path_factory.mktemp("airflow-history")
    warehouse = str(home / "warehouse")
    history_scenario(warehouse)
    many_snapshots(warehouse, "db.big", 10_000)
    hostile_table(warehouse)
    url = f"sqlite:///{home / 'lineage.db'}"
    seed_chain(url)
    store = LineageStore.from_url(url)
    store.record_batch("ingest_dag.load", 1, [SnapshotRef("raw", "events", 1)], [SnapshotRef("db", "orders", 3)])
    store.close()
    with ui_server.serving(url, warehouse=warehouse):
        base = ui_server.base
        token = login_token(base)
        # the worker imports pypaimon/pyarrow on its first table request (5-10 s on a busy machine)
        assert _get(base, "/paimon-history/api/tables", token)[0] == 200
        yield base, token, login_token(base, *ALICE)


def _get(base: str, path: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_anonymous_gets_nothing_and_the_nav_entry_exists(server):
    base, token, _alice = server
    for path in ("/paimon-history/", "/paimon-history/api/tables", "/paimon-history/api/history/db/orders",
                 "/paimon-history/openapi.json", "/paimon-history/docs"):
        status, body = _get(base, path)
        assert status in (401, 403), path
        assert b"orders" not in body
    status, body = _get(base, "/api/v2/plugins", token)
    views = [v for p in json.loads(body)["plugins"] for v in p.get("external_views", [])]
    assert any(v["name"] == "Paimon table history" and v["href"] == "/paimon-history/" for v in views)


def test_ten_thousand_snapshots_over_http(server):
    base, token, _alice = server
    started = time.monotonic()
    status, body = _get(base, "/paimon-history/api/history/db/big?page=10", token)
    took = time.monotonic() - started
    print(f"10,000-snapshot table, page 10 through the api-server: {took:.2f} s, {len(body)} bytes")
    assert status == 200 and took < 10 and len(body) < 250_000
    h = json.loads(body)
    assert h["pages"] == 50 and [r["snapshot_id"] for r in h["rows"]][:2] == [8000, 7999]


def test_runs_of_dags_a_user_may_not_read_are_hidden(server):
    base, admin, alice = server

    def runs(token: str) -> dict:
        status, body = _get(base, "/paimon-history/api/history/db/orders", token)
        assert status == 200
        return {(r["lane"], r["snapshot_id"]): r["run"] for r in json.loads(body)["rows"]}

    everything, hers = runs(admin), runs(alice)
    assert everything[("main", 3)]["dag_id"] == "ingest_dag" and hers[("main", 3)]["dag_id"] == "ingest_dag"
    assert everything[("main", 5)]["dag_id"] == "publish_dag" and hers[("main", 5)] == {"hidden": True}
    # fix_dag is no DAG Airflow knows: only users who may read every DAG see it
    assert everything[("fix", 4)]["dag_id"] == "fix_dag" and hers[("fix", 4)] == {"hidden": True}


def _page(server, browser, width=1366, height=768):
    base, token, _alice = server
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_cookies([{"name": "_token", "value": token, "url": base}])
    return context, context.new_page()


def test_page_draws_lanes_and_opens_lineage(server, browser):
    base, _token, _alice = server
    IMAGES.mkdir(parents=True, exist_ok=True)
    context, page = _page(server, browser)
    page.goto(base + "/paimon-history/?table=db.orders")
    page.wait_for_selector("#lanes-svg .snap")
    chips = page.eval_on_selector_all(".lane-chip", "els => els.map(e => e.dataset.lane)")
    assert chips == ["main", "bk", "ff", "fix"]
    assert "from main@2 (tag t1)" in page.inner_text('.lane-chip[data-lane="fix"]')
    assert "backup of main" in page.inner_text('.lane-chip[data-lane="bk"]')
    assert page.locator("#lanes-svg .snap").count() == 14  # 7 main + 1 bk + 3 ff + 3 fix
    assert page.locator('#lanes-svg path.snap.OVERWRITE[data-lane="main"][data-id="5"]').count() == 1
    assert page.locator("#lanes-svg .snap.copy").count() == 3  # ff 5..7 are main's own files
    for kind, n in (("branch_point", 3), ("fast_forward", 1), ("replace_main", 1)):
        assert page.locator(f"#lanes-svg path.link.{kind}").count() == n, kind
    table = page.inner_text("#hist")
    for text in ("release-1", "t1", "replace-main from fix@4, old main kept as branch bk",
                 "fast-forward to ff", "ingest_dag / scheduled__2026-11-03 / load #1", "local-3"):
        assert text in table, text
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(IMAGES / "table-history.png"))

    page.locator('#lanes-svg .snap[data-lane="main"][data-id="3"]').click()
    page.wait_for_selector("#up-title")
    assert "/paimon-lineage/" in page.url and "db.orders @ 3" in page.inner_text("#up-title")
    assert "raw.events" in page.locator("#drill-out table.list").first.inner_text()
    context.close()


def test_ten_thousand_snapshots_page_by_page(server, browser):
    base, _token, _alice = server
    context, page = _page(server, browser)
    page.goto(base + "/paimon-history/?table=db.big")
    page.wait_for_selector("#lanes-svg .snap")
    assert page.inner_text("#pageinfo") == "page 1 of 50"
    assert page.locator("#hist tr").count() == 201
    page.click("#older")
    page.wait_for_function("document.getElementById('pageinfo').textContent === 'page 2 of 50'")
    assert page.locator('#hist tr[data-id="9800"]').count() == 1 and "page=1" in page.url
    page.screenshot(path=str(IMAGES / "table-history-10k.png"))
    context.close()


def test_hostile_names_are_text(server, browser):
    base, _token, _alice = server
    context, page = _page(server, browser)
    page.goto(base + "/paimon-history/?table=db.hostile")
    page.wait_for_selector("#lanes-svg .snap")
    assert page.locator(f'.lane-chip[data-lane="{XSS}"]').count() == 1
    assert XSS in page.inner_text("#lanes") and XSS in page.inner_text("#hist")
    assert page.locator("img").count() == 0
    assert page.evaluate("window.__pwned === undefined")
    context.close()
