"""What every Paimon page of the Airflow UI is built on: a FastAPI app behind the user.

``protected_app`` builds the app that ``lineage_api.create_app`` and
``history_api.create_history_app`` add their ``/api/...`` routes to. Every route
depends on ``user_dependency`` (the plugin passes Airflow's ``get_user``): the page
(``/``), the OpenAPI description (``/openapi.json``) and its Swagger UI (``/docs``)
are served here behind it, because FastAPI's own routes for them would be public.

``mount`` and ``nav_view`` are a page's two entries in an ``AirflowPlugin``: the app
under its URL prefix, and the link in the UI's navigation.
"""

from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from ..lineage.queries import JobFilter

__all__ = ["everyone", "mount", "nav_view", "protected_app"]


def everyone() -> JobFilter | None:
    """The default ``job_visibility`` dependency: every job is visible (None: no filter)."""
    return None


def _read_page(page_file: str) -> str:
    return resources.files(__package__).joinpath("static", page_file).read_text("utf-8")


def protected_app(title: str, description: str, page_file: str, user_dependency: Callable[..., Any]) -> FastAPI:
    """An app whose every route needs the user, serving ``static/{page_file}`` at ``/``.

    The OpenAPI description is ``title``'s, its Swagger UI is titled ``"{title} API"``.
    """
    app = FastAPI(
        title=title,
        description=description,
        dependencies=[Depends(user_dependency)],
        # Served below behind the user dependency; FastAPI's own routes would be public.
        openapi_url=None, docs_url=None, redoc_url=None,
    )

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return _read_page(page_file)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="openapi.json", title=f"{title} API")

    return app


def mount(app: FastAPI, url_prefix: str, name: str) -> dict[str, Any]:
    """The plugin's ``fastapi_apps`` entry serving ``app`` under ``url_prefix``."""
    return {"app": app, "url_prefix": url_prefix, "name": name}


def nav_view(url_prefix: str, name: str) -> dict[str, Any]:
    """The plugin's ``external_views`` entry: ``name`` in the UI's navigation, opening the page."""
    return {"name": name, "href": url_prefix + "/", "destination": "nav", "url_route": url_prefix.lstrip("/")}
