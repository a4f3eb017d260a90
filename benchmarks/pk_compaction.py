"""Primary-key tables: read time after many upsert commits, before and after compaction.

    python benchmarks/pk_compaction.py [--rows 400000] [--commits 100 1000] [--master local[2]]
    python benchmarks/pk_compaction.py --stream [--stream-minutes 3] [--stream-rows 200]

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

``--stream``: two real streaming queries one after the other (``rate`` source, one
micro-batch per second of ``--stream-rows`` upserts over ``--stream-keys`` keys) into a
primary-key table (``bucket`` 2) through the ``paimon`` sink: with the sink's own
compaction (Paimon's writer rules, the defaults: trigger 5, stop trigger 8) and with
``write-only=true``. Sampled every ``--sample-s``: the most level-0 files of a bucket;
printed: micro-batch durations (Spark's ``triggerExecution``) p50/p99/max after the
first ``--skip`` batches, the p99 ratio (goal: within 1.1x of write-only), COMPACT
snapshots, and whether each table reads the keys the stream wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # streaming_compaction's helpers

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


def level0_per_bucket(warehouse: str, name: str) -> int:
    table = load_table(open_catalog(warehouse), name)
    counts: dict[tuple, int] = {}
    for e in live_entries(table, latest_snapshot(table)):
        key = (tuple(e.partition.values), e.bucket)
        counts[key] = counts.get(key, 0) + (1 if e.file.level == 0 else 0)
    return max(counts.values(), default=0)


def stream_run(spark, warehouse: str, name: str, args, options: dict[str, str], checkpoint: str,
               minutes: float, skip: int) -> dict:
    from streaming_compaction import percentile

    df = (spark.readStream.format("rate").option("rowsPerSecond", args.stream_rows).load()
          .selectExpr(f"coalesce(value % {args.stream_keys}, 0L) as id", "cast(timestamp as string) as ts",
                      "value as n"))
    query = (df.writeStream.format("paimon").option("warehouse", warehouse).option("table", name)
             .option("create-table", "true").option("primary-keys", "id").option("bucket", "2")
             .options(**options).option("checkpointLocation", checkpoint)
             .trigger(processingTime="1 second").start())
    started, samples = time.monotonic(), []
    try:
        while time.monotonic() - started < minutes * 60:
            time.sleep(args.sample_s)
            if query.exception() is not None:
                raise query.exception()
            with contextlib.suppress(Exception):  # the table appears with batch 0
                samples.append(level0_per_bucket(warehouse, name))
    finally:
        query.stop()
    batches = {p["batchId"]: p for p in query.recentProgress if p.get("numInputRows", 0) > 0}
    durations = [batches[b]["durationMs"]["triggerExecution"] / 1000 for b in sorted(batches)][skip:]
    time.sleep(3)
    table = load_table(open_catalog(warehouse), name)
    builder = table.new_read_builder()
    ids = builder.new_read().to_arrow(builder.new_scan().plan().splits()).column("id").to_pylist()
    written = sum(p["numInputRows"] for p in batches.values())
    snapshots = table.snapshot_manager().list_snapshots()
    return {
        "batches": len(batches), "p50_s": percentile(durations, 50), "p99_s": percentile(durations, 99),
        "max_s": max(durations, default=float("nan")), "level0_max": max(samples, default=0),
        "level0_last": samples[-1] if samples else 0, "samples": samples,
        "compact_snapshots": sum(1 for s in snapshots if s.commit_kind == "COMPACT"),
        "keys_ok": sorted(ids) == list(range(min(written, args.stream_keys))),
    }


def bench_stream(spark, args) -> None:
    root = tempfile.mkdtemp(prefix="pk-stream-bench-")
    try:
        warehouse = os.path.join(root, "wh")
        os.makedirs(warehouse)
        print(f"warming up for {args.warmup_s:.0f} s ...", flush=True)
        stream_run(spark, warehouse, "bench.warmup", args, {"write-only": "true"}, os.path.join(root, "ck-w"),
                   args.warmup_s / 60, 0)
        results = {}
        for label, extra in (("compaction", {}), ("write-only", {"write-only": "true"})):
            print(f"running {label} for {args.stream_minutes} min ...", flush=True)
            results[label] = stream_run(spark, warehouse, f"bench.{label.replace('-', '_')}", args, extra,
                                        os.path.join(root, f"ck-{label}"), args.stream_minutes, args.skip)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    a, b = results["compaction"], results["write-only"]
    print(f"\n== stream of {args.stream_rows} upserts/s over {args.stream_keys} keys, "
          f"{args.stream_minutes} min each; load average {os.getloadavg()[0]:.2f}")
    print(f"{'measure':<28}{'compaction':>12}{'write-only':>12}")
    for key in ("batches", "compact_snapshots", "level0_max", "level0_last", "p50_s", "p99_s", "max_s", "keys_ok"):
        print(f"{key:<28}{a[key]!s:>12.12}{b[key]!s:>12.12}")
    print(f"p99 ratio compaction/write-only: {a['p99_s'] / b['p99_s']:.2f} (goal <= 1.10)")
    print("level-0 files of the fullest bucket over time (compaction | write-only):")
    print("  " + " ".join(map(str, a["samples"])))
    print("  " + " ".join(map(str, b["samples"])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--commits", type=int, nargs="+", default=[100])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--stream", action="store_true", help="the streaming comparison only")
    parser.add_argument("--stream-minutes", type=float, default=3.0)
    parser.add_argument("--stream-rows", type=int, default=200, help="upserts per micro-batch (per second)")
    parser.add_argument("--stream-keys", type=int, default=20000)
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--warmup-s", type=float, default=30.0)
    parser.add_argument("--skip", type=int, default=5, help="first micro-batches left out of the durations")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_session("pk-compaction-bench", master=args.master,
                          conf={"spark.sql.streaming.numRecentProgressUpdates": "100000"})
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; rows {args.rows}")
    if args.stream:
        bench_stream(spark, args)
        spark.stop()
        return 0
    for commits in args.commits:
        bench(spark, args, commits)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
