"""Cascade plan: which tables a bad snapshot spoiled, where each must restart, in what order.

A data correction (the Paimon branch proposal) of one bad snapshot is not done when its own table is
fixed: every table built from it, transitively, holds bad rows too. ``plan_cascade``
reads the snapshot-level lineage and answers, per affected table: the last good
snapshot to branch from, the bad snapshots, the jobs that wrote them (what to re-run
on the branch), and an order in which to correct the tables (every table after all
tables it reads). It only plans: it changes nothing, in the store or in any table.

What counts as bad: content, not ids. A Paimon snapshot is the whole table as of its
commit, so once a commit brought bad rows, every later snapshot *whose history goes
through that commit* holds them too. On one branch that is every later snapshot, until
a snapshot whose rows come from elsewhere: the lineage store records those as links
(``branch_links`` and ``history_events``): replace-main (main@N reads as branch@X),
fast-forward (main@k is branch@k), rollback-as-latest (N reads as the target). A link
from a good snapshot ends the bad stretch (a corrected snapshot is never bad); a link
from a bad one starts one (main after publishing a bad branch). Snapshots a rollback
or fast-forward removed are retracted and ignored. A batch that consumed a bad snapshot
(a batch read scans the table as of it; a streaming micro-batch records only the *end*
of the range it read, so any consumed snapshot at or after the first bad one counts)
wrote bad rows: its sink snapshot starts a bad stretch of its table's branch.

Per planned table (main, and any other branch with bad snapshots that main's history
does not go through), following its history from its newest recorded snapshot
backwards through the links (after a publish, main's history goes through the
correction branch, not through main's older snapshots):

* ``first_bad_snapshot`` (on ``first_bad_branch``): the oldest bad snapshot of that history;
* ``branch_point`` (on ``branch_point_branch``): the snapshot just before it, the newest
  of the history that holds no bad rows (``None``: correct from empty). After a publish
  it can lie on the correction branch, which is where the table's current rows came from;
* ``bad_snapshots``: the table's recorded snapshots on its branch from the first bad
  one on (every writer's; and the named snapshot for the root); ``jobs``: the jobs that
  wrote the bad snapshots of that history (history events such as ``paimon.replace_main``
  are not jobs to re-run).

A table whose current history no longer holds the bad rows (corrected before) is not
planned; ``corrected`` names it. Naming a snapshot made by a link (main@N after a
replace-main) means the rows it holds: the plan starts from the commit they came from.

Bounded like ``queries.walk_bounded``: ``depth`` table hops from the root (shortest
path), and for the whole plan ``budget.max_rows`` rows read, ``budget.max_nodes``
snapshots kept and ``budget.timeout_s`` seconds (every statement, the backend cancels
one that runs over). A plan cut short says so (``truncated`` and why): its branch
points may then be too late, so do not act on it (``CascadePlanOperator`` refuses it).
A job that reads and writes the same table is fine (it does not change the order); a
longer cycle among the affected tables has no order and raises ``LineageCycleError``.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..paimon.names import MAIN_BRANCH
from . import queries, schema
from .branch_links import LINK_JOBS
from .entities import SnapshotRef, check_name
from .errors import InvalidLineageArgumentError, LineageCycleError, UnknownLineageSnapshotError
from .queries import DEFAULT_IMPACT_DEPTH, Budget, JobFilter

if TYPE_CHECKING:
    from .store import LineageStore

#: A table of the plan: (database, table, branch).
TableKey = tuple[str, str, str]
#: A snapshot position: (database, table, branch, snapshot id).
Position = tuple[str, str, str, int]
_MAX_LINK_HOPS = 1000  # links followed through one history (a guard, not a real-world need)


@dataclass(frozen=True)
class CascadeTable:
    """One table to correct: branch from ``branch_point`` and re-run ``jobs`` on the branch.

    ``branch_point`` None means from empty (the first bad snapshot is the table's first).
    ``branch_point_branch`` is the branch that snapshot is on: the table's own branch,
    or (after a publish) the branch its current rows came from. ``depth`` is the table
    hops from the root (0 for the root, shortest path); ``upstreams`` the planned tables
    whose bad snapshots this table consumed.
    """

    database: str
    table: str
    branch: str
    depth: int
    first_bad_snapshot: int
    branch_point: int | None
    bad_snapshots: tuple[int, ...]
    jobs: tuple[str, ...]
    upstreams: tuple[str, ...]
    first_bad_branch: str = ""
    branch_point_branch: str = ""

    def __post_init__(self) -> None:
        for name in ("first_bad_branch", "branch_point_branch"):
            if not getattr(self, name):
                object.__setattr__(self, name, self.branch)

    @property
    def name(self) -> str:
        """``db.table``, or ``db.table$branch_NAME`` off main (as the CLI takes it)."""
        return _name((self.database, self.table, self.branch))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "database": self.database, "table": self.table, "branch": self.branch,
            "depth": self.depth, "first_bad_snapshot": self.first_bad_snapshot,
            "first_bad_branch": self.first_bad_branch, "branch_point": self.branch_point,
            "branch_point_branch": self.branch_point_branch, "bad_snapshots": list(self.bad_snapshots),
            "jobs": list(self.jobs), "upstreams": list(self.upstreams),
        }


@dataclass(frozen=True)
class CascadePlan:
    """Every table to correct after ``root`` went bad, in correction order (root first).

    ``corrected``: tables that held bad rows but whose current history no longer does.
    """

    root: SnapshotRef
    tables: tuple[CascadeTable, ...]
    truncated: bool = False
    truncated_reason: str | None = None
    corrected: tuple[str, ...] = field(default=())

    @property
    def order(self) -> list[str]:
        """The tables' names in correction order."""
        return [t.name for t in self.tables]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (the CLI's ``--json`` and the API's answer)."""
        return {
            "root": {"database": self.root.database, "table": self.root.table,
                     "branch": self.root.branch, "snapshot_id": self.root.snapshot_id},
            "order": self.order,
            "tables": [t.to_dict() for t in self.tables],
            "corrected": list(self.corrected),
            "truncated": self.truncated,
            "truncated_reason": self.truncated_reason,
        }


def _name(key: TableKey) -> str:
    db, tbl, br = key
    return f"{db}.{tbl}" + ("" if br == MAIN_BRANCH else f"$branch_{br}")


class _Cut(Exception):  # noqa: N818 - a private signal to stop the plan, not an error
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Reader:
    """The plan's statements on one connection, within one budget (rows, snapshots, time)."""

    def __init__(self, conn: sa.Connection, budget: Budget, deadline: float, include_retracted: bool,
                 job_filter: JobFilter | None) -> None:
        self.conn = conn
        self.filtered = job_filter is not None
        self.visible: JobFilter = job_filter or (lambda _job: True)
        self.budget = budget
        self.deadline = deadline
        self.rows_left = budget.max_rows
        self.nodes_left = budget.max_nodes
        self.include_retracted = include_retracted
        self.links: dict[tuple[str, str], dict[tuple[str, int], tuple[str, int]]] = {}

    def fetch(self, stmt: sa.Select, limit: int | None = None) -> list[tuple]:
        room = self.rows_left if limit is None else min(limit, self.rows_left)
        try:
            rows = queries._fetch(self.conn, stmt.limit(room + 1), {}, self.deadline)
        except queries._OutOfTime:
            raise _Cut("time") from None
        if len(rows) > self.rows_left:
            raise _Cut("rows")
        self.rows_left -= len(rows)
        return rows

    def live(self, t: Any) -> list:
        return queries._live(t, self.include_retracted)

    def table_links(self, db: str, tbl: str) -> dict[tuple[str, int], tuple[str, int]]:
        """{(branch, snapshot): (branch, snapshot)}: the table's snapshots whose rows come from another."""
        key = (db, tbl)
        if key not in self.links:
            snk, src = schema.sink_snapshot_lineage.alias("snk"), schema.source_snapshot_lineage.alias("src")
            stmt = (sa.select(snk.c.branch, snk.c.snapshot_id, src.c.branch, src.c.snapshot_id)
                    .select_from(snk.join(src, sa.and_(snk.c.job == src.c.job, snk.c.barrier_id == src.c.barrier_id,
                                                       snk.c.database == src.c.database,
                                                       snk.c["table"] == src.c["table"])))
                    .where(snk.c.database == db, snk.c["table"] == tbl, snk.c.job.in_(sorted(LINK_JOBS)),
                           *self.live(snk), *self.live(src)))
            found: dict[tuple[str, int], tuple[str, int]] = {}
            for sbr, sid, obr, oid in self.fetch(stmt):
                if isinstance(sid, int) and isinstance(oid, int):
                    found[(sbr, sid)] = (obr, oid)
            self.links[key] = found
        return self.links[key]

    def top(self, db: str, tbl: str, br: str) -> int | None:
        """The newest live snapshot id of a table's branch the store knows."""
        best = None
        for t in (schema.sink_snapshot_lineage, schema.source_snapshot_lineage):
            stmt = (sa.select(t.c.snapshot_id).where(t.c.database == db, t.c["table"] == tbl, t.c.branch == br,
                                                     *self.live(t))
                    .order_by(t.c.snapshot_id.desc()))
            rows = self.fetch(stmt, 1)
            if rows and isinstance(rows[0][0], int):
                best = max(best or 0, rows[0][0])
        return best

    def consumers(self, db: str, tbl: str, br: str, first: int) -> list[tuple]:
        """Barriers (not history links) that consumed a snapshot >= ``first``: (consumed, sink row...)."""
        near, far = schema.source_snapshot_lineage.alias("near"), schema.sink_snapshot_lineage.alias("far")
        stmt = (sa.select(near.c.snapshot_id, far.c.database, far.c["table"], far.c.branch, far.c.snapshot_id,
                          far.c.job)
                .select_from(near.join(far, sa.and_(near.c.job == far.c.job, near.c.barrier_id == far.c.barrier_id)))
                .where(near.c.database == db, near.c["table"] == tbl, near.c.branch == br, near.c.snapshot_id >= first,
                       near.c.job.not_in(sorted(LINK_JOBS)), *self.live(near), *self.live(far)))
        return [r for r in self.fetch(stmt) if self.visible(r[5]) and isinstance(r[0], int) and isinstance(r[4], int)]

    def writers(self, db: str, tbl: str, br: str, low: int, high: int | None, limit: int) -> list[tuple[int, str]]:
        """Recorded sink rows (snapshot, job) of a branch in ``[low, high]``, at most ``limit`` + 1."""
        t = schema.sink_snapshot_lineage
        conds = [t.c.database == db, t.c["table"] == tbl, t.c.branch == br, t.c.snapshot_id >= low, *self.live(t)]
        if high is not None:
            conds.append(t.c.snapshot_id <= high)
        stmt = sa.select(t.c.snapshot_id, t.c.job).where(*conds).order_by(t.c.snapshot_id)
        return [(s, j) for s, j in self.fetch(stmt, limit + 1) if isinstance(s, int)]


class _History:
    """Which positions hold bad rows: bad starts per (table, branch), ended or carried by links."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.starts: dict[TableKey, set[int]] = {}
        self._versions: dict[tuple[str, str], int] = {}

    def add_start(self, key: TableKey, snapshot_id: int) -> bool:
        starts = self.starts.setdefault(key, set())
        if snapshot_id in starts:
            return False
        starts.add(snapshot_id)
        self._versions[key[:2]] = self._versions.get(key[:2], 0) + 1
        return True

    def version(self, key: TableKey) -> int:
        """Changes whenever a bad start is added on any branch of ``key``'s table (links
        between branches make each branch's badness depend on the others')."""
        return self._versions.get(key[:2], 0)

    def bad(self, pos: Position, _hops: int = 0) -> bool:
        """Whether the table as of ``pos`` holds the bad rows (follows links back)."""
        db, tbl, br, sid = pos
        links = {s: src for (b, s), src in self.reader.table_links(db, tbl).items() if b == br and s <= sid}
        starts = [s for s in self.starts.get((db, tbl, br), ()) if s <= sid]
        last_link = max(links, default=None)
        last_start = max(starts, default=None)
        if last_start is not None and (last_link is None or last_start >= last_link):
            return True
        if last_link is None or _hops > _MAX_LINK_HOPS:
            return False
        obr, oid = links[last_link]
        return self.bad((db, tbl, obr, oid), _hops + 1)


def plan_cascade(
    store: LineageStore,
    database: str,
    table: str,
    snapshot_id: int,
    *,
    branch: str | None = MAIN_BRANCH,
    depth: int = DEFAULT_IMPACT_DEPTH,
    budget: Budget | None = None,
    job_filter: JobFilter | None = None,
    include_retracted: bool = False,
) -> CascadePlan:
    """The correction plan for bad snapshot ``snapshot_id`` of ``database.table`` (see the module doc).

    Raises ``UnknownLineageSnapshotError`` (an ``InvalidLineageArgumentError``) when
    the store has no lineage of that table or snapshot (or only retracted lineage:
    a rollback or fast-forward removed it; ``include_retracted`` plans from it anyway),
    ``LineageCycleError`` when the affected tables form a cycle. ``job_filter(job)``
    False hides a job, as in ``queries.walk_bounded`` (the UI's per-user view).
    """
    root = SnapshotRef(check_name("database", database), check_name("table", table), snapshot_id,
                       branch or MAIN_BRANCH)
    depth = queries._check_depth(depth)
    budget = budget or Budget()
    if not isinstance(budget, Budget):
        raise InvalidLineageArgumentError(f"budget must be a queries.Budget, got {type(budget).__name__}")
    if not isinstance(include_retracted, bool):
        raise InvalidLineageArgumentError(f"include_retracted must be True or False, got {include_retracted!r}")
    began = time.monotonic()
    return store.run("cascade plan", lambda conn: _plan(
        _Reader(conn, budget, began + budget.timeout_s, include_retracted, job_filter), root, depth))


def _plan(reader: _Reader, root: SnapshotRef, depth: int) -> CascadePlan:
    budget = reader.budget
    history = _History(reader)
    reasons: list[str] = []
    root_key: TableKey = (root.database, root.table, root.branch)
    # out[t] = {table+branch: smallest bad snapshot} that t's bad snapshots reached (a
    # batch that consumed them, or a link on the same table)
    out: dict[TableKey, dict[TableKey, int]] = {}
    walked: dict[TableKey, int] = {}  # the table's version when each branch was last walked
    dist: dict[TableKey, int] = {}
    entries: list[dict[str, Any]] = []
    corrected: list[str] = []
    edges: set[tuple[TableKey, TableKey]] = set()
    try:
        _check_known(reader, root)
        anchor = _resolve_root(reader, root)
        history.add_start(anchor[:3], anchor[3])
        while True:
            dist = _distances(root_key, anchor[:3], out, depth)
            todo = sorted((k for k in history.starts if k in dist and walked.get(k) != history.version(k)),
                          key=lambda k: (dist[k], k))
            if not todo:
                break
            key = todo[0]
            walked[key] = history.version(key)
            found = out.setdefault(key, {})
            for consumed, ddb, dtbl, dbr, dsid, _job in reader.consumers(*key, min(history.starts[key])):
                if not history.bad((*key, consumed)):
                    continue
                down = (ddb, dtbl, dbr)
                found[down] = min(found.get(down, dsid), dsid)
                if history.add_start(down, dsid):
                    reader.nodes_left -= 1
                    if reader.nodes_left < 0:
                        raise _Cut("nodes")
            # a link from a bad snapshot carries the bad rows to the branch it feeds
            for (lbr, lsid), (obr, osid) in reader.table_links(key[0], key[1]).items():
                if obr == key[2] and history.bad((key[0], key[1], obr, osid)):
                    down = (key[0], key[1], lbr)
                    found[down] = min(found.get(down, lsid), lsid)
                    history.add_start(down, lsid)
        dist = _distances(root_key, anchor[:3], out, depth)
        entries, corrected, edges = _entries(reader, history, root, dist, out)
    except _Cut as cut:
        reasons.append(_cut_reason(cut.reason, budget, depth))
    beyond = sorted({d for t in dist if t in out for d in out[t] if not any(k[:2] == d[:2] for k in dist)})
    if beyond and not reasons:
        reasons.append(f"stopped at depth {depth}; {', '.join(map(_name, beyond[:5]))}"
                       + (f" and {len(beyond) - 5} more" if len(beyond) > 5 else "")
                       + " read bad snapshots too and are not planned (ask for a larger depth, "
                       + f"at most {queries.MAX_DEPTH})")
    tables, cut_lists = [], []
    for entry in entries:
        if entry.get("cut"):
            cut_lists.append(f"{_name(entry['key'])} has more than {budget.max_nodes} snapshots from its first "
                             "bad one; its bad_snapshots and jobs are cut (its branch point is not)")
    by_key = {e["key"]: e for e in entries}
    _check_acyclic(edges)
    for key in _topological({k: e["depth"] for k, e in by_key.items()}, edges):
        e = by_key[key]
        tables.append(CascadeTable(
            key[0], key[1], key[2], e["depth"], e["first_bad"][1], e["branch_point"][1],
            tuple(e["bad"]), tuple(e["jobs"]), tuple(_name(u) for u, d in sorted(edges) if d == key),
            e["first_bad"][0], e["branch_point"][0],
        ))
    reasons += cut_lists
    return CascadePlan(root, tuple(tables), bool(reasons), "; ".join(reasons) or None, tuple(corrected))


def _cut_reason(reason: str, budget: Budget, depth: int) -> str:
    if reason == "nodes":
        return (f"stopped after {budget.max_nodes} snapshots (the node budget); plan from a later snapshot "
                "or raise the budget")
    return queries._reasons(budget, depth)[reason]


def _resolve_root(reader: _Reader, root: SnapshotRef) -> Position:
    """The commit whose rows the named snapshot holds: through links (main@N of a replace-main
    is the branch snapshot it reads as)."""
    pos: Position = (root.database, root.table, root.branch, root.snapshot_id)
    for _ in range(_MAX_LINK_HOPS):
        link = reader.table_links(pos[0], pos[1]).get((pos[2], pos[3]))
        if link is None:
            return pos
        pos = (pos[0], pos[1], link[0], link[1])
    return pos


def _distances(root: TableKey, anchor: TableKey, out: dict[TableKey, dict[TableKey, int]], depth: int
               ) -> dict[TableKey, int]:
    """Hops from the root table (any branch of a table counts as the table) within ``depth``."""
    dist = {root: 0, anchor: 0}
    level = [root, anchor]
    while level:
        following = []
        for t in level:
            hops = dist[t]
            for d in sorted(out.get(t, {})):
                step = hops if d[:2] == t[:2] else hops + 1
                if step <= depth and (d not in dist or dist[d] > step):
                    dist[d] = step
                    following.append(d)
        level = following
    return dist


def _chain(reader: _Reader, history: _History, key: TableKey) -> dict[str, Any] | None:
    """Walk ``key``'s history from its newest snapshot back; None when it holds no bad rows.

    Returns the first bad position, the branch point, and the segments (branch, low,
    high) from the first bad position up to the newest snapshot.
    """
    db, tbl, br = key
    high = reader.top(db, tbl, br)
    if high is None or not history.bad((db, tbl, br, high)):
        return None
    segments: list[tuple[str, int, int]] = []
    for _ in range(_MAX_LINK_HOPS):
        links = reader.table_links(db, tbl)
        below = [s for (b, s) in links if b == br and s <= high]
        low = max(below, default=1)
        if history.bad((db, tbl, br, low)):
            segments.append((br, low, high))
            if low in below:  # its rows came from the link's source: follow it
                br, high = links[(br, low)]
                continue
            return {"first_bad": (br, low), "branch_point": (br, None), "segments": segments}
        start = min(s for s in history.starts.get((db, tbl, br), ()) if low < s <= high)
        segments.append((br, start, high))
        return {"first_bad": (br, start), "branch_point": (br, start - 1), "segments": segments}
    raise _Cut("depth")


def _entries(reader: _Reader, history: _History, root: SnapshotRef, dist: dict[TableKey, int],
             out: dict[TableKey, dict[TableKey, int]]
             ) -> tuple[list[dict[str, Any]], list[str], set[tuple[TableKey, TableKey]]]:
    """The planned tables (main and branches main's history does not go through), the
    corrected ones, and the edges between planned tables."""
    limit = reader.budget.max_nodes
    entries: dict[TableKey, dict[str, Any]] = {}
    corrected: list[str] = []
    owner: dict[TableKey, TableKey] = {}  # a branch key -> the planned table key whose history holds it
    for db, tbl in sorted({k[:2] for k in dist}):
        keys = sorted(k for k in dist if k[:2] == (db, tbl))
        main = (db, tbl, MAIN_BRANCH)
        candidates = [main] + [k for k in keys if k != main]
        covered: set[str] = set()
        for key in candidates:
            if key[2] in covered or (key != main and key not in history.starts):
                continue
            chain = _chain(reader, history, key)
            if chain is None:
                if key in history.starts or key == (root.database, root.table, root.branch):
                    corrected.append(_name(key))
                continue
            branches = {s[0] for s in chain["segments"]}
            covered |= branches
            for b in branches:
                owner[(db, tbl, b)] = key
            bad: set[int] = set()
            jobs: set[str] = set()
            cut = False
            for sbr, low, high in chain["segments"]:
                rows = reader.writers(db, tbl, sbr, low, high, limit)
                cut = cut or len(rows) > limit
                for sid, job in rows[:limit]:
                    if not reader.visible(job):
                        continue
                    if sbr == key[2]:
                        bad.add(sid)
                    if job not in LINK_JOBS:
                        jobs.add(job)
            if key == (root.database, root.table, root.branch):
                bad.add(root.snapshot_id)
            entries[key] = {"key": key, "depth": min(dist[k] for k in keys), "first_bad": chain["first_bad"],
                            "branch_point": chain["branch_point"], "bad": sorted(bad), "jobs": sorted(jobs),
                            "cut": cut}
    edges: set[tuple[TableKey, TableKey]] = set()
    for src, downs in out.items():
        for down in downs:
            a, b = owner.get(src), owner.get(down)
            if a is not None and b is not None and a[:2] != b[:2]:
                edges.add((a, b))
    return list(entries.values()), sorted(set(corrected)), edges


def _check_acyclic(edges: set[tuple[TableKey, TableKey]]) -> None:
    """Raise ``LineageCycleError`` naming one cycle, if the edges have any."""
    succ: dict[TableKey, list[TableKey]] = {}
    for up, down in sorted(edges):
        succ.setdefault(up, []).append(down)
    state: dict[TableKey, int] = {}  # 1: on the current path, 2: done
    for start in sorted(succ):
        if start in state:
            continue
        path, stack = [start], [iter(succ.get(start, []))]
        state[start] = 1
        while stack:
            d = next(stack[-1], None)
            if d is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(d) == 1:
                cycle = [*path[path.index(d):], d]
                raise LineageCycleError(
                    "the affected tables read each other in a cycle ("
                    + " -> ".join(map(_name, cycle)) + "), so no correction order exists; plan "
                    "from a snapshot after the cycle, or delete the lineage of the job that closes "
                    "it ('paimon-lineage delete-data-lineage --job NAME') if it is wrong"
                )
            elif d not in state:
                state[d] = 1
                path.append(d)
                stack.append(iter(succ.get(d, [])))


def _topological(dist: dict[TableKey, int], edges: set[tuple[TableKey, TableKey]]) -> list[TableKey]:
    """Kahn's order: a table after all its planned upstreams; ties by hops, then name."""
    indegree = dict.fromkeys(dist, 0)
    succ: dict[TableKey, list[TableKey]] = {}
    for u, d in edges:
        indegree[d] += 1
        succ.setdefault(u, []).append(d)
    ready = [(dist[t], t) for t, n in indegree.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, t = heapq.heappop(ready)
        order.append(t)
        for d in succ.get(t, []):
            indegree[d] -= 1
            if indegree[d] == 0:
                heapq.heappush(ready, (dist[d], d))
    return order


def _check_known(reader: _Reader, root: SnapshotRef) -> None:
    """Refuse to plan from a table or snapshot the store knows nothing of (a typo, most
    likely), or whose lineage is retracted (unless the plan includes retracted rows)."""
    db, tbl = root.database, root.table
    limit = queries.MAX_ROWS if reader.filtered else 1  # hidden jobs' rows do not count
    retracted = False
    for live in (True, False):
        for t in (schema.sink_snapshot_lineage, schema.source_snapshot_lineage):
            stmt = sa.select(t.c.job).where(
                t.c.database == db, t.c["table"] == tbl, t.c.branch == root.branch,
                t.c.snapshot_id == root.snapshot_id, *(reader.live(t) if live else []))
            if any(reader.visible(job) for (job,) in reader.fetch(stmt, limit)):
                if live or reader.include_retracted:
                    return
                retracted = True
    table = _name((root.database, root.table, root.branch))
    if retracted:
        raise UnknownLineageSnapshotError(
            f"snapshot {root.snapshot_id} of {table} was removed (a rollback or fast-forward): its lineage is "
            "retracted and nothing in the table holds its rows any more; plan from the snapshot that has them "
            "now, or pass include_retracted (--include-retracted) to plan from the removed one"
        )
    known = False
    for t in (schema.sink_job_lineage, schema.source_job_lineage):
        stmt = sa.select(t.c.job).where(t.c.database == db, t.c["table"] == tbl)
        known = known or any(reader.visible(job) for (job,) in reader.fetch(stmt, limit))
    if not known:
        raise UnknownLineageSnapshotError(
            f"table {root.database}.{root.table} has no lineage in the store: no recorded job reads or "
            "writes it; check the name ('paimon-lineage tables' lists the known ones)"
        )
    raise UnknownLineageSnapshotError(
        f"snapshot {root.snapshot_id} of {table} is not in the lineage store: no recorded job read or "
        f"wrote it; check the snapshot id and branch ('paimon-lineage impact {table} ID' on a known id)"
    )
