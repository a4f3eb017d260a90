"""Cascade plan: which tables a bad snapshot spoiled, where each must restart, in what order.

A data correction (the Paimon branch proposal) of one bad snapshot is not done when its own table is
fixed: every table built from it, transitively, holds bad rows too. ``plan_cascade``
reads the snapshot-level lineage and answers, per affected table: the last good
snapshot to branch from, the bad snapshots, the jobs that wrote them (what to re-run
on the branch), and an order in which to correct the tables (every table after all
tables it reads). It only plans: it changes nothing, in the store or in any table.

What counts as bad. A Paimon snapshot is the whole table as of its commit, so once
snapshot F of a table is bad, every later snapshot of that table holds the bad rows
too. A batch that consumed snapshot >= F of an upstream therefore read bad data: a
batch read scans the table as of that snapshot, and a streaming micro-batch records
only the *end* of the snapshot range it read (the bad snapshot may lie inside it),
so an exact match on F would miss both. Hence, per table:

* ``first_bad_snapshot``: the root's named snapshot; for a downstream table the
  smallest sink snapshot of any batch that consumed a bad snapshot of a planned
  upstream table.
* ``branch_point``: ``first_bad_snapshot - 1``, the table as it was just before the
  first bad commit (Paimon numbers a branch's snapshots 1, 2, 3... in commit order,
  whoever wrote them, so this holds even if a writer without lineage or a compaction
  committed it). ``None`` when the first bad snapshot is snapshot 1: correct the table
  *from empty*.
* ``bad_snapshots``: the table's snapshots the store records from the first bad one on
  (every writer's: they all still hold the bad rows), and the root's named snapshot;
  ``jobs``: their writers, which must all re-run on the branch.

The walk reuses the bounded one-hop query of ``queries`` (``walk_bounded`` with
``onwards``), one table at a time, until no table's first bad snapshot moves any
more (a table reached by two paths takes the earlier of the two). ``depth`` bounds
the table hops from the root (shortest path); ``budget`` bounds the whole plan's
snapshots and seconds, and the rows each table's walk reads. A plan cut short says so (``truncated`` and why):
its branch points may then be too late, so do not act on it. A job that reads and
writes the same table is fine (it does not change the order); a longer cycle among
the affected tables has no order and raises ``LineageCycleError``.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..paimon.names import MAIN_BRANCH
from . import queries
from .entities import SnapshotRef, check_name
from .errors import InvalidLineageArgumentError, LineageCycleError, UnknownLineageSnapshotError
from .queries import DEFAULT_IMPACT_DEPTH, Budget, JobFilter

if TYPE_CHECKING:
    from .store import LineageStore

#: A table of the plan: (database, table, branch).
TableKey = tuple[str, str, str]
# The reason walk_bounded gives when a one-hop walk found lineage beyond its hop. The
# plan walks one hop at a time on purpose, so that one is not a truncation.
_ONE_HOP_DEPTH_STOP = queries._reasons(Budget(), 1)["depth"]


@dataclass(frozen=True)
class CascadeTable:
    """One table to correct: branch from ``branch_point`` and re-run ``jobs`` on the branch.

    ``branch_point`` None means from empty (the first bad snapshot is the table's first).
    ``depth`` is the table hops from the root (0 for the root, shortest path);
    ``upstreams`` the planned tables whose bad snapshots this table consumed.
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

    @property
    def name(self) -> str:
        """``db.table``, or ``db.table$branch_NAME`` off main (as the CLI takes it)."""
        return _name((self.database, self.table, self.branch))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "database": self.database, "table": self.table, "branch": self.branch,
            "depth": self.depth, "first_bad_snapshot": self.first_bad_snapshot,
            "branch_point": self.branch_point, "bad_snapshots": list(self.bad_snapshots),
            "jobs": list(self.jobs), "upstreams": list(self.upstreams),
        }


@dataclass(frozen=True)
class CascadePlan:
    """Every table to correct after ``root`` went bad, in correction order (root first)."""

    root: SnapshotRef
    tables: tuple[CascadeTable, ...]
    truncated: bool = False
    truncated_reason: str | None = None

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
            "truncated": self.truncated,
            "truncated_reason": self.truncated_reason,
        }


def _name(key: TableKey) -> str:
    db, tbl, br = key
    return f"{db}.{tbl}" + ("" if br == MAIN_BRANCH else f"$branch_{br}")


def _order(key: TableKey, dist: dict[TableKey, int]) -> tuple:
    return (dist[key], key)


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
) -> CascadePlan:
    """The correction plan for bad snapshot ``snapshot_id`` of ``database.table`` (see the module doc).

    Raises ``UnknownLineageSnapshotError`` (an ``InvalidLineageArgumentError``) when
    the store has no lineage of that table or snapshot, ``LineageCycleError`` when the
    affected tables form a cycle. ``job_filter(job)`` False hides a job, as in
    ``queries.walk_bounded`` (the UI's per-user view).
    """
    root = SnapshotRef(check_name("database", database), check_name("table", table), snapshot_id,
                       branch or MAIN_BRANCH)
    depth = queries._check_depth(depth)
    budget = budget or Budget()
    if not isinstance(budget, Budget):
        raise InvalidLineageArgumentError(f"budget must be a queries.Budget, got {type(budget).__name__}")
    visible = job_filter or (lambda _job: True)
    _check_known(store, root, job_filter)
    began = time.monotonic()
    root_key: TableKey = (root.database, root.table, root.branch)

    # out[t]: what the last walk of t found, {downstream table: smallest sink snapshot}
    # of the batches that consumed t's snapshots >= walked_from[t].
    out: dict[TableKey, dict[TableKey, int]] = {}
    walked_from: dict[TableKey, int] = {}
    reasons: list[str] = []
    nodes_left = budget.max_nodes  # the snapshots and seconds are the whole plan's; rows are per walk
    while True:
        dist, first_bad, edges = _derive(root_key, root.snapshot_id, out, depth)
        _check_acyclic(edges)
        todo = sorted((t for t in dist if t not in walked_from or first_bad[t] < walked_from[t]),
                      key=lambda t: _order(t, dist))
        if not todo or reasons:
            break
        key = todo[0]
        remaining = budget.timeout_s - (time.monotonic() - began)
        if remaining <= 0 or nodes_left < 1:
            reasons.append(queries._reasons(budget, depth)["time" if remaining <= 0 else "nodes"])
            break
        walk = queries.walk_bounded(
            store, "downstream", key[0], key[1], first_bad[key], branch=key[2], depth=1, onwards=True,
            budget=Budget(nodes_left, budget.max_rows, remaining), job_filter=job_filter,
        )
        nodes_left -= len(walk.nodes)
        found: dict[TableKey, int] = {}
        for node in walk.nodes:
            if isinstance(node.snapshot_id, int):  # text another tool put in the id column: no order
                down = (node.database, node.table, node.branch)
                found[down] = min(found.get(down, node.snapshot_id), node.snapshot_id)
        out[key], walked_from[key] = found, first_bad[key]
        if walk.truncated and walk.reason != _ONE_HOP_DEPTH_STOP:
            reasons.append(f"walking downstream of {_name(key)}: {walk.reason}")

    beyond = sorted({d for t in dist if t in out for d in out[t] if d not in dist})
    if beyond:
        reasons.append(f"stopped at depth {depth}; {', '.join(map(_name, beyond[:5]))}"
                       + (f" and {len(beyond) - 5} more" if len(beyond) > 5 else "")
                       + " read bad snapshots too and are not planned (ask for a larger depth, "
                       + f"at most {queries.MAX_DEPTH})")
    tables = []
    for key in _topological(dist, edges):
        bad, jobs, cut = _bad_snapshots(store, key, first_bad[key], budget.max_nodes, visible)
        if cut:
            reasons.append(f"{_name(key)} has more than {budget.max_nodes} snapshots from its first bad one; "
                           "its bad_snapshots and jobs are cut (its branch point is not)")
        if key == root_key:
            bad = sorted({root.snapshot_id, *bad})
        tables.append(CascadeTable(
            key[0], key[1], key[2], dist[key], first_bad[key],
            first_bad[key] - 1 if first_bad[key] > 1 else None,
            tuple(bad), tuple(jobs), tuple(_name(u) for u, d in sorted(edges) if d == key),
        ))
    return CascadePlan(root, tuple(tables), bool(reasons), "; ".join(reasons) or None)


def _derive(root: TableKey, snapshot_id: int, out: dict[TableKey, dict[TableKey, int]], depth: int
            ) -> tuple[dict[TableKey, int], dict[TableKey, int], set[tuple[TableKey, TableKey]]]:
    """Planned tables with their hops from the root, first bad snapshots and edges, from the walks so far.

    A table is planned when a planned table less than ``depth`` hops away feeds it; its
    first bad snapshot is the smallest any planned table's walk found for it.
    """
    dist = {root: 0}
    level = [root]
    while level:
        following = []
        for t in level:
            if dist[t] < depth:
                for d in sorted(out.get(t, {})):
                    if d not in dist:
                        dist[d] = dist[t] + 1
                        following.append(d)
        level = following
    first_bad = {root: snapshot_id}
    edges: set[tuple[TableKey, TableKey]] = set()
    for t in dist:
        for d, snap in out.get(t, {}).items():
            if d in dist and d != t:  # a job writing the table it reads changes no order
                edges.add((t, d))
                if d != root:
                    first_bad[d] = min(first_bad.get(d, snap), snap)
    return dist, first_bad, edges


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
    indegree = {t: 0 for t in dist}
    succ: dict[TableKey, list[TableKey]] = {}
    for u, d in edges:
        indegree[d] += 1
        succ.setdefault(u, []).append(d)
    ready = [_order(t, dist) for t, n in indegree.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, t = heapq.heappop(ready)
        order.append(t)
        for d in succ.get(t, []):
            indegree[d] -= 1
            if indegree[d] == 0:
                heapq.heappush(ready, _order(d, dist))
    return order


def _bad_snapshots(store: LineageStore, key: TableKey, first_bad: int, limit: int, visible: JobFilter
                   ) -> tuple[list[int], list[str], bool]:
    """The table's recorded sink snapshots from ``first_bad`` on, their writers, and whether cut."""
    db, tbl, br = key
    rows = store.sink_data_lineages(database=db, table=tbl, branch=br, min_snapshot_id=first_bad, limit=limit + 1)
    cut = len(rows) > limit
    rows = [r for r in rows[:limit] if visible(r.job) and isinstance(r.snapshot_id, int)]
    return sorted({r.snapshot_id for r in rows}), sorted({r.job for r in rows}), cut


def _check_known(store: LineageStore, root: SnapshotRef, filtered: JobFilter | None) -> None:
    """Refuse to plan from a table or snapshot the store knows nothing of (a typo, most likely)."""
    visible = filtered or (lambda _job: True)
    db, tbl = root.database, root.table
    limit = 1 if filtered is None else queries.MAX_ROWS  # hidden jobs' rows do not count
    for rows in (store.sink_data_lineages, store.source_data_lineages):
        if any(visible(r.job) for r in rows(database=db, table=tbl, branch=root.branch,
                                             snapshot_id=root.snapshot_id, limit=limit)):
            return
    known = any(visible(e.job) for lister in (store.sink_table_lineages, store.source_table_lineages)
                for e in lister(database=db, table=tbl, limit=limit))
    table = _name((root.database, root.table, root.branch))
    if not known:
        raise UnknownLineageSnapshotError(
            f"table {root.database}.{root.table} has no lineage in the store: no recorded job reads or "
            "writes it; check the name ('paimon-lineage tables' lists the known ones)"
        )
    raise UnknownLineageSnapshotError(
        f"snapshot {root.snapshot_id} of {table} is not in the lineage store: no recorded job read or "
        f"wrote it; check the snapshot id and branch ('paimon-lineage impact {table} ID' on a known id)"
    )
