"""Does a long streaming job with lineage capture on grow its driver's memory per micro-batch?

Runs thousands of tiny micro-batches with capture on and prints, at the start and at
the end: the driver's RSS (and, with Spark, the JVM's), the Python heap as tracemalloc
sees it, and the sizes of the capture's per-batch structures
(``LineageCapture.pending_sizes()``). A flat heap and constant sizes are the goal.

Two modes:

* ``capture`` (default, seconds): the capture objects driven directly, as Spark would
  drive them: per micro-batch the sink's commit event, the source's scan event (half
  of them after the batch's progress, as Spark commits a source when it plans the next
  batch) and the query progress, recorded into a real SQLite lineage store;
* ``spark`` (long: about a second per batch on a small machine): a real query, one
  row per micro-batch (``rate-micro-batch``) -> ``writeStream`` into a Paimon table,
  one commit per micro-batch, capture on.

    python benchmarks/streaming_memory.py --batches 5000
    python benchmarks/streaming_memory.py --mode spark --batches 2000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size of a process in MiB (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def sizes(capture: Any) -> dict[str, int]:
    """The capture's per-batch structures (also for versions without ``pending_sizes``)."""
    if hasattr(capture, "pending_sizes"):
        return capture.pending_sizes()
    return {"stream_commits": len(capture._stream_commits), "stream_scans": len(capture._stream_scans)}


def snapshot(label: str, capture: Any, batches: int, jvm_pid: int | None = None) -> dict[str, Any]:
    gc.collect()
    current, _peak = tracemalloc.get_traced_memory()
    point = {
        "at": label,
        "batches": batches,
        "driver_rss_mb": round(rss_mb(), 1),
        "python_heap_mb": round(current / 2**20, 2),
        "capture": sizes(capture),
    }
    if jvm_pid is not None:
        point["jvm_rss_mb"] = round(rss_mb(jvm_pid), 1)
    print(json.dumps(point), flush=True)
    return point


def _capture_config(work: str, job: str) -> Any:
    from airflow_provider_paimon.spark.lineage.config import capture_config

    return capture_config(
        {
            "spark.paimon.lineage.job": job,
            "spark.paimon.lineage.spoolDir": os.path.join(work, "spool"),
            "spark.paimon.lineage.url": f"sqlite:///{os.path.join(work, 'lineage.sqlite')}",
        },
        job,
        environ={},
        force=True,
    )


def run_capture_mode(work: str, batches: int, every: int) -> list[dict[str, Any]]:
    """Drive ``LineageCapture`` the way Spark's listener and the data source's events do."""
    from airflow_provider_paimon.spark.lineage.capture import LineageCapture

    conf = SimpleNamespace(getAll=lambda: [("spark.app.name", "bench")])
    spark = SimpleNamespace(sparkContext=SimpleNamespace(getConf=lambda: conf), conf=SimpleNamespace(getAll={}))
    capture = LineageCapture(spark, _capture_config(work, "bench.streaming_memory"))
    capture.recorder.open()
    table = {"warehouse": "/wh", "database": "db", "branch": "main"}
    points = []
    warmup = min(50, batches)
    for batch in range(batches):
        if batch == warmup:  # store tables created, caches filled: measure from here
            points.append(snapshot("start", capture, batch))
        end = batch + 2
        capture._on_event({**table, "kind": "commit", "table": "dst", "snapshot_id": batch + 1,
                           "commit_kind": "APPEND", "row_count": 1, "batch_id": batch})
        scan = {**table, "kind": "scan", "table": "src", "snapshot_id": end - 1, "next_snapshot": end}
        if batch % 2:
            capture._on_event(scan)
        offset = json.dumps({"nextSnapshot": end, "table": "db.src", "branch": "main", "warehouse": "/wh"})
        capture.on_query_progress(SimpleNamespace(
            batchId=batch, id="q", sources=[SimpleNamespace(endOffset=offset, description="paimon-src")]
        ))
        if not batch % 2:
            capture._on_event(scan)
        if every and batch > warmup and batch % every == 0:
            points.append(snapshot("during", capture, batch))
    points.append(snapshot("end", capture, batches))
    capture.recorder.close()
    return points


def run_spark_mode(work: str, batches: int, every: int) -> list[dict[str, Any]]:
    """A real query, one one-row micro-batch at a time into a Paimon sink, capture on.

    The source is Spark's ``rate-micro-batch`` (one row per batch, as fast as Spark
    goes), so no source table has to be prepared; each batch is a Paimon commit that the
    capture pairs with the batch's progress.
    """
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture
    from airflow_provider_paimon.spark.session import local_session

    warehouse = os.path.join(work, "warehouse")
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    schema = pa.schema([("timestamp", pa.timestamp("us", tz="UTC")), ("value", pa.int64())])
    catalog.create_table("db.dst", Schema.from_pyarrow_schema(schema), False)

    spark = local_session("streaming-memory")
    config = _capture_config(work, "bench.streaming_memory")
    for key, value in {"spark.paimon.lineage.job": config.job, "spark.paimon.lineage.url": config.url,
                       "spark.paimon.lineage.spoolDir": config.spool_dir}.items():
        spark.conf.set(key, value)
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    capture = enable_lineage_capture(spark)
    points: list[dict[str, Any]] = []
    try:
        query = (
            spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load()
            .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
            .option("checkpointLocation", os.path.join(work, "checkpoint"))
            .trigger(processingTime="0 seconds").start()
        )
        done, marked, next_mark = -1, False, every or batches
        while done < batches - 1:
            if not query.isActive:
                raise RuntimeError(f"query failed: {query.exception()}")
            progress = query.lastProgress
            done = -1 if progress is None else int(progress["batchId"])
            if not marked and done >= 20:  # workers started, store tables made
                points.append(snapshot("start", capture, done + 1, jvm_pid))
                marked = True
            if marked and done >= next_mark:
                points.append(snapshot("during", capture, done + 1, jvm_pid))
                next_mark += every or batches
            time.sleep(1)
        query.stop()
        capture.drain()
        points.append(snapshot("end", capture, done + 1, jvm_pid))
    finally:
        capture.close()
        spark.stop()
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("capture", "spark"), default="capture")
    parser.add_argument("--batches", type=int, default=5000)
    parser.add_argument("--every", type=int, default=1000, help="print a point every N batches (0: none)")
    args = parser.parse_args()
    if args.batches < 100:
        parser.error("--batches must be at least 100 (the first batches warm up)")
    work = tempfile.mkdtemp(prefix="streaming-memory-")
    tracemalloc.start()
    try:
        run = run_capture_mode if args.mode == "capture" else run_spark_mode
        points = run(work, args.batches, args.every)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    start, end = points[0], points[-1]
    span = max(1, end["batches"] - start["batches"])
    growth_kb = (end["python_heap_mb"] - start["python_heap_mb"]) * 1024 / span
    print()
    print(f"mode={args.mode}: {span} micro-batches measured")
    print(f"python heap  {start['python_heap_mb']:8.2f} MiB -> {end['python_heap_mb']:8.2f} MiB "
          f"({growth_kb:+.3f} KiB per batch)")
    print(f"driver RSS   {start['driver_rss_mb']:8.1f} MiB -> {end['driver_rss_mb']:8.1f} MiB")
    if "jvm_rss_mb" in end:
        print(f"JVM RSS      {start['jvm_rss_mb']:8.1f} MiB -> {end['jvm_rss_mb']:8.1f} MiB")
    print(f"capture structures at the end: {end['capture']}")


if __name__ == "__main__":
    main()
