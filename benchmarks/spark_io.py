"""Write and read the same DataFrame through ``paimon`` and Spark's built-in Parquet.

    python benchmarks/spark_io.py [--rows 5000000] [--repeat 3] [--master local[2]]

A first, untimed round warms up both sides (JVM code paths, Spark's Python
workers importing pyarrow/pypaimon). Prints, per operation, the best and median time of each side, rows/s, and the ratio
paimon/parquet in throughput (1.0 = as fast as native Parquet; the goal is >= 0.8).
The DataFrame has 10 mixed-type columns (integers, doubles, a decimal, strings, a
date, a timestamp, a boolean) and is cached before timing, so both writers consume
the same in-memory rows. Reads are timed as a full scan that touches every column
(``count`` of a filter-free ``select`` with a cheap aggregate per column kind would
let Parquet skip decoding, so the read sums a hash of all columns).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from airflow_provider_paimon.spark.session import local_session


def make_df(spark, rows: int, partitions: int):
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        "id",
        "cast(id % 1000 as int) as small_int",
        "id * 1.5 as amount",
        "cast(id % 10000 as decimal(12,2)) as price",
        "concat('user-', cast(id % 50000 as string)) as user",
        "concat('event ', cast(id as string), ' payload') as payload",
        "date_add(date'2024-01-01', cast(id % 365 as int)) as day",
        "timestamp_millis(1700000000000 + id) as ts",
        "id % 3 = 0 as flag",
        "sqrt(cast(id as double)) as score",
    )


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def write_parquet(df, path: str) -> None:
    df.write.mode("overwrite").parquet(path)


def write_paimon(df, warehouse: str, options: dict[str, str]) -> None:
    (
        df.write.format("paimon")
        .mode("append")
        .option("warehouse", warehouse)
        .option("table", "bench.events")
        .option("create-table", "true")
        .options(**options)
        .save()
    )


def write_native(df, warehouse: str, options: dict[str, str]) -> None:
    """``write_table``: Spark's Parquet writer writes the files, pypaimon commits (docs/datasource.md)."""
    from airflow_provider_paimon.spark import write_table

    write_table(df, "bench.native", warehouse=warehouse, options={"create-table": "true", **options})


def workload_parser(description: str) -> argparse.ArgumentParser:
    """The options that pick the workload; every Spark-vs-Parquet benchmark shares them."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4, help="Spark partitions of the input")
    ap.add_argument("--master", default=None)
    return ap


def cached_input(spark, args: argparse.Namespace):
    """The benchmark DataFrame, cached and materialised, so every writer consumes the same rows."""
    df = make_df(spark, args.rows, args.partitions).cache()
    df.count()
    return df


def ratios(ours: list[float], baseline: list[float]) -> tuple[float, float]:
    """Throughput of ours relative to the baseline, from their times: (best, median)."""
    return min(baseline) / min(ours), statistics.median(baseline) / statistics.median(ours)


def print_ratio_table(label: str, times: dict[str, dict[str, list[float]]]) -> None:
    """Per ``label`` (query or operation) and side: best, median, and the ratio to ``parquet``'s."""
    print(f"{label:<9} {'side':<10} {'best s':>8} {'median s':>9}  vs parquet (best / median)")
    for name, sides in times.items():
        for side, ts in sides.items():
            best, median = ratios(ts, sides["parquet"])
            print(f"{name:<9} {side:<10} {min(ts):>8.2f} {statistics.median(ts):>9.2f}  {best:.2f}x / {median:.2f}x")


def full_scan(df) -> int:
    """Hash every column of every row, so no reader can skip decoding anything."""
    return df.selectExpr("sum(hash(*)) as h").collect()[0][0]


def main(argv: list[str] | None = None) -> int:
    ap = workload_parser(__doc__.split("\n")[0])
    ap.add_argument(
        "--paimon-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="table option for the paimon side, e.g. file.compression=snappy "
        "(Paimon writes zstd by default, Spark's Parquet snappy)",
    )
    args = ap.parse_args(argv)

    paimon_options = dict(kv.split("=", 1) for kv in args.paimon_option)
    spark = local_session("benchmark-spark-io", master=args.master)
    workdir = tempfile.mkdtemp(prefix="spark-io-")
    try:
        df = cached_input(spark, args)
        results: dict[str, dict[str, list[float]]] = {
            "write": {"paimon": [], "parquet": [], "native": []},
            "read": {"paimon": [], "parquet": []},
        }
        for rep in range(-1, args.repeat):  # rep -1 warms up both sides (untimed)
            pq_path = os.path.join(workdir, f"parquet-{rep}")
            wh = os.path.join(workdir, f"warehouse-{rep}")
            times = {}
            times["write", "parquet"], _ = timed(write_parquet, df, pq_path)
            times["write", "paimon"], _ = timed(write_paimon, df, wh, paimon_options)
            times["write", "native"], _ = timed(write_native, df, wh, paimon_options)
            pq = spark.read.parquet(pq_path)
            pm = (
                spark.read.format("paimon")
                .option("warehouse", wh)
                .option("table", "bench.events")
                .load()
            )
            times["read", "parquet"], pq_hash = timed(full_scan, pq)
            times["read", "paimon"], pm_hash = timed(full_scan, pm)
            print(
                f"rep {rep}: "
                + ", ".join(f"{op} {side} {t:.2f}s" for (op, side), t in times.items()),
                flush=True,
            )
            if rep >= 0:
                for (op, side), t in times.items():
                    results[op][side].append(t)
            if pq_hash != pm_hash:
                print(f"MISMATCH: parquet hash {pq_hash} != paimon hash {pm_hash}")
                return 1
            if rep < 0:  # once: the native write's table reads back the same rows
                native = full_scan(pm.sparkSession.read.format("paimon").option("warehouse", wh)
                                   .option("table", "bench.native").load())
                if native != pq_hash:
                    print(f"MISMATCH: parquet hash {pq_hash} != native write hash {native}")
                    return 1
            shutil.rmtree(pq_path, ignore_errors=True)
            shutil.rmtree(wh, ignore_errors=True)

        print(
            f"\nrows={args.rows:,} columns=10 repeat={args.repeat} input partitions={args.partitions} "
            f"master={spark.sparkContext.master} cpus={os.cpu_count()} paimon options={paimon_options}"
        )
        codec = paimon_options.get("file.compression", "zstd (Paimon's default)")
        parquet_codec = spark.conf.get("spark.sql.parquet.compression.codec", "snappy")
        print(
            f"codecs: paimon {codec}, Spark Parquet {parquet_codec}"
            + (
                ""
                if codec == parquet_codec
                else " (not like-for-like: pass --paimon-option file.compression=snappy for that)"
            )
            + f"; load average {os.getloadavg()[0]:.1f}"
        )
        print(f"{'op':<6} {'side':<8} {'best s':>8} {'median s':>9} {'rows/s (best)':>15}")
        for op, sides in results.items():
            for side, times in sides.items():
                print(
                    f"{op:<6} {side:<8} {min(times):>8.2f} {statistics.median(times):>9.2f} "
                    f"{args.rows / min(times):>15,.0f}"
                )
            for side in [s for s in sides if s != "parquet"]:
                best, median = ratios(sides[side], sides["parquet"])
                print(f"{op:<6} ratio {side}/parquet throughput (best): {best:.2f}x (median: {median:.2f}x)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()
    return 0


# ---------------------------------------------------------------- native read
# python benchmarks/spark_io.py --native-read [--rows N] [--repeat R]
# The same rows as a Paimon table (written once by the data source, partitioned by
# ``part`` = id % 100, snappy like Spark) and as Spark Parquet partitioned the same
# way; then, per round: a full scan, a 2-of-10-columns read and a 1%-of-partitions
# read, each by read_table, Spark's Parquet and the paimon data source.

NATIVE_READ_QUERIES = {
    "full": lambda df: full_scan(df),
    "2 cols": lambda df: df.selectExpr("sum(id) as a", "sum(amount) as b").collect()[0][:],
    "1% parts": lambda df: full_scan(df),
}


def native_read_sides(spark, warehouse: str, parquet_path: str) -> dict[str, dict[str, object]]:
    """For each query, the DataFrame each side reads (the 1% query selects partition 7)."""
    from airflow_provider_paimon.spark.native import read_table

    def source(**options: str):
        return (
            spark.read.format("paimon").option("warehouse", warehouse)
            .option("table", "bench.events").options(**options).load()
        )

    pq = spark.read.parquet(parquet_path)
    return {
        "full": {"native": read_table(spark, "bench.events", warehouse=warehouse), "parquet": pq, "paimon": source()},
        "2 cols": {
            "native": read_table(spark, "bench.events", warehouse=warehouse), "parquet": pq, "paimon": source(),
        },
        "1% parts": {
            "native": read_table(spark, "bench.events", warehouse=warehouse, filter="part = 7"),
            "parquet": pq.where("part = 7"),
            "paimon": source(**{"partition-filter": "part = 7"}),
        },
    }


def native_read_main(args: argparse.Namespace) -> int:
    spark = local_session("benchmark-native-read", master=args.master)
    workdir = tempfile.mkdtemp(prefix="native-read-")
    try:
        df = make_df(spark, args.rows, args.partitions).selectExpr("*", "cast(id % 100 as int) as part")
        wh, pq_path = os.path.join(workdir, "warehouse"), os.path.join(workdir, "parquet")
        df.write.partitionBy("part").parquet(pq_path)
        write_paimon(df, wh, {"partition-keys": "part", "file.compression": "snappy"})
        times: dict[str, dict[str, list[float]]] = {q: {"native": [], "parquet": [], "paimon": []} for q in NATIVE_READ_QUERIES}
        for rep in range(-1, args.repeat):  # rep -1 warms up every side (untimed)
            sides = native_read_sides(spark, wh, pq_path)
            for query, run in NATIVE_READ_QUERIES.items():
                answers = {}
                for side, frame in sides[query].items():
                    elapsed, answers[side] = timed(run, frame.select(*sides[query]["parquet"].columns))
                    print(f"rep {rep} {query} {side} {elapsed:.2f}s", flush=True)
                    if rep >= 0:
                        times[query][side].append(elapsed)
                if len({repr(a) for a in answers.values()}) != 1:
                    print(f"MISMATCH in {query}: {answers}")
                    return 1
            print(f"rep {rep} done", flush=True)
        print(
            f"\nnative read: rows={args.rows:,} columns=10 (+ part, 100 partitions) repeat={args.repeat} "
            f"master={spark.sparkContext.master} cpus={os.cpu_count()} load average {os.getloadavg()[0]:.1f}"
        )
        print_ratio_table("query", times)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    if "--native-read" in sys.argv[1:]:
        raise SystemExit(native_read_main(workload_parser("native read").parse_args(
            [a for a in sys.argv[1:] if a != "--native-read"])))
    raise SystemExit(main())
