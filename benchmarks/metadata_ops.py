"""Benchmark: a metadata-only task through spark-submit vs in the Airflow worker (``run_in``).

Branch, tag, maintenance and publish jobs never create a SparkSession, but through
spark-submit every task starts a JVM and ships the package as ``--py-files``. With
``run_in="worker"`` the same job runs as a child of the worker's Python
(``hooks/local_job.py``). This times exactly those two commands for the same job
(``tag create`` then ``tag delete`` on one table, so each path starts from the same
table), interleaved, after one discarded warm-up round, and prints best, median and
the ratio. The Airflow parts around them (rendering, preflight) are the same both ways.

    python benchmarks/metadata_ops.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_provider_paimon.hooks.local_job import LAUNCHER_MODULE
from airflow_provider_paimon.packaging import build_py_files_zip, launcher_path


def make_table(warehouse: str) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema), False)
    table = catalog.get_table("db.t")
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


def spark_submit_command(job: list[str]) -> list[str]:
    spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    return [spark_submit, "--master", "local[1]", "--py-files", build_py_files_zip(),
            launcher_path(), *job]


def worker_command(job: list[str]) -> list[str]:
    return [sys.executable, "-m", LAUNCHER_MODULE, *job]


def timed(command: list[str]) -> float:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or "PAIMON_RESULT" not in done.stdout:
        raise SystemExit(f"job failed ({done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-metadata-")
    try:
        warehouse = os.path.join(tmp, "wh")
        make_table(warehouse)
        base = ["--warehouse", warehouse, "--table", "db.t", "--tag", "bench"]
        jobs = [["tag", "create", *base], ["tag", "delete", *base]]
        times: dict[str, list[float]] = {"spark-submit": [], "worker": []}
        for round_no in range(args.repeat + 1):  # round 0 is the warm-up
            for name, command in (("spark-submit", spark_submit_command), ("worker", worker_command)):
                for job in jobs:  # create, then delete: each path starts from the same table
                    elapsed = timed(command(job))
                    if round_no:
                        times[name].append(elapsed)
        print(f"{'path':<14}{'best':>9}{'median':>9}   (tag create/delete, {2 * args.repeat} jobs each)")
        for name, values in times.items():
            print(f"{name:<14}{min(values):>8.2f}s{statistics.median(values):>8.2f}s")
        best = min(times["spark-submit"]) / min(times["worker"])
        median = statistics.median(times["spark-submit"]) / statistics.median(times["worker"])
        print(f"worker is {best:.1f}x faster (best), {median:.1f}x (median); load average "
              f"{os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
