"""One real Airflow api-server for every tests/ui module of a test run (one per xdist worker).

Starting an api-server (metadata DB, DAG serialization, the server itself) costs 20-50 s
on the two-core machine; the UI modules used to start one each. What their servers
differed in, and how this one serves them all:

* auth manager and users: the modules that log in as alice ran ``DagListAuthManager``
  (tests/ui/dag_auth_manager.py) with alice a viewer who may read ``ingest_dag`` only;
  the lineage page module ran plain ``SimpleAuthManager`` as admin, which is what
  ``DagListAuthManager`` is for every user it does not list. This server runs
  ``DagListAuthManager`` with alice.
* DAGs: the union of what the modules parsed (``DAG_FILES``: each task says which
  module needs it). DAGs that a module relies on being unknown to Airflow (``fix_dag``,
  ``adhoc``, ``loop_dag``, ``hub_dag``, ``odd_dag``, ``zz_load_*``) are in none.
* lineage store and warehouse: each module's own, set as the ``paimon_lineage_default``
  and ``paimon_default`` connections in the metadata DB while the module runs and
  deleted after it (both plugins read their connection on every request):
  ``SharedServer.connection``. Without them the server's ``$PAIMON_LINEAGE_URL`` names a
  store that does not exist and there is no warehouse: a module that forgot to set one
  gets errors, never another module's data.
* audit reports (XComs of triggered runs): seeded by the module that asserts on them
  and deleted with their DAG runs at the module's end (``SharedServer.audits``), so no
  module sees another's (two modules seed audits of ``dw.orders``).

Modules run one after another in a worker (pytest never interleaves two modules'
module-scoped fixtures), so a module's connections and audits are the only ones there
while its tests run.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .airflow_server import api_server_process, login_token
from .audit_xcoms import seed_audits

ALICE = ("alice", "alice-test-pw")
USERS = {ALICE[0]: ("viewer", ALICE[1])}
#: the DAGs alice may read (the rest: none)
READERS = {ALICE[0]: ["ingest_dag"]}
LINEAGE_CONN_ID = "paimon_lineage_default"
PAIMON_CONN_ID = "paimon_default"

_DAG = """
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow_provider_paimon.operators.audit import BranchAuditOperator

with DAG("{dag_id}", schedule=None):
{tasks}
"""


def _dag(dag_id: str, empty: list[str], audits: dict[str, str]) -> str:
    """A DAG of ``EmptyOperator`` tasks ``empty`` and ``BranchAuditOperator`` tasks
    (task id -> audited table, branch ``fix``)."""
    tasks = [f'    EmptyOperator(task_id="{t}")' for t in empty]
    tasks += [f'    BranchAuditOperator(task_id="{t}", table="{table}", branch="fix")' for t, table in audits.items()]
    return _DAG.format(dag_id=dag_id, tasks="\n".join(tasks))


#: the tables test_bounded_endpoints' busy_dag audits (one task each, ``audit_busy_t<i>``)
BUSY_TABLES = [f"busy.t{i}" for i in range(10)]


def audit_task(table: str) -> str:
    """busy_dag's task auditing ``table``."""
    return f"audit_{table.replace('.', '_')}"


DAG_FILES = {
    # load: test_history_page_browser, test_lineage_security, test_lineage_audits (an
    # EmptyOperator: its XCom is not an audit); audit_orders, audit_odd:
    # test_lineage_audits; audit_dw_orders: test_bounded_endpoints
    "ingest_dag.py": _dag("ingest_dag", ["load"], {
        "audit_orders": "dw.orders", "audit_odd": "odd.dst", "audit_dw_orders": "dw.orders"}),
    # build: test_lineage_security, test_lineage_audits; audit_orders, audit_odd:
    # test_lineage_audits; audit_mart_revenue: test_bounded_endpoints
    "report_dag.py": _dag("report_dag", ["build"], {
        "audit_orders": "dw.orders", "audit_odd": "odd.dst", "audit_mart_revenue": "mart.revenue"}),
    # test_bounded_endpoints: many audit results of other tables
    "busy_dag.py": _dag("busy_dag", [], {audit_task(t): t for t in BUSY_TABLES}),
    # test_history_page_browser: a DAG alice may not read
    "publish_dag.py": _dag("publish_dag", ["replace"], {}),
}


@dataclass
class SharedServer:
    """The running api-server: its URL, process group, home and environment, an admin token."""

    base: str
    pid: int
    home: Path
    extra_env: dict[str, str]
    admin: str = field(repr=False)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        """A REST call as admin: (status, body)."""
        req = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": "Bearer " + self.admin, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    @contextmanager
    def connection(self, conn_id: str, conn_type: str, host: str | None = None,
                   extra: dict[str, Any] | None = None) -> Iterator[None]:
        """The connection ``conn_id`` in the metadata DB while the block runs."""
        status, body = self.call("POST", "/api/v2/connections", {
            "connection_id": conn_id, "conn_type": conn_type, "host": host,
            "extra": None if extra is None else json.dumps(extra),
        })
        assert status == 201, (conn_id, status, body[:500])
        try:
            yield
        finally:
            status, body = self.call("DELETE", f"/api/v2/connections/{conn_id}")
            assert status == 204, (conn_id, status, body[:500])

    def lineage_store(self, url: str):
        """The lineage page reads the store at ``url`` while the block runs."""
        return self.connection(LINEAGE_CONN_ID, "paimon_lineage", extra={"url": url})

    def warehouse(self, warehouse: str):
        """The table history page reads ``warehouse`` while the block runs."""
        return self.connection(PAIMON_CONN_ID, "paimon", host=warehouse)

    @contextmanager
    def audits(self, rows: list[dict[str, Any]]) -> Iterator[None]:
        """``rows`` stored as audit tasks leave them (``seed_audits``) while the block runs;
        their DAG runs (and with them their task instances and XComs) deleted after it."""
        runs = list(dict.fromkeys((r["dag_id"], r["run_id"]) for r in rows))
        try:
            seed_audits(self.home, self.extra_env, USERS, rows)
            yield
        finally:
            for dag_id, run_id in runs:
                status, body = self.call("DELETE", f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}")
                assert status in (204, 404), (dag_id, run_id, status, body[:500])  # 404: never seeded
            # the reports went with their runs: the next module starts with none
            for table in sorted({r["value"]["table"] for r in rows if isinstance(r["value"], dict)
                                 and isinstance(r["value"].get("table"), str) and "." in r["value"]["table"]}):
                status, body = self.call("GET", "/paimon-lineage/api/audits?" + urllib.parse.urlencode({"table": table}))
                assert status == 200 and json.loads(body)["audits"] == [], (table, status, body[:500])

    @contextmanager
    def serving(self, store_url: str, warehouse: str | None = None,
                audits: list[dict[str, Any]] | None = None) -> Iterator[SharedServer]:
        """This server with a module's lineage store, warehouse and audit reports."""
        with ExitStack() as stack:
            stack.enter_context(self.lineage_store(store_url))
            if warehouse is not None:
                stack.enter_context(self.warehouse(warehouse))
            if audits is not None:
                stack.enter_context(self.audits(audits))
            yield self


@contextmanager
def shared_server(home: Path) -> Iterator[SharedServer]:
    """Start the api-server in ``home`` with every module's DAGs and users; stop it afterwards."""
    tests_dir = str(Path(__file__).resolve().parents[1])
    extra_env = {
        # no store until a module names one (a read-only page view creates no file)
        "PAIMON_LINEAGE_URL": f"sqlite:///{home / 'no-store-set.db'}",
        "PYTHONPATH": os.pathsep.join(p for p in (tests_dir, os.environ.get("PYTHONPATH")) if p),
        "AIRFLOW__CORE__AUTH_MANAGER": "ui.dag_auth_manager.DagListAuthManager",
        "PAIMON_TEST_DAG_READERS": json.dumps(READERS),
    }
    with api_server_process(home, extra_env, users=USERS, dag_files=DAG_FILES) as (base, proc):
        yield SharedServer(base, proc.pid, home, extra_env, login_token(base))
