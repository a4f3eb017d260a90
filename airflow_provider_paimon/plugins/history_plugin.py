"""The "Paimon table history" app of the Airflow plugin (registered by ``lineage_plugin``).

Tables come from the ``paimon_default`` connection (``PaimonHook``: its warehouse and
catalog options, secrets registered for masking); the connection is read per request,
so a fixed connection is picked up without restarting the api-server. Errors opening
it are a 503 naming the connection and the kind of failure, never its values.
"""

from collections.abc import Callable
from typing import Any

from ..paimon.errors import PaimonError
from .history_api import CatalogUnavailableError, TableSource, create_history_app
from .protected_app import mount, nav_view

URL_PREFIX = "/paimon-history"
PAIMON_CONN_ID = "paimon_default"
NAME = "Paimon table history"


class _HookSource:
    """``TableSource`` over a ``PaimonHook`` (one catalog per request)."""

    def __init__(self, hook: Any) -> None:
        self._hook = hook

    def get_table(self, name: str) -> Any:
        return self._hook.get_table(name)

    def list_databases(self) -> list[str]:
        return self._hook.list_databases()

    def list_tables(self, database: str) -> list[str]:
        return self._hook.list_tables(database)


def open_source() -> TableSource:
    from airflow.sdk.exceptions import AirflowNotFoundException

    from ..hooks.paimon import PaimonHook

    hook = PaimonHook(paimon_conn_id=PAIMON_CONN_ID)
    try:
        hook.get_conn()
    except AirflowNotFoundException:
        raise CatalogUnavailableError(
            f"no {PAIMON_CONN_ID!r} connection: create one whose Host is the warehouse path or URI"
        ) from None
    except PaimonError as err:  # our own messages name the problem, never a secret value
        raise CatalogUnavailableError(f"the {PAIMON_CONN_ID!r} connection cannot be used: {err}") from None
    except Exception as err:  # noqa: BLE001 - driver errors may echo URIs or keys
        raise CatalogUnavailableError(
            f"the {PAIMON_CONN_ID!r} connection cannot be used ({type(err).__name__}); check its warehouse and options"
        ) from None
    return _HookSource(hook)


def history_app(job_visibility: Callable[..., Any]) -> dict[str, Any]:
    """The ``fastapi_apps`` entry; ``job_visibility`` is the DAG-permission filter (``permissions.py``)."""
    from airflow.api_fastapi.core_api.security import get_user

    return mount(create_history_app(open_source, get_user, job_visibility), URL_PREFIX, NAME)


HISTORY_VIEW = nav_view(URL_PREFIX, NAME)
