"""One SQLite lineage store with 1M-row cyclic and hub-shaped graphs, built once and cached.

* cyclic: job ``loop_dag.step`` reads and writes the same table: barrier b reads
  ``cyc.t@b`` and writes ``cyc.t@b+1``, and the last barrier writes ``cyc.t@1`` again
  (a cycle through 500k snapshots; 1M snapshot rows).
* hub: job ``hub_dag.fan``: all 500k barriers read ``hub.src@1`` and each writes
  ``hub.dst@b`` (1M snapshot rows).
* small: ``ingest_dag.load`` raw.events@1 -> dw.orders@11, ``report_dag.build``
  dw.orders@11 -> mart.revenue@101, ``adhoc`` (no DAG) raw.events@1 -> scratch.copy@1.
* odd values another tool may write into SQLite's BIGINT columns: job ``odd_dag.x``
  barrier 'b<img src=x onerror="window.__xss=1">' wrote odd.dst@'<img ...>' from odd.src@1.

The file is cached in the temp directory by content version (a rebuild takes ~15 s);
readers open it read-only, so tests can share it.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.lineage.schema import LATEST_VERSION

VERSION = 1
BARRIERS = 500_000
XSS = '<img src=x onerror="window.__xss=1">'


def big_store() -> Path:
    """The cached store's path (built on first use)."""
    cache = Path(tempfile.gettempdir()) / "paimon-lineage-ui-stores"
    cache.mkdir(exist_ok=True)
    # the store schema's version is in the name: a file cached by an older package
    # would be refused by the read-only UI (it never migrates)
    path = cache / f"cyclic-hub-1m-v{VERSION}-s{LATEST_VERSION}-{BARRIERS}.sqlite"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.partial")
        _build(partial)
        os.replace(partial, path)
    return path


def _build(path: Path) -> None:
    path.unlink(missing_ok=True)
    with LineageStore.from_url(f"sqlite:///{path}") as store:
        store.record_batch("ingest_dag.load", 1, [SnapshotRef("raw", "events", 1)], [SnapshotRef("dw", "orders", 11)])
        store.record_batch("report_dag.build", 1, [SnapshotRef("dw", "orders", 11)], [SnapshotRef("mart", "revenue", 101)])
        store.record_batch("adhoc", 1, [SnapshotRef("raw", "events", 1)], [SnapshotRef("scratch", "copy", 1)])
        store.record_batch("loop_dag.step", 1, [SnapshotRef("cyc", "t", 1)], [SnapshotRef("cyc", "t", 2)])
        store.record_batch("hub_dag.fan", 1, [SnapshotRef("hub", "src", 1)], [SnapshotRef("hub", "dst", 1)])
        store.record_batch("odd_dag.x", 1, [SnapshotRef("odd", "src", 1)], [SnapshotRef("odd", "dst", 1)])
    now = datetime(2026, 1, 1).isoformat(sep=" ")
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        cols = "(job, barrier_id, database, \"table\", snapshot_id, create_time, branch)"
        for table in ("source_snapshot_lineage", "sink_snapshot_lineage"):
            conn.execute(f"DELETE FROM {table} WHERE job IN ('loop_dag.step', 'hub_dag.fan')")
        src = f"INSERT INTO source_snapshot_lineage {cols} VALUES (?, ?, ?, ?, ?, ?, 'main')"
        snk = f"INSERT INTO sink_snapshot_lineage {cols} VALUES (?, ?, ?, ?, ?, ?, 'main')"
        n = BARRIERS
        conn.executemany(src, (("loop_dag.step", b, "cyc", "t", b, now) for b in range(1, n + 1)))
        conn.executemany(snk, (("loop_dag.step", b, "cyc", "t", b % n + 1, now) for b in range(1, n + 1)))
        conn.executemany(src, (("hub_dag.fan", b, "hub", "src", 1, now) for b in range(1, n + 1)))
        conn.executemany(snk, (("hub_dag.fan", b, "hub", "dst", b, now) for b in range(1, n + 1)))
        conn.execute("UPDATE source_snapshot_lineage SET barrier_id = ? WHERE job = 'odd_dag.x'", ("b" + XSS,))
        conn.execute("UPDATE sink_snapshot_lineage SET barrier_id = ?, snapshot_id = ? WHERE job = 'odd_dag.x'",
                     ("b" + XSS, XSS))
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


#: Shapes of the page-load stores (``page_store``), each ``PAGE_ROWS`` lineage rows.
PAGE_ROWS = 100_000
PAGE_SHAPES = ("snapshots", "tables")


def page_store(shape: str, rows: int = PAGE_ROWS) -> Path:
    """A cached SQLite store of ``rows`` lineage rows for the page-load benchmark and tests.

    * ``snapshots``: 20 pipelines of 5 jobs (job k reads table k, writes table k+1),
      ``rows / 200`` barriers each: ``rows`` snapshot rows, 200 table-level rows (a
      busy store of ordinary size: the graph is small, the history long).
    * ``tables``: ``rows / 20`` chains of 10 jobs, one barrier each: ``rows`` table-level
      rows (half reads, half writes) and as many snapshot rows, a graph of ``rows / 2``
      jobs and ``rows * 11 / 20`` tables (far more than a page can draw).
    """
    if shape not in PAGE_SHAPES:
        raise ValueError(f"shape must be one of {PAGE_SHAPES}, got {shape!r}")
    cache = Path(tempfile.gettempdir()) / "paimon-lineage-ui-stores"
    cache.mkdir(exist_ok=True)
    path = cache / f"page-{shape}-v{VERSION}-s{LATEST_VERSION}-{rows}.sqlite"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.unlink(missing_ok=True)
        with LineageStore.from_url(f"sqlite:///{partial}"):
            pass  # the current schema, indexes included
        _fill_page_store(partial, shape, rows)
        os.replace(partial, path)
    return path


def _fill_page_store(path: Path, shape: str, rows: int) -> None:
    now = datetime(2026, 1, 1).isoformat(sep=" ")
    if shape == "snapshots":
        chains, length, barriers = 20, 5, rows // 200
    else:
        chains, length, barriers = rows // 20, 10, 1
    job_rows: dict[str, list] = {"source": [], "sink": []}
    snap_rows: dict[str, list] = {"source": [], "sink": []}
    for c in range(chains):
        for k in range(length):
            job = f"pipe_{c:05d}.step_{k}"
            db = f"db_{c % 50:02d}"
            src, dst = (db, f"p{c:05d}_t{k}"), (db, f"p{c:05d}_t{k + 1}")
            job_rows["source"].append((job, *src, now))
            job_rows["sink"].append((job, *dst, now))
            for b in range(1, barriers + 1):
                snap_rows["source"].append((job, b, *src, b + k, now))
                snap_rows["sink"].append((job, b, *dst, b + k + 1, now))
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        for side in ("source", "sink"):
            conn.executemany(f'INSERT INTO {side}_job_lineage (job, database, "table", create_time, branch) '
                             "VALUES (?, ?, ?, ?, 'main')", job_rows[side])
            conn.executemany(f'INSERT INTO {side}_snapshot_lineage (job, barrier_id, database, "table", '
                             "snapshot_id, create_time, branch) VALUES (?, ?, ?, ?, ?, ?, 'main')", snap_rows[side])
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
