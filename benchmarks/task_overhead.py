"""Benchmark: one Paimon Airflow task by spark-submit vs Spark Connect (new vs pooled session).

On a warm Spark Connect server, a new Connect session per task is compared with a
pooled one that an earlier task left warm.

The same operator ``execute`` (what an Airflow task runs, minus the scheduler) for three
tasks, with ``spark_conn_id`` naming a ``spark`` connection (``local[2]``: spark-submit,
a JVM and Python workers per task) or a ``spark_connect`` connection (Airflow's type: the
job runs in this process on a session of an already-running Connect server), either with
``session_reuse: false`` (a new server session per task, whose Python workers start
anew) or with the default pool (``spark/connect_pool.py``: the task leases a server
session an earlier task used):

* ``tag``: ``TagCreateOperator`` (a metadata-only job);
* ``compact``: ``CompactionOperator`` on a table of 8 small files (a fresh table per run);
* ``user job``: ``PaimonSparkSubmitOperator`` running a ``.py`` file that appends 1,000
  rows through the ``paimon`` source.

The Connect server is started once (pyspark's bundled jars, ``local[2]``, its workers
without the package: ``register`` ships it; its worker daemons preload the source's
libraries unless ``--preload none``: ``spark/worker_preload.py``, compared side by side
in ``benchmarks/worker_preload.py``) and warmed by one discarded round (which
also makes the pooled session); the spark-submit path gets the same discarded round.
Rounds interleave the paths; the pooled connection runs twice in a row ("pooled, idle":
its session's previous task ended a round of other tasks ago, the gap is printed;
"pooled, next": right after). Prints each path's median wall time, the ratios, and the
load average; the whole task is timed (the job's own work is not separated out).

    python benchmarks/task_overhead.py [--repeat 3] [--no-spark-submit] [--preload all|tasks|none]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # connect_server: the Connect server the tests start

_HOME = tempfile.mkdtemp(prefix="paimon-bench-airflow-")
os.environ["AIRFLOW_HOME"] = _HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_HOME}/airflow.db"
os.environ["PAIMON_PY_FILES_CACHE_DIR"] = os.path.join(_HOME, "pyfiles")
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyarrow as pa  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
APP = textwrap.dedent("""
    import os, sys
    from pyspark.sql import SparkSession
    from airflow_provider_paimon.spark import register
    spark = SparkSession.builder.getOrCreate()
    register(spark)
    (spark.range(1000).selectExpr("id", "'2026-11-02' as dt").write.format("paimon").mode("append")
     .option("warehouse", os.environ["PAIMON_CONNECTION_WAREHOUSE"]).option("table", sys.argv[1]).save())
""")


def make_table(warehouse: str, files: int) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    table = catalog.get_table("db.t")
    for k in range(files):
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.table({"id": [k], "dt": ["2026-11-01"]}, schema=SCHEMA))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()


def set_conn(conn_id: str, conn: dict) -> None:
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(conn)


def run_task(kind: str, spark_conn_id: str, root: Path, n: int, app: Path, label: str) -> float:
    """Wall time of one task of ``kind`` on a fresh warehouse (set up before the clock)."""
    from airflow_provider_paimon.operators.compaction import CompactionOperator
    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
    from airflow_provider_paimon.operators.tag import TagCreateOperator

    warehouse = str(root / f"wh-{kind.replace(' ', '_')}-{label.replace(' ', '_').replace(',', '')}-{n}")
    make_table(warehouse, 8 if kind == "compact" else 1)
    set_conn("paimon_default", {"conn_type": "paimon", "host": warehouse})
    if kind == "tag":
        op = TagCreateOperator(task_id="tag", table="db.t", tag=f"t{n}", spark_conn_id=spark_conn_id)
    elif kind == "compact":
        op = CompactionOperator(task_id="compact", table="db.t", spark_conn_id=spark_conn_id,
                                options={"compaction.min.file-num": "2"})
    else:
        op = PaimonSparkSubmitOperator(task_id="job", application=str(app), application_args=["db.t"],
                                       paimon_conn_id="paimon_default", spark_conn_id=spark_conn_id)
    started = time.perf_counter()
    op.execute({})
    elapsed = time.perf_counter() - started
    shutil.rmtree(warehouse, ignore_errors=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-spark-submit", action="store_true",
                        help="time the two Connect paths only (spark-submit is most of the run's time)")
    parser.add_argument("--preload", choices=("all", "tasks", "none"), default="all",
                        help="the Connect server's worker daemons (tests/connect_server.py)")
    args = parser.parse_args()
    import logging

    logging.disable(logging.WARNING)
    from connect_server import start_connect_server

    from airflow_provider_paimon.spark.session import connect_mode

    root = Path(tempfile.mkdtemp(prefix="paimon-bench-overhead-"))
    app = root / "append_1000.py"
    app.write_text(APP)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")
    server = start_connect_server(preload=args.preload)
    print(f"Connect server up in {server.started_in:.1f} s (started once, not counted; "
          f"worker preload: {args.preload})")
    host, port = server.url[len("sc://"):].split(":")
    os.environ["PAIMON_CONNECT_SESSION_DIR"] = os.path.join(_HOME, "connect-sessions")
    set_conn("spark_connect_new", {"conn_type": "spark_connect", "host": host, "port": int(port),
                                   "extra": {"session_reuse": False}})
    set_conn("spark_connect_pooled", {"conn_type": "spark_connect", "host": host, "port": int(port)})
    set_conn("spark_local", {"conn_type": "spark", "host": "local[2]"})
    # "pooled, idle": the pooled session's previous task ended a while ago (the gap is
    # printed: the server stops Python workers idle for 1 minute, its daemon stays);
    # "pooled, next": the next task right after it, on the same session
    paths = {"spark-submit": "spark_local", "connect new": "spark_connect_new",
             "pooled, idle": "spark_connect_pooled", "pooled, next": "spark_connect_pooled"}
    if args.no_spark_submit:
        del paths["spark-submit"]
    kinds = ["tag", "compact", "user job"]
    times: dict[tuple[str, str], list[float]] = {(k, p): [] for k in kinds for p in paths}
    pooled_end = 0.0
    try:
        for n in range(args.repeat + 1):  # round 0: warm-up, discarded
            for kind in kinds:
                for path, conn_id in paths.items():
                    gap = f" (pooled session idle {time.monotonic() - pooled_end:.0f} s before)" \
                        if path == "pooled, idle" and pooled_end else ""
                    with connect_mode(conn_id != "spark_local"):
                        elapsed = run_task(kind, conn_id, root, n, app, path)
                    if conn_id == "spark_connect_pooled":
                        pooled_end = time.monotonic()
                    if n > 0:
                        times[(kind, path)].append(elapsed)
                    print(f"  round {n} {kind:8s} {path:14s} {elapsed:7.2f} s" + (" (warm-up)" if n == 0 else "")
                          + gap, flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(_HOME, ignore_errors=True)
    print()
    print("medians (s), then each path's median over the 'pooled, next' median:")
    others = [p for p in paths if p != "pooled, next"]
    print(f"{'task':10s} " + " ".join(f"{p:>14s}" for p in paths) + " " + " ".join(f"{p:>14s}" for p in others))
    for kind in kinds:
        medians = {p: statistics.median(times[(kind, p)]) for p in paths}
        best = medians["pooled, next"]
        print(f"{kind:10s} " + " ".join(f"{medians[p]:14.2f}" for p in paths) + " "
              + " ".join(f"{medians[p] / best:13.1f}x" for p in others))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
