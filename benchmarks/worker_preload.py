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
server's median per case, the ratio none / each, and the load average; wall time, and
the CPU time the server's Python processes spent on the task (its daemons and
workers, read from /proc: workers are reused, so they are still there at the task's
end; a worker that exited during the task is missed), which a loaded machine inflates
far less than wall time.

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
METRICS = ("wall", "server CPU")


_TICK = os.sysconf("SC_CLK_TCK")


def python_cpu(root_pid: int) -> dict[int, tuple[float, float]]:
    """{pid: (start ticks, CPU seconds)} of the Python processes under ``root_pid``."""
    procs: dict[int, tuple[int, str, float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        procs[int(entry)] = (int(fields[1]), comm, (int(fields[11]) + int(fields[12])) / _TICK, float(fields[19]))
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in procs.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, [root_pid]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            todo.append(child)
            if procs[child][1].startswith("python"):
                found[child] = (procs[child][3], procs[child][2])
    return found


def cpu_spent(before: dict[int, tuple[float, float]], after: dict[int, tuple[float, float]]) -> float:
    """CPU seconds the processes of ``after`` spent since ``before`` (new ones: all of it)."""
    spent = 0.0
    for pid, (start, cpu) in after.items():
        old = before.get(pid)
        spent += cpu - old[1] if old and old[0] == start else cpu
    return spent


def make_table(warehouse: str) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), True)


def append(spark, warehouse: str) -> None:
    (spark.range(1000).selectExpr("id", "'2026-11-02' as dt").write.format("paimon").mode("append")
     .option("warehouse", warehouse).option("table", "db.t").save())


def timed_task(server, warehouse: str, pool=None) -> tuple[float, float]:
    """(wall seconds, server Python CPU seconds) of one task: a new session (``pool``
    None: registered, stopped after) or a pooled one, appending 1,000 rows."""
    from airflow_provider_paimon.spark.session import remote_job_session

    before = python_cpu(server.process.pid)
    started = time.perf_counter()
    with remote_job_session(server.url, {}, pool) as spark:
        append(spark, warehouse)
    wall = time.perf_counter() - started
    return wall, cpu_spent(before, python_cpu(server.process.pid))


def fmt(measured: tuple[float, float]) -> str:
    return f"{measured[0]:7.2f} s ({measured[1]:5.2f} s CPU)"


def keep(times: dict, mode: str, measured: dict[str, tuple[float, float]], n: int) -> None:
    if n:  # round 0 is the warm-up
        for case, (wall, cpu) in measured.items():
            times[(mode, case, "wall")].append(wall)
            times[(mode, case, "server CPU")].append(cpu)


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
    times: dict[tuple[str, str, str], list[float]] = {(m, c, k): [] for m in modes for c in CASES for k in METRICS}
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
                    measured = {"new session": timed_task(servers[mode], warehouses[mode])}
                    print(f"  round {n} {mode:5s} new session  {fmt(measured['new session'])}{tag}", flush=True)
                    keep(times, mode, measured, n)
                rest = min((time.monotonic() - t for t in last_pooled.values()), default=args.idle)
                if rest < args.idle:
                    time.sleep(args.idle - rest)
                for mode in modes:
                    gap = time.monotonic() - last_pooled[mode] if mode in last_pooled else 0.0
                    measured = {"pooled, idle": timed_task(servers[mode], warehouses[mode], pools[mode]),
                                "pooled, next": timed_task(servers[mode], warehouses[mode], pools[mode])}
                    last_pooled[mode] = time.monotonic()
                    keep(times, mode, measured, n)
                    print(f"  round {n} {mode:5s} pooled, idle {fmt(measured['pooled, idle'])} (idle {gap:.0f} s "
                          f"before)  pooled, next {fmt(measured['pooled, next'])}{tag}", flush=True)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print()
    for metric in METRICS:
        print(f"{metric}: medians (s) per server's daemons, then none's median over each:")
        print(f"{'case':14s} " + " ".join(f"{m:>9s}" for m in modes) + " "
              + " ".join(f"{'none/' + m:>11s}" for m in modes if m != "none"))
        for case in CASES:
            medians = {m: statistics.median(times[(m, case, metric)]) for m in modes}
            ratios = " ".join(f"{medians['none'] / max(medians[m], 0.01):10.1f}x" for m in modes if m != "none") \
                if "none" in medians else ""
            print(f"{case:14s} " + " ".join(f"{medians[m]:9.2f}" for m in modes) + " " + ratios)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
