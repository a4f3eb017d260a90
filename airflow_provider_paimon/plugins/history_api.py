"""The JSON API and page behind the Airflow UI's "Paimon table history" view.

A FastAPI app built by ``create_history_app(catalog, user_dependency, job_visibility)``
so that tests can serve it on any warehouse and the plugin can plug in Airflow's own
authentication and authorisation. Like the lineage page (``lineage_api.py``) it is
built on ``protected_app.py``: every route, the page and the OpenAPI description
included, depends on the logged-in user. ``job_visibility`` gives, per request, which
``{dag_id}.{task_id}`` jobs the user may see (None: all); the Airflow run and Spark
application of a snapshot written by any other job are replaced by ``{"hidden": true}``
(the snapshot itself, its kind and counts, stays: the table is not a DAG's).

Read-only: the table's files are read, never written. Answers are bounded (one page of
at most ``history.MAX_PAGE_SIZE`` rows, ``MAX_TABLES`` table names).

Endpoints (all GET, documented in docs/ui.md):

* ``/``                                      the page (HTML)
* ``/api/tables``                            ``{"tables": ["db.table", ...], "truncated"}``
* ``/api/history/{database}/{table}?page=&page_size=``
                                             one page of ``paimon.history.table_history``
* ``/openapi.json``, ``/docs``               the API's description (logged-in users)
"""

import logging
from collections.abc import Callable
from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, HTTPException, Query

from ..lineage.queries import JobFilter
from ..paimon.errors import InvalidArgumentError, PaimonError, TableNotFoundError
from ..paimon.history import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, table_history
from ..paimon.names import check_table_identifier
from .protected_app import everyone, protected_app

log = logging.getLogger(__name__)

MAX_TABLES = 2000


class CatalogUnavailableError(Exception):
    """The warehouse cannot be opened; the message names the connection, never a secret."""


class TableSource(Protocol):
    """Where the page finds tables (the plugin: the ``paimon_default`` connection's catalog)."""

    def get_table(self, name: str) -> Any: ...

    def list_databases(self) -> list[str]: ...

    def list_tables(self, database: str) -> list[str]: ...


def hide_runs(history: dict[str, Any], visible: JobFilter | None) -> dict[str, Any]:
    """Replace the run of every row whose ``{dag_id}.{task_id}`` job ``visible`` refuses."""
    if visible is None:
        return history
    for row in history["rows"]:
        run = row.get("run")
        job = f"{run['dag_id']}.{run.get('task_id') or ''}".rstrip(".") if run else ""
        if (run is not None and not visible(job)) or (run is None and row.get("spark_app_id")):
            row["run"], row["spark_app_id"] = {"hidden": True}, None
    return history


def create_history_app(
    open_source: Callable[[], TableSource],
    user_dependency: Callable[..., Any],
    job_visibility: Callable[..., JobFilter | None] = everyone,
) -> FastAPI:
    """The history app. ``open_source`` is called per request (may raise ``CatalogUnavailableError``)."""
    Visible = Annotated[JobFilter | None, Depends(job_visibility)]  # noqa: N806 - FastAPI reads it
    app = protected_app("Paimon table history",
                        "Snapshots of a Paimon table's main and branches, read from the warehouse.",
                        "history.html", user_dependency)

    def source() -> TableSource:
        try:
            return open_source()
        except CatalogUnavailableError as err:
            raise HTTPException(status_code=503, detail=str(err)) from None

    @app.get("/api/tables")
    def tables() -> dict:
        src = source()
        out: list[str] = []
        try:
            for database in src.list_databases():
                for name in src.list_tables(database):
                    out.append(f"{database}.{name}")
                    if len(out) > MAX_TABLES:
                        return {"tables": out[:MAX_TABLES], "truncated": True}
        except PaimonError as err:
            raise HTTPException(status_code=503, detail=str(err)) from None
        except Exception as err:  # noqa: BLE001 - the catalog's own errors may carry paths/URIs
            log.warning("listing tables failed: %s", type(err).__name__)
            raise HTTPException(status_code=503, detail=f"the warehouse cannot be listed ({type(err).__name__})") from None
        return {"tables": out, "truncated": False}

    @app.get("/api/history/{database}/{table}")
    def history(
        visible: Visible,
        database: str,
        table: str,
        page: int = Query(0, ge=0),
        page_size: int = Query(DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE),
    ) -> dict:
        try:  # before the catalog: it fails on the file system, naming the path
            check_table_identifier(database, table)
        except InvalidArgumentError as err:
            raise HTTPException(status_code=400, detail=str(err)) from None
        src = source()
        try:
            tbl = src.get_table(f"{database}.{table}")
            result = table_history(tbl, page=page, page_size=page_size)
        except TableNotFoundError as err:
            raise HTTPException(status_code=404, detail=str(err)) from None
        except InvalidArgumentError as err:
            raise HTTPException(status_code=400, detail=str(err)) from None
        except PaimonError as err:
            raise HTTPException(status_code=503, detail=str(err)) from None
        except (OSError, RuntimeError) as err:  # storage/pypaimon errors may carry URIs: name the kind only
            log.warning("reading the history of %s.%s failed: %s", database, table, type(err).__name__)
            raise HTTPException(status_code=503, detail=f"the table's files cannot be read ({type(err).__name__})") from None
        result["table"] = {"database": database, "table": table}
        return hide_runs(result, visible)

    return app
