"""A per-job barrier-id sequence for batch jobs.

Streaming jobs have Spark's micro-batch id as their barrier; a batch job has none, so
each run takes the next number of its job's sequence (DESIGN.md: "a batch job gets the
next number of a per-job sequence kept in the lineage store"). Numbers are unique per
job even with many concurrent callers, and never below what the job's data lineage
already holds (so a job that once ran streaming does not overwrite its own rows).
A number may be skipped if a commit is lost in flight; it is never handed out twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import sqlalchemy as sa

from . import schema
from .entities import check_name

T = TypeVar("T")


class TransactionRunner(Protocol):
    """What the sequence needs of a store (``LineageStore`` is one): its backend and
    one retried transaction. Typed here so this module does not import the store."""

    backend: str

    def run(self, what: str, fn: Callable[[sa.Connection], T], *, write: bool = False) -> T: ...


def next_barrier_id(store: TransactionRunner, job: str) -> int:
    """Reserve and return the next barrier id of ``job`` (starting at 1)."""
    check_name("job", job)
    seq = schema.barrier_sequence

    def take(conn: sa.Connection) -> int:
        # Make sure the row exists, then lock it with an UPDATE: concurrent callers
        # queue on that row lock (SQLite: on the write transaction) and each sees the
        # previous caller's committed value.
        if store.backend == "mysql":
            conn.execute(
                sa.text("INSERT IGNORE INTO barrier_sequence (job, last_barrier_id) VALUES (:job, 0)"),
                {"job": job},
            )
        else:
            from sqlalchemy.dialects import postgresql, sqlite

            insert = postgresql.insert if store.backend == "postgresql" else sqlite.insert
            conn.execute(insert(seq).values(job=job, last_barrier_id=0).on_conflict_do_nothing())
        conn.execute(sa.update(seq).where(seq.c.job == job).values(last_barrier_id=seq.c.last_barrier_id + 1))
        value = conn.execute(sa.select(seq.c.last_barrier_id).where(seq.c.job == job)).scalar_one()
        floor = max(
            conn.execute(sa.select(sa.func.max(t.c.barrier_id)).where(t.c.job == job)).scalar() or 0
            for t in (schema.source_snapshot_lineage, schema.sink_snapshot_lineage)
        )
        if value <= floor:
            value = floor + 1
            conn.execute(sa.update(seq).where(seq.c.job == job).values(last_barrier_id=value))
        return int(value)

    return store.run(f"next barrier id of job {job!r}", take, write=True)
