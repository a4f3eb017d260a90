"""Branch audits on the lineage page, in a real Airflow api-server (issue 17, section 4).

The metadata DB holds the reports audit tasks left (tests/ui/audit_xcoms.py: real DAGs
with ``BranchAuditOperator`` tasks, runs made by Airflow, reports stored by
``XComModel.set``). Checks: ``/api/audits`` returns a table's audits newest first
with rows added and removed per partition; a user sees only the DAGs they may read;
an XCom of another operator is not an audit; bad input is a 400/422; a report's
markup is shown as text in the page (headless Chromium).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from .airflow_server import login_token
from .audit_xcoms import left_by_audit, report
from .big_stores import XSS
from .seed import seed_chain
from .shared_server import ALICE

pytestmark = pytest.mark.airflow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
SEED = left_by_audit([  # oldest first, each report with the summary its audit stores
    {"dag_id": "ingest_dag", "run_id": "r1", "task_id": "audit_orders", "key": "return_value",
     "value": report("dw.orders", "fix", [({"dt": "2024-01-01"}, 12, 3), ({"dt": "2024-01-02"}, 0, 5)])},
    # same shape, but from an EmptyOperator: not an audit
    {"dag_id": "ingest_dag", "run_id": "r1", "task_id": "load", "key": "return_value",
     "value": report("dw.orders", "not_an_audit", [({"dt": "2024-01-01"}, 1, 1)])},
    {"dag_id": "report_dag", "run_id": "r1", "task_id": "audit_orders", "key": "return_value",
     "value": report("dw.orders", "report_fix", [({"dt": "2024-01-03"}, 7, 0)])},
    # a failed audit (the task failed; the report is under key "audit"), with markup everywhere
    {"dag_id": "ingest_dag", "run_id": "r2", "task_id": "audit_odd", "key": "audit",
     "value": report("dw.orders", XSS, [(XSS, 1, 2)], passed=False, failed=[XSS], summary="bad " + XSS)},
    {"dag_id": "ingest_dag", "run_id": "r2", "task_id": "audit_orders", "key": "return_value",
     "value": report("mart.revenue", "fix", [({"dt": "2024-01-01"}, 1, 0)])},
])


class Server:
    def __init__(self, base: str) -> None:
        self.base = base
        self.admin = login_token(base)
        self.alice = login_token(base, *ALICE)

    def get(self, path: str, token: str | None = None) -> tuple[int, dict]:
        headers = {"Authorization": "Bearer " + token} if token else {}
        req = urllib.request.Request(self.base + "/paimon-lineage" + path, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    def audits(self, token: str, **params: str) -> list[dict]:
        status, body = self.get("/api/audits?" + urllib.parse.urlencode(params), token)
        assert status == 200, body
        assert body["truncated"] is False
        return body["audits"]


@pytest.fixture(scope="module")
def server(ui_server, tmp_path_factory):
    """The run's api-server (tests/ui/shared_server.py: its DAGs have these audit tasks)
    reading this module's store, with ``SEED`` stored while the module runs."""
    home = tmp_path_factory.mktemp("airflow-ui-audits")
    url = f"sqlite:///{home / 'lineage.db'}"
    seed_chain(url)
    with ui_server.serving(url, audits=SEED):
        yield Server(ui_server.base)


def test_audits_of_a_table_newest_first_with_rows_per_partition(server):
    audits = server.audits(server.admin, table="dw.orders")
    assert [(a["dag_id"], a["run_id"], a["task_id"]) for a in audits] == [
        ("ingest_dag", "r2", "audit_odd"), ("report_dag", "r1", "audit_orders"), ("ingest_dag", "r1", "audit_orders"),
    ]
    failed, _, first = audits
    assert failed["passed"] is False and failed["task_failed"] is True and failed["failed_checks"] == [XSS]
    assert first["passed"] is True and first["task_failed"] is False
    assert (first["table"], first["base"], first["branch"]) == ("dw.orders", "main", "fix")
    assert (first["added"], first["removed"], first["changed_partitions"], first["total_partitions"]) == (12, 8, 2, 10)
    assert first["partitions"] == [{"partition": "dt=2024-01-01", "added": 12, "removed": 3},
                                   {"partition": "dt=2024-01-02", "added": 0, "removed": 5}]
    assert first["summary"] == "dw.orders main..fix: +12 -8 rows in 2 of 10 partitions"
    assert first["when"]
    # a branch filter, a limit, another table
    assert [a["dag_id"] for a in server.audits(server.admin, table="dw.orders", branch="report_fix")] == ["report_dag"]
    assert len(server.audits(server.admin, table="DW.Orders", limit="1")) == 1
    assert [a["table"] for a in server.audits(server.admin, table="mart.revenue")] == ["mart.revenue"]
    assert server.audits(server.admin, table="raw.events") == []


def test_users_see_audits_of_dags_they_may_read_only(server):
    alices = server.audits(server.alice, table="dw.orders")
    assert {a["dag_id"] for a in alices} == {"ingest_dag"} and len(alices) == 2


def test_bad_input_and_no_user(server):
    status, body = server.get("/api/audits?table=orders", server.admin)
    assert status == 400 and "database.table" in body["detail"]
    assert server.get("/api/audits?table=dw.orders&branch=%20", server.admin)[0] == 400
    for query in ("", "?table=dw.orders&limit=0", "?table=dw.orders&limit=101", "?table=dw.orders&limit=x"):
        assert server.get("/api/audits" + query, server.admin)[0] == 422, query
    assert server.get("/api/audits?table=dw.orders")[0] == 401


def test_audit_panel_shows_reports_as_text(server, browser):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    context.add_cookies([{"name": "_token", "value": server.admin, "url": server.base}])
    page = context.new_page()
    page.goto(server.base + "/paimon-lineage/")
    page.wait_for_selector("g.node.table")
    page.locator('g.node.table[data-id="t:dw.orders"]').click()
    page.wait_for_selector("#audits")
    shown = page.locator("#audits").inner_text()
    assert "dw.orders main..fix: +12 -8 rows in 2 of 10 partitions" in shown
    assert "dt=2024-01-01: +12 −3" in shown and "report_dag / r1 / audit_orders" in shown  # noqa: RUF001 - the page prints a real minus sign
    assert "FAILED" in shown and "bad " + XSS in shown and "failed checks: " + XSS in shown
    assert page.locator("#audits-out img").count() == 0
    assert page.evaluate("window.__xss") is None
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#audits-out").screenshot(path=str(ARTIFACTS / "audits-panel.png"))
    page.locator('g.node.table[data-id="t:raw.events"]').click()
    page.wait_for_selector("#audits-none")
    context.close()
