"""Registers the "Paimon lineage" page with Airflow 3's api-server.

The store comes from the ``paimon_lineage_default`` connection when it exists (see
``PaimonLineageHook``), else ``$PAIMON_LINEAGE_URL``, else the default SQLite file.
Authentication is Airflow's own: the app depends on ``get_user`` from Airflow's API
security module, so an anonymous request gets 401 and nothing else.
"""

from __future__ import annotations

import logging

from airflow.plugins_manager import AirflowPlugin

from ..lineage import LineageStore
from ..lineage.url import default_url
from .lineage_api import create_app

log = logging.getLogger(__name__)

URL_PREFIX = "/paimon-lineage"
LINEAGE_CONN_ID = "paimon_lineage_default"


def _open_store() -> LineageStore:
    """The store of the ``paimon_lineage_default`` connection, else the default one."""
    try:
        from airflow.sdk import BaseHook

        BaseHook.get_connection(LINEAGE_CONN_ID)
    except Exception:  # noqa: BLE001 - no such connection: fall back to the default
        return LineageStore.from_url(default_url())
    from ..hooks.lineage import PaimonLineageHook

    # The hook honours the connection's database/schema extras, not just its URL.
    return PaimonLineageHook(lineage_conn_id=LINEAGE_CONN_ID).get_store()


def _build_app():
    from airflow.api_fastapi.core_api.security import get_user

    return create_app(_open_store, get_user)


class PaimonLineagePlugin(AirflowPlugin):
    """The lineage page (a FastAPI app) and its entry in the Airflow UI's navigation."""

    name = "paimon_lineage"
    fastapi_apps = [{"app": _build_app(), "url_prefix": URL_PREFIX, "name": "Paimon lineage"}]
    external_views = [
        {
            "name": "Paimon lineage",
            "href": URL_PREFIX + "/",
            "destination": "nav",
            "url_route": "paimon-lineage",
        }
    ]
