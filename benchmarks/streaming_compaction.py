"""Does the streaming sink's own compaction keep the table small without slowing the stream?

Two real Spark queries, one after the other, each writing one small micro-batch per
second (``rate`` source, ``--rows`` rows per second, ``trigger(processingTime='1
second')``) for ``--minutes`` into a fresh Paimon append table through the ``paimon``
sink:

* **coordinator**: the sink's background compaction on (the default);
* **write-only**: ``write-only=true`` (no compaction, no expiry: what a table compacted
  by ``CompactionOperator`` runs with).

Every ``--sample-s`` seconds the driver counts the live data files of each table
(plain pypaimon, the latest snapshot). At the end it prints, side by side: the live
file count over time, the number of COMPACT snapshots, micro-batch durations
(Spark's ``triggerExecution``, which includes the sink's commit and the hook after it)
p50 / p99 / max, leaving out the first ``--skip`` micro-batches of each run, after a
``--warmup-s`` query that starts Spark's Python workers for both, and checks that each table holds exactly the rows Spark reports as
written.

    python benchmarks/streaming_compaction.py                # 3 minutes each
    python benchmarks/streaming_compaction.py --minutes 10   # the issue's 10 minutes

Table options: ``--target-file-size`` (default Paimon's 256 mb); the other compaction
options are Paimon's defaults (``compaction.min.file-num`` 5, ratio 0.7, open-file
cost 4 mb).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def live_file_count(warehouse: str, table: str) -> int:
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

    t = load_table(open_catalog(warehouse), table)
    return len(live_entries(t, latest_snapshot(t)))


def table_summary(warehouse: str, table: str) -> dict[str, Any]:
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    t = load_table(open_catalog(warehouse), table)
    snaps = t.snapshot_manager().list_snapshots()
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    values = rows.column("value").to_pylist()
    return {
        "rows": len(values),
        "distinct_rows": len(set(values)),
        "snapshots": len(snaps),
        "compact_snapshots": sum(1 for s in snaps if s.commit_kind == "COMPACT"),
        "live_files": live_file_count(warehouse, table),
    }


def run(spark: Any, warehouse: str, table: str, minutes: float, rows: int, sample_s: float,
        sink_options: dict[str, str], checkpoint: str, skip: int = 0) -> dict[str, Any]:
    df = (
        spark.readStream.format("rate").option("rowsPerSecond", rows).load()
        .selectExpr("value", "cast(timestamp as string) as ts")
    )
    query = (
        df.writeStream.format("paimon")
        .option("warehouse", warehouse)
        .option("table", table)
        .option("create-table", "true")
        .options(**sink_options)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    started = time.monotonic()
    samples: list[tuple[float, int]] = []
    try:
        while time.monotonic() - started < minutes * 60:
            time.sleep(sample_s)
            if query.exception() is not None:
                raise query.exception()
            with contextlib.suppress(Exception):  # the table may not exist before batch 0
                samples.append((time.monotonic() - started, live_file_count(warehouse, table)))
    finally:
        query.stop()
    progress = list(query.recentProgress)
    batches = {p["batchId"]: p for p in progress if p.get("numInputRows", 0) > 0}
    written = sum(p["numInputRows"] for p in batches.values())
    ordered = [batches[b] for b in sorted(batches)]
    durations = [p["durationMs"]["triggerExecution"] / 1000 for p in ordered[skip:]]
    time.sleep(3)  # let a compaction that was running finish its commit
    summary = table_summary(warehouse, table)
    return {
        "batches": len(batches),
        "rows_written": written,
        "p50_s": percentile(durations, 50),
        "p99_s": percentile(durations, 99),
        "max_s": max(durations) if durations else float("nan"),
        "mean_s": statistics.fmean(durations) if durations else float("nan"),
        "samples": samples,
        "durations_s": durations,
        **summary,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--rows", type=int, default=20, help="rows per micro-batch (per second)")
    parser.add_argument("--sample-s", type=float, default=15.0)
    parser.add_argument("--target-file-size", default="256 mb")
    parser.add_argument("--warmup-s", type=float, default=30.0)
    parser.add_argument("--skip", type=int, default=5, help="first micro-batches left out of the durations")
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON too")
    args = parser.parse_args(argv)

    from airflow_provider_paimon.spark.session import local_session

    spark = local_session(
        "paimon-streaming-compaction-bench",
        conf={"spark.sql.streaming.numRecentProgressUpdates": "100000"},
    )
    root = tempfile.mkdtemp(prefix="paimon-stream-compact-")
    warehouse = os.path.join(root, "warehouse")
    os.makedirs(warehouse)
    common = {"target-file-size": args.target_file_size}
    try:
        # Python workers and the sink's code warm up first, so neither run pays for them
        print(f"warming up for {args.warmup_s:.0f} s ...", flush=True)
        run(spark, warehouse, "db.warmup", args.warmup_s / 60, args.rows, args.warmup_s,
            {**common, "write-only": "true"}, os.path.join(root, "ck-warmup"))
        results = {}
        for label, table, extra in (
            ("coordinator", "db.with_coordinator", {}),
            ("write-only", "db.write_only", {"write-only": "true"}),
        ):
            print(f"running {label} for {args.minutes} min ...", flush=True)
            results[label] = run(spark, warehouse, table, args.minutes, args.rows, args.sample_s,
                                 {**common, **extra}, os.path.join(root, f"ck-{label}"), args.skip)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)

    a, b = results["coordinator"], results["write-only"]
    print()
    print(f"{'measure':<34}{'coordinator':>14}{'write-only':>14}")
    for key, fmt in (("batches", "{:d}"), ("rows_written", "{:d}"), ("rows", "{:d}"),
                     ("distinct_rows", "{:d}"), ("live_files", "{:d}"), ("snapshots", "{:d}"),
                     ("compact_snapshots", "{:d}"), ("p50_s", "{:.3f}"), ("p99_s", "{:.3f}"),
                     ("max_s", "{:.3f}"), ("mean_s", "{:.3f}")):
        print(f"{key:<34}{fmt.format(a[key]):>14}{fmt.format(b[key]):>14}")
    ratio = a["p99_s"] / b["p99_s"] if b["p99_s"] else float("nan")
    print(f"{'p99 ratio (coordinator/write-only)':<34}{ratio:>14.2f}")
    print()
    print(f"{'t (s)':>8}{'live files, coordinator':>26}{'live files, write-only':>26}")
    for (ta, na), (_tb, nb) in zip(a["samples"], b["samples"], strict=False):
        print(f"{ta:>8.0f}{na:>26d}{nb:>26d}")
    for label, r in results.items():
        ok = r["rows"] == r["distinct_rows"] == r["rows_written"]
        print(f"{label}: table rows == rows written, each once: {ok}")
    if args.json:
        print(json.dumps(results, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
