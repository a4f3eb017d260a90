"""Every endpoint a viewer can call stays bounded, in a real Airflow api-server (issue 30).

The run's api-server (tests/ui/shared_server.py) with this module's data: a small SQLite
lineage store in WAL mode (520 jobs, and a chain whose middle job only an admin may
read), a warehouse with a table whose oldest snapshots were expired behind a stale
``EARLIEST`` hint, real DAGs with audit tasks and 510 audit results of other tables
stored after the one asked for. Each test makes
the request the way the attack did:

* ``/api/audits?table=`` finds the asked table's audit although 510 newer audit
  results of other tables were stored after it (it used to decode the newest 500 audit
  XComs of every table, and missed it);
* ``/api/graph`` without ``max_jobs`` answers one bounded page and says there is more;
* a restricted viewer sees ``truncated`` only for lineage they may see (hidden jobs
  used to cut walks, graph pages and history pages, and the cut said so);
* page views write nothing next to the SQLite store (no ``-wal``/``-shm``);
* a 5,000-character table name on the history page is a 400 naming the problem (it
  was a 500), and a table whose old snapshots expired pages from the newest.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef

from .airflow_server import login_token
from .audit_xcoms import left_by_audit, report
from .history_tables import many_snapshots, table_dir
from .shared_server import ALICE, BUSY_TABLES, audit_task

pytestmark = pytest.mark.airflow
GRAPH_JOBS = 520  # more than the graph's default page (500 jobs)


def _seed_store(path: Path) -> None:
    """A chain whose middle job (report_dag.build) alice may not read, and 518 more jobs.

    Written by the store itself, the 518 one-edge jobs in one transaction; the writer
    closes, so the WAL store is left with no ``-wal``/``-shm`` files.
    """
    with LineageStore.from_url(f"sqlite:///{path}") as store:
        store.record_batch("ingest_dag.load", 1, [SnapshotRef("raw", "events", 1)], [SnapshotRef("dw", "orders", 11)])
        store.record_batch("report_dag.build", 1, [SnapshotRef("dw", "orders", 11)],
                           [SnapshotRef("mart", "revenue", 101)])
        store.record_batch("report_dag.build", 2, [SnapshotRef("raw", "events", 1)], [SnapshotRef("dw", "orders", 12)])
    conn = sqlite3.connect(path)
    try:
        now = datetime(2026, 1, 1).isoformat(sep=" ")
        for side, table in (("source", "landing"), ("sink", "stage")):
            conn.executemany(f'INSERT INTO {side}_job_lineage (job, database, "table", create_time, branch) '
                             "VALUES (?, ?, ?, ?, 'main')",
                             [(f"zz_load_{i:03d}", table, f"t{i:03d}", now) for i in range(GRAPH_JOBS - 2)])
        conn.commit()
    finally:
        conn.close()


def _seed_warehouse(warehouse: str) -> None:
    """db.expired: 1,000 snapshots, 1..599 expired, EARLIEST still says 100."""
    many_snapshots(warehouse, "db.expired", 1000)
    d = table_dir(warehouse, "db.expired")
    for sid in range(1, 600):
        os.remove(f"{d}/snapshot/snapshot-{sid}")
    Path(f"{d}/snapshot/EARLIEST").write_text("100")


def _audits() -> list[dict]:
    """The asked table's audit first (oldest), then 510 audit results of other tables (the
    summaries of busy.t3 only: the other summaries play no part)."""
    target = left_by_audit([{"dag_id": "ingest_dag", "run_id": "r0", "task_id": "audit_dw_orders",
                             "key": "return_value", "value": report("dw.orders", "fix", [({"dt": "2024-01-01"}, 3, 1)])}])
    rows = []
    for run in range(51):
        for t in BUSY_TABLES:
            row = {"dag_id": "busy_dag", "run_id": f"r{run}", "task_id": audit_task(t),
                   "key": "return_value", "value": report(t, "fix", [({"dt": "2024-01-01"}, run, 0)])}
            rows += left_by_audit([row]) if t == "busy.t3" else [row]
    return target + rows


class Server:
    def __init__(self, base: str, store: Path) -> None:
        self.base, self.store = base, store
        self.admin = login_token(base)
        self.alice = login_token(base, *ALICE)

    def get(self, path: str, token: str) -> tuple[int, dict]:
        req = urllib.request.Request(self.base + path, headers={"Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")


@pytest.fixture(scope="module")
def server(ui_server, tmp_path_factory):
    """The run's api-server (tests/ui/shared_server.py: ingest_dag, report_dag and busy_dag
    with their audit tasks) reading this module's store and warehouse, with its audits."""
    home = tmp_path_factory.mktemp("airflow-ui-bounded")
    store_dir = home / "store"
    store_dir.mkdir()
    store = store_dir / "lineage.db"
    _seed_store(store)
    warehouse = str(home / "warehouse")
    _seed_warehouse(warehouse)
    with ui_server.serving(f"sqlite:///{store}", warehouse=warehouse, audits=_audits()):
        yield Server(ui_server.base, store)


def test_audits_read_the_asked_tables_results_only(server):
    status, body = server.get("/paimon-lineage/api/audits?table=dw.orders", server.admin)
    assert status == 200, body
    assert [(a["dag_id"], a["run_id"], a["table"]) for a in body["audits"]] == [("ingest_dag", "r0", "dw.orders")]
    assert body["audits"][0]["partitions"] == [{"partition": "dt=2024-01-01", "added": 3, "removed": 1}]
    assert body["truncated"] is False
    status, busy = server.get("/paimon-lineage/api/audits?table=busy.t3&limit=100", server.admin)
    assert status == 200 and len(busy["audits"]) == 51 and {a["table"] for a in busy["audits"]} == {"busy.t3"}
    assert busy["audits"][0]["run_id"] == "r50"  # newest first
    # a branch filter reads at most 200 of the table's summaries and says so when it found too few
    status, none = server.get("/paimon-lineage/api/audits?table=busy.t3&branch=nope", server.admin)
    assert status == 200 and none["audits"] == [] and none["truncated"] is False  # 51 < 200: all were read
    # alice may not read busy_dag: nothing of it, and no truncation either
    status, hers = server.get("/paimon-lineage/api/audits?table=busy.t3", server.alice)
    assert status == 200 and hers["audits"] == [] and hers["truncated"] is False


def test_graph_without_max_jobs_is_one_bounded_page_that_says_there_is_more(server):
    status, first = server.get("/paimon-lineage/api/graph", server.admin)
    assert status == 200
    assert len(first["jobs"]) == 500 and first["truncated"] is True
    assert first["next_after"] == first["jobs"][-1] and "after=next_after" in first["truncated_reason"]
    after = urllib.parse.quote(first["next_after"])
    status, rest = server.get(f"/paimon-lineage/api/graph?after={after}", server.admin)
    assert status == 200 and rest["truncated"] is False and rest["next_after"] is None
    assert len(rest["jobs"]) == GRAPH_JOBS - 500 and not set(rest["jobs"]) & set(first["jobs"])


def test_a_restricted_viewer_sees_truncation_only_of_what_they_may_see(server):
    # depth 1 from raw.events@1: past dw.orders@11 there is only report_dag's lineage
    status, admin = server.get("/paimon-lineage/api/snapshots/raw/events/1?depth=1", server.admin)
    assert status == 200 and admin["truncated"] is True and "depth 1" in admin["truncated_reason"]
    status, hers = server.get("/paimon-lineage/api/snapshots/raw/events/1?depth=1", server.alice)
    assert status == 200 and [n["job"] for n in hers["downstream"]] == ["ingest_dag.load"]
    assert hers["truncated"] is False and hers["truncated_reason"] is None
    status, impact = server.get("/paimon-lineage/api/impact/raw/events/1?depth=1", server.alice)
    assert status == 200 and impact["truncated"] is False
    # a one-job page of the graph: hers holds her job, and there is no "more"
    status, graph = server.get("/paimon-lineage/api/graph?max_jobs=1", server.alice)
    assert status == 200 and graph["jobs"] == ["ingest_dag.load"]
    assert graph["truncated"] is False and graph["next_after"] is None
    # dw.orders@12 was written by report_dag only: her history page neither lists it nor pages to it
    status, history = server.get("/paimon-lineage/api/history/dw/orders?limit=1", server.alice)
    assert status == 200 and [s["snapshot_id"] for s in history["snapshots"]] == [11]
    assert history["next_before"] is None and history["truncated"] is False
    status, admins = server.get("/paimon-lineage/api/history/dw/orders?limit=1", server.admin)
    assert [s["snapshot_id"] for s in admins["snapshots"]] == [12] and admins["next_before"] == 12


def test_page_views_write_nothing_next_to_the_sqlite_store(server):
    before = {p.name: p.stat().st_mtime_ns for p in server.store.parent.iterdir()}
    assert before.keys() == {"lineage.db"}
    for path in ("/paimon-lineage/api/graph", "/paimon-lineage/api/snapshots/raw/events/1?depth=3",
                 "/paimon-lineage/api/impact/raw/events/1", "/paimon-lineage/api/history/dw/orders",
                 "/paimon-lineage/api/cascade/raw/events/1"):
        status, _ = server.get(path, server.admin)
        assert status == 200, path
        assert {p.name: p.stat().st_mtime_ns for p in server.store.parent.iterdir()} == before, path


def test_history_refuses_a_huge_table_name_and_pages_an_expired_table_from_the_newest(server):
    status, body = server.get("/paimon-history/api/history/db/" + "x" * 5000, server.admin)
    assert status == 400 and "longer than 250 bytes" in body["detail"] and "x" * 100 not in body["detail"]
    status, h = server.get("/paimon-history/api/history/db/expired?page_size=100", server.admin)
    assert status == 200, h
    main = h["lanes"][0]
    assert (main["earliest"], main["latest"], main["snapshot_count"]) == (600, 1000, 401)
    assert [r["snapshot_id"] for r in h["rows"]][:2] == [1000, 999] and h["pages"] == 5
    status, last = server.get("/paimon-history/api/history/db/expired?page_size=100&page=4", server.admin)
    assert [r["snapshot_id"] for r in last["rows"]] == [600]
