"""Benchmark: metadata that stays small. Growth curves in one run, CPU seconds and RSS.

Four parts (``--parts commits,planning,compaction,compaction-planning``; the default is
the first three), each ours beside the baseline:

``commits``
    One more commit as the history grows: a table gets ``--commits`` one-row commits
    through pypaimon's commit with our manifest merge (``merging_commit``, what the
    ``paimon`` sinks, ``write_table`` and ``foreach_batch_writer`` use). The CPU of
    the commit call is averaged over a window of 60 commits (two minor-merge cycles
    at ``manifest.merge-min-count`` 30) around 100, 1,000 and 10,000 commits. Baseline:
    plain pypaimon (never merges) on a table whose base list holds N one-entry
    manifests, exactly what N plain commits leave (made synthetically: 10,000 real
    plain commits take most of an hour).

``planning``
    Planning ``read_table`` (``spark/native/plan.py``: ours) against pypaimon's planner
    (``planner="pypaimon"``) on tables of 1k .. ``--max-files`` live files in 100
    partitions: a full plan and a plan of one partition. Each plan runs in its own
    process so its peak RSS is its own. The manifests are generated: one real commit
    writes a file per partition (the planner opens one file footer per group), then
    copies of those entries under new file names are written as manifests of 8 MB
    (``manifest.target-file-size``), the shape a merged table has; a one-partition plan
    is timed on those, then ``compact_manifest`` (timed) sorts the entries by partition
    as our compactions leave them, and every plan is timed again; the one-partition
    plan also with the manifests' block partitions ignored (every entry read: the
    baseline of block skipping). No data file but the first 100 exists: planning never
    opens them.

``compaction-planning``
    Peak RSS and CPU of ``plan_compaction`` (append table, no buckets, 100 partitions)
    at ``--compaction-files`` live files and 10x as many (default 100,000 and
    1,000,000): ours (raw manifest entries streamed, ``DataFileMeta`` built only for
    binned files) against the pypaimon-based planner (``planner="pypaimon"``: every
    live ``ManifestEntry`` in memory), each plan in its own process. Two table shapes
    from the same generated manifests: every file small (the worst case: every file
    is a candidate and lands in a bin, so every file's metadata is built), and 10%
    small (the rest at 200 MB, what a regularly compacted table looks like). The
    baseline runs up to ``--max-pypaimon-compaction-files`` (100,000: at 1,000,000 it
    needs ~3 GB) and is extrapolated linearly beyond, which the output says.

``compaction``
    Planning before and after a compaction of ``--compact-files`` small files into
    1/125 as many: the table is the shape pypaimon's commits leave (one manifest per
    commit of 50 files), the COMPACT commit is ours (``commit_compaction``, with the
    fold of its deletes) with generated "after" files, since only the metadata
    matters to a planner. Both planners, before and after.

Usage: ``python benchmarks/metadata_scale.py`` (10,000 commits, up to 1,000,000
files, a 50,000-file compaction; about 20 minutes on 2 cores) or smaller:
``--commits 1000 --max-files 100000 --compact-files 10000``; compaction planning:
``--parts compaction-planning`` (100,000 and 1,000,000 files) or
``--parts compaction-planning --compaction-files 10000``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
from pypaimon import Schema
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.manifest_entry import ManifestEntry

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
PARTITIONS = 100
WINDOW = 60
LARGE_FILE = 200 << 20


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_table(warehouse: str, options: dict[str, str] | None = None):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"],
                                                             options=options or {}), True)
    return load_table(catalog, "db.t")


def one_row(i: int) -> pa.Table:
    return pa.table({"id": [i], "p": [f"p{i % PARTITIONS:03d}"], "v": [f"v{i}"]}, schema=SCHEMA)


def commit_rows(table, data: pa.Table, merging: bool) -> float:
    """One commit of ``data``; returns the CPU seconds of the commit call alone."""
    from airflow_provider_paimon.paimon.merging_commit import merging_commit

    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    if merging:
        commit = merging_commit(commit)
    try:
        write.write_arrow(data)
        messages = write.prepare_commit()
        start = time.process_time()
        commit.commit(messages)
        return time.process_time() - start
    finally:
        write.close()
        commit.close()


# -- synthetic manifests ------------------------------------------------------


def real_entries(table) -> list:
    snap = table.snapshot_manager().get_latest_snapshot()
    files = ManifestFileManager(table)
    return [e for m in ManifestListManager(table).read_all(snap) for e in files.read(m.file_name, drop_stats=False)]


def synthetic(template: list, count: int, large_every: int = 0) -> list:
    """``count`` ADD entries copied from ``template`` under new file names (with
    ``large_every`` n, all but every n-th file are made 200 MB: not compaction candidates)."""
    out = []
    for k in range(count):
        src = template[k % len(template)]
        f = copy.copy(src.file)
        f.file_name = f"data-{uuid.uuid4()}-0.parquet"
        if large_every and k % large_every:
            f.file_size = LARGE_FILE
        out.append(ManifestEntry(kind=0, partition=src.partition, bucket=src.bucket,
                                 total_buckets=src.total_buckets, file=f))
    return out


def write_snapshot(table, metas: list, record_count: int) -> None:
    """A new snapshot whose base list is ``metas`` (delta empty), committed atomically."""
    lists = ManifestListManager(table)
    snap = table.snapshot_manager().get_latest_snapshot()
    base, delta = f"manifest-list-{uuid.uuid4()}-0", f"manifest-list-{uuid.uuid4()}-1"
    new = dataclasses.replace(
        snap, id=snap.id + 1, base_manifest_list=base, base_manifest_list_size=lists.write(base, metas),
        delta_manifest_list=delta, delta_manifest_list_size=lists.write(delta, []),
        total_record_count=record_count, uuid=str(uuid.uuid4()))
    with table.new_snapshot_commit() as commit:
        assert commit.commit(snap.uuid, new, [])


def seeded_table(warehouse: str, options: dict[str, str] | None = None):
    """A table with one real file per partition (one commit)."""
    table = make_table(warehouse, options)
    commit_rows(table, pa.table({"id": list(range(PARTITIONS)), "p": [f"p{i:03d}" for i in range(PARTITIONS)],
                                 "v": ["x"] * PARTITIONS}, schema=SCHEMA), merging=False)
    return load_table(open_catalog(warehouse), "db.t")


# -- commits --------------------------------------------------------------------


def part_commits(args: argparse.Namespace, out: dict) -> None:
    points = [n for n in (100, 1000, 10000, 100000) if n <= args.commits]
    print(f"\n== one more commit as history grows (CPU ms of the commit call, mean of {WINDOW}) ==")
    ours: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as wh:
        table = make_table(wh)
        done = 0
        started = time.monotonic()
        for point in points:
            # commit up to the window's start, then measure the window
            while done < point - WINDOW // 2:
                commit_rows(table, one_row(done), merging=True)
                done += 1
            cpu = [commit_rows(table, one_row(done + k), merging=True) for k in range(WINDOW)]
            done += WINDOW
            ours[point] = 1000 * sum(cpu) / len(cpu)
            base = ManifestListManager(table).read_base(table.snapshot_manager().get_latest_snapshot())
            print(f"  ours       after {point:>6} commits: {ours[point]:7.1f} ms  (base list: {len(base)} manifests;"
                  f" {time.monotonic() - started:.0f} s so far)", flush=True)
    plain: dict[int, float] = {}
    for point in points:
        with tempfile.TemporaryDirectory() as wh:
            table = seeded_table(wh)
            template = real_entries(table)
            files = ManifestFileManager(table)
            metas = []
            for e in synthetic(template, point):
                metas += files.rolling_write([e], table.options.manifest_target_size(), f"manifest-{uuid.uuid4()}")
            write_snapshot(table, metas, point)
            table = load_table(open_catalog(wh), "db.t")
            cpu = [commit_rows(table, one_row(k), merging=False) for k in range(20)]
            plain[point] = 1000 * sum(cpu) / len(cpu)
            print(f"  pypaimon   after {point:>6} commits: {plain[point]:7.1f} ms  (base list: {point + 10} manifests)",
                  flush=True)
    first, last = points[0], points[-1]
    print(f"  growth {first} -> {last} commits: ours {ours[last] / ours[first]:.2f}x, "
          f"plain pypaimon {plain[last] / plain[first]:.2f}x (goal: ours within 1.5x)")
    out["commits"] = {"ours_ms": ours, "pypaimon_ms": plain}


# -- planning -----------------------------------------------------------------------


def build_planning_table(warehouse: str, files: int, large_every: int = 0) -> None:
    table = seeded_table(warehouse)
    template = real_entries(table)
    manifests = ManifestFileManager(table)
    target = table.options.manifest_target_size()
    metas, left, chunk = [], files - PARTITIONS, 100_000
    while left > 0:
        n = min(chunk, left)
        metas += manifests.rolling_write(synthetic(template, n, large_every), target, f"manifest-{uuid.uuid4()}")
        left -= n
    old = ManifestListManager(table).read_all(table.snapshot_manager().get_latest_snapshot())
    write_snapshot(table, list(old) + metas, files)


def compact_manifests(warehouse: str) -> tuple[float, float]:
    """``compact_manifest`` on the table: (CPU s, manifests after)."""
    from airflow_provider_paimon.paimon.compaction.manifest_compaction import compact_manifest

    start = time.process_time()
    result = compact_manifest(load_table(open_catalog(warehouse), "db.t"))
    return time.process_time() - start, result.manifests_after


PLAN_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from airflow_provider_paimon.spark.native.plan import plan_for
from airflow_provider_paimon.spark.options import parse_options
warehouse, planner, filter_text = sys.argv[2], sys.argv[3], sys.argv[4] or None
if planner == "auto-every-block":  # the baseline: block partitions ignored, every entry read
    from airflow_provider_paimon.paimon import manifest_reader
    manifest_reader._decode_indexed = lambda data, accept: None
    planner = "auto"
opts = parse_options({"warehouse": warehouse, "table": "db.t"})
start = time.process_time()
plan = plan_for(opts, filter_text, planner=planner)
cpu = time.process_time() - start
# VmHWM, not ru_maxrss: Linux keeps the forking parent's high-water mark in ru_maxrss
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0].split()[1]
print(json.dumps({"cpu": cpu, "files": plan.native_files + plan.python_file_count,
                  "rss_mb": int(hwm) / 1024}))
"""


def plan_in_child(warehouse: str, planner: str, filter_text: str | None) -> dict:
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", PLAN_CHILD, root, warehouse, planner, filter_text or ""],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def part_planning(args: argparse.Namespace, out: dict) -> None:
    sizes = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= args.max_files]
    print("\n== read_table planning (CPU s, peak RSS MB; each plan in its own process) ==")
    rows = {}
    for files in sizes:
        with tempfile.TemporaryDirectory() as wh:
            start = time.monotonic()
            build_planning_table(wh, files)
            built = time.monotonic() - start
            one = "p = 'p007'"
            unclustered = plan_in_child(wh, "auto", one)
            cm_cpu, cm_after = compact_manifests(wh)  # what our compaction leaves: partition-sorted
            ours, ours_one = plan_in_child(wh, "auto", None), plan_in_child(wh, "auto", one)
            every_block = plan_in_child(wh, "auto-every-block", one)
            theirs = plan_in_child(wh, "pypaimon", None) if files <= args.max_pypaimon_files else None
            theirs_one = plan_in_child(wh, "pypaimon", one) if files <= args.max_pypaimon_files else None
            assert ours["files"] == files
            assert ours_one["files"] == files // PARTITIONS
            rows[files] = {"ours": ours, "ours_one_partition": ours_one, "pypaimon": theirs,
                           "pypaimon_one_partition": theirs_one, "compact_manifest_cpu": cm_cpu,
                           "ours_one_partition_unsorted_manifests": unclustered,
                           "ours_one_partition_every_block": every_block}
            ref = (f"pypaimon {theirs['cpu']:6.2f} s {theirs['rss_mb']:6.0f} MB, 1 partition "
                   f"{theirs_one['cpu']:5.2f} s; ours {theirs['cpu'] / ours['cpu']:.1f}x faster"
                   if theirs else "pypaimon not run (--max-pypaimon-files)")
            print(f"  {files:>9} files (made in {built:.0f} s): ours full {ours['cpu']:6.2f} s "
                  f"{ours['rss_mb']:6.0f} MB, 1 of 100 partitions {ours_one['cpu']:5.2f} s "
                  f"(every block read: {every_block['cpu']:.2f} s; "
                  f"{unclustered['cpu']:.2f} s before compact_manifest sorted the manifests: "
                  f"{cm_cpu:.1f} s CPU, {cm_after} manifests) | {ref}", flush=True)
    out["planning"] = rows


# -- compaction planning -------------------------------------------------------------


COMPACTION_PLAN_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.plan import plan_compaction
warehouse, planner = sys.argv[2], sys.argv[3]
def status(key):
    return int([line for line in open("/proc/self/status") if line.startswith(key)][0].split()[1]) / 1024
table = load_table(open_catalog(warehouse), "db.t")
options = CompactionOptions.from_table(table)
before = status("VmRSS:")
start = time.process_time()
plan = plan_compaction(table, options, planner=planner)
cpu = time.process_time() - start
# ours pauses the cyclic collector while planning: what it deferred is one full collection
start = time.process_time()
gc.collect()
gc_cpu = time.process_time() - start
# VmHWM, not ru_maxrss: Linux keeps the forking parent's high-water mark in ru_maxrss
print(json.dumps({"cpu": cpu, "gc_cpu": gc_cpu, "rss_mb": status("VmHWM:"), "rss_before_mb": before,
                  "files": plan.files_scanned, "binned": plan.files_before, "bins": len(plan.bins)}))
"""


def compaction_plan_in_child(warehouse: str, planner: str) -> dict:
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", COMPACTION_PLAN_CHILD, root, warehouse, planner],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _plan_line(label: str, m: dict) -> str:
    return (f"{label} {m['cpu']:7.2f} s CPU (+{m['gc_cpu']:.2f} s a full gc.collect() after) "
            f"{m['rss_mb']:6.0f} MB peak "
            f"({m['rss_before_mb']:.0f} MB before planning; {m['binned']} files in {m['bins']} bins)")


def part_compaction_planning(args: argparse.Namespace, out: dict) -> None:
    sizes = [args.compaction_files, 10 * args.compaction_files]
    shapes = (("all small", 0), ("10% small", 10))
    print("\n== compaction planning (plan_compaction; CPU s, peak RSS MB; each plan in its own process) ==")
    rows: dict = {}
    for shape, large_every in shapes:
        for files in sizes:
            with tempfile.TemporaryDirectory() as wh:
                start = time.monotonic()
                build_planning_table(wh, files, large_every)
                built = time.monotonic() - start
                ours = compaction_plan_in_child(wh, "auto")
                theirs = (compaction_plan_in_child(wh, "pypaimon")
                          if files <= args.max_pypaimon_compaction_files else None)
            assert ours["files"] == files
            if theirs is not None:
                assert (theirs["files"], theirs["binned"], theirs["bins"]) == (
                    ours["files"], ours["binned"], ours["bins"])
            rows[f"{shape}/{files}"] = {"ours": ours, "pypaimon": theirs, "built_s": built}
            ref = _plan_line("pypaimon", theirs) if theirs else "pypaimon not run (--max-pypaimon-compaction-files)"
            print(f"  {shape:9} {files:>9} files (made in {built:.0f} s): {_plan_line('ours', ours)} | {ref}",
                  flush=True)
        small, large = rows[f"{shape}/{sizes[0]}"], rows[f"{shape}/{sizes[1]}"]
        for label, key in (("ours", "ours"), ("pypaimon", "pypaimon")):
            a, b = small[key], large[key]
            if a and b:
                print(f"  {shape:9} {label}: {sizes[0]} -> {sizes[1]} files: CPU x{b['cpu'] / a['cpu']:.1f}, "
                      f"peak RSS {a['rss_mb']:.0f} -> {b['rss_mb']:.0f} MB "
                      f"({1024 * (b['rss_mb'] - a['rss_mb']) / (sizes[1] - sizes[0]):.2f} KB a file)")
            elif a:
                per_file = (a["rss_mb"] - a["rss_before_mb"]) / sizes[0]
                print(f"  {shape:9} {label} at {sizes[1]} files, extrapolated from {sizes[0]}: "
                      f"~{a['cpu'] * sizes[1] / sizes[0]:.0f} s CPU, "
                      f"~{a['rss_before_mb'] + per_file * sizes[1]:.0f} MB peak "
                      f"({1024 * per_file:.2f} KB a file over the {a['rss_before_mb']:.0f} MB before planning)")
    out["compaction_planning"] = rows


# -- compaction ---------------------------------------------------------------------


def part_compaction(args: argparse.Namespace, out: dict) -> None:
    from airflow_provider_paimon.paimon.compaction.commit import CompactChange, commit_compaction
    from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

    files, per_commit = args.compact_files, 50
    print(f"\n== planning before and after compacting {files} small files into {files // 125} ==")
    with tempfile.TemporaryDirectory() as wh:
        table = seeded_table(wh)
        template = real_entries(table)
        manifests = ManifestFileManager(table)
        metas = []
        entries = synthetic(template, files - PARTITIONS)
        for k in range(0, len(entries), per_commit):  # one manifest per commit, as pypaimon leaves them
            metas += manifests.rolling_write(entries[k:k + per_commit], 8 << 20, f"manifest-{uuid.uuid4()}")
        old = ManifestListManager(table).read_all(latest_snapshot(table))
        write_snapshot(table, list(old) + metas, files)
        before = {p: plan_in_child(wh, p, None) for p in ("auto", "pypaimon")}
        table = load_table(open_catalog(wh), "db.t")
        changes: dict[tuple, CompactChange] = {}
        for e in live_entries(table, latest_snapshot(table)):
            key = (tuple(e.partition.values), e.bucket)
            changes.setdefault(key, CompactChange(key[0], e.bucket, e.total_buckets)).before.append(e.file)
        for change in changes.values():  # 125 small files -> 1 (made up: only metadata matters here)
            for k in range(0, len(change.before), 125):
                group = change.before[k:k + 125]
                merged = copy.copy(group[0])
                merged.file_name = f"data-compact-{uuid.uuid4()}-0.parquet"
                merged.row_count = sum(f.row_count for f in group)
                merged.file_size = sum(f.file_size for f in group)
                change.after.append(merged)
        start = time.process_time()
        commit_compaction(table, list(changes.values()))
        commit_cpu = time.process_time() - start
        after = {p: plan_in_child(wh, p, None) for p in ("auto", "pypaimon")}
    for planner, label in (("auto", "ours"), ("pypaimon", "pypaimon")):
        b, a = before[planner], after[planner]
        print(f"  {label:9} before {b['cpu']:6.2f} s ({b['files']} files), after {a['cpu']:6.2f} s "
              f"({a['files']} files): after/before {a['cpu'] / b['cpu']:.2f} (goal < 1)")
    print(f"  compaction commit (with the fold of its {files} deletes): {commit_cpu:.2f} s CPU")
    out["compaction"] = {"before": before, "after": after, "commit_cpu": commit_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="commits,planning,compaction")
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--max-files", type=int, default=1_000_000)
    parser.add_argument("--max-pypaimon-files", type=int, default=100_000,
                        help="largest table pypaimon's planner plans (1M takes ~2 min and ~3 GB)")
    parser.add_argument("--compact-files", type=int, default=50_000)
    parser.add_argument("--compaction-files", type=int, default=100_000,
                        help="compaction-planning: N (N and 10N live files are planned)")
    parser.add_argument("--max-pypaimon-compaction-files", type=int, default=100_000,
                        help="largest table the pypaimon-based compaction planner plans (~3 KB a file)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    out: dict = {"load": load}
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    unknown = parts - {"commits", "planning", "compaction", "compaction-planning"}
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    if "planning" in parts:
        part_planning(args, out)
    if "compaction" in parts:
        part_compaction(args, out)
    if "compaction-planning" in parts:
        part_compaction_planning(args, out)
    if "commits" in parts:
        part_commits(args, out)
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; peak RSS of this process "
          f"{rss_mb():.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
