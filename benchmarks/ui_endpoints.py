"""What a viewer's requests cost the Airflow api-server: ours vs a baseline source tree.

The same data, served by a real ``airflow api-server`` (a temporary AIRFLOW_HOME, as the
UI tests start it) first with the baseline's package (``--baseline-src``: a source tree
of an earlier commit, e.g. ``git archive 076b532 | tar -x -C /tmp/base``), then with this
tree's; ratios baseline/ours in the same run:

* **lineage store**: ``tests/ui/big_stores.page_store("tables", --rows)``, a SQLite store
  of ``--rows`` table-level rows (and as many snapshot rows); ``/paimon-lineage/api/graph``
  without ``max_jobs``;
* **audits**: a DAG of audit tasks whose XComs hold ``--audits`` reports of other tables
  (about 200 KB each: violating-row samples), stored after one report of ``dw.orders``;
  every report has the summary this tree's audit operator stores beside it;
  ``/paimon-lineage/api/audits?table=dw.orders``;
* **table history**: ``db.big`` with ``--snapshots`` snapshots on main and on each of
  ``--lanes - 1`` branches; ``/paimon-history/api/history/db/big`` (the newest page).

Per endpoint: the api-server's resident memory (the process group's RSS) growth over the
first request, then the median time and RSS growth of ``--runs`` sequential requests,
then six concurrent requests (wall time, RSS growth); and which files sat next to the
SQLite store while each server ran. The machine's load average is printed.

    python benchmarks/ui_endpoints.py --baseline-src /tmp/base
    python benchmarks/ui_endpoints.py --baseline-src /tmp/base --rows 200000 --snapshots 10000 --audits 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from ui.airflow_server import api_server_process, group_rss, login_token  # noqa: E402
from ui.audit_xcoms import left_by_audit, report, seed_audits  # noqa: E402
from ui.big_stores import page_store  # noqa: E402
from ui.history_tables import many_snapshots, table_dir  # noqa: E402

AUDIT_DAG = """
from airflow.sdk import DAG
from airflow_provider_paimon.operators.audit import BranchAuditOperator

with DAG("audits_dag", schedule=None):
    BranchAuditOperator(task_id="audit_orders", table="dw.orders", branch="fix")
{tasks}
"""
AUDIT_TASKS = 10
ENDPOINTS = {
    "audits": "/paimon-lineage/api/audits?table=dw.orders",
    "graph": "/paimon-lineage/api/graph",
    "history": "/paimon-history/api/history/db/big",
}


def _machine() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def make_warehouse(warehouse: str, snapshots: int, lanes: int) -> None:
    """db.big: ``snapshots`` on main and on each branch (copies of one commit's file, hints written)."""
    many_snapshots(warehouse, "db.big", snapshots)
    root = table_dir(warehouse, "db.big")
    doc = json.loads(Path(f"{root}/snapshot/snapshot-1").read_text())
    for lane in range(1, lanes):
        branch = Path(f"{root}/branch/branch-b{lane}")
        (branch / "snapshot").mkdir(parents=True)
        shutil.copytree(f"{root}/schema", branch / "schema")
        for sid in range(1, snapshots + 1):
            (branch / "snapshot" / f"snapshot-{sid}").write_text(json.dumps(dict(doc, id=sid, uuid=f"b{lane}-{sid}")))
        (branch / "snapshot" / "LATEST").write_text(str(snapshots))


def audit_rows(audits: int) -> list[dict]:
    """One report of dw.orders, then ``audits`` large reports of other tables (newest last)."""
    sample = [{"id": i, "payload": "x" * 80} for i in range(2000)]  # ~200 KB of violating rows
    rows = [{"dag_id": "audits_dag", "run_id": "r0", "task_id": "audit_orders", "key": "return_value",
             "value": report("dw.orders", "fix", [({"dt": "2024-01-01"}, 3, 1)])}]
    for n in range(audits):
        task = n % AUDIT_TASKS
        value = report(f"other.t{task}", "fix", [({"dt": "2024-01-01"}, n, 0)])
        value["checks"] = {"passed": True, "failed": [], "checks": [{"name": "c", "sample": sample}]}
        rows.append({"dag_id": "audits_dag", "run_id": f"r{1 + n // AUDIT_TASKS}", "task_id": f"audit_{task}",
                     "key": "return_value", "value": value})
    return left_by_audit(rows)


def _side_files(store: Path) -> list[str]:
    """The -wal/-shm files next to ``store``; then removed by one writer's open and close
    (a checkpoint), so the next server starts from the same clean store."""
    import sqlite3

    files = sorted(p.name for p in store.parent.iterdir() if p.name.startswith(store.name + "-"))
    if files:
        sqlite3.connect(store).close()
    return files


def _get(base: str, path: str, token: str) -> tuple[float, int]:
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    began = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as resp:
        size = len(resp.read())
    return time.perf_counter() - began, size


def measure(label: str, home: Path, env: dict[str, str], runs: int, store: Path) -> tuple[dict[str, dict], list[str]]:
    """Each endpoint's figures, and the files next to the SQLite store while the server runs."""
    out: dict[str, dict] = {}
    with api_server_process(home, env, keep_db=True, timeout=300) as (base, proc):
        token = login_token(base)
        for name, path in ENDPOINTS.items():
            before = group_rss(proc.pid)
            _get(base, path, token)  # the first request: imports, the store's engine, the heap's growth
            first_mb = (group_rss(proc.pid) - before) / 2**20
            times, growth = [], []
            size = 0
            for _ in range(runs):
                before = group_rss(proc.pid)
                took, size = _get(base, path, token)
                times.append(took)
                growth.append(group_rss(proc.pid) - before)
            before = group_rss(proc.pid)
            began = time.perf_counter()
            with ThreadPoolExecutor(6) as pool:
                list(pool.map(lambda p: _get(base, p, token), [path] * 6))
            out[name] = {"s": statistics.median(times), "mb_per_req": statistics.median(growth) / 2**20,
                         "first_mb": first_mb,
                         "bytes": size, "six_s": time.perf_counter() - began,
                         "six_mb": (group_rss(proc.pid) - before) / 2**20, "rss_mb": group_rss(proc.pid) / 2**20}
            print(f"  {label:8} {name:8} {out[name]['s']:7.2f} s  first {first_mb:7.1f} MB, then "
                  f"{out[name]['mb_per_req']:7.1f} MB/req  "
                  f"{size / 1024:9.0f} KB  six: {out[name]['six_s']:6.2f} s {out[name]['six_mb']:7.1f} MB  "
                  f"(load {_load()})", flush=True)
        running = sorted(p.name for p in store.parent.iterdir() if p.name.startswith(store.name + "-"))
    return out, running


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-src", required=True, help="a source tree of the package to compare with")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--snapshots", type=int, default=100_000)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--audits", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    baseline = Path(args.baseline_src).resolve()
    if not (baseline / "airflow_provider_paimon" / "plugins").is_dir():
        parser.error(f"{baseline} holds no airflow_provider_paimon package")
    print(f"machine: {_machine()}; load average at start: {_load()}")
    store = page_store("tables", args.rows)
    with tempfile.TemporaryDirectory(prefix="paimon-ui-bench-") as tmp:
        home = Path(tmp) / "home"
        warehouse = str(Path(tmp) / "warehouse")
        began = time.monotonic()
        make_warehouse(warehouse, args.snapshots, args.lanes)
        print(f"warehouse: {args.snapshots} snapshots x {args.lanes} lanes in {time.monotonic() - began:.0f} s")
        env = {"PAIMON_LINEAGE_URL": f"sqlite:///{store}",
               "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "host": warehouse})}
        tasks = "\n".join(f'    BranchAuditOperator(task_id="audit_{i}", table="other.t{i}", branch="fix")'
                          for i in range(AUDIT_TASKS))
        with api_server_process(home, env, dag_files={"audits_dag.py": AUDIT_DAG.format(tasks=tasks)}, timeout=300):
            began = time.monotonic()
            seed_audits(home, env, {}, audit_rows(args.audits))
            print(f"audits: {args.audits} reports of other tables seeded in {time.monotonic() - began:.0f} s")
        results, leftovers = {}, {}
        for label, src in (("baseline", baseline), ("ours", ROOT)):
            results[label], running = measure(label, home, {**env, "PYTHONPATH": str(src)}, args.runs, store)
            leftovers[label] = (running, _side_files(store))
        print(f"\nrows {args.rows}, snapshots {args.snapshots} x {args.lanes}, audits {args.audits}; "
              f"load average at end: {_load()}")
        print(f"{'endpoint':9} {'base s':>8} {'ours s':>8} {'x':>6} {'base MB 1st':>11} {'ours MB 1st':>11} "
              f"{'base MB/req':>11} {'ours MB/req':>11} "
              f"{'base KB':>9} {'ours KB':>8} {'six base s':>10} {'six ours s':>10} {'x':>6} {'six base MB':>11} {'six ours MB':>11}")
        for name in ENDPOINTS:
            b, o = results["baseline"][name], results["ours"][name]
            print(f"{name:9} {b['s']:8.2f} {o['s']:8.2f} {b['s'] / o['s']:6.1f} {b['first_mb']:11.1f} "
                  f"{o['first_mb']:11.1f} {b['mb_per_req']:11.1f} "
                  f"{o['mb_per_req']:11.1f} {b['bytes'] / 1024:9.0f} {o['bytes'] / 1024:8.0f} {b['six_s']:10.2f} "
                  f"{o['six_s']:10.2f} {b['six_s'] / o['six_s']:6.1f} {b['six_mb']:11.1f} {o['six_mb']:11.1f}")
        for label, (running, left) in leftovers.items():
            print(f"next to the SQLite store, {label}: while serving {', '.join(running) or 'nothing'}; "
                  f"after it stopped {', '.join(left) or 'nothing'}")
        print("removing the warehouse...", flush=True)


if __name__ == "__main__":
    main()
