"""How long create-branch-from-tag, fast-forward and replace-main take as a table grows.

Two series, each on a fresh table in a temp folder:

* data size (default 10 MB .. 2 GB, bounded by ``--max-mb``) at a fixed 10 snapshots;
* snapshot count (default 10 .. 1000, bounded by ``--max-snapshots``) at ~1 MB of data.

For every table, three times (median shown): tag the latest snapshot, time
``create_branch(tag=...)``, commit once to the branch, time ``replace_main``; then
branch again from the new latest snapshot, commit once, and time ``fast_forward``. The operations touch only metadata (snapshot,
schema, tag and manifest-list files), so their time must follow the snapshot count and
stay flat in the data size; the last column says how much metadata there was.

    python benchmarks/branch_ops.py --max-mb 200 --max-snapshots 300
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypaimon import Schema

from airflow_provider_paimon.paimon import branch as branch_ops
from airflow_provider_paimon.paimon import tag as tag_ops
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.snapshots import TableLayout, latest_snapshot_id

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])
ROW_BYTES = 1024
SIZES_MB = [10, 50, 200, 500, 1000, 2000]
SNAPSHOTS = [10, 30, 100, 300, 1000]
REPEAT = 3  # each operation timed three times on the same table; the median is shown
ON_DISK_ROW_BYTES = 770  # a 1 KiB base64 payload takes about this much in parquet


def _commit(table, start: int, n_rows: int) -> None:
    payload = [base64.b64encode(os.urandom(ROW_BYTES * 3 // 4)).decode() for _ in range(min(n_rows, 4096))]
    builder = table.new_batch_write_builder()
    writer, commit = builder.new_write(), builder.new_commit()
    done = 0
    while done < n_rows:
        k = min(4096, n_rows - done)
        batch = pa.Table.from_pydict(
            {"id": list(range(start + done, start + done + k)), "payload": payload[:k]}, schema=SCHEMA
        )
        writer.write_arrow(batch)
        done += k
    commit.commit(writer.prepare_commit())
    writer.close()
    commit.close()


def _du(path: str, only: tuple[str, ...] | None = None) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        rel = os.path.relpath(root, path)
        if only is not None and rel.split(os.sep)[0] not in only:
            continue
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def build(warehouse: str, data_mb: int, snapshots: int):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    table = load_table(catalog, "db.t")
    rows_total = data_mb * 1024 * 1024 // ON_DISK_ROW_BYTES
    per_commit = max(1, rows_total // snapshots)
    for i in range(snapshots):
        _commit(table, i * per_commit, per_commit)
    return catalog, table


def measure(data_mb: int, snapshots: int, workdir: str) -> dict[str, float]:
    warehouse = tempfile.mkdtemp(prefix="branch-bench-", dir=workdir)
    try:
        catalog, table = build(warehouse, data_mb, snapshots)
        tdir = os.path.join(warehouse, "db.db", "t")
        data_bytes = _du(tdir, ("bucket-0",))
        meta_bytes = _du(tdir, ("snapshot", "schema", "tag", "manifest"))
        creates, replaces, ffs = [], [], []
        for i in range(REPEAT):
            tag_ops.create_tag(table, f"t{i}")
            t0 = time.perf_counter()
            branch_ops.create_branch(table, f"fix{i}", tag=f"t{i}")
            creates.append(time.perf_counter() - t0)
            _commit(load_table(catalog, "db.t", f"fix{i}"), 10**9 + i * 100, 10)
            t0 = time.perf_counter()
            branch_ops.replace_main(table, f"fix{i}", backup_name=f"bk{i}")
            replaces.append(time.perf_counter() - t0)
            latest = latest_snapshot_id(TableLayout.of(table))
            branch_ops.create_branch(table, f"ff{i}", snapshot_id=latest)
            _commit(load_table(catalog, "db.t", f"ff{i}"), 2 * 10**9 + i * 100, 10)
            t0 = time.perf_counter()
            branch_ops.fast_forward(table, f"ff{i}")
            ffs.append(time.perf_counter() - t0)
        t_create, t_replace, t_ff = (statistics.median(x) for x in (creates, replaces, ffs))
        return {
            "data_mb": data_bytes / 2**20,
            "meta_kb": meta_bytes / 1024,
            "create": t_create * 1000,
            "replace": t_replace * 1000,
            "ff": t_ff * 1000,
        }
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mb", type=int, default=2000, help="largest data size to build (MB)")
    parser.add_argument("--max-snapshots", type=int, default=1000, help="largest snapshot count to build")
    parser.add_argument("--workdir", default=None, help="where to build the tables (default: temp dir)")
    args = parser.parse_args(argv)
    header = f"{'data MB':>8} {'snapshots':>9} {'metadata KB':>11} {'create-branch ms':>16} " \
             f"{'replace-main ms':>15} {'fast-forward ms':>15}"
    print(header)
    print("-" * len(header))
    series = [(mb, 10) for mb in SIZES_MB if mb <= args.max_mb]
    series += [(1, n) for n in SNAPSHOTS if n <= args.max_snapshots]
    results = []
    for mb, n in series:
        r = measure(mb, n, args.workdir)
        results.append((mb, n, r))
        print(f"{r['data_mb']:8.1f} {n:9d} {r['meta_kb']:11.0f} {r['create']:16.1f} "
              f"{r['replace']:15.1f} {r['ff']:15.1f}", flush=True)
    by_size = [r for mb, n, r in results if n == 10 and mb > 1]
    by_snap = [r for mb, n, r in results if mb == 1]
    if len(by_size) >= 2:
        a, b = by_size[0], by_size[-1]
        print(f"\ndata x{b['data_mb'] / a['data_mb']:.0f}: create x{b['create'] / a['create']:.1f}, "
              f"replace-main x{b['replace'] / a['replace']:.1f}, fast-forward x{b['ff'] / a['ff']:.1f}")
    if len(by_snap) >= 2:
        a, b = by_snap[0], by_snap[-1]
        print(f"snapshots x{b['meta_kb'] / a['meta_kb']:.0f} metadata: create x{b['create'] / a['create']:.1f}, "
              f"replace-main x{b['replace'] / a['replace']:.1f}, fast-forward x{b['ff'] / a['ff']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
