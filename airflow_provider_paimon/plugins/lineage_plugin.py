"""Registers the "Paimon lineage" page with Airflow 3's api-server.

The store comes from the ``paimon_lineage_default`` connection when it exists (see
``PaimonLineageHook``), else ``$PAIMON_LINEAGE_URL``, else the default SQLite file. A
connection that exists but cannot be read or describes no usable store is an error
on the page (503), never a silent switch to another store. Stores are opened
read-only (nothing is created, migrated or written by a page view) and kept, one per
store, across requests.

Authentication is Airflow's own (``get_user``): an anonymous request gets 401.
Authorisation follows the auth manager's DAG permissions (``permissions.py``): jobs are
named ``{dag_id}.{task_id}``, and a user sees a job's lineage only if they may read its
DAG; jobs that belong to no DAG are shown only to users who may read every DAG.
"""

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from ..lineage import LineageStore
from ..lineage.errors import LineageError, LineageStoreUnavailableError
from ..lineage.url import DEFAULT_DATABASE, default_url, parse_url
from .audits import audits_answer, read_audit_rows, scan_size
from .history_plugin import HISTORY_VIEW, history_app
from .lineage_api import create_app
from .permissions import dag_access, job_filter_for, job_visibility_dependency
from .protected_app import mount, nav_view

log = logging.getLogger(__name__)

URL_PREFIX = "/paimon-lineage"  # operators/links.py LINEAGE_PAGE_PATH links here
LINEAGE_CONN_ID = "paimon_lineage_default"
NAME = "Paimon lineage"

__all__ = ["LINEAGE_VIEW", "PaimonLineagePlugin", "StoreCache", "job_filter_for", "lineage_app"]


class StoreCache:
    """One open read-only store per (URL, database), reused across requests.

    A store that fails to open is not cached (the next request tries again); the
    least recently used store beyond ``size`` is closed.
    """

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._stores: OrderedDict[tuple[str, str], LineageStore] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: Any, database: str) -> LineageStore:
        key = (url.render_as_string(hide_password=False), database)  # in memory only
        with self._lock:
            store = self._stores.get(key)
            if store is not None:
                self._stores.move_to_end(key)
                return store
        opened = LineageStore.from_url(url, database, read_only=True)
        with self._lock:
            if key in self._stores:  # another request opened it meanwhile
                opened.close()
                return self._stores[key]
            self._stores[key] = opened
            while len(self._stores) > self._size:
                _, old = self._stores.popitem(last=False)
                old.close()
            return opened

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


_stores = StoreCache()


def _store_location() -> tuple[Any, str]:
    """(URL, system database) of the connection, else of ``$PAIMON_LINEAGE_URL``/the default."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException
    from airflow.sdk.log import mask_secret

    from ..hooks.lineage import url_from_connection  # the store's modules when a page asks

    try:
        conn = BaseHook.get_connection(LINEAGE_CONN_ID)
    except AirflowNotFoundException:
        return parse_url(default_url()), DEFAULT_DATABASE
    except Exception as err:  # noqa: BLE001 - any other failure: say so, don't switch stores
        raise LineageStoreUnavailableError(
            f"the {LINEAGE_CONN_ID!r} connection cannot be read ({type(err).__name__}); fix it "
            "(or delete it to use $PAIMON_LINEAGE_URL / the default store)"
        ) from None
    if conn.password:
        mask_secret(conn.password)
    try:
        extra = json.loads(conn.extra) if conn.extra else {}
    except ValueError:
        extra = None
    if not isinstance(extra, dict):  # extra_dejson would say {}: the default store, silently
        raise LineageStoreUnavailableError(
            f"the {LINEAGE_CONN_ID!r} connection cannot be read: its extra is not a JSON object; "
            'fix it (e.g. {"url": "mysql+pymysql://host/db"})'
        )
    try:
        url, database = url_from_connection(conn.host, conn.port, conn.login, conn.password, conn.schema, extra)
    except LineageError as err:
        raise type(err)(f"the {LINEAGE_CONN_ID!r} connection: {err}") from None
    if url.password:
        mask_secret(url.password)
    return url, database


def _open_store() -> LineageStore:
    """The (cached, read-only) store of the ``paimon_lineage_default`` connection, else the default."""
    url, database = _store_location()
    return _stores.get(url, database)


def _audit_reader_dependency() -> Callable[..., Any]:
    from airflow.api_fastapi.core_api.security import GetUserDep

    def reader(user: GetUserDep) -> Callable[[str, str | None, int], dict]:
        def read(table: str, branch: str | None, limit: int) -> dict:
            from airflow.utils.session import create_session

            with create_session() as session:
                can_read_all, readable, _known = dag_access(user, session)
                rows = read_audit_rows(session, table, None if can_read_all else readable, scan_size(branch, limit))
            return audits_answer(rows, table, branch, limit)

        return read

    return reader


def lineage_app() -> dict[str, Any]:
    """The ``fastapi_apps`` entry of the lineage page."""
    from airflow.api_fastapi.core_api.security import get_user

    app = create_app(_open_store, get_user, job_visibility_dependency(), _audit_reader_dependency())
    return mount(app, URL_PREFIX, NAME)


LINEAGE_VIEW = nav_view(URL_PREFIX, NAME)


class PaimonLineagePlugin(AirflowPlugin):
    """The lineage and table history pages (FastAPI apps) and their entries in the Airflow UI's navigation."""

    name = "paimon_lineage"
    fastapi_apps = [lineage_app(), history_app(job_visibility_dependency())]  # noqa: RUF012 - AirflowPlugin declares it a plain list attribute
    external_views = [LINEAGE_VIEW, HISTORY_VIEW]  # noqa: RUF012 - AirflowPlugin declares it a plain list attribute
