"""Primary-key tables: read time after many upsert commits, before and after compaction.

    python benchmarks/pk_compaction.py [--rows 400000] [--commits 100 1000] [--master local[2]]

For each commit count C: a deduplicate table (``bucket`` 4) is loaded with ``--rows``
rows in one commit, then C commits each upsert ``--rows / 1000`` random keys (plain
pypaimon, as a CDC writer would). Printed, in one run, with ratios:

- ``read_table`` full scan (a hash of every column summed, after one untimed warm-up
  scan) of the table as written
  (every bucket needs a merge: the Python path), after the ``compact`` job's full
  compaction (top-level files: Spark's Parquet reader), of a freshly written table
  holding the same rows, and Spark's own Parquet on the same rows (goal: compacted
  >= 0.9x of Parquet; within 1.2x of the fresh table);
- compaction throughput in MB/s of input files: the job (``SparkUnitRewriter``, all
  local cores) vs one process that reads the table with pypaimon (merge on read) and
  writes it to a new table with pypaimon's writer.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pypaimon import Schema

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.spark.session import local_session

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("user", pa.string()),
    ("amount", pa.float64()),
    ("n", pa.int64()),
    ("note", pa.string()),
])
MB = 1024 * 1024


def rows_for(rng: np.random.Generator, ids: np.ndarray, version: int) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "user": pa.array([f"user-{i % 5000}" for i in ids]),
        "amount": pa.array(rng.random(len(ids)) * 100),
        "n": pa.array(np.full(len(ids), version, dtype=np.int64)),
        "note": pa.array([f"v{version} of {i}" for i in ids]),
    }, schema=SCHEMA)


def create(warehouse: str, name: str) -> object:
    catalog = open_catalog(warehouse)
    catalog.create_database("bench", True)
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "4"}), False)
    return load_table(catalog, name)


def write(table, data: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    writer, commit = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    commit.commit(writer.prepare_commit())
    writer.close()
    commit.close()


def scan_seconds(spark, df_fn, repeat: int) -> tuple[float, int]:
    from pyspark.sql import functions as F

    times, count = [], 0
    df = df_fn()  # untimed warm-up: JVM code paths, Python workers
    df.select(F.sum(F.hash(*df.columns))).collect()
    for _ in range(repeat):
        start = time.perf_counter()
        df = df_fn()
        row = df.select(F.sum(F.hash(*df.columns)).alias("h"), F.count("*").alias("c")).collect()[0]
        times.append(time.perf_counter() - start)
        count = row["c"]
    return statistics.median(times), count


def input_bytes(table) -> int:
    return sum(e.file.file_size for e in live_entries(table, latest_snapshot(table)))


def bench(spark, args, commits: int) -> None:
    from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys
    from airflow_provider_paimon.spark import read_table
    from airflow_provider_paimon.spark.lsm_compaction import SparkUnitRewriter

    root = tempfile.mkdtemp(prefix="pk-bench-")
    try:
        rng = np.random.default_rng(commits)
        warehouse = os.path.join(root, "wh")
        os.makedirs(warehouse)
        table = create(warehouse, "bench.t")
        all_ids = np.arange(args.rows)
        write(table, rows_for(rng, all_ids, 0))
        per_commit = max(1, args.rows // 1000)
        start = time.perf_counter()
        for c in range(1, commits + 1):
            ids = np.sort(rng.choice(all_ids, per_commit, replace=False))
            write(load_table(open_catalog(warehouse), "bench.t"), rows_for(rng, ids, c))
        write_s = time.perf_counter() - start

        def ours():
            return read_table(spark, "bench.t", warehouse=warehouse)

        before_s, rows = scan_seconds(spark, ours, args.repeat)
        table = load_table(open_catalog(warehouse), "bench.t")
        size = input_bytes(table)
        start = time.perf_counter()
        result = compact_primary_keys(
            table, "full", rewriter=SparkUnitRewriter(spark, warehouse, "bench.t"))
        compact_s = time.perf_counter() - start
        assert result.committed, result.message
        after_s, rows_after = scan_seconds(spark, ours, args.repeat)
        assert rows_after == rows
        plan = ours().native_plan

        # the same rows freshly written, and as plain Parquet
        final = load_table(open_catalog(warehouse), "bench.t")
        builder = final.new_read_builder()
        merged = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        fresh = create(warehouse, "bench.fresh")
        write(fresh, merged)
        fresh_s, _ = scan_seconds(spark, lambda: read_table(spark, "bench.fresh", warehouse=warehouse),
                                  args.repeat)
        parquet_dir = os.path.join(root, "parquet")
        spark.createDataFrame(merged.to_pandas()).repartition(4).write.parquet(parquet_dir)
        parquet_s, _ = scan_seconds(spark, lambda: spark.read.parquet(parquet_dir), args.repeat)

        # one-process pypaimon read-merge-write of the table as it was before compaction
        baseline_table = load_table(open_catalog(warehouse), "bench.t").copy(
            {"scan.snapshot-id": str(result.extra["planned_snapshot_id"])})
        start = time.perf_counter()
        builder = baseline_table.new_read_builder()
        data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        write(create(warehouse, "bench.baseline"), data)
        baseline_s = time.perf_counter() - start

        print(f"\n== {commits} upsert commits of {per_commit} rows ({write_s:.1f}s to write); "
              f"{rows} rows, {result.files_before} files, {size / MB:.1f} MB")
        print(f"read_table before compaction: {before_s:.2f}s (python-path files {plan.python_file_count} "
              f"after; before: all merged in Python)")
        print(f"read_table after full compaction: {after_s:.2f}s, {plan.native_files} native files | "
              f"speedup {before_s / after_s:.2f}x")
        print(f"freshly written table (read_table): {fresh_s:.2f}s | compacted/fresh time "
              f"{after_s / fresh_s:.2f}x (goal <= 1.2x)")
        print(f"Spark Parquet, same rows: {parquet_s:.2f}s | compacted throughput "
              f"{parquet_s / after_s:.2f}x of Parquet (goal >= 0.9x)")
        ours_mbs = size / MB / compact_s
        base_mbs = size / MB / baseline_s
        print(f"compaction: {ours_mbs:.1f} MB/s ({compact_s:.2f}s, {result.files_before} -> "
              f"{result.files_after} files) vs pypaimon read-merge-write {base_mbs:.1f} MB/s "
              f"({baseline_s:.2f}s) | ratio {ours_mbs / base_mbs:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--commits", type=int, nargs="+", default=[100])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_session("pk-compaction-bench", master=args.master)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; rows {args.rows}")
    for commits in args.commits:
        bench(spark, args, commits)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
