"""Lineage questions: upstream/downstream of a snapshot, the table graph, impact analysis.

One hop is the Paimon lineage proposal's query: the sink row of (database, table, snapshot) gives the job
and barrier that produced it, and that barrier's source rows are the upstream
snapshots (downstream: the other way round). Many hops are a breadth-first walk, one
batched query per table and level, that expands every snapshot at most once, so a
cycle (a job reading and writing the same table) or a hub (one snapshot read by a
million barriers) costs at most its budget: ``MAX_DEPTH`` hops, ``Budget.max_rows``
rows read, ``Budget.max_nodes`` snapshots kept and ``Budget.timeout_s`` seconds (the
backend cancels a statement that runs over). A walk cut short says so
(``LineageWalk.truncated`` and its reason). Branch is part of a node: snapshot 5 of a
branch is not snapshot 5 of main.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa

from ..paimon.snapshot_identity import DIGEST_LENGTH, SnapshotIdentity
from . import schema
from .entities import SnapshotRef, check_id, check_name
from .errors import InvalidLineageArgumentError

if TYPE_CHECKING:
    from .store import LineageStore

Direction = Literal["upstream", "downstream"]
#: ``job -> bool``: whether a job's lineage may be shown (None: every job). A filter
#: that also has ``where(column)`` (``job_visibility.JobsOfDags``) is applied in SQL
#: too, so hidden rows count against no budget (``_visible_rows``).
JobFilter = Callable[[str], bool]
#: Deepest walk allowed (a guard against cycles and mistakes, not a real-world need).
MAX_DEPTH = 100
DEFAULT_IMPACT_DEPTH = 20
#: Default budget of one walk (the API's and the CLI's); see ``Budget``.
MAX_NODES = 10_000
MAX_ROWS = 100_000
TIMEOUT_S = 10.0
_BATCH = 500  # snapshot ids per IN list


@dataclass(frozen=True)
class Budget:
    """What one walk may cost: rows read, snapshots kept, seconds spent.

    Bounds the work (and the memory: at most ``max_rows`` rows are ever fetched) of a
    walk whatever the graph's shape.
    """

    max_nodes: int = MAX_NODES
    max_rows: int = MAX_ROWS
    timeout_s: float = TIMEOUT_S

    def __post_init__(self) -> None:
        for name in ("max_nodes", "max_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidLineageArgumentError(f"budget {name} must be a positive integer, got {value!r}")
        t = self.timeout_s
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 3600:
            raise InvalidLineageArgumentError(f"budget timeout_s must be from 0 to 3600 seconds, got {t!r}")


@dataclass(frozen=True)
class LineageNode:
    """A snapshot reached ``depth`` hops away, through barrier ``barrier_id`` of ``job``.

    Ids are integers; a value another tool stored as text in a BIGINT column (SQLite
    allows it) is passed on as that text rather than failing the whole query.
    """

    database: str
    table: str
    branch: str
    snapshot_id: int | str
    depth: int
    job: str
    barrier_id: int | str
    #: the commit the snapshot is (``paimon.snapshot_identity`` digest); None: unknown
    identity: str | None = None
    #: the snapshot was removed since (a rollback or fast-forward); only listed when asked
    retracted: bool = False

    @property
    def ref(self) -> SnapshotRef:
        # a text id (see above) fails here with SnapshotRef's own message
        return SnapshotRef(self.database, self.table, check_id("snapshot_id", self.snapshot_id, 1), self.branch)


@dataclass(frozen=True)
class LineageWalk:
    """The nodes of a walk; ``truncated`` when a budget or the depth cut it short (``reason`` says which)."""

    nodes: list[LineageNode]
    truncated: bool = False
    reason: str | None = None


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
    """The table-level lineage graph: jobs, tables and who reads/writes what.

    ``truncated``: the store holds more edges than the query's budget allowed.
    """

    edges: list[TableEdge]
    truncated: bool = False

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
    snapshot_ids: list[int | str]
    jobs: list[str]
    min_depth: int


@dataclass(frozen=True)
class ImpactReport:
    """Everything downstream of ``source`` (what a data correction must redo)."""

    source: SnapshotRef
    nodes: list[LineageNode]
    tables: list[ImpactedTable] = field(default_factory=list)
    #: True when the walk was cut short (``truncated_reason`` says why and what to do).
    truncated: bool = False
    truncated_reason: str | None = None


def _start(database: str, table: str, snapshot_id: int, branch: str | None) -> SnapshotRef:
    return SnapshotRef(check_name("database", database), check_name("table", table),
                       check_id("snapshot_id", snapshot_id, 1), branch or "main")


def check_digest(identity: object) -> str | None:
    """``identity`` if it is a snapshot identity digest (or None), else a clear error."""
    if identity is None:
        return None
    if not isinstance(identity, str) or len(identity) != DIGEST_LENGTH or not all(
            c in "0123456789abcdef" for c in identity):
        raise InvalidLineageArgumentError(
            f"identity must be a {DIGEST_LENGTH}-character hex digest (a node's 'identity'), got {identity!r}"
        )
    return identity


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


HopKind = Literal["onwards", "identity", "ids"]


def _live(t: Any, include_retracted: bool) -> list:
    return [] if include_retracted else [t.c.retracted_at.is_(None)]


@functools.cache
def _hop_query(direction: Direction, kind: HopKind, include_retracted: bool = False) -> sa.Select:
    """One hop from some snapshots of one table, at most ``:lim`` rows (built once).

    The Paimon lineage proposal's one-hop join, batched; the near rows are found by
    ``kind``:

    * ``onwards``: db, tbl, br and every snapshot >= ``:snap`` (any identity);
    * ``identity``: db, tbl and ``snapshot_identity IN :idents``, on any branch (a copy
      made by a branch or a fast-forward is the same commit);
    * ``ids``: db, tbl, br, ``snapshot_id IN :snaps`` among rows without an identity:
      rows never checked (``identity_status`` NULL: written before identities) match a
      known node too, rows the identity migration marked ``unknown`` only the ids in
      ``:unknown_snaps`` (nodes whose identity is unknown as well); and rows of any
      identity under the ids in ``:legacy_snaps``: nodes reached through a row written
      before identities are taken by id, as every walk did before identities (the
      identity migration, ``fill-identities``, makes them exact).

    Rows of retracted snapshots (removed by a rollback or fast-forward) are neither
    stepped from nor to unless ``include_retracted``.
    """
    near_t, far_t = _sides(direction)
    near, far = near_t.alias("near"), far_t.alias("far")
    joined = near.join(far, sa.and_(near.c.job == far.c.job, near.c.barrier_id == far.c.barrier_id))
    where = [near.c.database == sa.bindparam("db", type_=schema.NAME),
             near.c["table"] == sa.bindparam("tbl", type_=schema.NAME)]
    if kind == "onwards":
        where += [near.c.branch == sa.bindparam("br", type_=schema.NAME),
                  near.c.snapshot_id >= sa.bindparam("snap", type_=sa.BigInteger())]
    elif kind == "identity":
        where.append(near.c.snapshot_identity.in_(sa.bindparam("idents", expanding=True)))
    else:
        without_identity = sa.and_(
            near.c.snapshot_identity.is_(None),
            sa.or_(near.c.identity_status.is_(None),
                   near.c.snapshot_id.in_(sa.bindparam("unknown_snaps", expanding=True))))
        where += [near.c.branch == sa.bindparam("br", type_=schema.NAME),
                  near.c.snapshot_id.in_(sa.bindparam("snaps", expanding=True)),
                  sa.or_(without_identity, near.c.snapshot_id.in_(sa.bindparam("legacy_snaps", expanding=True)))]
    return (
        sa.select(far.c.database, far.c["table"], far.c.branch, far.c.snapshot_id, far.c.job, far.c.barrier_id,
                  far.c.snapshot_identity, far.c.retracted_at, far.c.identity_status)
        .select_from(joined)
        .where(*where, *_live(near, include_retracted), *_live(far, include_retracted))
        .limit(sa.bindparam("lim", type_=sa.Integer()))
    )


def _visible_rows(job_filter: JobFilter | None, column: sa.ColumnElement) -> list[sa.ColumnElement[bool]]:
    """The SQL condition of a filter that has one (``where``), so the database leaves hidden
    jobs' rows out and row/node budgets, ``truncated`` and paging see only visible ones."""
    where = getattr(job_filter, "where", None)
    return [] if where is None else [where(column)]


def _stored_id(value: object) -> int | str:
    """An id as stored: an integer, or (a foreign tool wrote text into BIGINT) the text itself.

    SQLite accepts any value in a BIGINT column; such a value is passed on as it is,
    so the page can show it (escaped) instead of the request failing.
    """
    if isinstance(value, int):
        return value
    text = str(value)
    try:
        return int(text)
    except ValueError:
        return text


def _id_order(value: int | str) -> tuple[int, int | str]:
    return (0, value) if isinstance(value, int) else (1, str(value))


class _OutOfTime(Exception):  # noqa: N818 - a private signal to stop the walk, not an error
    """A statement ran into the walk's deadline (the backend cancelled it)."""


def _is_timeout(err: sa.exc.DBAPIError) -> bool:
    orig = err.orig
    if orig is None:
        return False
    module = type(orig).__module__
    if module.startswith("sqlite3"):
        return "interrupted" in str(orig).lower()
    if module.startswith("psycopg"):
        return getattr(orig, "pgcode", None) == "57014"  # query_canceled (statement_timeout)
    if module.startswith("pymysql"):
        return bool(orig.args) and orig.args[0] in (1969, 3024)  # MariaDB / MySQL time limit
    return False


def _fetch(conn: sa.Connection, stmt: sa.Select, params: dict, deadline: float) -> list[tuple]:
    """Run one hop with the backend cancelling it at ``deadline`` (raises ``_OutOfTime``).

    SQLite: a progress handler interrupts the statement; PostgreSQL: ``statement_timeout``
    inside a savepoint (so the transaction survives); MySQL/MariaDB: the session's
    ``max_execution_time`` / ``max_statement_time``, reset afterwards.
    """
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _OutOfTime
    backend = conn.dialect.name
    sqlite = conn.connection.driver_connection if backend == "sqlite" else None
    reset: str | None = None
    try:
        if sqlite is not None:
            sqlite.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
        elif backend == "postgresql":
            with conn.begin_nested():
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, int(remaining * 1000))}")
                return [tuple(r) for r in conn.execute(stmt, params)]
        elif backend == "mysql":
            if getattr(conn.dialect, "is_mariadb", False):
                conn.exec_driver_sql(f"SET SESSION max_statement_time = {max(0.001, remaining):.3f}")
                reset = "SET SESSION max_statement_time = DEFAULT"
            else:
                conn.exec_driver_sql(f"SET SESSION max_execution_time = {max(1, int(remaining * 1000))}")
                reset = "SET SESSION max_execution_time = DEFAULT"
        return [tuple(r) for r in conn.execute(stmt, params)]
    except sa.exc.DBAPIError as err:
        if _is_timeout(err):
            raise _OutOfTime from None
        raise
    finally:
        if sqlite is not None:
            sqlite.set_progress_handler(None, 0)
        elif reset:
            conn.exec_driver_sql(reset)


def _reasons(budget: Budget, depth: int) -> dict[str, str]:
    return {
        "depth": f"stopped at depth {depth}; there is lineage beyond it ("
                 + (f"ask for a larger depth, at most {MAX_DEPTH})" if depth < MAX_DEPTH
                    else "the deepest walk allowed; start again from a snapshot further along)"),
        "nodes": f"stopped after {budget.max_nodes} snapshots (the node budget); start from a narrower point "
                 "(an exact snapshot instead of onwards, a smaller depth)",
        "rows": f"stopped after reading {budget.max_rows} lineage rows (the row budget); start from a narrower "
                "point (an exact snapshot instead of onwards, a smaller depth)",
        "time": f"stopped after {budget.timeout_s:g} s (the time budget); start from a narrower point "
                "(an exact snapshot instead of onwards, a smaller depth)",
    }


def start_identity(conn: sa.Connection, start: SnapshotRef, include_retracted: bool = False) -> str | None:
    """The identity (digest) snapshot ``start`` names now, from the store; ``None``: unknown.

    The live rows of that id (not retracted) say which commit it is; when a rollback
    the store was not told of left two commits under one id, the newer commit (by its
    ``timeMillis``) is the one the table holds (ids are only reused after the older
    one was removed). Rows without an identity give ``None``.
    """
    newest: tuple[int, str] | None = None
    for t in (schema.sink_snapshot_lineage, schema.source_snapshot_lineage):
        stmt = (sa.select(t.c.snapshot_identity, t.c.commit_time)
                .where(t.c.database == start.database, t.c["table"] == start.table, t.c.branch == start.branch,
                       t.c.snapshot_id == start.snapshot_id, t.c.snapshot_identity.is_not(None),
                       *_live(t, include_retracted))
                .order_by(t.c.commit_time.desc()).limit(1))
        row = conn.execute(stmt).first()
        if row is not None and (newest is None or int(row[1] or 0) > newest[0]):
            newest = (int(row[1] or 0), str(row[0]))
    return None if newest is None else newest[1]


#: A node of a walk: (database, table, branch, snapshot id, identity digest or None).
NodeKey = tuple[str, str, str, "int | str", "str | None"]


def _bfs(conn: sa.Connection, direction: Direction, start: SnapshotRef, depth: int, onwards: bool,
         budget: Budget, began: float, job_filter: JobFilter | None, include_retracted: bool = False,
         identity: str | None = None) -> tuple[dict[tuple, tuple], str | None]:
    """Breadth-first walk: each snapshot is expanded at most once, whatever the cycles.

    A node is a snapshot *and its identity*: a hop from a known identity only joins
    rows recorded for that commit (on any branch: copies keep it), so a reused id never
    joins two commits. Rows of jobs ``job_filter`` rejects are neither listed nor
    stepped through.

    Returns {(db, table, branch, snapshot, identity): (depth, job, barrier, retracted)}
    and the reason the walk stopped early (None when it saw everything within ``depth``).
    """
    deadline = began + budget.timeout_s
    best: dict[tuple, tuple] = {}
    if onwards:
        start_key = None
    else:
        ident = identity if identity is not None else start_identity(conn, start, include_retracted)
        start_key = (start.database, start.table, start.branch, start.snapshot_id, ident)
    expanded: set[tuple] = set() if start_key is None else {start_key}
    rows_left = budget.max_rows
    # The frontier, per table and branch: the nodes (snapshot, identity) to step from next.
    frontier: dict[tuple[str, str, str], list[tuple[int | str, str | None]]] = (
        {(start.database, start.table, start.branch): [(start.snapshot_id, None)]} if start_key is None
        else {start_key[:3]: [(start.snapshot_id, start_key[4])]})
    first = True
    # nodes reached through rows written before identities (never checked): taken by id
    legacy: dict[tuple[str, str, str], set[int | str]] = {}

    def batches(hop_onwards: bool) -> Iterator[tuple[sa.Select, dict]]:
        for (db, tbl, br), nodes in frontier.items():
            if hop_onwards:
                yield (_hop_query(direction, "onwards", include_retracted),
                       {"db": db, "tbl": tbl, "br": br, "snap": nodes[0][0]})
                continue
            idents = sorted({i for _, i in nodes if i is not None})
            for i in range(0, len(idents), _BATCH):
                yield (_hop_query(direction, "identity", include_retracted),
                       {"db": db, "tbl": tbl, "idents": idents[i:i + _BATCH]})
            snaps = sorted({s for s, _ in nodes}, key=_id_order)
            unknown = {s for s, i in nodes if i is None}
            old_rows = legacy.get((db, tbl, br), set())
            for i in range(0, len(snaps), _BATCH):
                chunk = snaps[i:i + _BATCH]
                yield (_hop_query(direction, "ids", include_retracted),
                       {"db": db, "tbl": tbl, "br": br, "snaps": chunk,
                        "unknown_snaps": [x for x in chunk if x in unknown] or [-1],
                        "legacy_snaps": [x for x in chunk if x in old_rows] or [-1]})

    for level in range(1, depth + 1):
        found: dict[tuple, tuple] = {}
        try:
            for stmt, params in batches(onwards and first):
                stmt = stmt.where(*_visible_rows(job_filter, stmt.selected_columns.job))
                rows = _fetch(conn, stmt, {**params, "lim": rows_left + 1}, deadline)
                over = len(rows) > rows_left
                rows_left -= min(len(rows), rows_left)
                for db, tbl, br, snap, job, barrier, ident, retracted, status in rows[: len(rows) - over]:
                    if job_filter is not None and not job_filter(job):
                        continue
                    key = (db, tbl, br, _stored_id(snap), None if ident is None else str(ident))
                    if ident is None and status is None:
                        legacy.setdefault((db, tbl, br), set()).add(key[3])
                    candidate = (level, job, _stored_id(barrier), retracted is not None)
                    if key not in best and (key not in found or _tie_order(candidate) < _tie_order(found[key])):
                        found[key] = candidate
                if over:
                    best.update(_within(found, budget.max_nodes - len(best)))
                    return best, "rows"
        except _OutOfTime:
            best.update(_within(found, budget.max_nodes - len(best)))
            return best, "time"
        first = False
        if len(best) + len(found) > budget.max_nodes:
            best.update(_within(found, budget.max_nodes - len(best)))
            return best, "nodes"
        best.update(found)
        frontier = {}
        for key in found:
            if key not in expanded:
                expanded.add(key)
                frontier.setdefault(key[:3], []).append((key[3], key[4]))
        if not frontier:
            return best, None
    # Depth reached with snapshots not followed: is there anything beyond them?
    try:
        for stmt, params in batches(False):
            stmt = stmt.where(*_visible_rows(job_filter, stmt.selected_columns.job))
            if _fetch(conn, stmt, {**params, "lim": 1}, deadline):
                return best, "depth"
    except _OutOfTime:
        return best, "time"
    return best, None


def _tie_order(candidate: tuple) -> tuple:
    level, job, barrier = candidate[:3]
    return (level, job, _id_order(barrier))


def _within(found: dict[tuple, tuple], room: int) -> dict[tuple, tuple]:
    return dict(itertools.islice(found.items(), max(0, room)))


def walk_bounded(
    store: LineageStore,
    direction: Direction,
    database: str,
    table: str,
    snapshot_id: int,
    *,
    branch: str | None = None,
    depth: int = 1,
    onwards: bool = False,
    budget: Budget | None = None,
    job_filter: JobFilter | None = None,
    include_retracted: bool = False,
    identity: str | None = None,
) -> LineageWalk:
    """Snapshots up to ``depth`` hops up- or downstream of one snapshot, within a budget.

    The walk follows identities: it starts from the commit ``snapshot_id`` names now
    (``start_identity``; ``identity`` picks another one, e.g. a rolled-back commit with
    ``include_retracted``) and each hop joins only rows of the same commits. Rows of
    snapshots a rollback or fast-forward removed are skipped unless ``include_retracted``.

    Each node is listed once, at its smallest depth (ties: smallest job, barrier).
    ``onwards`` starts from every snapshot ``>= snapshot_id`` of the table instead of
    exactly that one. The walk is breadth-first, expands every snapshot at most once
    (cycles end), reads at most ``budget.max_rows`` rows, keeps at most
    ``budget.max_nodes`` nodes and stops at ``budget.timeout_s`` (the backend cancels a
    statement that runs over); then the answer is what was found so far, with
    ``truncated`` set and the reason. ``job_filter(job)`` False hides a job: the walk
    neither lists nor passes through its barriers (the UI's per-user view).
    """
    start = _start(database, table, snapshot_id, branch)
    depth = _check_depth(depth)
    _sides(direction)
    budget = budget or Budget()
    if not isinstance(budget, Budget):
        raise InvalidLineageArgumentError(f"budget must be a queries.Budget, got {type(budget).__name__}")
    if not isinstance(onwards, bool):
        raise InvalidLineageArgumentError(f"onwards must be True or False, got {onwards!r}")
    if not isinstance(include_retracted, bool):
        raise InvalidLineageArgumentError(f"include_retracted must be True or False, got {include_retracted!r}")
    identity = check_digest(identity)
    began = time.monotonic()
    best, reason = store.run(f"{direction} lineage", lambda conn: _bfs(
        conn, direction, start, depth, onwards, budget, began, job_filter, include_retracted, identity))
    nodes = [LineageNode(k[0], k[1], k[2], k[3], int(v[0]), v[1], v[2], k[4], bool(v[3])) for k, v in best.items()]
    nodes.sort(key=lambda n: (n.depth, n.database, n.table, n.branch, _id_order(n.snapshot_id), n.job))
    return LineageWalk(nodes, reason is not None, _reasons(budget, depth)[reason] if reason else None)


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
    budget: Budget | None = None,
    include_retracted: bool = False,
) -> list[LineageNode]:
    """The nodes of ``walk_bounded`` (which also says whether the answer was cut short).

    ``recursive_cte`` is accepted for callers of earlier versions and has no effect:
    every walk is now breadth-first and bounded (a recursive CTE's work grows with
    rows x depth on a cyclic graph).
    """
    if recursive_cte is not None and not isinstance(recursive_cte, bool):
        raise InvalidLineageArgumentError(f"recursive_cte must be True, False or None, got {recursive_cte!r}")
    return walk_bounded(store, direction, database, table, snapshot_id, branch=branch, depth=depth,
                        onwards=onwards, budget=budget, include_retracted=include_retracted).nodes


def upstream(store: LineageStore, database: str, table: str, snapshot_id: int, *, branch: str | None = None,
             depth: int = 1, include_retracted: bool = False) -> list[LineageNode]:
    """Source snapshots the given snapshot was built from, up to ``depth`` hops."""
    return walk(store, "upstream", database, table, snapshot_id, branch=branch, depth=depth,
                include_retracted=include_retracted)


def downstream(store: LineageStore, database: str, table: str, snapshot_id: int, *, branch: str | None = None,
               depth: int = 1, include_retracted: bool = False) -> list[LineageNode]:
    """Sink snapshots built from the given snapshot, up to ``depth`` hops."""
    return walk(store, "downstream", database, table, snapshot_id, branch=branch, depth=depth,
                include_retracted=include_retracted)


def impact(
    store: LineageStore,
    database: str,
    table: str,
    snapshot_id: int,
    *,
    branch: str | None = None,
    depth: int = DEFAULT_IMPACT_DEPTH,
    onwards: bool = False,
    budget: Budget | None = None,
    job_filter: JobFilter | None = None,
    include_retracted: bool = False,
) -> ImpactReport:
    """Every downstream (table, snapshot) derived from a source snapshot, per table.

    With ``onwards`` the walk starts from that snapshot and all later ones of the table
    (for "the data has been wrong since snapshot N"). The walk is bounded as in
    ``walk_bounded``; ``truncated`` says when it was cut short.
    """
    start = _start(database, table, snapshot_id, branch)
    result = walk_bounded(store, "downstream", database, table, snapshot_id, branch=branch, depth=depth,
                          onwards=onwards, budget=budget, job_filter=job_filter, include_retracted=include_retracted)
    nodes = result.nodes
    grouped: dict[tuple[str, str, str], list[LineageNode]] = {}
    for node in nodes:
        grouped.setdefault((node.database, node.table, node.branch), []).append(node)
    tables = [
        ImpactedTable(db, tbl, br, sorted({n.snapshot_id for n in group}, key=_id_order),
                      sorted({n.job for n in group}), min(n.depth for n in group))
        for (db, tbl, br), group in sorted(grouped.items())
    ]
    return ImpactReport(start, nodes, tables, result.truncated, result.reason)


def _like_pattern(text: str) -> str:
    """``%text%`` for a case-insensitive LIKE, with ``\\``, ``%`` and ``_`` matched literally."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _edge_conds(t: sa.Table, conds: dict[str, str], contains: str | None,
                job_filter: JobFilter | None = None, after: str | None = None) -> list:
    where = [t.c[k] == v for k, v in conds.items()] + _visible_rows(job_filter, t.c.job)
    if after is not None:
        where.append(t.c.job > after)
    if contains is not None:
        pattern = _like_pattern(contains)
        where.append(sa.or_(sa.func.lower(t.c.job).like(pattern, escape="\\"),
                            sa.func.lower(t.c.database + "." + t.c["table"]).like(pattern, escape="\\")))
    return where


def table_graph(
    store: LineageStore,
    *,
    job: str | None = None,
    database: str | None = None,
    table: str | None = None,
    budget: Budget | None = None,
    contains: str | None = None,
    max_jobs: int | None = None,
    after: str | None = None,
    job_filter: JobFilter | None = None,
) -> TableGraph:
    """The table-level graph, optionally narrowed to one job, database or table.

    ``contains`` keeps the edges whose job or ``database.table`` contains that text
    (case-insensitive; the page's search). ``max_jobs`` keeps the edges of the first
    that many jobs by name (a page cannot draw 50,000 jobs; a whole job's edges are
    kept, so its reads and writes stay together); more jobs is ``truncated``. ``after``
    starts after that job name (the next page: the last job of this one). At most
    ``budget.max_rows`` edges within ``budget.timeout_s``; more is ``truncated``.
    ``job_filter`` leaves hidden jobs out (in SQL when it can, see ``JobFilter``).
    """
    conds = {k: check_name(k, v) for k, v in (("job", job), ("database", database), ("table", table)) if v is not None}
    if contains is not None:
        contains = check_name("search text", contains)
    if after is not None:
        after = check_name("after", after)
    if max_jobs is not None and (isinstance(max_jobs, bool) or not isinstance(max_jobs, int)
                                 or not 1 <= max_jobs <= MAX_ROWS):
        raise InvalidLineageArgumentError(f"max_jobs must be an integer from 1 to {MAX_ROWS}, got {max_jobs!r}")
    budget = budget or Budget()
    began = time.monotonic()
    sides: tuple[tuple[Literal["source", "sink"], sa.Table], ...] = (
        ("source", schema.source_job_lineage), ("sink", schema.sink_job_lineage)
    )

    def first_jobs(conn: sa.Connection) -> tuple[list[str] | None, bool]:
        if max_jobs is None:
            return None, False
        # the first jobs of each side, in the primary key's order (an index range, not a
        # UNION of every job in the store): the first of both are among them
        names: set[str] = set()
        for _, t in sides:
            stmt = (sa.select(t.c.job).where(*_edge_conds(t, conds, contains, job_filter, after))
                    .distinct().order_by(t.c.job).limit(max_jobs + 1))
            names.update(r[0] for r in _fetch(conn, stmt, {}, began + budget.timeout_s))
        jobs = sorted(names)[:max_jobs + 1]
        return jobs[:max_jobs], len(jobs) > max_jobs

    def query(conn: sa.Connection) -> tuple[list[TableEdge], bool]:
        edges: list[TableEdge] = []
        try:
            jobs, more_jobs = first_jobs(conn)
            for kind, t in sides:
                where = _edge_conds(t, conds, contains, job_filter, after)
                groups = [None] if jobs is None else [jobs[i:i + _BATCH] for i in range(0, len(jobs), _BATCH)]
                for group in groups:
                    room = budget.max_rows - len(edges)
                    stmt = (sa.select(t.c.job, t.c.database, t.c["table"], t.c.branch)
                            .where(*where, *([] if group is None else [t.c.job.in_(group)])).limit(room + 1))
                    rows = _fetch(conn, stmt, {}, began + budget.timeout_s)
                    edges.extend(TableEdge(j, db, tbl, br, kind) for j, db, tbl, br in rows[:room])
                    if len(rows) > room:
                        return edges, True
        except _OutOfTime:
            return edges, True
        return edges, more_jobs

    edges, truncated = store.run("table graph", query)
    return TableGraph(sorted(edges, key=lambda e: (e.job, e.kind != "source", e.database, e.table)), truncated)


@dataclass(frozen=True)
class HistoryEntry:
    """One snapshot of a table: the barriers that wrote it and the jobs that read it.

    ``writers``/``readers`` are ``{"job", "barrier_id"}`` / ``{"job", "barriers"}`` (how
    many of that job's barriers read it), at most ``HISTORY_DETAIL_ROWS`` of each per page.
    """

    snapshot_id: int | str
    create_time: str | None
    writers: list[dict]
    readers: list[dict]


@dataclass(frozen=True)
class SnapshotHistory:
    """A page of a table's snapshots, newest first; ``next_before`` asks for the next page."""

    database: str
    table: str
    branch: str
    snapshots: list[HistoryEntry]
    next_before: int | None
    truncated: bool = False
    truncated_reason: str | None = None


MAX_HISTORY_PAGE = 500
#: Writer/reader rows read per history page (a hub snapshot read by a million barriers).
HISTORY_DETAIL_ROWS = 10_000


def lineage_snapshot_history(
    store: LineageStore,
    database: str,
    table: str,
    *,
    branch: str | None = None,
    before: int | None = None,
    limit: int = 50,
    budget: Budget | None = None,
    job_filter: JobFilter | None = None,
) -> SnapshotHistory:
    """The snapshots of one table the store knows (written or read by a recorded job), newest first.

    A page holds the ``limit`` newest snapshot ids below ``before`` (None: the newest),
    each with the barriers that wrote it and the jobs that read it (counted per job,
    so a snapshot read by a million barriers is one row per job). Bounded: at most
    ``limit`` (<= ``MAX_HISTORY_PAGE``) ids, ``HISTORY_DETAIL_ROWS`` writer and reader
    rows (beyond: ``truncated``) and ``budget.timeout_s``. ``job_filter`` hides jobs:
    their rows are left out and a snapshot only they touched is not listed (so a page
    may hold fewer than ``limit`` snapshots; ``next_before`` still pages on).
    """
    start = _start(database, table, 1, branch)
    if before is not None:
        check_id("before", before, 1)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_HISTORY_PAGE:
        raise InvalidLineageArgumentError(f"limit must be an integer from 1 to {MAX_HISTORY_PAGE}, got {limit!r}")
    budget = budget or Budget()
    deadline = time.monotonic() + budget.timeout_s
    src, snk = schema.source_snapshot_lineage, schema.sink_snapshot_lineage

    def of_table(t: sa.Table) -> list:
        where = [t.c.database == start.database, t.c["table"] == start.table, t.c.branch == start.branch,
                 *_visible_rows(job_filter, t.c.job)]
        return where + ([] if before is None else [t.c.snapshot_id < before])

    def query(conn: sa.Connection) -> tuple[list[HistoryEntry], int | None, str | None]:
        try:
            ids: set = set()
            for t in (snk, src):
                stmt = (sa.select(t.c.snapshot_id).where(*of_table(t)).distinct()
                        .order_by(t.c.snapshot_id.desc()).limit(limit + 1))
                ids.update(_stored_id(r[0]) for r in _fetch(conn, stmt, {}, deadline))
            page = sorted(ids, key=_id_order, reverse=True)
            more = len(page) > limit
            page = page[:limit]
            if not page:
                return [], None, None
            raw_ids = [i for i in page if isinstance(i, int)]
            w_stmt = (sa.select(snk.c.snapshot_id, snk.c.job, snk.c.barrier_id, snk.c.create_time)
                      .where(*of_table(snk), snk.c.snapshot_id.in_(page)).limit(HISTORY_DETAIL_ROWS + 1))
            r_stmt = (sa.select(src.c.snapshot_id, src.c.job, sa.func.count())
                      .where(*of_table(src), src.c.snapshot_id.in_(page))
                      .group_by(src.c.snapshot_id, src.c.job).limit(HISTORY_DETAIL_ROWS + 1))
            writes = _fetch(conn, w_stmt, {}, deadline)
            reads = _fetch(conn, r_stmt, {}, deadline)
        except _OutOfTime:
            return [], None, "time"
        cut = "rows" if len(writes) > HISTORY_DETAIL_ROWS or len(reads) > HISTORY_DETAIL_ROWS else None
        entries: dict = {i: HistoryEntry(i, None, [], []) for i in page}
        times: dict = {}
        for snap, job, barrier, created in writes[:HISTORY_DETAIL_ROWS]:
            if job_filter is None or job_filter(job):
                sid = _stored_id(snap)
                entries[sid].writers.append({"job": job, "barrier_id": _stored_id(barrier)})
                times[sid] = min(times.get(sid, str(created)), str(created))
        for snap, job, count in reads[:HISTORY_DETAIL_ROWS]:
            if job_filter is None or job_filter(job):
                entries[_stored_id(snap)].readers.append({"job": job, "barriers": int(count)})
        listed = []
        for sid in page:
            e = entries[sid]
            if e.writers or e.readers:
                e.writers.sort(key=lambda w: (w["job"], _id_order(w["barrier_id"])))
                e.readers.sort(key=lambda r: r["job"])
                listed.append(HistoryEntry(sid, times.get(sid), e.writers, e.readers))
        next_before = min(raw_ids) if more and raw_ids else None
        return listed, next_before, cut

    entries, next_before, cut = store.run("table history", query)
    reason = None
    if cut == "time":
        reason = f"stopped after {budget.timeout_s:g} s (the time budget); ask for a smaller page (limit)"
    elif cut == "rows":
        reason = (f"more than {HISTORY_DETAIL_ROWS} writer or reader rows on this page; "
                  "ask for a smaller page (limit)")
    return SnapshotHistory(start.database, start.table, start.branch, entries, next_before, cut is not None, reason)


@functools.cache
def _progress_query(limit: int) -> sa.Select:
    """A job's newest live source rows of one table and branch, newest snapshot first.

    ``ORDER BY snapshot_id DESC LIMIT n`` walks the ``(job, database, table,
    snapshot_id)`` index backwards and stops after ``n`` rows of the branch, so its cost
    does not grow with the job's history (a ``MAX(...)`` over the same rows reads all of
    them on MySQL/MariaDB).
    """
    t = schema.source_snapshot_lineage
    return (sa.select(t.c.snapshot_id, t.c.commit_user, t.c.commit_identifier, t.c.commit_time)
            .where(t.c.job == sa.bindparam("job", type_=schema.NAME),
                   t.c.database == sa.bindparam("db", type_=schema.NAME),
                   t.c["table"] == sa.bindparam("tbl", type_=schema.NAME),
                   t.c.branch == sa.bindparam("br", type_=schema.NAME),
                   t.c.snapshot_id < sa.bindparam("below", type_=sa.BigInteger()),
                   t.c.retracted_at.is_(None))
            .order_by(t.c.snapshot_id.desc()).limit(limit))


def consumed_snapshots(store: LineageStore, job: str, database: str, table: str, branch: str, *,
                       below: int | None = None, limit: int = 16) -> list[tuple[int, SnapshotIdentity | None]]:
    """The snapshots of ``database.table`` (``branch``) that ``job`` consumed, newest first.

    From at most ``limit`` rows below ``below`` (None: all): one entry per id and
    identity the rows recorded (None: unknown; an id consumed as two commits, before and
    after a rollback reused it, gives two entries); retracted rows are skipped. The catch-up check
    takes the first whose identity is the live snapshot's (a reused id is not progress).
    """
    stmt = _progress_query(limit)
    params = {"job": job, "db": database, "tbl": table, "br": branch,
              "below": schema.MAX_ID if below is None else below}
    rows = store.run("read consumed snapshots", lambda conn: conn.execute(stmt, params).all())
    # one id may have been consumed as two commits (a rollback reused it): keep each
    # identity, so the check finds the one that is live whatever order the rows came in
    out: dict[int, list[SnapshotIdentity | None]] = {}
    for snap, user, ident, millis in rows:
        known = SnapshotIdentity.from_fields(user, ident, millis)
        seen = out.setdefault(int(snap), [])
        if known not in seen:
            seen.append(known)
    return [(snap, identity) for snap in sorted(out, reverse=True)
            for identity in sorted(out[snap], key=lambda i: i is None)]


def max_consumed_snapshot(store: LineageStore, job: str, database: str, table: str, branch: str) -> int | None:
    """Highest snapshot id of ``database.table`` (on ``branch``) that any barrier of
    ``job`` consumed (retracted rows left out), or ``None`` when it consumed none: one
    index walk (``ORDER BY snapshot_id DESC LIMIT 1``), however many barriers the job has run."""
    found = consumed_snapshots(store, job, database, table, branch, limit=1)
    return found[0][0] if found else None
