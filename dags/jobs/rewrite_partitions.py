"""Example Spark job: (re)write whole partitions of a partitioned ``orders`` table.

Used by ``dags/partition_assets_dag.py`` (the backfill DAG): each partition of
``--partitions-json`` (a JSON list) or ``--partition``
(``dt=2026-11-03/region=eu``, a Paimon partition key, as the consumer DAG's
``dag_run.partition_key`` spells it) gets ``--rows`` freshly computed rows, written
through the ``paimon`` data source with ``mode("overwrite")`` and
``overwrite-mode=dynamic``: the partitions named are replaced, every other partition
stays as it is. The table (``order_id BIGINT, amount DOUBLE, dt STRING, region
STRING``, partitioned by ``dt, region``) is created on the first run.

    spark-submit dags/jobs/rewrite_partitions.py --warehouse /tmp/wh --table demo.orders \\
        --partitions-json '["dt=2026-11-03/region=eu"]' --rows 3

The last stdout line is ``PAIMON_RESULT {json}`` (partitions, rows written).
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from typing import Any

PARTITION_COLUMNS = ("dt", "region")


def rows_for(partition: dict[str, str], count: int, version: int = 1) -> list[dict[str, Any]]:
    """The rows a partition holds after a rewrite (deterministic: order ids from the partition)."""
    base = zlib.crc32(f"{partition['dt']}/{partition['region']}".encode()) % 1_000_000 * 1000
    return [
        {"order_id": base + i, "amount": round(10.0 * version + i, 2), **partition}
        for i in range(count)
    ]


def main(argv: list[str]) -> int:
    from airflow_provider_paimon.paimon.partition_keys import parse_partition_key

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default="", help="blank: the paimon connection's (PaimonSparkSubmitOperator)")
    parser.add_argument("--table", required=True)
    parser.add_argument("--partition", action="append", default=[], help="dt=.../region=... (repeatable)")
    parser.add_argument("--partitions-json", default="[]", help='a JSON list of partition keys')
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--version", type=int, default=1, help="changes the amounts (a corrected backfill)")
    args = parser.parse_args(argv)
    keys = [*args.partition, *json.loads(args.partitions_json)]
    if not keys:
        print("PAIMON_ERROR give at least one partition (--partition or --partitions-json)", file=sys.stderr)
        return 2
    specs = [parse_partition_key(p) for p in keys]
    for spec in specs:
        if tuple(spec) != PARTITION_COLUMNS:
            print(f"PAIMON_ERROR partition {spec} must name dt and region, in that order", file=sys.stderr)
            return 2

    from pyspark.sql import SparkSession

    from airflow_provider_paimon.spark import register

    spark = SparkSession.builder.appName("rewrite_partitions").getOrCreate()
    register(spark)
    rows = [row for spec in specs for row in rows_for(spec, args.rows, args.version)]
    frame = spark.createDataFrame(rows, "order_id BIGINT, amount DOUBLE, dt STRING, region STRING")
    writer = (
        frame.write.format("paimon")
        .option("table", args.table)
        .option("create-table", "true")
        .option("partition-keys", ",".join(PARTITION_COLUMNS))
        .option("overwrite-mode", "dynamic")
        .mode("overwrite")
    )
    if args.warehouse:
        writer = writer.option("warehouse", args.warehouse)
    writer.save()
    spark.stop()
    print("PAIMON_RESULT " + json.dumps({"partitions": keys, "rows": len(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
