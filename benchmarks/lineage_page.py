"""The lineage page's load time with 100,000 lineage rows, in headless Chromium.

A real ``airflow api-server`` (temporary AIRFLOW_HOME, as the UI tests start it) serves
the page over a SQLite lineage store of ``--rows`` lineage rows, in each shape of
``tests/ui/big_stores.page_store``:

* ``snapshots``: 100 jobs, 120 tables, ``rows`` snapshot-level rows;
* ``tables``: ``rows`` table-level rows (50,000 jobs, 55,000 tables).

Measured: from the start of navigation (``performance.timeOrigin``) to the first frame
in which the graph's nodes are in the DOM, ``--runs`` page loads after one warm-up
(which opens the store and fills the server's caches). Also the ``/api/graph``
response time and size as the page requests it.

    python benchmarks/lineage_page.py              # both shapes, 100,000 rows, 5 runs
    python benchmarks/lineage_page.py --shapes tables --runs 10
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from ui.airflow_server import api_server, login_token  # noqa: E402
from ui.big_stores import PAGE_ROWS, PAGE_SHAPES, page_store  # noqa: E402
from ui.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

#: True in the first frame where the graph's nodes are drawn; the ms since navigation start.
RENDERED = "() => document.querySelector('#graph g.node') ? performance.now() : false"


def _machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def measure(shape: str, rows: int, runs: int) -> dict:
    from playwright.sync_api import sync_playwright

    store = page_store(shape, rows)
    with tempfile.TemporaryDirectory(prefix="paimon-page-bench-") as home, \
            api_server(Path(home), {"PAIMON_LINEAGE_URL": f"sqlite:///{store}"}) as base, \
            sync_playwright() as pw:
        token = login_token(base)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        context.add_cookies([{"name": "_token", "value": token, "url": base}])
        page = context.new_page()
        loads = []
        for i in range(runs + 1):
            page.goto(base + "/paimon-lineage/", wait_until="commit")
            ms = page.wait_for_function(RENDERED, polling="raf", timeout=120_000).json_value()
            if i:
                loads.append(ms)
        nodes = page.eval_on_selector_all("#graph g.node", "els => els.length")
        summary = page.inner_text("#summary")
        browser.close()
        api = []
        for _ in range(runs):
            req = urllib.request.Request(base + "/paimon-lineage/api/graph?max_jobs=500",
                                         headers={"Authorization": "Bearer " + token})
            began = time.perf_counter()
            body = urllib.request.urlopen(req, timeout=120).read()
            api.append((time.perf_counter() - began) * 1000)
    return {"shape": shape, "loads": loads, "api": api, "bytes": len(body), "nodes": nodes, "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=PAGE_ROWS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shapes", nargs="+", choices=PAGE_SHAPES, default=list(PAGE_SHAPES))
    args = parser.parse_args()
    print(f"machine: {_machine()}")
    print(f"{'shape':10} {'rows':>8} {'load p50 ms':>12} {'load max ms':>12} {'api p50 ms':>11} {'api KB':>7} "
          f"{'nodes drawn':>11}  summary")
    for shape in args.shapes:
        r = measure(shape, args.rows, args.runs)
        print(f"{shape:10} {args.rows:>8} {statistics.median(r['loads']):>12.0f} {max(r['loads']):>12.0f} "
              f"{statistics.median(r['api']):>11.0f} {r['bytes'] / 1024:>7.0f} {r['nodes']:>11}  {r['summary']}")


if __name__ == "__main__":
    main()
