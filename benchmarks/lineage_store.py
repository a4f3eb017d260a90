"""Lineage store: write throughput and query latency, side by side with the lineage proposal's bare schema.

Two parts, on SQLite and MariaDB/MySQL:

* **writes**: rows/s recorded by 1 and by 8 concurrent writer processes, one row per
  call (each call its own committed transaction, as a job records a barrier) and
  batched (``--batch`` rows per call). Each writer writes its own job's rows.
* **queries**: ``--rows`` data-lineage rows (half source, half sink) are loaded into
  the store (our schema: branch column + lookup indexes) and into the proposal's schema as
  written (primary keys only). The data is ``--rows / 10`` batches of 20 pipelines x 5
  jobs, each job reading table k and writing table k+1, so five hops go from the first
  table of a pipeline to the last. p50/p99 latency of one-hop and five-hop upstream
  and downstream queries: ours through the Python API (``walk``), the proposal's schema with
  the same SQL (the proposal's join for one hop, the same recursive CTE for five hops).
  The last column is the ratio seed/ours (how many times faster ours is).

    python benchmarks/lineage_store.py                      # 1 million rows, both backends
    python benchmarks/lineage_store.py --rows 200000 --backends sqlite
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sqlalchemy as sa

from airflow_provider_paimon.lineage import DataLineage, LineageStore
from airflow_provider_paimon.lineage import schema as lineage_schema
from airflow_provider_paimon.lineage.queries import walk

PIPELINES = 20
JOBS_PER_PIPELINE = 5
MYSQL_URL = os.environ.get("PAIMON_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")

SEED_ONE_HOP = {
    "upstream": "SELECT S.`database`, S.`table`, S.snapshot_id FROM source_snapshot_lineage S "
                "JOIN sink_snapshot_lineage T ON S.job=T.job AND S.barrier_id=T.barrier_id "
                "WHERE T.`database`=:db AND T.`table`=:tbl AND T.snapshot_id=:snap",
    "downstream": "SELECT T.`database`, T.`table`, T.snapshot_id FROM source_snapshot_lineage S "
                  "JOIN sink_snapshot_lineage T ON S.job=T.job AND S.barrier_id=T.barrier_id "
                  "WHERE S.`database`=:db AND S.`table`=:tbl AND S.snapshot_id=:snap",
}


def seed_cte(direction: str) -> str:
    near, far = ("sink_snapshot_lineage", "source_snapshot_lineage") if direction == "upstream" else (
        "source_snapshot_lineage", "sink_snapshot_lineage")
    return (
        "WITH RECURSIVE hops(db, tbl, snap, depth) AS ("
        f" SELECT F.`database`, F.`table`, F.snapshot_id, 1 FROM {near} N JOIN {far} F"
        " ON N.job=F.job AND N.barrier_id=F.barrier_id"
        " WHERE N.`database`=:db AND N.`table`=:tbl AND N.snapshot_id=:snap"
        " UNION"
        f" SELECT F.`database`, F.`table`, F.snapshot_id, h.depth+1 FROM hops h JOIN {near} N"
        " ON N.`database`=h.db AND N.`table`=h.tbl AND N.snapshot_id=h.snap"
        f" JOIN {far} F ON N.job=F.job AND N.barrier_id=F.barrier_id WHERE h.depth < :depth"
        ") SELECT db, tbl, snap, depth FROM hops"
    )


# -- writes ---------------------------------------------------------------------------


def _writer(url: str, database: str, number: int, calls: int, batch: int, start, done) -> None:
    with LineageStore.from_url(url, database) as store:
        job = f"writer-{number}-{batch}"
        start.wait()
        barrier = 0
        for _ in range(calls):
            rows = [DataLineage(job, "db", f"t{number}", barrier + i, barrier + i + 1) for i in range(batch)]
            barrier += batch
            if batch == 1:
                store.store_sink_data_lineage(rows[0])
            else:
                store.store_lineage(sink_data=rows)
    done.put(number)


def measure_writes(url: str, database: str, writers: int, calls: int, batch: int) -> float:
    """Rows per second for ``writers`` processes making ``calls`` calls of ``batch`` rows."""
    ctx = multiprocessing.get_context("fork")
    start, done = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, database, n, calls, batch, start, done)) for n in range(writers)]
    for p in procs:
        p.start()
    start.wait()
    began = time.perf_counter()
    for _ in procs:
        done.get()
    elapsed = time.perf_counter() - began
    for p in procs:
        p.join()
    return writers * calls * batch / elapsed


# -- queries --------------------------------------------------------------------------


def rows_for(total: int):
    """(source rows, sink rows) generators: total/2 each, in primary-key order."""
    barriers = max(1, total // (2 * PIPELINES * JOBS_PER_PIPELINE))
    now = datetime(2026, 11, 1)

    def gen(kind: str):
        for p in range(PIPELINES):
            for k in range(JOBS_PER_PIPELINE):
                job = f"p{p}.job{k}"
                table = f"p{p}_t{k}" if kind == "source" else f"p{p}_t{k + 1}"
                for b in range(barriers):
                    yield {"job": job, "barrier_id": b, "database": "db", "table": table,
                           "snapshot_id": b + 1, "create_time": now}

    return barriers, gen("source"), gen("sink")


def load(engine: sa.Engine, source: sa.Table, sink: sa.Table, total: int, chunk: int = 20000) -> float:
    began = time.perf_counter()
    _, src_rows, snk_rows = rows_for(total)
    for table, rows in ((source, src_rows), (sink, snk_rows)):
        buf = []
        with engine.begin() as conn:
            for row in rows:
                buf.append(row)
                if len(buf) >= chunk:
                    conn.execute(table.insert(), buf)
                    buf = []
            if buf:
                conn.execute(table.insert(), buf)
    with engine.begin() as conn:
        for name in ("source_snapshot_lineage", "sink_snapshot_lineage"):
            conn.exec_driver_sql(f"ANALYZE TABLE {name}" if engine.dialect.name == "mysql" else f"ANALYZE {name}")
    return time.perf_counter() - began


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def time_queries(fn, starts: list[tuple[int, int]]) -> tuple[float, float]:
    samples = []
    for pipeline, snap in starts:
        began = time.perf_counter()
        result = fn(pipeline, snap)
        samples.append((time.perf_counter() - began) * 1000)
        if not result:
            raise AssertionError(f"query found nothing for pipeline {pipeline} snapshot {snap}")
    return percentiles(samples)


def bench_queries(backend: str, store: LineageStore, seed_engine: sa.Engine, total: int, n_ours: int, n_seed: int) -> list[tuple]:
    barriers, _, _ = rows_for(total)
    rnd = random.Random(7)
    starts = lambda n: [(rnd.randrange(PIPELINES), rnd.randrange(barriers) + 1) for _ in range(n)]  # noqa: E731
    out = []
    last = JOBS_PER_PIPELINE
    for direction, depth in (("upstream", 1), ("downstream", 1), ("upstream", 5), ("downstream", 5)):
        table_of = (lambda p: f"p{p}_t{last}") if direction == "upstream" else (lambda p: f"p{p}_t0")

        def ours(p, s, direction=direction, depth=depth, table_of=table_of):
            return walk(store, direction, "db", table_of(p), s, depth=depth)

        sql = sa.text(SEED_ONE_HOP[direction]) if depth == 1 else sa.text(seed_cte(direction))

        def seed(p, s, sql=sql, depth=depth, table_of=table_of):
            with seed_engine.connect() as conn:
                return conn.execute(sql, {"db": "db", "tbl": table_of(p), "snap": s, "depth": depth}).all()

        for fn, n in ((ours, 5), (seed, 2)):  # warm up
            time_queries(fn, starts(n))
        o50, o99 = time_queries(ours, starts(n_ours))
        s50, s99 = time_queries(seed, starts(n_seed))
        out.append((backend, f"{direction} {depth}-hop", o50, o99, s50, s99, s50 / o50))
        print(f"{backend}: {direction} {depth}-hop: ours p50 {o50:.2f} ms, seed schema p50 {s50:.1f} ms", flush=True)
    return out


def open_seed_schema(backend: str, tmp: str, database: str) -> sa.Engine:
    if backend == "sqlite":
        engine = sa.create_engine(f"sqlite:///{tmp}/seed.sqlite")
    else:
        server = sa.create_engine(MYSQL_URL)
        with server.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database}`")
            conn.exec_driver_sql(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        server.dispose()
        engine = sa.create_engine(sa.engine.make_url(MYSQL_URL).set(database=database))
    lineage_schema.proposal_metadata.create_all(engine)
    return engine


def drop_mysql(*databases: str) -> None:
    server = sa.create_engine(MYSQL_URL)
    with server.connect() as conn:
        for database in databases:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database}`")
    server.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,mysql")
    parser.add_argument("--rows", type=int, default=1_000_000, help="data-lineage rows for the query part")
    parser.add_argument("--single-calls", type=int, default=300, help="one-row calls per writer")
    parser.add_argument("--batch", type=int, default=500, help="rows per batched call")
    parser.add_argument("--batched-calls", type=int, default=20, help="batched calls per writer")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per kind on our schema")
    parser.add_argument("--seed-queries", type=int, default=20, help="timed queries per kind on the proposal's schema")
    parser.add_argument("--skip-writes", action="store_true")
    parser.add_argument("--skip-queries", action="store_true")
    args = parser.parse_args()

    print(f"# machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}")
    write_rows, query_rows = [], []
    for backend in args.backends.split(","):
        tmp = tempfile.mkdtemp(prefix="lineage-bench-")
        url = f"sqlite:///{tmp}/lineage.sqlite" if backend == "sqlite" else MYSQL_URL
        try:
            if not args.skip_writes:
                for writers in (1, 8):
                    db = f"bench_w{writers}"
                    if backend == "mysql":
                        drop_mysql(db)
                    else:
                        url = f"sqlite:///{tmp}/writes{writers}.sqlite"
                    LineageStore.from_url(url, db).close()
                    single = measure_writes(url, db, writers, args.single_calls, 1)
                    batched = measure_writes(url, db, writers, args.batched_calls, args.batch)
                    write_rows.append((backend, writers, single, batched))
                    print(f"{backend}: {writers} writer(s): {single:,.0f} rows/s single, {batched:,.0f} rows/s batched", flush=True)
                    if backend == "mysql":
                        drop_mysql(db)
            if not args.skip_queries:
                url = f"sqlite:///{tmp}/lineage.sqlite" if backend == "sqlite" else MYSQL_URL
                if backend == "mysql":
                    drop_mysql("bench_lineage", "bench_seed")
                store = LineageStore.from_url(url, "bench_lineage")
                took = load(store.engine, lineage_schema.source_snapshot_lineage, lineage_schema.sink_snapshot_lineage, args.rows)
                print(f"{backend}: loaded {args.rows:,} rows into the store in {took:.0f}s", flush=True)
                seed_engine = open_seed_schema(backend, tmp, "bench_seed")
                seed_md = lineage_schema.proposal_metadata.tables
                took = load(seed_engine, seed_md["source_snapshot_lineage"], seed_md["sink_snapshot_lineage"], args.rows)
                print(f"{backend}: loaded {args.rows:,} rows into the proposal's schema in {took:.0f}s", flush=True)
                query_rows += bench_queries(backend, store, seed_engine, args.rows, args.queries, args.seed_queries)
                store.close()
                seed_engine.dispose()
                if backend == "mysql":
                    drop_mysql("bench_lineage", "bench_seed")
        finally:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)

    if write_rows:
        print(f"\n## writes (rows/s; single = 1 row per call/transaction, batched = {args.batch} rows per call)")
        print(f"{'backend':8} {'writers':>7} {'single':>10} {'batched':>10}")
        for backend, writers, single, batched in write_rows:
            print(f"{backend:8} {writers:>7} {single:>10,.0f} {batched:>10,.0f}")
    if query_rows:
        print(f"\n## queries at {args.rows:,} data-lineage rows (ms; ours: {args.queries} queries, seed schema: {args.seed_queries})")
        print(f"{'backend':8} {'query':16} {'ours p50':>9} {'ours p99':>9} {'seed p50':>9} {'seed p99':>9} {'seed/ours':>9}")
        for backend, name, o50, o99, s50, s99, ratio in query_rows:
            print(f"{backend:8} {name:16} {o50:>9.2f} {o99:>9.2f} {s50:>9.1f} {s99:>9.1f} {ratio:>8.0f}x")
    print(f"# load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
