"""Benchmark: peak memory of one task writing many partitions, local disk vs S3.

The data source's fast append path keeps one open Parquet file per partition a task
meets. On object storage every open output stream holds up to an upload part in
memory, so the number of open files is capped lower there (``MAX_OPEN_FILES_REMOTE``).
This script writes the same rows (``--partitions`` partitions interleaved in every
10,000-row batch) in a fresh process per variant and prints each one's peak RSS and
time, side by side:

- the fast path on the local disk (cap ``MAX_OPEN_FILES``) and pypaimon's writer there;
- on the loopback S3 server (moto): the fast path with its object-storage cap, the
  fast path with the local cap (what it did before the cap), and pypaimon's writer.

No Spark: the writer is driven as a Spark task drives it. Usage:
``python benchmarks/fast_append_memory.py [--partitions 200] [--rows 2000000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # s3support: the loopback S3 server the tests use

BATCH = 10_000


def run_variant(target: str, writer: str, cap: int | None, partitions: int, rows: int) -> str:
    """Write in this process (a fresh one per variant) and return one result line."""
    import numpy as np
    import pyarrow as pa
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.datasource import fast_append

    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("payload", pa.string())])
    server = None
    if target == "s3":
        from s3support import start_loopback_s3

        server = start_loopback_s3()
        catalog = open_catalog(f"s3://{server.new_bucket()}/wh", server.options())
    else:
        catalog = open_catalog(tempfile.mkdtemp(prefix="paimon-bench-mem-"))
    try:
        catalog.create_database("db", True)
        catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["p"]), False)
        table = load_table(catalog, "db.t")
        rng = np.random.default_rng(0)
        payload = pa.array([os.urandom(100).hex() for _ in range(BATCH)])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        if writer == "fast":
            if cap is not None:
                fast_append.MAX_OPEN_FILES = fast_append.MAX_OPEN_FILES_REMOTE = cap
            write: object = fast_append.FastAppendWriter(table, schema)
        else:
            write = table.new_batch_write_builder().new_write()
        for i in range(rows // BATCH):
            batch = pa.record_batch(
                [pa.array(np.arange(i * BATCH, (i + 1) * BATCH)),
                 pa.array(rng.integers(0, partitions, BATCH).astype(np.int32)), payload],
                schema=schema,
            )
            write.write(batch) if writer == "fast" else write.write_arrow_batch(batch)  # type: ignore[attr-defined]
        messages = write.prepare_commit()  # type: ignore[attr-defined]
        write.close()  # type: ignore[attr-defined]
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        files = sum(len(m.new_files) for m in messages)
        open_cap = getattr(write, "max_open_files", "-")
        return (f"{target:5} {writer:8} open-file cap {open_cap!s:>4}: {seconds:6.1f} s, {files} files, "
                f"peak RSS {peak / 1024:6.0f} MB ({(peak - before) / 1024:5.0f} MB while writing)")
    finally:
        if server is not None:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # target,writer,cap (child process)
    args = parser.parse_args(argv)
    if args.variant:
        target, writer, cap = args.variant.split(",")
        print(run_variant(target, writer, int(cap) if cap else None, args.partitions, args.rows))
        return 0
    from airflow_provider_paimon.spark.datasource import fast_append

    print(f"{args.rows} rows (~{args.rows * 216 / 1e6:.0f} MB of Arrow), {args.partitions} partitions "
          f"interleaved in every {BATCH}-row batch; one process per variant")
    variants = [("local", "fast", ""), ("local", "pypaimon", ""), ("s3", "fast", ""),
                ("s3", "fast", str(fast_append.MAX_OPEN_FILES)), ("s3", "pypaimon", "")]
    for target, writer, cap in variants:
        out = subprocess.run(
            [sys.executable, __file__, "--partitions", str(args.partitions), "--rows", str(args.rows),
             "--variant", f"{target},{writer},{cap}"],
            capture_output=True, text=True, check=True,
        )
        print(out.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
