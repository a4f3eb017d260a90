"""The JSON API and page behind the Airflow UI's "Paimon lineage" view.

A FastAPI app, built by ``create_app(open_store, user_dependency, job_visibility)`` so
that tests can serve it with any store and the plugin can plug in Airflow's own
authentication and authorisation. Every route, the page and the OpenAPI schema and
docs included (served by ``protected_app.py``), depends on the user: no lineage (and
no API description) without a logged-in user. ``job_visibility`` is a FastAPI dependency giving, per request, which
jobs the user may see (None: all); lineage of other jobs is left out of every answer.

Endpoints (all GET, JSON unless noted; documented in docs/ui.md):

* ``/``                                         the page (HTML)
* ``/api/graph?job=&database=&table=&q=&max_jobs=500&after=``
                                                table lineage graph: jobs, tables, edges,
                                                one page of at most ``max_jobs`` jobs by
                                                name (``q``: search text; ``after``: the
                                                page after that job, ``next_after``)
* ``/api/history/{database}/{table}?branch=&before=&limit=``
                                                a table's snapshots, newest first, with
                                                the barriers that wrote and the jobs that
                                                read each (paged; 404: none recorded)
* ``/api/snapshots/{database}/{table}/{id}?branch=&depth=&include_retracted=``
                                                upstream and downstream snapshots
* ``/api/impact/{database}/{table}/{id}?branch=&depth=&onwards=&include_retracted=``
                                                every downstream table snapshot derived
* ``/api/cascade/{database}/{table}/{id}?branch=&depth=&include_retracted=``
                                                the correction plan of a bad snapshot:
                                                affected tables in order, branch points,
                                                bad snapshots, jobs (404: unknown table or
                                                snapshot; 409: the tables form a cycle)
* ``/api/audits?table=db.t&branch=&limit=``     the table's newest branch audits (XCom of
                                                audit tasks, from Airflow's metadata DB):
                                                rows added and removed per partition
* ``/openapi.json``, ``/docs``                  the API's description (logged-in users)

Walks are bounded (``queries.Budget``): an answer cut short has ``"truncated": true``
and a ``"truncated_reason"`` that says what to narrow.
"""

import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query

from ..lineage import LineageStore
from ..lineage.cascade import LineageCycleError, UnknownLineageSnapshotError, plan_cascade
from ..lineage.errors import InvalidLineageArgumentError, LineageError, LineageStoreUnavailableError
from ..lineage.queries import (
    MAX_HISTORY_PAGE,
    MAX_ROWS,
    TIMEOUT_S,
    JobFilter,
    TableGraph,
    impact,
    lineage_snapshot_history,
    table_graph,
    walk_bounded,
)
from . import audits as audit_views
from .protected_app import everyone, protected_app

log = logging.getLogger(__name__)

#: Jobs in one page of the graph when the request does not say (the page asks for 500 too).
DEFAULT_GRAPH_JOBS = 500
#: Returns the store to read; the caller owns it (keeps one per store, closes it).
StoreFactory = Callable[[], LineageStore]
#: ``(table, branch, limit) -> answer`` (``audits.audits_answer``), given per request.
AuditReader = Callable[[str, str | None, int], dict]


def _no_audits() -> AuditReader:
    def unavailable(table: str, branch: str | None, limit: int) -> dict:
        raise HTTPException(status_code=503, detail=(
            "audits are read from Airflow's metadata database: open the page in the Airflow api-server"))

    return unavailable


def _store_error(err: LineageError) -> HTTPException:
    """The store cannot serve: misconfigured, missing, too old or unreachable (503)."""
    return HTTPException(status_code=503, detail=str(err))


def create_app(
    open_store: StoreFactory,
    user_dependency: Callable[..., Any],
    job_visibility: Callable[..., JobFilter | None] = everyone,
    audit_reader: Callable[..., AuditReader] = _no_audits,
) -> FastAPI:
    """The lineage app.

    ``open_store`` is called per request and returns a store the app does not close
    (the plugin keeps one per store, so its engine and pool live across requests).
    ``job_visibility`` is a FastAPI dependency: a ``job -> bool`` filter or None (all).
    ``audit_reader`` is a FastAPI dependency giving the user's ``AuditReader`` (the
    plugin's reads Airflow's metadata DB, only the DAGs the user may read).
    """
    # Not postponed (no __future__ annotations here): FastAPI must see this local alias.
    Visible = Annotated[JobFilter | None, Depends(job_visibility)]  # noqa: N806
    Auditor = Annotated[AuditReader, Depends(audit_reader)]  # noqa: N806
    app = protected_app("Paimon lineage", "Table and data lineage of Paimon tables, from the lineage store.",
                        "lineage.html", user_dependency)

    def with_store(fn: Callable[[LineageStore], Any]) -> Any:
        try:
            store = open_store()
        except LineageError as err:  # includes bad URLs, unsupported backends, bad names
            raise _store_error(err) from None
        try:
            return fn(store)
        except InvalidLineageArgumentError as err:
            raise HTTPException(status_code=400, detail=str(err)) from None
        except LineageStoreUnavailableError as err:
            raise _store_error(err) from None
        except LineageError as err:
            raise _store_error(err) from None

    @app.get("/api/graph")
    def graph(
        visible: Visible,
        job: str | None = None,
        database: str | None = None,
        table: str | None = None,
        q: str | None = None,
        max_jobs: int = Query(DEFAULT_GRAPH_JOBS, ge=1, le=MAX_ROWS),
        after: str | None = Query(None, max_length=1000),
    ) -> dict:
        def run(store: LineageStore) -> dict:
            g = table_graph(store, job=job, database=database, table=table, contains=q, max_jobs=max_jobs,
                            after=after, job_filter=visible)
            if visible is not None:
                g = TableGraph([e for e in g.edges if visible(e.job)], g.truncated)
            tables = sorted({(e.database, e.table, e.branch) for e in g.edges})
            jobs = g.jobs
            first = "the first jobs by name" + (f" after {after!r}" if after else "")
            return {
                "jobs": jobs,
                "tables": [{"database": d, "table": t, "branch": b} for d, t, b in tables],
                "edges": [asdict(e) for e in g.edges],
                "truncated": g.truncated,
                "truncated_reason": (f"more than {max_jobs} jobs or {MAX_ROWS} edges (or {TIMEOUT_S:g} s): showing "
                                     f"{first}; ask for the next page with after=next_after, search, or filter by "
                                     "job, database or table") if g.truncated else None,
                "next_after": jobs[-1] if g.truncated and jobs else None,
            }

        return with_store(run)

    @app.get("/api/history/{database}/{table}")
    def history(
        visible: Visible,
        database: str,
        table: str,
        branch: str | None = None,
        before: int | None = None,
        limit: int = Query(50, ge=1, le=MAX_HISTORY_PAGE),
    ) -> dict:
        def run(store: LineageStore) -> dict:
            h = lineage_snapshot_history(store, database, table, branch=branch, before=before, limit=limit,
                              job_filter=visible)
            if not h.snapshots and before is None and not h.truncated:
                raise HTTPException(status_code=404, detail=(
                    f"no snapshots of {database}.{table} (branch {h.branch}) in the lineage store: "
                    "check the database, table and branch names"))
            return {
                "database": h.database, "table": h.table, "branch": h.branch,
                "snapshots": [asdict(e) for e in h.snapshots],
                "next_before": h.next_before,
                "truncated": h.truncated,
                "truncated_reason": h.truncated_reason,
            }

        return with_store(run)

    @app.get("/api/snapshots/{database}/{table}/{snapshot_id}")
    def snapshots(
        visible: Visible,
        database: str,
        table: str,
        snapshot_id: int,
        branch: str | None = None,
        depth: int = Query(3, ge=1, le=100),
        include_retracted: bool = False,
    ) -> dict:
        def run(store: LineageStore) -> dict:
            args = (database, table, snapshot_id)
            up = walk_bounded(store, "upstream", *args, branch=branch, depth=depth, job_filter=visible,
                              include_retracted=include_retracted)
            down = walk_bounded(store, "downstream", *args, branch=branch, depth=depth, job_filter=visible,
                                include_retracted=include_retracted)
            reasons = [f"{side}: {w.reason}" for side, w in (("upstream", up), ("downstream", down)) if w.truncated]
            return {
                "snapshot": {"database": database, "table": table, "branch": branch or "main",
                             "snapshot_id": snapshot_id},
                "upstream": [asdict(n) for n in up.nodes],
                "downstream": [asdict(n) for n in down.nodes],
                "truncated": bool(reasons),
                "truncated_reason": "; ".join(reasons) or None,
            }

        return with_store(run)

    @app.get("/api/impact/{database}/{table}/{snapshot_id}")
    def impact_view(
        visible: Visible,
        database: str,
        table: str,
        snapshot_id: int,
        branch: str | None = None,
        depth: int = Query(20, ge=1, le=100),
        onwards: bool = False,
        include_retracted: bool = False,
    ) -> dict:
        def run(store: LineageStore) -> dict:
            report = impact(store, database, table, snapshot_id, branch=branch, depth=depth,
                            onwards=onwards, job_filter=visible, include_retracted=include_retracted)
            return {
                "source": asdict(report.source),
                "tables": [asdict(t) for t in report.tables],
                "nodes": [asdict(n) for n in report.nodes],
                "truncated": report.truncated,
                "truncated_reason": report.truncated_reason,
            }

        return with_store(run)

    @app.get("/api/cascade/{database}/{table}/{snapshot_id}")
    def cascade_view(
        visible: Visible,
        database: str,
        table: str,
        snapshot_id: int,
        branch: str | None = None,
        depth: int = Query(20, ge=1, le=100),
        include_retracted: bool = False,
    ) -> dict:
        def run(store: LineageStore) -> dict:
            try:
                plan = plan_cascade(store, database, table, snapshot_id, branch=branch, depth=depth,
                                    job_filter=visible, include_retracted=include_retracted)
            except UnknownLineageSnapshotError as err:
                raise HTTPException(status_code=404, detail=str(err)) from None
            except LineageCycleError as err:
                raise HTTPException(status_code=409, detail=str(err)) from None
            return plan.to_dict()

        return with_store(run)

    @app.get("/api/audits")
    def audits_view(
        reader: Auditor,
        table: str = Query(..., max_length=500),
        branch: str | None = Query(None, max_length=200),
        limit: int = Query(20, ge=1, le=audit_views.MAX_LIMIT),
    ) -> dict:
        try:
            name = audit_views.check_table(table)
        except ValueError as err:
            raise HTTPException(status_code=400, detail=str(err)) from None
        if branch is not None and not branch.strip():
            raise HTTPException(status_code=400, detail="branch must not be blank: leave it out for every branch")
        return reader(name, branch.strip() if branch else None, limit)

    return app
