"""Lineage questions: upstream/downstream of a snapshot, the table graph, impact analysis.

One hop is the seed's query: the sink row of (database, table, snapshot) gives the job
and barrier that produced it, and that barrier's source rows are the upstream
snapshots (downstream: the other way round). Many hops run as one recursive CTE
(SQLite, PostgreSQL, MySQL 8, MariaDB 10.2+), bounded by a depth limit so a cycle or a
huge graph cannot run away; older MySQL servers get the same answer hop by hop.
Branch is part of a node: snapshot 5 of a branch is not snapshot 5 of main.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import sqlalchemy as sa

from . import schema
from .entities import SnapshotRef, check_id, check_name
from .errors import InvalidLineageArgumentError

if TYPE_CHECKING:
    from .store import LineageStore

Direction = Literal["upstream", "downstream"]
#: Deepest walk allowed (a guard against cycles and mistakes, not a real-world need).
MAX_DEPTH = 100
DEFAULT_IMPACT_DEPTH = 20


@dataclass(frozen=True)
class LineageNode:
    """A snapshot reached ``depth`` hops away, through barrier ``barrier_id`` of ``job``."""

    database: str
    table: str
    branch: str
    snapshot_id: int
    depth: int
    job: str
    barrier_id: int

    @property
    def ref(self) -> SnapshotRef:
        return SnapshotRef(self.database, self.table, self.snapshot_id, self.branch)


@dataclass(frozen=True)
class TableEdge:
    """``job`` reads (``source``) or writes (``sink``) ``database.table``."""

    job: str
    database: str
    table: str
    branch: str
    kind: Literal["source", "sink"]


@dataclass(frozen=True)
class TableGraph:
    """The table-level lineage graph: jobs, tables and who reads/writes what."""

    edges: list[TableEdge]

    @property
    def jobs(self) -> list[str]:
        return sorted({e.job for e in self.edges})

    @property
    def tables(self) -> list[tuple[str, str]]:
        return sorted({(e.database, e.table) for e in self.edges})

    def readers(self, database: str, table: str) -> list[str]:
        return sorted({e.job for e in self.edges if e.kind == "source" and (e.database, e.table) == (database, table)})

    def writers(self, database: str, table: str) -> list[str]:
        return sorted({e.job for e in self.edges if e.kind == "sink" and (e.database, e.table) == (database, table)})


@dataclass(frozen=True)
class ImpactedTable:
    """The snapshots of one table derived from the corrected source snapshot."""

    database: str
    table: str
    branch: str
    snapshot_ids: list[int]
    jobs: list[str]
    min_depth: int


@dataclass(frozen=True)
class ImpactReport:
    """Everything downstream of ``source`` (what a data correction must redo)."""

    source: SnapshotRef
    nodes: list[LineageNode]
    tables: list[ImpactedTable] = field(default_factory=list)


def _start(database: str, table: str, snapshot_id: int, branch: str | None) -> SnapshotRef:
    return SnapshotRef(check_name("database", database), check_name("table", table),
                       check_id("snapshot_id", snapshot_id, 1), branch or "main")


def _check_depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidLineageArgumentError(f"depth must be an integer from 1 to {MAX_DEPTH}, got {depth!r}")
    return depth


def _sides(direction: Direction) -> tuple[sa.Table, sa.Table]:
    """(table holding the known node, table holding the node we step to)."""
    if direction == "upstream":
        return schema.sink_snapshot_lineage, schema.source_snapshot_lineage
    if direction == "downstream":
        return schema.source_snapshot_lineage, schema.sink_snapshot_lineage
    raise InvalidLineageArgumentError(f"direction must be 'upstream' or 'downstream', got {direction!r}")


def _hop(direction: Direction, db: sa.ColumnElement, tbl: sa.ColumnElement, br: sa.ColumnElement, snap_cond) -> tuple[sa.FromClause, list, list]:
    near_t, far_t = _sides(direction)
    near, far = near_t.alias("near"), far_t.alias("far")
    joined = near.join(far, sa.and_(near.c.job == far.c.job, near.c.barrier_id == far.c.barrier_id))
    where = [near.c.database == db, near.c["table"] == tbl, near.c.branch == br, snap_cond(near.c.snapshot_id)]
    cols = [far.c.database.label("db"), far.c["table"].label("tbl"), far.c.branch.label("br"),
            far.c.snapshot_id.label("snap"), far.c.job.label("job"), far.c.barrier_id.label("barrier")]
    return joined, where, cols


def _start_condition(onwards: bool) -> Callable[[sa.ColumnElement], sa.ColumnElement]:
    snap = sa.bindparam("snap", type_=sa.BigInteger())
    return (lambda c: c >= snap) if onwards else (lambda c: c == snap)


def _named_start() -> tuple[sa.BindParameter, sa.BindParameter, sa.BindParameter]:
    return (sa.bindparam("db", type_=schema.NAME), sa.bindparam("tbl", type_=schema.NAME),
            sa.bindparam("br", type_=schema.NAME))


@functools.cache
def _cte_query(direction: Direction, onwards: bool) -> sa.Select:
    """The recursive walk, built once (parameters: db, tbl, br, snap, max_depth)."""
    joined, where, cols = _hop(direction, *_named_start(), _start_condition(onwards))
    anchor = sa.select(*cols, sa.literal_column("1", sa.Integer).label("depth")).select_from(joined).where(*where)
    hops = anchor.cte("hops", recursive=True)
    joined2, where2, cols2 = _hop(direction, hops.c.db, hops.c.tbl, hops.c.br, lambda c: c == hops.c.snap)
    step = (sa.select(*cols2, (hops.c.depth + 1).label("depth")).select_from(hops.join(joined2, sa.true()))
            .where(*where2, hops.c.depth < sa.bindparam("max_depth", type_=sa.Integer())))
    hops = hops.union(step)
    return sa.select(hops)


@functools.cache
def _one_hop_query(direction: Direction, onwards: bool) -> sa.Select:
    """One hop, built once (parameters: db, tbl, br, snap)."""
    joined, where, cols = _hop(direction, *_named_start(), _start_condition(onwards))
    return sa.select(*cols).select_from(joined).where(*where)


def _supports_recursive_cte(conn: sa.Connection) -> bool:
    dialect = conn.dialect
    if dialect.name != "mysql":
        return True
    version = dialect.server_version_info or ()
    if getattr(dialect, "is_mariadb", False):
        return version >= (10, 2, 2)
    return version >= (8, 0)


def _walk_iteratively(conn: sa.Connection, direction: Direction, start: SnapshotRef, depth: int, onwards: bool) -> list[tuple]:
    """Breadth-first, one query per node: the answer of the CTE without one."""
    found: list[tuple] = []
    seen: set[tuple] = set()
    frontier = [(start.database, start.table, start.branch, start.snapshot_id, onwards)]
    for level in range(1, depth + 1):
        following = []
        for db, tbl, br, snap, from_onwards in frontier:
            params = {"db": db, "tbl": tbl, "br": br, "snap": snap}
            for row in conn.execute(_one_hop_query(direction, from_onwards), params):
                key = (*tuple(row), level)
                if key in seen:
                    continue
                seen.add(key)
                found.append(key)
                following.append((row.db, row.tbl, row.br, row.snap, False))
        frontier = following
        if not frontier:
            break
    return found


def walk(
    store: LineageStore,
    direction: Direction,
    database: str,
    table: str,
    snapshot_id: int,
    *,
    branch: str | None = None,
    depth: int = 1,
    onwards: bool = False,
    recursive_cte: bool | None = None,
) -> list[LineageNode]:
    """Snapshots up to ``depth`` hops up- or downstream of one snapshot.

    Each node is listed once, at its smallest depth (ties: smallest job, barrier).
    ``onwards`` starts from every snapshot ``>= snapshot_id`` of the table instead of
    exactly that one. ``recursive_cte=False`` forces the hop-by-hop walk.
    """
    start = _start(database, table, snapshot_id, branch)
    depth = _check_depth(depth)
    _sides(direction)

    def query(conn: sa.Connection) -> list[tuple]:
        use_cte = _supports_recursive_cte(conn) if recursive_cte is None else recursive_cte
        if use_cte:
            params = {"db": start.database, "tbl": start.table, "br": start.branch,
                      "snap": start.snapshot_id, "max_depth": depth}
            if depth == 1:
                rows = conn.execute(_one_hop_query(direction, onwards), params)
                return [(*tuple(r), 1) for r in rows]
            return [tuple(r) for r in conn.execute(_cte_query(direction, onwards), params)]
        return _walk_iteratively(conn, direction, start, depth, onwards)

    best: dict[tuple, tuple] = {}
    for db, tbl, br, snap, job, barrier, level in store.run(f"{direction} lineage", query):
        key = (db, tbl, br, snap)
        candidate = (level, job, barrier)
        if key not in best or candidate < best[key]:
            best[key] = candidate
    nodes = [LineageNode(k[0], k[1], k[2], int(k[3]), int(v[0]), v[1], int(v[2])) for k, v in best.items()]
    return sorted(nodes, key=lambda n: (n.depth, n.database, n.table, n.branch, n.snapshot_id, n.job))


def upstream(store: LineageStore, database: str, table: str, snapshot_id: int, *, branch: str | None = None, depth: int = 1) -> list[LineageNode]:
    """Source snapshots the given snapshot was built from, up to ``depth`` hops."""
    return walk(store, "upstream", database, table, snapshot_id, branch=branch, depth=depth)


def downstream(store: LineageStore, database: str, table: str, snapshot_id: int, *, branch: str | None = None, depth: int = 1) -> list[LineageNode]:
    """Sink snapshots built from the given snapshot, up to ``depth`` hops."""
    return walk(store, "downstream", database, table, snapshot_id, branch=branch, depth=depth)


def impact(
    store: LineageStore,
    database: str,
    table: str,
    snapshot_id: int,
    *,
    branch: str | None = None,
    depth: int = DEFAULT_IMPACT_DEPTH,
    onwards: bool = False,
) -> ImpactReport:
    """Every downstream (table, snapshot) derived from a source snapshot, per table.

    With ``onwards`` the walk starts from that snapshot and all later ones of the table
    (for "the data has been wrong since snapshot N").
    """
    start = _start(database, table, snapshot_id, branch)
    nodes = walk(store, "downstream", database, table, snapshot_id, branch=branch, depth=depth, onwards=onwards)
    grouped: dict[tuple[str, str, str], list[LineageNode]] = {}
    for node in nodes:
        grouped.setdefault((node.database, node.table, node.branch), []).append(node)
    tables = [
        ImpactedTable(db, tbl, br, sorted({n.snapshot_id for n in group}), sorted({n.job for n in group}),
                      min(n.depth for n in group))
        for (db, tbl, br), group in sorted(grouped.items())
    ]
    return ImpactReport(start, nodes, tables)


def table_graph(store: LineageStore, *, job: str | None = None, database: str | None = None, table: str | None = None) -> TableGraph:
    """The table-level graph, optionally narrowed to one job, database or table."""
    conds = {k: check_name(k, v) for k, v in (("job", job), ("database", database), ("table", table)) if v is not None}

    def query(conn: sa.Connection) -> list[TableEdge]:
        edges = []
        for kind, t in (("source", schema.source_job_lineage), ("sink", schema.sink_job_lineage)):
            stmt = sa.select(t.c.job, t.c.database, t.c["table"], t.c.branch).where(
                *(t.c[k] == v for k, v in conds.items())
            )
            edges.extend(TableEdge(r.job, r.database, r.table, r.branch, kind) for r in conn.execute(stmt))
        return edges

    edges = store.run("table graph", query)
    return TableGraph(sorted(edges, key=lambda e: (e.job, e.kind != "source", e.database, e.table)))
