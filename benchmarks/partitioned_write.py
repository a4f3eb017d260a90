"""A partitioned append table written by the ``paimon`` data source: fast path vs pypaimon's writer.

    python benchmarks/partitioned_write.py [--rows 5000000] [--repeat 3] [--master local[2]]

The benchmark DataFrame of ``spark_io.py`` plus ``part`` = id % 100, cached. Per round
(after one untimed warm-up round), the same rows are written three ways: Spark's
Parquet (``partitionBy("part")``, snappy), the data source's fast append path and the
data source with ``spark.fast-append-write=false`` (pypaimon's writer, as every
partitioned table was written before); both Paimon tables snappy like Spark. Then each
is read back with a full scan (hash of every column): Spark's Parquet, and
``read_table`` over each Paimon table, so the read shows what the writer's Parquet
encoding costs Spark's reader (pyarrow's default dictionary-encodes every column and
falls back to PLAIN mid-column; the fast path encodes only columns whose values repeat).
Prints best and median of each, and ratios against Spark's Parquet from the same rounds.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from spark_io import full_scan, make_df, print_ratio_table, timed, workload_parser

from airflow_provider_paimon.spark.session import local_session

WRITERS = {
    "fast path": {"spark.fast-append-write": "true"},
    "pypaimon": {"spark.fast-append-write": "false"},
}


def main(argv: list[str] | None = None) -> int:
    args = workload_parser(__doc__.split("\n")[0]).parse_args(argv)
    from airflow_provider_paimon.spark.native import read_table

    spark = local_session("benchmark-partitioned-write", master=args.master)
    workdir = tempfile.mkdtemp(prefix="partitioned-write-")
    write_times: dict[str, list[float]] = {"parquet": [], **{w: [] for w in WRITERS}}
    read_times: dict[str, list[float]] = {"parquet": [], **{w: [] for w in WRITERS}}
    try:
        df = make_df(spark, args.rows, args.partitions).selectExpr("*", "cast(id % 100 as int) as part").cache()
        df.count()
        for rep in range(-1, args.repeat):  # rep -1 warms up every side (untimed)
            pq_path, wh = os.path.join(workdir, f"parquet-{rep}"), os.path.join(workdir, f"warehouse-{rep}")
            took = {"parquet": timed(write_parquet_partitioned, df, pq_path)[0]}
            for writer, options in WRITERS.items():
                table = "bench.fast" if writer == "fast path" else "bench.pypaimon"
                opts = {"partition-keys": "part", "file.compression": "snappy", **options}
                took[writer] = timed(write_paimon_as, df, wh, table, opts)[0]
            pq_frame = spark.read.parquet(pq_path)
            columns = pq_frame.columns
            frames = {"parquet": pq_frame}
            for writer in WRITERS:
                table = "bench.fast" if writer == "fast path" else "bench.pypaimon"
                frames[writer] = read_table(spark, table, warehouse=wh).select(*columns)
            read = {side: timed(full_scan, frame) for side, frame in frames.items()}
            if len({answer for _, answer in read.values()}) != 1:
                print(f"MISMATCH: {[(side, answer) for side, (_, answer) in read.items()]}")
                return 1
            print(
                f"rep {rep}: write "
                + ", ".join(f"{side} {t:.2f}s" for side, t in took.items())
                + "; read "
                + ", ".join(f"{side} {t:.2f}s" for side, (t, _) in read.items()),
                flush=True,
            )
            if rep >= 0:
                for side, t in took.items():
                    write_times[side].append(t)
                for side, (t, _) in read.items():
                    read_times[side].append(t)
            shutil.rmtree(pq_path, ignore_errors=True)
            shutil.rmtree(wh, ignore_errors=True)
        print(
            f"\nrows={args.rows:,} columns=10 (+ part, 100 partitions) repeat={args.repeat} "
            f"input partitions={args.partitions} master={spark.sparkContext.master} cpus={os.cpu_count()} "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        print_ratio_table("op", {"write": write_times, "read": read_times})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()
    return 0


def write_parquet_partitioned(df, path: str) -> None:
    df.write.partitionBy("part").parquet(path)


def write_paimon_as(df, warehouse: str, table: str, options: dict[str, str]) -> None:
    """``spark_io.write_paimon`` into ``table`` (it always writes bench.events)."""
    (
        df.write.format("paimon").mode("append").option("warehouse", warehouse).option("table", table)
        .option("create-table", "true").options(**options).save()
    )


if __name__ == "__main__":
    raise SystemExit(main())
