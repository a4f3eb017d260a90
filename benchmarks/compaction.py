"""Benchmark: Spark compaction vs. a plain pyarrow rewrite, and read time before/after.

Writes an append table of many small Parquet files with plain pypaimon (default
2,000 files, 1 GB; ``--files`` / ``--mb``), then prints:

- throughput (input MB/s) of our compaction (plan + Spark rewrite on executors +
  COMPACT commit) against a baseline that rewrites the same files with plain pyarrow
  in one process (read every file, write target-size Parquet files); the goal is a
  ratio of at least 0.7; and against Spark's own Parquet engine rewriting the same
  files (the "native rewrite": read, ``coalesce``, write; not committed);
- full-scan read time of the table before and after compaction, through the Spark
  ``paimon`` source, through ``read_table`` (Spark's Parquet reader) and through plain
  pypaimon (``to_arrow``), each the best and the
  median of ``--read-repeats`` runs, before and after interleaved; the goal is reads
  at least 3x faster after;
- scan planning time and the manifests (files, entries) a planner reads, before and
  after.

"Before" is an identical copy of the table, made before compaction and read the
same way. Writing the small files with pypaimon takes minutes; ``--cache DIR`` keeps
the written table in DIR and copies it on later runs with the same parameters.

Usage: ``python benchmarks/compaction.py`` (2,000 files, 1 GB) or
``python benchmarks/compaction.py --files 1000 --mb 200``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pypaimon import Schema

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

MB = 1024 * 1024
BIG_BATCH = 65536  # read.batch-size for the second read measurement (default 1024)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.int64()),
        ("region", pa.string()),
        ("amount", pa.float64()),
        ("payload", pa.string()),
        ("p", pa.string()),
    ]
)


def make_rows(rng: np.random.Generator, start: int, n: int, partition: str) -> pa.Table:
    words = pa.array([f"w{i:04d}" for i in range(2000)])
    # Eight random words per row, joined by Arrow (a Python join took minutes for 1 GB).
    picks = [words.take(pa.array(rng.integers(0, 2000, n))) for _ in range(8)]
    payload = pc.binary_join_element_wise(*picks, " ")
    return pa.table(
        {
            "id": np.arange(start, start + n, dtype=np.int64),
            "ts": 1_700_000_000_000 + rng.integers(0, 86_400_000, n),
            "region": rng.choice(np.array(["eu", "us", "ap", "sa"]), n),
            "amount": rng.random(n) * 1000,
            "payload": payload,
            "p": [partition] * n,
        },
        schema=SCHEMA,
    )


def rows_per_file(file_bytes: int) -> int:
    """Calibrate how many rows make a Parquet file of about ``file_bytes``."""
    rng = np.random.default_rng(0)
    sample = make_rows(rng, 0, 20_000, "x")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.parquet")
        pq.write_table(sample, path, compression="zstd")
        per_row = os.path.getsize(path) / sample.num_rows
    return max(10, int(file_bytes / per_row))


def write_small_files(table, files: int, rows: int, partitions: int, per_commit: int = 50) -> None:
    """``files`` small files, ``per_commit`` per APPEND commit, as many small writers do."""
    rng = np.random.default_rng(42)
    next_id = 0
    written = 0
    while written < files:
        n = min(per_commit, files - written)
        messages = []
        for i in range(n):
            wb = table.new_batch_write_builder()
            write = wb.new_write()
            write.write_arrow(make_rows(rng, next_id, rows, f"p{(written + i) % partitions}"))
            messages.extend(write.prepare_commit())
            write.close()
            next_id += rows
        wb = table.new_batch_write_builder()
        commit = wb.new_commit()
        commit.commit(messages)
        commit.close()
        written += n


def data_files(table) -> list:
    return live_entries(table, latest_snapshot(table))


def manifest_counts(table) -> tuple[int, int]:
    """(manifest files, manifest entries) a full-scan planner reads at the latest snapshot."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    metas = ManifestListManager(table).read_all(latest_snapshot(table))
    return len(metas), sum(m.num_added_files + m.num_deleted_files for m in metas)


def spark_partitions(spark, warehouse: str) -> int:
    """Spark input partitions (tasks) of a full scan through the ``paimon`` source."""
    return (spark.read.format("paimon").option("warehouse", warehouse)
            .option("table", "bench.events").load().rdd.getNumPartitions())


def stats(values: list[float]) -> str:
    return f"best {min(values):.2f}s, median {statistics.median(values):.2f}s"


def speedup(before: list[float], after: list[float]) -> str:
    """How much faster ``after`` runs than ``before``, by best and by median."""
    return (f"{min(before) / min(after):.1f}x faster (best), "
            f"{statistics.median(before) / statistics.median(after):.1f}x (median)")


def prepare_source(cache: str | None, args, options: dict[str, str], warehouse: str) -> float:
    """Write the small-file table into ``warehouse`` (or copy it from ``cache``); seconds."""
    key = f"files{args.files}-mb{args.mb:g}-p{args.partitions}-t{args.target_mb:g}-o{args.open_file_cost_kb}"
    cached = os.path.join(cache, key) if cache else None
    t0 = time.perf_counter()
    if cached and os.path.exists(os.path.join(cached, "DONE")):
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.copytree(cached, warehouse, ignore=shutil.ignore_patterns("DONE"))
        return time.perf_counter() - t0
    catalog = open_catalog(warehouse)
    catalog.create_database("bench", True)
    catalog.create_table(
        "bench.events",
        Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"], options=options),
        False,
    )
    table = load_table(catalog, "bench.events")
    rows = rows_per_file(int(args.mb * MB / args.files))
    write_small_files(table, args.files, rows, args.partitions)
    if cached:
        shutil.rmtree(cached, ignore_errors=True)
        shutil.copytree(warehouse, cached)
        Path(cached, "DONE").write_text(key)
    return time.perf_counter() - t0


def full_scan_seconds(table, batch_rows: int | None = None, repeat: int = 2) -> tuple[float, int]:
    """Best of ``repeat`` full scans with pypaimon (planning + reading every row)."""
    if batch_rows is not None:
        table = table.copy({"read.batch-size": str(batch_rows)})
    best = math.inf
    rows = 0
    for _ in range(repeat):
        started = time.perf_counter()
        rb = table.new_read_builder()
        data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        best = min(best, time.perf_counter() - started)
        rows = data.num_rows
    return best, rows


def _warm_up(_: int) -> int:
    import airflow_provider_paimon.spark.compaction  # noqa: F401 - imports pypaimon

    return 0


def plan_seconds(table, repeat: int = 3) -> tuple[float, int]:
    """Best time to plan a full scan (read the manifests, build splits), and #splits."""
    best, splits = math.inf, 0
    for _ in range(repeat):
        started = time.perf_counter()
        splits = len(table.new_read_builder().new_scan().plan().splits())
        best = min(best, time.perf_counter() - started)
    return best, splits


# A full scan's query: it needs every column of every row.
FULL_SCAN = ("count(*)", "sum(amount)", "max(length(payload))", "max(ts)", "count(distinct region)")


def spark_full_scan_seconds(spark, warehouse: str) -> float:
    """Read every column of every row through the ``paimon`` Spark data source."""
    started = time.perf_counter()
    (spark.read.format("paimon").option("warehouse", warehouse).option("table", "bench.events")
     .load().selectExpr(*FULL_SCAN).collect())
    return time.perf_counter() - started


def pyarrow_baseline_run(paths: list[str], target_bytes: int) -> float:
    out_dir = tempfile.mkdtemp(prefix="paimon-bench-baseline-")
    try:
        return pyarrow_baseline(paths, target_bytes, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def pyarrow_baseline(paths: list[str], target_bytes: int, out_dir: str) -> float:
    """Read every file, write target-size Parquet files, in one process; seconds."""
    started = time.perf_counter()
    data = pa.concat_tables(pq.ParquetFile(p).read() for p in paths)
    in_bytes = sum(os.path.getsize(p) for p in paths)
    n_out = max(1, in_bytes // target_bytes)
    per_file = math.ceil(data.num_rows / n_out)
    for i in range(n_out):
        pq.write_table(data.slice(i * per_file, per_file), os.path.join(out_dir, f"out-{i}.parquet"),
                       compression="zstd")
    return time.perf_counter() - started


def spark_parquet_rewrite_seconds(spark, entries: list, target_bytes: int, schema) -> float:
    """Rewrite the same files with Spark's own Parquet engine (no commit); seconds.

    The "native rewrite" candidate: per partition, Spark's vectorized reader reads the
    partition's files and its Parquet writer writes ``max(1, bytes // target)`` files
    (``coalesce``), zstd as the table's files. The schema is given, so Spark does not
    open every footer to infer it. Nothing is committed: it only times the bytes moved.
    """
    by_partition: dict[tuple, list] = {}
    for e in entries:
        by_partition.setdefault(tuple(e.partition.values), []).append(e.file)
    out_dir = tempfile.mkdtemp(prefix="paimon-bench-spark-rewrite-")
    started = time.perf_counter()
    try:
        for i, files in enumerate(by_partition.values()):
            n_out = max(1, sum(f.file_size for f in files) // target_bytes)
            (spark.read.schema(schema).parquet(*[f.file_path for f in files]).coalesce(n_out)
             .write.option("compression", "zstd").parquet(os.path.join(out_dir, str(i))))
        return time.perf_counter() - started
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def read_table_full_scan_seconds(spark, warehouse: str) -> float:
    """The same aggregate as ``spark_full_scan_seconds`` through ``read_table`` (native)."""
    from airflow_provider_paimon.spark import read_table

    started = time.perf_counter()
    read_table(spark, "bench.events", warehouse=warehouse).selectExpr(*FULL_SCAN).collect()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--mb", type=float, default=1024, help="total size of the small files")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--target-mb", type=float, default=32, help="target-file-size")
    parser.add_argument("--open-file-cost-kb", type=int, default=512,
                        help="source.split.open-file-cost (Paimon's 4 mb scaled to the target)")
    parser.add_argument("--warehouse", default=None, help="default: a temp dir, removed after")
    parser.add_argument("--cache", default=None,
                        help="keep the written small-file table here and reuse it on later runs")
    parser.add_argument("--read-repeats", type=int, default=3,
                        help="full scans of each table and reader (best and median reported)")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="paimon-bench-")
    target = int(args.target_mb * MB)
    options = {
        "target-file-size": f"{target}b",
        "source.split.open-file-cost": f"{args.open_file_cost_kb}kb",
        "file.compression": "zstd",
    }
    try:
        written_s = prepare_source(args.cache, args, options, warehouse)
        catalog = open_catalog(warehouse)
        table = load_table(catalog, "bench.events")
        entries = data_files(table)
        in_bytes = sum(e.file.file_size for e in entries)
        rows = sum(e.file.row_count for e in entries)
        print(f"table: {len(entries)} files, {in_bytes / MB:.1f} MB, {rows} rows, "
              f"{args.partitions} partitions (written or copied in {written_s:.1f}s)")

        # An identical copy, compacted in-process at the end (ours on one core), and
        # read "before" interleaved with the compacted table's "after" reads.
        twin = warehouse.rstrip("/") + "-twin"
        shutil.copytree(warehouse, twin)
        twin_catalog = open_catalog(twin)
        paths = [e.file.file_path for e in entries]
        mb = in_bytes / MB

        from airflow_provider_paimon.spark.compaction import SparkBinRewriter
        from airflow_provider_paimon.spark.session import local_session

        spark = local_session("paimon-compaction-benchmark")
        # Python workers start once per Spark application and import pypaimon (seconds
        # on a busy machine): a fixed cost, reported apart from the per-MB throughput.
        started = time.perf_counter()
        spark.sparkContext.parallelize(range(2), 2).map(_warm_up).collect()
        warm_up_s = time.perf_counter() - started

        # Baseline before and after ours, so a busy machine's drift hits both alike.
        baseline_runs = [pyarrow_baseline_run(paths, target)]
        started = time.perf_counter()
        result = compact(
            table, CompactionOptions.from_table(table),
            rewriter=SparkBinRewriter(spark, warehouse, "bench.events"),
        )
        compact_s = time.perf_counter() - started
        baseline_runs.append(pyarrow_baseline_run(paths, target))
        baseline_s = sum(baseline_runs) / len(baseline_runs)
        # Spark's own Parquet engine on the same files: the first run also warms the
        # JVM's Parquet classes, so the best of two is reported.
        spark_schema = spark.read.parquet(paths[0]).schema
        native_s = min(spark_parquet_rewrite_seconds(spark, entries, target, spark_schema)
                       for _ in range(2))

        table = load_table(catalog, "bench.events")
        twin_table = load_table(twin_catalog, "bench.events")
        reads: dict[str, list[float]] = {"before": [], "after": [], "before64k": [], "after64k": []}
        spark_runs: dict[str, list[float]] = {"before": [], "after": []}
        native_runs: dict[str, list[float]] = {"before": [], "after": []}
        rows_before = rows_after = 0
        load_before = os.getloadavg()[0]
        for _ in range(args.read_repeats):
            for name, wh in (("before", twin), ("after", warehouse)):
                spark_runs[name].append(spark_full_scan_seconds(spark, wh))
                native_runs[name].append(read_table_full_scan_seconds(spark, wh))
            t, rows_before = full_scan_seconds(twin_table, repeat=1)
            reads["before"].append(t)
            t, rows_after = full_scan_seconds(table, repeat=1)
            reads["after"].append(t)
            reads["before64k"].append(full_scan_seconds(twin_table, BIG_BATCH, repeat=1)[0])
            reads["after64k"].append(full_scan_seconds(table, BIG_BATCH, repeat=1)[0])
        load_after = os.getloadavg()[0]
        assert rows_after == rows_before == rows, (rows, rows_before, rows_after)
        plan_before, splits_before = plan_seconds(twin_table)
        plan_after, splits_after = plan_seconds(table)
        manifests_before, manifests_after = manifest_counts(twin_table), manifest_counts(table)
        tasks_before, tasks_after = spark_partitions(spark, twin), spark_partitions(spark, warehouse)

        started = time.perf_counter()
        local_result = compact(twin_table, CompactionOptions.from_table(twin_table))
        local_s = time.perf_counter() - started
        shutil.rmtree(twin, ignore_errors=True)

        ours, base = result.bytes_before / MB / compact_s, mb / baseline_s
        d = result.to_dict()
        n_after = len(data_files(table))
        print(f"compaction: {result.files_before} -> {result.files_after} files in {result.bins} "
              f"bins, snapshot {result.snapshot_id}, {compact_s:.2f}s (plan {d.get('plan_s')}s, "
              f"Spark rewrite {d.get('rewrite_s')}s, commit {d.get('commit_s')}s)")
        print(f"throughput: ours (Spark, local[2]) {ours:.1f} MB/s | pyarrow baseline "
              f"{base:.1f} MB/s (runs {', '.join(f'{b:.2f}s' for b in baseline_runs)}) | "
              f"ratio {ours / base:.2f}x (goal >= 0.7x)")
        print(f"            ours in one process (no Spark) {local_result.bytes_before / MB / local_s:.1f} "
              f"MB/s ({local_s:.2f}s) | ratio {(local_result.bytes_before / MB / local_s) / base:.2f}x")
        native = mb / native_s
        print(f"            Spark's own Parquet engine (read + coalesce + write per partition, "
              f"no commit) {native:.1f} MB/s ({native_s:.2f}s) | ours {ours / native:.2f}x of it")
        print(f"            Spark worker start-up (once per application, not in the above) "
              f"{warm_up_s:.2f}s; including it ours is {mb / (compact_s + warm_up_s):.1f} MB/s")
        print(f"scan planning (pypaimon): before {plan_before * 1000:.0f} ms ({splits_before} splits, "
              f"{manifests_before[0]} manifests, {manifests_before[1]} entries) | after "
              f"{plan_after * 1000:.0f} ms ({splits_after} splits, {manifests_after[0]} manifests, "
              f"{manifests_after[1]} entries) | {plan_before / plan_after:.1f}x faster")
        print(f"full scans, {args.read_repeats} of each, before/after interleaved; load average "
              f"{load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores")
        print(f"full scan (Spark 'paimon' source, {tasks_before} -> {tasks_after} tasks): before "
              f"{stats(spark_runs['before'])} | after {stats(spark_runs['after'])} | "
              f"{speedup(spark_runs['before'], spark_runs['after'])} (goal >= 3x)")
        print(f"full scan (read_table, Spark's Parquet reader): before {stats(native_runs['before'])} "
              f"| after {stats(native_runs['after'])} | {speedup(native_runs['before'], native_runs['after'])}")
        print(f"full scan (pypaimon to_arrow, read.batch-size 1024 = default): before "
              f"{stats(reads['before'])} ({len(entries)} files) | after {stats(reads['after'])} "
              f"({n_after} files) | {speedup(reads['before'], reads['after'])} (goal >= 3x)")
        print(f"full scan (pypaimon to_arrow, read.batch-size {BIG_BATCH}): before "
              f"{stats(reads['before64k'])} | after {stats(reads['after64k'])} | "
              f"{speedup(reads['before64k'], reads['after64k'])}")
        return 0
    finally:
        if args.warehouse is None:
            shutil.rmtree(warehouse, ignore_errors=True)
            shutil.rmtree(warehouse.rstrip("/") + "-twin", ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
