"""Example Spark job: enrich ``orders`` into ``orders_enriched`` through the ``paimon`` data source.

The demo's ETL job, with a bug to correct. The source holds order amounts in cents;
the sink holds the amount in currency units plus a size class. The ``buggy`` version
divides by 10 instead of 100 (so amounts are ten times too large and every order looks
"large"); the ``fixed`` version divides by 100.

Two modes:

* ``--mode batch`` (the original ETL): a full recompute. It reads the source at its
  latest snapshot (pinned with ``snapshot-id``, so the run knows exactly which snapshot
  it consumed) and overwrites the sink (on ``--branch`` when given).
* ``--mode stream`` (the correction DAG's corrected job): a streaming query from the
  source into the sink branch, exactly once through ``--checkpoint``, run with
  ``trigger(availableNow=True)``: it drains every source snapshot there is and stops;
  the next run resumes where it stopped. On its very first run (no checkpoint yet) it
  empties the sink branch first (one empty OVERWRITE commit), since the branch was
  created from a tag of the buggy main; from then on it only appends.

Lineage: when the Spark conf turns on the Spark-side capture (``spark.paimon.lineage.url``
/ ``.enabled`` / ``.job``, see ``spark/lineage/config.py``), the capture records the
batch. Otherwise, when ``--lineage-url`` is given, the job records it itself through
the store API: one batch (barrier = the job's next batch number), source snapshot
consumed, sink snapshot produced, under ``--job-name`` (default: the Spark application
name). Either way the SnapshotCatchUpSensor and the lineage queries read the same rows.

Run it with spark-submit (the package on ``--py-files`` or installed)::

    spark-submit dags/jobs/enrich_orders.py --warehouse /tmp/wh \\
        --source db.orders --sink db.orders_enriched --version fixed --branch fix1 \\
        --mode stream --checkpoint /tmp/checkpoints/orders_enriched.fix1

The last stdout line is ``PAIMON_RESULT {json}`` (source/sink snapshots, rows); a
failure prints ``PAIMON_ERROR message`` and exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

VERSIONS = ("buggy", "fixed")
MODES = ("batch", "stream")
DIVISORS = {"buggy": 10, "fixed": 100}
LARGE_ORDER = 100.0  # currency units

SOURCE_COLUMNS = ("order_id", "customer", "amount_cents")
SINK_COLUMNS = ("order_id", "customer", "amount", "size")


def enrich_row(row: dict[str, Any], version: str = "fixed") -> dict[str, Any]:
    """The job's logic on one row, in plain Python (the check task compares against it)."""
    amount = round(row["amount_cents"] / DIVISORS[version], 2)
    return {
        "order_id": row["order_id"],
        "customer": row["customer"],
        "amount": amount,
        "size": "large" if amount >= LARGE_ORDER else "small",
    }


def verify(source_rows: list[dict[str, Any]], sink_rows: list[dict[str, Any]]) -> list[str]:
    """Problems found when ``sink_rows`` should be the fixed enrichment of ``source_rows``."""
    expected = {r["order_id"]: enrich_row(r, "fixed") for r in source_rows}
    actual = {r["order_id"]: {k: r[k] for k in SINK_COLUMNS} for r in sink_rows}
    problems = []
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing:
        problems.append(f"orders missing from the sink: {missing[:10]}")
    if extra:
        problems.append(f"orders in the sink but not in the source: {extra[:10]}")
    wrong = [oid for oid in sorted(set(expected) & set(actual)) if expected[oid] != actual[oid]]
    if wrong:
        sample = wrong[0]
        problems.append(
            f"{len(wrong)} rows differ from the fixed enrichment, e.g. order {sample}: "
            f"{actual[sample]} (expected {expected[sample]})"
        )
    if len(sink_rows) != len(actual):
        problems.append(f"duplicate order ids in the sink ({len(sink_rows)} rows, {len(actual)} ids)")
    return problems


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="enrich_orders", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--source", required=True, help="source table db.table (read on main)")
    parser.add_argument("--sink", required=True, help="sink table db.table")
    parser.add_argument("--branch", default=None, help="sink branch (default: main)")
    parser.add_argument("--version", choices=VERSIONS, default="fixed")
    parser.add_argument("--mode", choices=MODES, default="batch")
    parser.add_argument("--checkpoint", default=None, help="stream mode: the query's checkpoint folder")
    parser.add_argument("--lineage-url", default=None, help="lineage store SQLAlchemy URL")
    parser.add_argument("--job-name", default=None, help="job name in the lineage store")
    return parser


def latest_snapshot_id(warehouse: str, table: str, branch: str | None = None) -> int | None:
    """The table's latest snapshot id on ``branch`` (pypaimon metadata, no data read)."""
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.options import connection_catalog_options

    snapshot = load_table(open_catalog(warehouse, connection_catalog_options(warehouse)), table, branch).snapshot_manager().get_latest_snapshot()
    return snapshot.id if snapshot is not None else None


def sink_snapshot_of(warehouse: str, table: str, branch: str | None) -> Any:
    """The snapshot the write just committed (the sink branch's latest)."""
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.options import connection_catalog_options

    return load_table(open_catalog(warehouse, connection_catalog_options(warehouse)), table, branch).snapshot_manager().get_latest_snapshot()


def enrich(frame: Any, version: str) -> Any:
    """The job's logic as Spark columns (the same as ``enrich_row``)."""
    from pyspark.sql import functions as F

    amount = F.round(F.col("amount_cents") / F.lit(DIVISORS[version]), 2)
    return frame.select(
        F.col("order_id"),
        F.col("customer"),
        amount.alias("amount"),
        F.when(amount >= F.lit(LARGE_ORDER), F.lit("large")).otherwise(F.lit("small")).alias("size"),
    )


def checkpoint_started(checkpoint: str) -> bool:
    """Whether the streaming query has a checkpoint with offsets (it ran before)."""
    from pyarrow import fs

    filesystem, path = fs.FileSystem.from_uri(checkpoint if "://" in checkpoint else f"file://{checkpoint}")
    info = filesystem.get_file_info(fs.FileSelector(path.rstrip("/") + "/offsets", allow_not_found=True))
    return any(i.type == fs.FileType.File for i in info)


def empty_branch(warehouse: str, table: str, branch: str | None) -> int | None:
    """Commit an empty OVERWRITE to ``table``'s ``branch`` when it holds rows; the new snapshot id."""
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.options import connection_catalog_options

    target = load_table(open_catalog(warehouse, connection_catalog_options(warehouse)), table, branch)
    latest = target.snapshot_manager().get_latest_snapshot()
    if latest is None or not latest.total_record_count:
        return None
    builder = target.new_batch_write_builder().overwrite()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        commit.commit(write.prepare_commit())  # no files: every row of the branch is dropped
    finally:
        write.close()
        commit.close()
    return target.snapshot_manager().get_latest_snapshot().id


def input_rows(progress: Any) -> int | None:
    """The rows a micro-batch read (its progress record), None for a record of no batch.

    A classic session's progress carries the total; a Spark Connect session's leaves it
    empty and has it per source only.
    """
    total = progress.get("numInputRows")
    if total is None:
        counts = [src.get("numInputRows") for src in progress.get("sources") or []]
        known = [int(c) for c in counts if c is not None]
        total = sum(known) if known else None
    return None if total is None else int(total)


def run_stream(spark: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Stream the source into the sink branch until drained (availableNow); return the result."""
    if not args.checkpoint:
        raise ValueError("--mode stream needs --checkpoint (where the query keeps its progress)")
    emptied = None
    if not checkpoint_started(args.checkpoint):
        emptied = empty_branch(args.warehouse, args.sink, args.branch)
    source = (
        spark.readStream.format("paimon")
        .option("warehouse", args.warehouse)
        .option("table", args.source)
        .load()
    )
    writer = (
        enrich(source, args.version)
        .writeStream.format("paimon")
        .option("warehouse", args.warehouse)
        .option("table", args.sink)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
    )
    if args.branch:
        writer = writer.option("branch", args.branch)
    query = writer.start()
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    batches = [p for p in query.recentProgress if input_rows(p) is not None]
    consumed = None
    for progress in query.recentProgress:
        for src in progress.get("sources") or []:
            end = src.get("endOffset")
            if isinstance(end, str):
                end = json.loads(end)
            if isinstance(end, dict) and end.get("nextSnapshot") is not None:
                consumed = int(end["nextSnapshot"]) - 1
    sink_snapshot = sink_snapshot_of(args.warehouse, args.sink, args.branch)
    return {
        "version": args.version,
        "mode": "stream",
        "source": args.source,
        "source_snapshot_id": consumed,
        "sink": args.sink,
        "branch": args.branch or "main",
        "sink_snapshot_id": sink_snapshot.id if sink_snapshot else None,
        "rows": sink_snapshot.total_record_count if sink_snapshot else 0,
        "micro_batches": len(batches),
        "rows_read": sum(input_rows(p) or 0 for p in batches),
        "emptied_branch_snapshot_id": emptied,
        "checkpoint": args.checkpoint,
    }


def run(spark: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Read the source at its latest snapshot, enrich, overwrite the sink; return the result."""
    if args.mode == "stream":
        return run_stream(spark, args)
    source_snapshot = latest_snapshot_id(args.warehouse, args.source)
    if source_snapshot is None:
        raise ValueError(f"source {args.source} has no snapshot yet: nothing to read")
    source = (
        spark.read.format("paimon")
        .option("warehouse", args.warehouse)
        .option("table", args.source)
        .option("snapshot-id", str(source_snapshot))
        .load()
    )
    writer = enrich(source, args.version).write.format("paimon").option("warehouse", args.warehouse).option("table", args.sink)
    if args.branch:
        writer = writer.option("branch", args.branch)
    writer.mode("overwrite").save()
    sink_snapshot = sink_snapshot_of(args.warehouse, args.sink, args.branch)
    result = {
        "version": args.version,
        "mode": "batch",
        "source": args.source,
        "source_snapshot_id": source_snapshot,
        "sink": args.sink,
        "branch": args.branch or "main",
        "sink_snapshot_id": sink_snapshot.id,
        "rows": sink_snapshot.total_record_count,
    }
    return result


def record_lineage(url: str, job: str, result: dict[str, Any]) -> int:
    """Record the run as one batch of ``job`` in the lineage store; return the barrier id."""
    from airflow_provider_paimon.lineage import LineageStore, SnapshotRef

    src_db, src_table = result["source"].split(".", 1)
    sink_db, sink_table = result["sink"].split(".", 1)
    with LineageStore.from_url(url) as store:
        barrier = store.next_barrier_id(job)
        store.record_batch(
            job,
            barrier,
            sources=[SnapshotRef(src_db, src_table, result["source_snapshot_id"], "main")],
            sinks=[SnapshotRef(sink_db, sink_table, result["sink_snapshot_id"], result["branch"])],
        )
    return barrier


def active_capture(spark: Any) -> Any:
    """The Spark-side lineage capture of this session, if the conf turned it on."""
    try:
        from airflow_provider_paimon.spark.lineage.capture import active_capture as active
    except ImportError:  # an older package without the capture
        return None
    return active(spark)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pyspark.sql import SparkSession

    from airflow_provider_paimon.spark import register
    from airflow_provider_paimon.spark.jobs.common import print_error, print_result

    spark = SparkSession.builder.appName(args.job_name or f"enrich_orders.{args.version}").getOrCreate()
    try:
        register(spark)
        capture = active_capture(spark)  # on when spark.paimon.lineage.* conf asks (register)
        result = run(spark, args)
        if capture is not None:
            capture.close()  # flushes this batch's lineage to the store
            result["lineage"] = "capture"
            result["lineage_job"] = capture.config.job
        elif args.lineage_url:
            job = args.job_name or spark.sparkContext.appName
            result["lineage"] = "job"
            result["lineage_job"] = job
            result["barrier_id"] = record_lineage(args.lineage_url, job, result)
        print_result(result)  # the PAIMON_RESULT line (and file) the operator returns
        return 0
    except Exception as err:  # noqa: BLE001 - the job contract: one error line, exit 1
        print_error(f"{type(err).__name__}: {err}")
        return 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
