"""The JSON API and page behind the Airflow UI's "Paimon lineage" view.

A FastAPI app, built by ``create_app(open_store, user_dependency)`` so that tests can
serve it with any store and the plugin can plug in Airflow's own authentication
(``get_user``: the JWT bearer header or the UI's session cookie). Every route, the
page included, depends on the user: no lineage without a logged-in user.

Endpoints (all GET, JSON unless noted; documented in docs/ui.md):

* ``/``                                         the page (HTML)
* ``/api/graph?job=&database=&table=``          table lineage graph: jobs, tables, edges
* ``/api/snapshots/{database}/{table}/{id}?branch=&depth=``
                                                upstream and downstream snapshots
* ``/api/impact/{database}/{table}/{id}?branch=&depth=&onwards=``
                                                every downstream table snapshot derived
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse

from ..lineage import LineageStore, downstream, impact, table_graph, upstream
from ..lineage.errors import InvalidLineageArgumentError, LineageStoreUnavailableError

StoreFactory = Callable[[], LineageStore]


def _page() -> str:
    return resources.files(__package__).joinpath("static/lineage.html").read_text("utf-8")


def create_app(open_store: StoreFactory, user_dependency: Callable[..., Any]) -> FastAPI:
    """The lineage app; ``open_store`` is called per request (stores are cheap to reopen)."""
    app = FastAPI(
        title="Paimon lineage",
        description="Table and data lineage of Paimon tables, from the lineage store.",
        dependencies=[Depends(user_dependency)],
    )

    def with_store(fn: Callable[[LineageStore], Any]) -> Any:
        try:
            store = open_store()
        except LineageStoreUnavailableError as err:
            raise HTTPException(status_code=503, detail=str(err)) from None
        try:
            return fn(store)
        except InvalidLineageArgumentError as err:
            raise HTTPException(status_code=400, detail=str(err)) from None
        except LineageStoreUnavailableError as err:
            raise HTTPException(status_code=503, detail=str(err)) from None
        finally:
            store.close()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return _page()

    @app.get("/api/graph")
    def graph(job: str | None = None, database: str | None = None, table: str | None = None) -> dict:
        def run(store: LineageStore) -> dict:
            g = table_graph(store, job=job, database=database, table=table)
            tables = sorted({(e.database, e.table, e.branch) for e in g.edges})
            return {
                "jobs": g.jobs,
                "tables": [{"database": d, "table": t, "branch": b} for d, t, b in tables],
                "edges": [asdict(e) for e in g.edges],
            }

        return with_store(run)

    @app.get("/api/snapshots/{database}/{table}/{snapshot_id}")
    def snapshots(
        database: str,
        table: str,
        snapshot_id: int,
        branch: str | None = None,
        depth: int = Query(3, ge=1, le=100),
    ) -> dict:
        def run(store: LineageStore) -> dict:
            up = upstream(store, database, table, snapshot_id, branch=branch, depth=depth)
            down = downstream(store, database, table, snapshot_id, branch=branch, depth=depth)
            return {
                "snapshot": {"database": database, "table": table, "branch": branch or "main",
                             "snapshot_id": snapshot_id},
                "upstream": [asdict(n) for n in up],
                "downstream": [asdict(n) for n in down],
            }

        return with_store(run)

    @app.get("/api/impact/{database}/{table}/{snapshot_id}")
    def impact_view(
        database: str,
        table: str,
        snapshot_id: int,
        branch: str | None = None,
        depth: int = Query(20, ge=1, le=100),
        onwards: bool = False,
    ) -> dict:
        def run(store: LineageStore) -> dict:
            report = impact(store, database, table, snapshot_id, branch=branch, depth=depth,
                            onwards=onwards)
            return {
                "source": asdict(report.source),
                "tables": [asdict(t) for t in report.tables],
                "nodes": [asdict(n) for n in report.nodes],
            }

        return with_store(run)

    return app
