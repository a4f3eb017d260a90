"""Benchmark: what expiring after each commit costs a writer, and whether it grows.

A writer (the ``paimon`` Spark source's batch writer or streaming sink) calls
``expire_after_commit`` after every commit. This drives that exactly as the sink's
driver does: one-row commits with pypaimon, each followed by ``expire_after_commit``
with the table's options, against a twin table with ``write-only=true`` (the baseline:
the same commits, no expiry). Warm-up commits are discarded; both tables are
written in the same run, interleaved. Printed per case:

- ``idle``: Paimon's defaults (10 retained, 1 h): nothing ever expires, only the cheap
  "is there anything to expire" check runs;
- ``steady-R``: ``snapshot.num-retained.max=R`` (min 1): from the R+1-th commit on,
  every commit expires one snapshot, reading the R retained ones to decide which
  files are still needed (manifests come from the writer process's bounded cache);
- ``cold-R``: the same with that cache emptied before every commit (a writer whose
  every commit runs in a fresh process: the worst case);

with the median commit time with and without expiry, the overhead per commit and the
ratio, and the Python heap (tracemalloc) and RSS after the warm-up and at the end:
nothing the expiry keeps may grow per commit.

    python benchmarks/writer_expiry.py
    python benchmarks/writer_expiry.py --commits 600 --retain 50,200
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.maintenance.after_commit import expire_after_commit
from airflow_provider_paimon.paimon.maintenance.references import SHARED_MANIFESTS

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def make(catalog, name: str, options: dict[str, str]):
    from pypaimon import Schema

    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, options=options), False)
    return load_table(catalog, name)


def commit(table, i: int) -> None:
    builder = table.new_batch_write_builder()
    w, c = builder.new_write(), builder.new_commit()
    w.write_arrow(pa.Table.from_pylist([{"id": i, "v": f"r{i}"}], schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def run_case(work: str, label: str, options: dict[str, str], commits: int, warmup: int, cold: bool) -> dict:
    catalog = open_catalog(os.path.join(work, label))
    catalog.create_database("db", True)
    on = make(catalog, "db.on", options)
    off = make(catalog, "db.off", dict(options, **{"write-only": "true"}))
    with_expiry, without, expire_only = [], [], []
    tracemalloc.start()
    heap0 = rss0 = 0.0
    expired = 0
    for i in range(commits):
        t0 = time.perf_counter()
        commit(off, i)
        expire_after_commit(off)  # write-only: returns at once, as the writer would call it
        t1 = time.perf_counter()
        commit(on, i)
        if cold:
            SHARED_MANIFESTS.clear()
        t2 = time.perf_counter()
        result = expire_after_commit(on)
        t3 = time.perf_counter()
        expired += len(result["expired_snapshot_ids"]) if result else 0
        if i == warmup:
            gc.collect()
            heap0, rss0 = tracemalloc.get_traced_memory()[0] / 2**20, rss_mb()
        if i >= warmup:
            without.append(t1 - t0)
            with_expiry.append(t3 - t1)
            expire_only.append(t3 - t2)
    gc.collect()
    heap1, rss1 = tracemalloc.get_traced_memory()[0] / 2**20, rss_mb()
    tracemalloc.stop()
    snaps = len([n for n in os.listdir(os.path.join(on.table_path, "snapshot")) if n.startswith("snapshot-")])
    base, ours = statistics.median(without), statistics.median(with_expiry)
    return {
        "case": label, "commits": len(with_expiry), "expired": expired, "snapshots_left": snaps,
        "commit_ms": base * 1000, "commit_expire_ms": ours * 1000,
        "expire_ms": statistics.median(expire_only) * 1000, "ratio": ours / base,
        "heap_mb": (heap0, heap1), "rss_mb": (rss0, rss1), "cache": len(SHARED_MANIFESTS),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--retain", default="20,100", help="comma-separated num-retained.max values")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="writer-expiry-")
    try:
        cases = [("idle", {}, False)]
        for r in (int(x) for x in args.retain.split(",") if x.strip()):
            opts = {"snapshot.num-retained.max": str(r), "snapshot.num-retained.min": "1"}
            cases += [(f"steady-{r}", opts, False), (f"cold-{r}", opts, True)]
        print(f"{args.commits} one-row commits per case ({args.warmup} warm-up discarded); baseline = "
              "the same commits with write-only=true, interleaved in the same run")
        print(f"{'case':<12}{'expired':>8}{'left':>6}{'commit ms':>11}{'+expiry ms':>12}{'expiry ms':>11}"
              f"{'ratio':>7}{'heap MiB start->end':>22}{'RSS MiB start->end':>22}{'cached':>8}")
        for label, options, cold in cases:
            SHARED_MANIFESTS.clear()
            r = run_case(work, label, options, args.commits, args.warmup, cold)
            print(f"{r['case']:<12}{r['expired']:>8}{r['snapshots_left']:>6}{r['commit_ms']:>11.1f}"
                  f"{r['commit_expire_ms']:>12.1f}{r['expire_ms']:>11.2f}{r['ratio']:>7.2f}"
                  f"{r['heap_mb'][0]:>11.1f} ->{r['heap_mb'][1]:>7.1f}{r['rss_mb'][0]:>13.1f} ->{r['rss_mb'][1]:>7.1f}"
                  f"{r['cache']:>8}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
