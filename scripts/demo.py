"""The README demo: correct a Paimon table's data with Airflow and Spark, then show its lineage.

Everything runs on embedded defaults, under ``./demo-output/`` (recreated each run):

* a file warehouse (``demo-output/warehouse``) with ``db.orders`` (the source) and
  ``db.orders_enriched`` (the sink), created with pypaimon;
* a SQLite lineage store (``demo-output/lineage.db``);
* Airflow 3 with a SQLite metadata DB in a temp ``AIRFLOW_HOME`` (removed at the end),
  the repo's ``dags/`` as DAGs folder, and ``spark_default`` = local Spark;
* every Spark job is a real ``spark-submit`` on ``local[2]``.

Steps: create the tables -> run ``paimon_etl_original`` (the buggy job writes main) ->
show main -> run ``paimon_data_correction`` with ``dag.test()`` -> show main, the backup
of the old main, and the data lineage of the corrected snapshots. Airflow's and
Spark's own logs go to ``demo-output/airflow.log``. Nothing keeps running afterwards.

With ``--warehouse s3`` the warehouse is ``s3://<bucket>/warehouse`` on a loopback S3
server (``moto``, started here and stopped at the end): the ``paimon_default``
connection carries its endpoint, region and path-style access in Extra and the access
key / secret key in Login / Password, and every task and Spark job reaches the tables
through it (docs/storage.md). The corrected job's streaming checkpoint stays on local
disk (``demo-output/checkpoints``): Spark writes checkpoints through Hadoop, which
needs hadoop-aws for ``s3a://``.

Usage: ``bash scripts/demo.sh [--warehouse s3]`` (bootstraps first) or
``.venv/bin/python scripts/demo.py [--warehouse s3]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DAGS = REPO / "dags"
OUT = Path(os.environ.get("PAIMON_DEMO_OUTPUT", "demo-output")).resolve()
WAREHOUSE = OUT / "warehouse"
LINEAGE_URL = f"sqlite:///{OUT / 'lineage.db'}"
LOG = OUT / "airflow.log"
VENV_BIN = Path(sys.executable).parent

ORDERS = [
    {"order_id": 1, "customer": "ada", "amount_cents": 1250},
    {"order_id": 2, "customer": "bob", "amount_cents": 25000},
    {"order_id": 3, "customer": "cy", "amount_cents": 999},
    {"order_id": 4, "customer": "dee", "amount_cents": 180000},
    {"order_id": 5, "customer": "eve", "amount_cents": 4200},
]
TIMINGS: list[tuple[str, float]] = []
#: set by ``--warehouse s3``: the loopback server and the table's catalog options
S3: dict[str, Any] = {}


def warehouse_uri() -> str:
    return S3["uri"] if S3 else str(WAREHOUSE)


def catalog_options() -> dict[str, str]:
    return {"warehouse": warehouse_uri(), **S3.get("options", {})}


def start_s3() -> None:
    """Start the loopback S3 server (moto) and make a bucket for the warehouse."""
    sys.path.insert(0, str(REPO / "tests"))
    from s3support import ACCESS_KEY, REGION, SECRET_KEY, start_loopback_s3

    server = start_loopback_s3()
    bucket = server.new_bucket("demo")
    S3.update(server=server, uri=f"s3://{bucket}/warehouse", options=server.options())
    S3["connection"] = {
        "conn_type": "paimon", "host": S3["uri"], "login": ACCESS_KEY, "password": SECRET_KEY,
        "extra": {"endpoint": server.endpoint, "region": REGION, "path-style-access": "true"},
    }


def setup_environment(airflow_home: str) -> None:
    """Point Airflow at a temp home, the repo's DAGs, and local Spark (before importing it)."""
    os.environ.update(
        {
            "AIRFLOW_HOME": airflow_home,
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home}/airflow.db",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps(
                S3.get("connection") or {"conn_type": "paimon", "host": str(WAREHOUSE)}
            ),
            # blank on S3: the DAGs then take the warehouse and its options from the connection
            "PAIMON_WAREHOUSE": "" if S3 else str(WAREHOUSE),
            "PAIMON_LINEAGE_URL": LINEAGE_URL,
            "PAIMON_HOME": str(OUT / "paimon-home"),
            "PAIMON_PY_FILES_CACHE_DIR": os.path.join(airflow_home, "pyfiles"),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PATH": str(VENV_BIN) + os.pathsep + os.environ.get("PATH", ""),
        }
    )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """Print a step header and record how long it took."""
    print(f"\n== {title}", flush=True)
    start = time.monotonic()
    yield
    took = time.monotonic() - start
    TIMINGS.append((title, took))
    print(f"   ({took:.0f} s)", flush=True)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Send this process's stdout/stderr (Airflow's and spark-submit's logs) to the log file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(LOG, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def create_tables() -> None:
    """``db.orders`` with five orders (amounts in cents) and an empty ``db.orders_enriched``."""
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    source = pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount_cents", pa.int64())])
    sink = pa.schema(
        [("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()), ("size", pa.string())]
    )
    catalog = CatalogFactory.create(catalog_options())
    catalog.create_database("db", True)
    catalog.create_table("db.orders", Schema.from_pyarrow_schema(source), False)
    catalog.create_table("db.orders_enriched", Schema.from_pyarrow_schema(sink), False)
    table = catalog.get_table("db.orders")
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.Table.from_pylist(ORDERS, schema=source))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    print(f"   warehouse {warehouse_uri()}: db.orders ({len(ORDERS)} orders, snapshot 1), db.orders_enriched (empty)")


def migrate_airflow_db() -> None:
    with open(LOG, "a") as log:
        subprocess.run(
            [str(VENV_BIN / "airflow"), "db", "migrate"],
            check=True, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ), timeout=600,
        )


def run_dag(module_name: str, conf: dict[str, Any] | None = None) -> dict[str, str]:
    """``dag.test()`` the DAG in ``dags/<module_name>.py``; return each task's final state."""
    import importlib

    from airflow.utils.session import create_session

    dag = importlib.import_module(module_name).dag
    with quiet():
        run = dag.test(run_conf=conf or {})
    with create_session() as session:
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}
    for task_id in [t.task_id for t in dag.topological_sort()]:
        print(f"   {task_id:<20} {states.get(task_id)}")
    if run.state != "success":
        raise SystemExit(f"{dag.dag_id} ended {run.state}; see {LOG}")
    return states


def show_rows(title: str, branch: str | None = None) -> list[dict[str, Any]]:
    from correction_tasks import paimon_hook_for, read_rows

    with quiet():  # pypaimon logs each scan plan
        hook = paimon_hook_for(None if S3 else str(WAREHOUSE))
        rows = sorted(read_rows(hook, "db.orders_enriched", branch), key=lambda r: r["order_id"])
        snapshot = hook.get_latest_snapshot_id("db.orders_enriched", branch)
    print(f"   {title} (snapshot {snapshot}):")
    print(f"     {'order_id':>8} {'customer':<8} {'amount':>9}  size")
    for r in rows:
        print(f"     {r['order_id']:>8} {r['customer']:<8} {r['amount']:>9.2f}  {r['size']}")
    return rows


def show_lineage(job: str) -> None:
    """The corrected job's batches: which source snapshot each consumed, which snapshot it produced."""
    from airflow_provider_paimon.lineage import LineageStore, upstream

    with LineageStore.from_url(LINEAGE_URL) as store:
        for sink in store.sink_data_lineages(job=job):
            ref = f"{sink.database}.{sink.table}$branch_{sink.branch}" if sink.branch != "main" else (
                f"{sink.database}.{sink.table}"
            )
            print(f"   {ref} snapshot {sink.snapshot_id} <- job {job!r} batch {sink.barrier_id}")
            for node in upstream(store, sink.database, sink.table, sink.snapshot_id, branch=sink.branch):
                print(f"       consumed {node.ref} ({node.job} batch {node.barrier_id})")
        reads = [f"{t.database}.{t.table}" for t in store.source_table_lineages(job=job)]
        writes = [f"{t.database}.{t.table} ({t.branch})" for t in store.sink_table_lineages(job=job)]
        print(f"   table lineage of {job!r}: reads {reads}, writes {writes}")


def parse_args(argv: list[str]) -> str:
    """The warehouse kind from ``--warehouse file|s3`` (default ``file``); anything else is refused."""
    import argparse

    parser = argparse.ArgumentParser(prog="demo", description="Correct a Paimon table with Airflow and Spark.")
    parser.add_argument("--warehouse", choices=("file", "s3"), default="file",
                        help="file: demo-output/warehouse; s3: a loopback S3 server (moto)")
    return parser.parse_args(argv).warehouse


def main(argv: list[str] | None = None) -> int:
    kind = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    if kind == "s3":
        start_s3()
    airflow_home = tempfile.mkdtemp(prefix="paimon-demo-airflow-home-")
    setup_environment(airflow_home)
    print(f"Paimon data-correction demo ({kind} warehouse {warehouse_uri()}); logs: {LOG}")
    try:
        with step(f"1. create source and sink tables (pypaimon, {kind} warehouse)"):
            create_tables()
        with step("2. Airflow metadata DB (SQLite, temp AIRFLOW_HOME)"):
            migrate_airflow_db()
        with step("3. original ETL DAG paimon_etl_original: the buggy job writes main (spark-submit)"):
            run_dag("etl_original")
        with step("4. main before the correction (amounts 10x too large: cents / 10)"):
            show_rows("db.orders_enriched on main")
        conf = {"branch": "correction", "tag": "before_correction", "backup_name": "main_before_correction"}
        if S3:  # Spark's checkpoint goes through Hadoop: local unless hadoop-aws is installed
            conf["checkpoint"] = str(OUT / "checkpoints" / "orders_enriched.correction")
        with step("5. correction DAG paimon_data_correction (dag.test, 4 spark-submits)"):
            run_dag("data_correction", conf)
        with step("6. after: main holds the corrected rows; the old main is kept as a branch"):
            show_rows("db.orders_enriched on main")
            show_rows("backup branch main_before_correction", "main_before_correction")
        with step("7. data lineage of the corrected snapshots (lineage store)"):
            show_lineage("enrich_orders.fixed.correction")
            print("   the original job's batches:")
            show_lineage("enrich_orders.original")
    finally:
        shutil.rmtree(airflow_home, ignore_errors=True)
        if S3:
            S3["server"].stop()
    total = time.monotonic() - started
    print("\nTimings: " + ", ".join(f"step {t.split('.')[0]} {s:.0f} s" for t, s in TIMINGS) + f"; total {total:.0f} s")
    kept = "lineage.db, airflow.log; the S3 server is stopped" if S3 else "warehouse, lineage.db, airflow.log"
    print(f"Output kept in {OUT} ({kept}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
