"""A three-table pipeline for the cascade example: ``ods.raw -> dwd.clean -> ads.mart``.

* ``ingest`` (batch): appends one batch of order events to ``ods.raw`` (an append
  table: the change log of an orders database, Debezium's ``op`` ``c``/``u``/``d`` and
  an event sequence ``seq``). Batch numbers make the rows: ``--version buggy`` writes
  batch 2 with amounts 1000x too large (the bug a cascade corrects), ``fixed`` writes
  every batch right; batch 3 also updates and deletes orders of batches 1 and 2.
* ``clean`` (streaming, ``availableNow``): ``ods.raw`` -> ``dwd.clean``, a primary-key
  table (``order_id``, ``sequence.field`` ``seq``, row kinds in ``kind``), keeping valid
  orders and a ``large`` flag and applying each event as its row kind (``+I``, ``+U``,
  ``-D``), exactly once through ``--checkpoint``. On a run without a checkpoint yet it
  first empties its sink (one empty OVERWRITE), so that a re-run on a correction branch
  rebuilds the table from its corrected input.
* ``mart`` (batch): ``dwd.clean`` -> ``ads.mart``, revenue per customer, overwritten.

No job names a branch: run under ``branch_redirects`` (a cascade's re-run) every read
and write of a redirected table goes to its branch, and the lineage capture records it
so. ``reference_*`` compute each table from scratch in plain Python: what the tests
compare the tables with.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

RAW, CLEAN, MART = "ods.raw", "dwd.clean", "ads.mart"
CUSTOMERS = ("ada", "bob", "cy")
BUGGY_BATCH = 2
LARGE_CENTS = 10_000
# Later batches' changes to earlier orders: (batch, order id, op, amount in cents).
# Batch 3 updates an order of the bad batch (its new amount is right in both versions),
# deletes another one, and updates an order of batch 1.
CHANGES = ((3, 201, "u", 2_777), (3, 202, "d", None), (3, 101, "u", 1_234))


def _order(batch: int, i: int, version: str) -> dict[str, Any]:
    amount = 500 + 1000 * i + batch
    if version == "buggy" and batch == BUGGY_BATCH:
        amount *= 1000
    return {"order_id": batch * 100 + i, "customer": CUSTOMERS[(batch + i) % 3], "amount_cents": amount,
            "op": "c", "seq": batch * 100 + i}


def batch_rows(batch: int, version: str = "fixed") -> list[dict[str, Any]]:
    """The order events of ingest batch ``batch``: four new orders, an invalid row and the
    batch's ``CHANGES``, deterministic; ``seq`` orders every event of the pipeline."""
    rows = [_order(batch, i, version) for i in range(4)]
    rows.append({"order_id": batch * 100 + 9, "customer": None, "amount_cents": -1, "op": "c",
                 "seq": batch * 100 + 9})  # invalid: dropped by clean
    for n, (at, order_id, op, amount) in enumerate(c for c in CHANGES if c[0] == batch):
        before = _order(order_id // 100, order_id % 100, "fixed")  # a delete carries the row it deletes
        rows.append({**before, "amount_cents": before["amount_cents"] if amount is None else amount,
                     "op": op, "seq": at * 100 + 50 + n})
    return rows


def reference_clean(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``dwd.clean`` from scratch: the valid events, each key's latest (by ``seq``) unless deleted."""
    latest: dict[int, dict[str, Any]] = {}
    for r in sorted(raw, key=lambda r: r["seq"]):
        if r["customer"] is not None and r["amount_cents"] >= 0:
            latest[r["order_id"]] = r
    return [
        {"order_id": r["order_id"], "customer": r["customer"], "amount_cents": r["amount_cents"],
         "large": r["amount_cents"] >= LARGE_CENTS, "seq": r["seq"], "kind": "+U" if r["op"] == "u" else "+I"}
        for _, r in sorted(latest.items()) if r["op"] != "d"
    ]


def reference_mart(clean: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in clean:
        row = out.setdefault(r["customer"], {"customer": r["customer"], "orders": 0, "revenue_cents": 0})
        row["orders"] += 1
        row["revenue_cents"] += r["amount_cents"]
    return [out[c] for c in sorted(out)]


def create_tables(warehouse: str) -> None:
    """The three tables, empty (plain pypaimon; the example's setup): ``dwd.clean`` has a
    primary key, the others are append tables."""
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    for db in ("ods", "dwd", "ads"):
        catalog.create_database(db, True)
    schemas = {
        RAW: Schema.from_pyarrow_schema(pa.schema(
            [("order_id", pa.int64()), ("customer", pa.string()), ("amount_cents", pa.int64()),
             ("op", pa.string()), ("seq", pa.int64())])),
        CLEAN: Schema.from_pyarrow_schema(
            pa.schema([pa.field("order_id", pa.int64(), nullable=False), ("customer", pa.string()),
                       ("amount_cents", pa.int64()), ("large", pa.bool_()), ("seq", pa.int64()),
                       ("kind", pa.string())]),
            primary_keys=["order_id"],
            options={"bucket": "2", "rowkind.field": "kind", "sequence.field": "seq"},
        ),
        MART: Schema.from_pyarrow_schema(pa.schema(
            [("customer", pa.string()), ("orders", pa.int64()), ("revenue_cents", pa.int64())])),
    }
    for name, schema in schemas.items():
        catalog.create_table(name, schema, True)


def ingest(spark: Any, warehouse: str, batch: int, version: str) -> dict[str, Any]:
    frame = spark.createDataFrame(
        batch_rows(batch, version), "order_id long, customer string, amount_cents long, op string, seq long"
    )
    frame.write.format("paimon").option("warehouse", warehouse).option("table", RAW).mode("append").save()
    return {"job": "ingest", "batch": batch, "version": version}


def _redirected_branch(spark: Any, table: str) -> str | None:
    from airflow_provider_paimon.spark.branch.redirect import lookup, session_entries

    db, tbl = table.split(".")
    redirect = lookup(session_entries(spark), db, tbl)
    return None if redirect is None or redirect.branch == "main" else redirect.branch


def _checkpoint_started(checkpoint: str) -> bool:
    offsets = os.path.join(checkpoint, "offsets")
    return os.path.isdir(offsets) and bool(os.listdir(offsets))


def _empty(warehouse: str, table: str, branch: str | None) -> bool:
    """One empty OVERWRITE on ``table``'s ``branch`` when it holds rows."""
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    target = load_table(open_catalog(warehouse), table, branch)
    latest = target.snapshot_manager().get_latest_snapshot()
    if latest is None or not latest.total_record_count:
        return False
    builder = target.new_batch_write_builder().overwrite()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    return True


def clean(spark: Any, warehouse: str, checkpoint: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from airflow_provider_paimon.spark import with_row_kinds

    emptied = False if _checkpoint_started(checkpoint) else _empty(warehouse, CLEAN, _redirected_branch(spark, CLEAN))
    source = spark.readStream.format("paimon").option("warehouse", warehouse).option("table", RAW).load()
    valid = source.where(F.col("customer").isNotNull() & (F.col("amount_cents") >= 0)).select(
        "order_id", "customer", "amount_cents", (F.col("amount_cents") >= LARGE_CENTS).alias("large"), "seq", "op"
    )
    # c -> +I, u -> +U, d -> -D; a key's events of one micro-batch are ordered by seq
    cleaned = with_row_kinds(valid, "kind")
    query = (
        cleaned.writeStream.format("paimon").option("warehouse", warehouse).option("table", CLEAN)
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return {"job": "clean", "emptied": emptied}


def mart(spark: Any, warehouse: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    clean_rows = spark.read.format("paimon").option("warehouse", warehouse).option("table", CLEAN).load()
    revenue = clean_rows.groupBy("customer").agg(
        F.count("*").cast("long").alias("orders"), F.sum("amount_cents").cast("long").alias("revenue_cents")
    )
    revenue.write.format("paimon").option("warehouse", warehouse).option("table", MART).mode("overwrite").save()
    return {"job": "mart"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", choices=("ingest", "clean", "mart"))
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--batches", default="", help="ingest: batch numbers, comma-separated (e.g. 2,3)")
    parser.add_argument("--version", choices=("buggy", "fixed"), default="fixed")
    parser.add_argument("--checkpoint", default=None, help="clean: the streaming query's checkpoint folder")
    return parser


# A test hook: ``<job>:<flag file>`` makes that job fail once (the flag file is removed),
# the way a transient failure would, so a test can rerun a failed cascade DAG.
FAIL_ONCE_ENV = "CASCADE_CHAIN_FAIL_ONCE"


def _fail_once(job: str) -> None:
    target, _, flag = os.environ.get(FAIL_ONCE_ENV, "").partition(":")
    if target == job and flag and os.path.exists(flag):
        os.remove(flag)
        raise RuntimeError(f"{job}: failure injected by {FAIL_ONCE_ENV} (it fails once)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _fail_once(args.job)
    from pyspark.sql import SparkSession

    from airflow_provider_paimon.spark import register

    spark = SparkSession.builder.getOrCreate()
    register(spark)
    if args.job == "ingest":
        batches = [int(b) for b in args.batches.replace(" ", "").split(",") if b]
        if not batches:
            raise SystemExit("ingest needs --batches N[,M...]")
        result = [ingest(spark, args.warehouse, b, args.version) for b in batches][-1]
    elif args.job == "clean":
        if not args.checkpoint:
            raise SystemExit("clean needs --checkpoint DIR")
        result = clean(spark, args.warehouse, args.checkpoint)
    else:
        result = mart(spark, args.warehouse)
    print("PAIMON_RESULT " + json.dumps(result))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
