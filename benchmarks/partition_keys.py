"""Benchmark: the partitions a commit changed, as the table's history grows (N and 10N).

What an asset event costs per commit (``paimon/partition_keys.py``), beside the
baseline a reader without the delta manifests would pay: the live files of the latest
snapshot and of the one before it, by partition, through pypaimon's planner, and the
partitions whose files differ.

* ``delta``: ``changed_partition_keys`` of the latest snapshot (the watcher's and
  ``PaimonSparkSubmitOperator``'s reading: its delta manifests only);
* ``between``: ``partition_keys_between`` of the two latest snapshots' states (the
  job operators' reading: the manifests the two states do not share, plus their lists);
* ``baseline``: both states planned whole by pypaimon and compared per partition.

A table of ``--partitions`` partitions gets N one-row pypaimon commits (each in one
partition, round robin), then the three are timed (CPU seconds, best of ``--repeat``)
at N and at 10N commits, in one run, and once more at 10N after ``compact_manifest``
and one commit: pypaimon's own commits never merge manifests, so its base manifest
list (which ``between`` reads for both states) grows with the history; the project's
writers and Paimon Java merge at every commit, which the last row stands for. All three
must name the same partition.

Usage: ``python benchmarks/partition_keys.py`` (N = 100: 100 and 1,000 commits, about a
minute on 2 cores) or ``--commits 30``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def make_table(warehouse: str) -> Any:
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    return load_table(catalog, "db.t")


def commit(table: Any, i: int, partitions: int) -> None:
    builder = table.new_batch_write_builder()
    write, committer = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"id": [i], "dt": [f"2026-11-{1 + i % partitions:02d}"]}, schema=SCHEMA))
    committer.commit(write.prepare_commit())
    write.close()
    committer.close()


def cpu(fn: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def baseline(table: Any, before_id: int, after_id: int) -> list[str]:
    """pypaimon plans both snapshots whole; the partitions whose file sets differ."""
    def files(snapshot_id: int) -> dict[tuple, set[str]]:
        scanned = table.copy({"scan.snapshot-id": str(snapshot_id)})
        out: dict[tuple, set[str]] = {}
        for split in scanned.new_read_builder().new_scan().plan().splits():
            out.setdefault(tuple(split.partition.values), set()).update(f.file_name for f in split.files)
        return out

    old, new = files(before_id), files(after_id)
    return sorted(f"dt={p[0]}" for p in old.keys() | new.keys() if old.get(p) != new.get(p))


def measure(table: Any, repeat: int) -> dict[str, Any]:
    from airflow_provider_paimon.paimon.partition_keys import (
        changed_partition_keys,
        partition_keys_between,
    )
    from airflow_provider_paimon.paimon.snapshots import (
        TableLayout,
        latest_snapshot_id,
        read_snapshot,
    )

    layout = TableLayout.of(table)
    latest = latest_snapshot_id(layout)
    docs = read_snapshot(layout, None, latest - 1), read_snapshot(layout, None, latest)
    out = {}
    out["delta"], delta = cpu(lambda: changed_partition_keys(table, [latest]), repeat)
    out["between"], between = cpu(lambda: partition_keys_between(table, *docs), repeat)
    out["baseline"], base = cpu(lambda: baseline(table, latest - 1, latest), repeat)
    if not (sorted(delta) == sorted(between) == base and len(base) == 1):
        raise SystemExit(f"the readings disagree: delta {delta}, between {between}, baseline {base}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100, help="N (then 10N)")
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as warehouse:
        table = make_table(warehouse)
        done = 0
        rows = []
        for n in (args.commits, 10 * args.commits):
            while done < n:
                commit(table, done, args.partitions)
                done += 1
            rows.append((str(n), measure(table, args.repeat)))
        from airflow_provider_paimon.paimon.compaction.manifest_compaction import compact_manifest

        assert compact_manifest(table).committed
        commit(table, done, args.partitions)
        rows.append((f"{done} merged", measure(table, args.repeat)))
    print(f"{'commits':>11} {'delta ms':>9} {'between ms':>11} {'baseline ms':>12} {'baseline/delta':>15} {'baseline/between':>17}")
    for n, r in rows:
        print(f"{n:>11} {r['delta'] * 1e3:>9.2f} {r['between'] * 1e3:>11.2f} {r['baseline'] * 1e3:>12.2f} "
              f"{r['baseline'] / r['delta']:>15.1f} {r['baseline'] / r['between']:>17.1f}")
    (_, r1), (_, r2), _ = rows
    print(f"growth N -> 10N: delta x{r2['delta'] / r1['delta']:.2f}, between x{r2['between'] / r1['between']:.2f}, "
          f"baseline x{r2['baseline'] / r1['baseline']:.2f}")


if __name__ == "__main__":
    main()
