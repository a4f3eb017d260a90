"""Benchmark: snapshot expiry and orphan cleanup against the floor of reading the
table's manifests once.

Writes an append table of ``--snapshots`` one-row commits with plain pypaimon (as a
streaming job at one batch a minute would, default 10,000), compacting every
``--compact-every`` commits, then prints:

- the time of ``expire_snapshots`` down to ``--retain`` snapshots and of
  ``remove_orphan_files``, with snapshots, files and bytes reclaimed;
- the floor: reading every distinct manifest list and manifest of the table once
  (what any expiry must at least read to know which files are still needed). The
  goal is expiry within 2x of the floor;
- the planning time of a full scan of the latest snapshot before and after expiry.

Writing the commits takes minutes; ``--cache DIR`` keeps the written table in DIR
and copies it on later runs with the same parameters.

Usage: ``python benchmarks/maintenance.py`` or ``python benchmarks/maintenance.py
--snapshots 1000 --retain 100``.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.maintenance import expire_snapshots, remove_orphan_files

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def build(warehouse: str, snapshots: int, compact_every: int) -> None:
    from pypaimon import Schema

    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    table = load_table(catalog, "db.t")
    written = 0
    while written < snapshots:
        builder = table.new_batch_write_builder()
        w, c = builder.new_write(), builder.new_commit()
        w.write_arrow(pa.Table.from_pylist([{"id": written, "v": f"r{written}"}], schema=SCHEMA))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        written += 1
        if compact_every and written % compact_every == 0 and written < snapshots:
            compact(table, CompactionOptions.from_table(table))
            written += 1


def manifest_floor(table_dir: str) -> float:
    """Seconds to read every distinct manifest list and manifest of the table once."""
    import fastavro

    start = time.perf_counter()
    mdir = os.path.join(table_dir, "manifest")
    for name in os.listdir(mdir):
        with open(os.path.join(mdir, name), "rb") as fh:
            for _ in fastavro.reader(io.BytesIO(fh.read())):
                pass
    return time.perf_counter() - start


def plan_seconds(warehouse: str, repeats: int = 5) -> float:
    """Best of ``repeats`` plans of a full scan of the latest snapshot (fresh catalog each)."""
    best = float("inf")
    for _ in range(repeats):
        table = load_table(open_catalog(warehouse), "db.t")
        start = time.perf_counter()
        table.new_read_builder().new_scan().plan().splits()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--snapshots", type=int, default=10_000)
    ap.add_argument("--compact-every", type=int, default=100)
    ap.add_argument("--retain", type=int, default=100)
    ap.add_argument("--cache", default=None)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-maint-")
    warehouse = os.path.join(work, "wh")
    key = f"maint-{args.snapshots}-{args.compact_every}"
    cached = os.path.join(args.cache, key) if args.cache else None
    t0 = time.perf_counter()
    if cached and os.path.isdir(cached):
        shutil.copytree(cached, warehouse)
    else:
        build(warehouse, args.snapshots, args.compact_every)
        if cached:
            shutil.copytree(warehouse, cached)
    print(f"table: {args.snapshots} snapshots (compaction every {args.compact_every}), "
          f"ready in {time.perf_counter() - t0:.1f}s")
    tdir = os.path.join(warehouse, "db.db", "t")
    floor = manifest_floor(tdir)
    plan_before = plan_seconds(warehouse)
    table = load_table(open_catalog(warehouse), "db.t")
    start = time.perf_counter()
    expired = expire_snapshots(table, retain_min=args.retain, retain_max=args.retain,
                               older_than=timedelta(0), max_deletes=args.snapshots)
    expire_s = time.perf_counter() - start
    start = time.perf_counter()
    orphans = remove_orphan_files(table, older_than=timedelta(0))
    orphan_s = time.perf_counter() - start
    plan_after = plan_seconds(warehouse)
    print(f"expire_snapshots: {expire_s:.2f}s, {len(expired['expired_snapshot_ids'])} snapshots, "
          f"{expired['deleted_file_count']} files, {expired['deleted_bytes'] / 1e6:.1f} MB reclaimed "
          f"({expired['deleted_by_kind']})")
    print(f"remove_orphan_files: {orphan_s:.2f}s, {orphans['deleted_file_count']} files")
    print(f"floor (read every manifest once): {floor:.2f}s -> expiry at {expire_s / floor:.2f}x the floor "
          "(goal <= 2x)")
    print(f"scan planning (best of 5): {plan_before * 1000:.0f} ms before, {plan_after * 1000:.0f} ms after")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
