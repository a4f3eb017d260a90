"""Benchmark: a Connect server whose Python worker daemons preload the source's libraries.

``spark/worker_preload.py`` (docs/connect.md, "Preloading the workers' libraries") on
three Spark Connect servers started alike (pyspark's bundled jars, ``local[2]``, workers
without the package: ``register`` ships it), differing only in their daemons:

* ``none``: Spark's own ``pyspark.daemon``;
* ``tasks``: ``spark.python.daemon.module=paimon_worker_preload`` (the tasks' workers);
* ``all``: that, plus the startup hook for the planner's ``pyspark.daemon``s.

Each round times, on each server in turn (interleaved), three ``paimon`` appends of
1,000 rows to a table of its own:

* ``new session``: a new Connect session, ``register`` (ships the package) and the write;
* ``pooled, idle``: a task on a pooled session (``connect_pool``, as the operators
  lease it) whose previous task ended more than ``--idle`` seconds before (the server
  stops Python workers idle for one minute; the gap is printed);
* ``pooled, next``: the next task on that pooled session, right after.

One warm-up round is discarded (it also makes the pooled sessions). Prints each
server's median per case, the ratio none / each, and the load average.

    python benchmarks/worker_preload.py [--repeat 3] [--idle 70] [--modes none,tasks,all]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # connect_server: the Connect server the tests start
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyarrow as pa  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
CASES = ("new session", "pooled, idle", "pooled, next")


def make_table(warehouse: str) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), True)


def append(spark, warehouse: str) -> None:
    (spark.range(1000).selectExpr("id", "'2026-11-02' as dt").write.format("paimon").mode("append")
     .option("warehouse", warehouse).option("table", "db.t").save())


def new_session_task(url: str, warehouse: str) -> float:
    from airflow_provider_paimon.spark.session import remote_job_session

    started = time.perf_counter()
    with remote_job_session(url, {}) as spark:  # a new session, registered, stopped after
        append(spark, warehouse)
    return time.perf_counter() - started


def pooled_task(url: str, warehouse: str, pool) -> float:
    from airflow_provider_paimon.spark.session import remote_job_session

    started = time.perf_counter()
    with remote_job_session(url, {}, pool) as spark:
        append(spark, warehouse)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle", type=float, default=70.0,
                        help="seconds a pooled session rests before its 'idle' task (the server: 60)")
    parser.add_argument("--modes", default="none,tasks,all")
    args = parser.parse_args()
    import logging

    logging.disable(logging.WARNING)
    from connect_server import start_connect_server

    from airflow_provider_paimon.spark.connect_pool import SessionPool
    from airflow_provider_paimon.spark.session import connect_mode

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-preload-"))
    os.environ["PAIMON_PY_FILES_CACHE_DIR"] = str(root / "pyfiles")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")
    servers = {}
    times: dict[tuple[str, str], list[float]] = {(m, c): [] for m in modes for c in CASES}
    try:
        for mode in modes:
            servers[mode] = start_connect_server(preload=mode)
            print(f"server '{mode}' up in {servers[mode].started_in:.1f} s (not counted)", flush=True)
        pools = {m: SessionPool(f"bench-{m}", 1, str(root / "slots")) for m in modes}
        warehouses = {m: str(root / f"wh-{m}") for m in modes}
        for wh in warehouses.values():
            make_table(wh)
        last_pooled: dict[str, float] = {}
        with connect_mode(True):
            for n in range(args.repeat + 1):  # round 0: warm-up, discarded
                tag = " (warm-up)" if n == 0 else ""
                for mode in modes:
                    elapsed = new_session_task(servers[mode].url, warehouses[mode])
                    if n:
                        times[(mode, "new session")].append(elapsed)
                    print(f"  round {n} {mode:5s} new session  {elapsed:7.2f} s{tag}", flush=True)
                rest = min((time.monotonic() - t for t in last_pooled.values()), default=args.idle)
                if rest < args.idle:
                    time.sleep(args.idle - rest)
                for mode in modes:
                    gap = time.monotonic() - last_pooled[mode] if mode in last_pooled else 0.0
                    idle = pooled_task(servers[mode].url, warehouses[mode], pools[mode])
                    nxt = pooled_task(servers[mode].url, warehouses[mode], pools[mode])
                    last_pooled[mode] = time.monotonic()
                    if n:
                        times[(mode, "pooled, idle")].append(idle)
                        times[(mode, "pooled, next")].append(nxt)
                    print(f"  round {n} {mode:5s} pooled, idle {idle:7.2f} s (idle {gap:.0f} s before)"
                          f"  pooled, next {nxt:7.2f} s{tag}", flush=True)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print()
    print("medians (s) per server's daemons, then none's median over each:")
    print(f"{'case':14s} " + " ".join(f"{m:>9s}" for m in modes) + " "
          + " ".join(f"{'none/' + m:>11s}" for m in modes if m != "none"))
    for case in CASES:
        medians = {m: statistics.median(times[(m, case)]) for m in modes}
        ratios = " ".join(f"{medians['none'] / medians[m]:10.1f}x" for m in modes if m != "none") \
            if "none" in medians else ""
        print(f"{case:14s} " + " ".join(f"{medians[m]:9.2f}" for m in modes) + " " + ratios)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
