"""The catch-up sensor's lineage query as the store grows: a growth curve per backend.

The sensor asks, per source of a job, "the newest snapshot of this table and branch the
job consumed" (``lineage.queries.consumed_snapshots``: the job's newest live rows,
``ORDER BY snapshot_id DESC LIMIT 16`` over the ``(job, database, table,
snapshot_id)`` index, each with its identity). The baseline is the query it replaced,
``SELECT MAX(snapshot_id) ... WHERE job, database, table, branch``, on the same store.

The store is loaded in steps (``--sizes``, rows of ``source_snapshot_lineage``; the
sink table gets as many): 40% of the rows belong to the sensor's job, spread over 4
source tables x 2 branches, the rest to 50 other jobs. After each step PostgreSQL is
``ANALYZE``d (``LineageStore.analyze``, as the docs say to after a bulk load), and
p50/p99 of both queries are measured. The last column is baseline/ours. A flat "ours"
column from the first size to the last is the goal.

    python benchmarks/sensor_progress_query.py                       # 100k, 1M, 3M; all three
    python benchmarks/sensor_progress_query.py --sizes 100000,1000000 --backends sqlite,postgresql
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sqlalchemy as sa

from airflow_provider_paimon.lineage import LineageStore
from airflow_provider_paimon.lineage import schema as lineage_schema
from airflow_provider_paimon.lineage.queries import consumed_snapshots

MYSQL_URL = os.environ.get("PAIMON_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
PG_URL = os.environ.get("PAIMON_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")
JOB = "sensor.job"
SOURCES = [("db", f"src{i}") for i in range(4)]
BRANCHES = ("main", "fix")
OTHER_JOBS = 50
CHUNK = 20_000


def baseline(store: LineageStore, branch: str) -> int | None:
    t = lineage_schema.source_snapshot_lineage
    stmt = sa.select(sa.func.max(t.c.snapshot_id)).where(
        t.c.job == JOB, t.c.database == "db", t.c["table"] == "src0", t.c.branch == branch)
    return store.run("baseline", lambda c: c.execute(stmt).scalar())


def load(store: LineageStore, start: int, stop: int) -> float:
    """Rows ``start``..``stop`` of both snapshot tables; returns seconds (PostgreSQL: COPY)."""
    began = time.perf_counter()
    if store.backend == "postgresql":
        _copy(store, start, stop)
        return time.perf_counter() - began
    now = datetime(2026, 11, 1)
    src, snk = lineage_schema.source_snapshot_lineage, lineage_schema.sink_snapshot_lineage
    for low in range(start, stop, CHUNK):
        rows_src, rows_snk = [], []
        for n in range(low, min(stop, low + CHUNK)):
            mine = n % 5 < 2  # 40% of the rows are the sensor job's
            job = JOB if mine else f"other.{n % OTHER_JOBS}"
            db, tbl = SOURCES[n % len(SOURCES)] if mine else ("db", f"t{n % 97}")
            common = {"job": job, "barrier_id": n, "create_time": now, "commit_user": f"u{n % 7}",
                      "commit_identifier": n, "commit_time": 1_700_000_000_000 + n,
                      "snapshot_identity": f"{n:040x}", "identity_status": "recorded"}
            rows_src.append({**common, "database": db, "table": tbl, "branch": BRANCHES[(n // 4) % 2],
                             "snapshot_id": n // 8 + 1})
            rows_snk.append({**common, "database": "db", "table": f"out{n % 13}", "branch": "main",
                             "snapshot_id": n + 1})
        with store.engine.begin() as conn:
            conn.execute(src.insert(), rows_src)
            conn.execute(snk.insert(), rows_snk)
    return time.perf_counter() - began


def _rows(start: int, stop: int):
    for n in range(start, stop):
        mine = n % 5 < 2  # 40% of the rows are the sensor job's
        job = JOB if mine else f"other.{n % OTHER_JOBS}"
        db, tbl = SOURCES[n % len(SOURCES)] if mine else ("db", f"t{n % 97}")
        common = (job, n, "2026-11-01 00:00:00", f"u{n % 7}", n, 1_700_000_000_000 + n, f"{n:040x}", "recorded")
        yield common, (db, tbl, BRANCHES[(n // 4) % 2], n // 8 + 1), ("db", f"out{n % 13}", "main", n + 1)


def _copy(store: LineageStore, start: int, stop: int) -> None:
    """PostgreSQL's bulk path: COPY FROM a CSV stream."""
    import io

    cols = ("job, barrier_id, create_time, commit_user, commit_identifier, commit_time, snapshot_identity, "
            'identity_status, database, "table", branch, snapshot_id')
    raw = store.engine.raw_connection()
    try:
        with raw.cursor() as cur:
            for table, part in (("source_snapshot_lineage", 1), ("sink_snapshot_lineage", 2)):
                buf = io.StringIO()
                for row in _rows(start, stop):
                    buf.write(",".join(str(v) for v in (*row[0], *row[part])) + "\n")
                buf.seek(0)
                cur.copy_expert(f"COPY {table} ({cols}) FROM STDIN WITH (FORMAT csv)", buf)
        raw.commit()
    finally:
        raw.close()


def timed(fn, repeat: int) -> tuple[float, float]:
    samples = []
    for i in range(repeat):
        began = time.perf_counter()
        fn(BRANCHES[i % 2])
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def run_backend(backend: str, sizes: list[int], repeat: int) -> list[tuple]:
    database = f"bench_sensor_{os.getpid()}"
    tmp = tempfile.mkdtemp(prefix="sensor-bench-")
    url = {"sqlite": f"sqlite:///{tmp}/lineage.sqlite", "mysql": MYSQL_URL, "postgresql": PG_URL}[backend]
    out = []
    with LineageStore.from_url(url, database) as store:
        try:
            loaded = 0
            for size in sizes:
                seconds = load(store, loaded, size)
                loaded = size
                if backend == "postgresql":
                    store.analyze()
                check = consumed_snapshots(store, JOB, "db", "src0", "main", limit=16)
                if not check or check[0][0] != baseline(store, "main"):
                    raise SystemExit(f"the two queries disagree: {check[:1]} vs {baseline(store, 'main')}")
                ours = timed(lambda br: consumed_snapshots(store, JOB, "db", "src0", br, limit=16), repeat)
                base = timed(lambda br: baseline(store, br), repeat)
                out.append((backend, size, seconds, ours, base))
                print(f"{backend:10} {size:>9,} rows  load {seconds:6.1f} s  ours p50 {ours[0]:7.2f} ms p99 "
                      f"{ours[1]:7.2f}  |  MAX() p50 {base[0]:7.2f} ms p99 {base[1]:7.2f}  |  "
                      f"baseline/ours {base[0] / ours[0]:5.1f}x", flush=True)
        finally:
            if backend != "sqlite":
                with store.engine.connect() as conn:
                    conn.exec_driver_sql(f"DROP {'DATABASE' if backend == 'mysql' else 'SCHEMA'} "
                                         f"{'`' + database + '`' if backend == 'mysql' else chr(34) + database + chr(34)}"
                                         + ("" if backend == "mysql" else " CASCADE"))
                    conn.commit()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,3000000")
    parser.add_argument("--backends", default="sqlite,mysql,postgresql")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    results = []
    for backend in args.backends.split(","):
        results += run_backend(backend, sizes, args.repeat)
    print("\nbackend     " + "".join(f"{s:>14,}" for s in sizes) + "   (ours p50 ms; growth first->last)")
    for backend in args.backends.split(","):
        mine = [r for r in results if r[0] == backend]
        print(f"{backend:10}  " + "".join(f"{r[3][0]:>14.2f}" for r in mine)
              + f"   {mine[-1][3][0] / mine[0][3][0]:.2f}x")
        print(f"{'  MAX()':10}  " + "".join(f"{r[4][0]:>14.2f}" for r in mine)
              + f"   {mine[-1][4][0] / mine[0][4][0]:.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
