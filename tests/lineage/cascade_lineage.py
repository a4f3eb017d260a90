"""Lineage for the cascade-plan tests, recorded batch by batch as the Spark capture does,
and a from-scratch reference of the plan's rules over every row of the store."""

from __future__ import annotations

import random

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef


def S(name: str, snapshot_id: int) -> SnapshotRef:  # noqa: N802 - reads like the lineage it records
    """``"db.table"`` or ``"db.table$branch_NAME"`` at a snapshot."""
    table, _, branch = name.partition("$branch_")
    db, tbl = table.split(".")
    return SnapshotRef(db, tbl, snapshot_id, branch or "main")


def record_lake(store: LineageStore) -> None:
    """A chain ods.raw -> dwd.clean -> ads.mart, a diamond to ads.joined, a branch, and
    tables the bad snapshot ods.raw@3 does not reach. Jobs are named ``{dag_id}.{task_id}``.

    ::

        ods.raw --lake.clean--> dwd.clean --lake.mart--> ads.mart
           |  \\                   \\--lake.left--> dws.left --\\
           |   \\--lake.right--> dws.right --------lake.join--> ads.joined --lake.report--> ads.report
           |--lake.audit--> ads.audit          dim.users --lake.enrich--> dwd.clean
           \\--lake.clean_fix--> dwd.clean$branch_fix          other.src --lake.other--> other.dst
    """
    for b in range(1, 6):  # an ingest without Paimon sources writes raw 1..5
        store.record_batch("lake.ingest", b, [], [S("ods.raw", b)])
    for b in range(1, 6):  # a batch job: barrier b scanned raw@b and wrote clean@b
        store.record_batch("lake.clean", b, [S("ods.raw", b)], [S("dwd.clean", b)])
    # another writer of dwd.clean, from a good source, after the first bad snapshot
    store.record_batch("lake.enrich", 1, [S("dim.users", 1)], [S("dwd.clean", 6)])
    # a streaming job records the END of each micro-batch's range: batch 1 read clean
    # (2, 4], so it read the bad clean@3 although no barrier names snapshot 3
    for batch, (src, out) in enumerate([(2, 1), (4, 2), (6, 3)]):
        store.record_batch("lake.mart", batch, [S("dwd.clean", src)], [S("ads.mart", out)])
    for b, (src, out) in enumerate([(1, 1), (2, 2), (3, 3), (5, 4)], start=1):
        store.record_batch("lake.left", b, [S("dwd.clean", src)], [S("dws.left", out)])
    for b, (src, out) in enumerate([(2, 1), (5, 2)], start=1):  # straight from raw, skipping raw@3
        store.record_batch("lake.right", b, [S("ods.raw", src)], [S("dws.right", out)])
    for b, (left, right, out) in enumerate([(1, 1, 1), (3, 1, 2), (4, 2, 3)], start=1):
        store.record_batch("lake.join", b, [S("dws.left", left), S("dws.right", right)], [S("ads.joined", out)])
    # joined is first reached through dws.right (joined@3), then dws.left moves it to
    # joined@2: only a second walk from joined@2 finds this reader's batch 2
    for b in (1, 2):
        store.record_batch("lake.report", b, [S("ads.joined", b)], [S("ads.report", b)])
    store.record_batch("lake.audit", 1, [S("ods.raw", 4)], [S("ads.audit", 1)])  # its first snapshot
    store.record_batch("lake.clean_fix", 1, [S("ods.raw", 3)], [S("dwd.clean$branch_fix", 4)])
    store.record_batch("lake.other", 1, [S("other.src", 3)], [S("other.dst", 3)])


#: The plan of ods.raw@3 over ``record_lake``: (name, depth, branch point, bad snapshots, jobs, upstreams).
LAKE_PLAN = [
    ("ods.raw", 0, 2, [3, 4, 5], ["lake.ingest"], []),
    ("ads.audit", 1, None, [1], ["lake.audit"], ["ods.raw"]),
    ("dwd.clean$branch_fix", 1, 3, [4], ["lake.clean_fix"], ["ods.raw"]),
    ("dwd.clean", 1, 2, [3, 4, 5, 6], ["lake.clean", "lake.enrich"], ["ods.raw"]),
    ("dws.right", 1, 1, [2], ["lake.right"], ["ods.raw"]),
    ("ads.mart", 2, 1, [2, 3], ["lake.mart"], ["dwd.clean"]),
    ("dws.left", 2, 2, [3, 4], ["lake.left"], ["dwd.clean"]),
    ("ads.joined", 2, 1, [2, 3], ["lake.join"], ["dws.left", "dws.right"]),
    ("ads.report", 3, 1, [2], ["lake.report"], ["ads.joined"]),
]


def plan_rows(plan) -> list[tuple]:
    return [(t.name, t.depth, t.branch_point, list(t.bad_snapshots), list(t.jobs), list(t.upstreams))
            for t in plan.tables]


def record_random_dag(store: LineageStore, seed: int, tables: int = 6) -> None:
    """Random batches over tables t0..t{n-1}: table j is written by one job reading some of t0..t{j-1}."""
    rng = random.Random(seed)
    latest = {f"r.t{i}": 0 for i in range(tables)}
    store.record_batch("gen.seed", 0, [], [S("r.t0", 1)])
    latest["r.t0"] = 1
    for _round in range(4):
        for j in range(tables):
            name = f"r.t{j}"
            if j == 0:
                latest[name] += 1
                store.record_batch("gen.t0", latest[name], [], [S(name, latest[name])])
                continue
            reads = [f"r.t{i}" for i in range(j) if latest[f"r.t{i}"] and rng.random() < 0.6]
            if not reads:
                continue
            latest[name] += rng.choice([1, 2])  # sometimes a snapshot without lineage in between
            sources = [S(r, rng.randint(max(1, latest[r] - 1), latest[r])) for r in reads]
            store.record_batch(f"gen.t{j}", latest[name], sources, [S(name, latest[name])])


def _name(k: tuple) -> str:
    return f"{k[0]}.{k[1]}" + ("" if k[2] == "main" else f"$branch_{k[2]}")


def reference_plan(store: LineageStore, root: SnapshotRef) -> dict[str, tuple]:
    """The plan's rules recomputed from every row: {name: (branch point, bad snapshots, jobs, upstreams)}.

    A batch that consumed a snapshot >= an affected table's first bad one makes its
    sink snapshot bad; repeat until nothing moves (the graph has no cycle).
    """
    key = lambda r: (r.database, r.table, r.branch)  # noqa: E731
    all_sinks = store.sink_data_lineages()
    sinks: dict[tuple, list] = {}
    for row in all_sinks:
        sinks.setdefault((row.job, row.barrier_id), []).append(row)
    sources = store.source_data_lineages()
    first_bad = {key(root): root.snapshot_id}
    moved = True
    while moved:
        moved = False
        for src in sources:
            if key(src) in first_bad and src.snapshot_id >= first_bad[key(src)]:
                for out in sinks.get((src.job, src.barrier_id), []):
                    k = key(out)
                    if k != key(root) and out.snapshot_id < first_bad.get(k, out.snapshot_id + 1):
                        first_bad[k] = out.snapshot_id
                        moved = True
    upstreams: dict[tuple, set[str]] = {}
    for src in sources:
        if key(src) in first_bad and src.snapshot_id >= first_bad[key(src)]:
            for out in sinks.get((src.job, src.barrier_id), []):
                if key(out) != key(src):
                    upstreams.setdefault(key(out), set()).add(_name(key(src)))
    result = {}
    for k, first in first_bad.items():
        rows = [r for r in all_sinks if key(r) == k and r.snapshot_id >= first]
        bad = sorted({r.snapshot_id for r in rows} | ({root.snapshot_id} if k == key(root) else set()))
        result[_name(k)] = (first - 1 or None, bad, sorted({r.job for r in rows}), sorted(upstreams.get(k, ())))
    return result
