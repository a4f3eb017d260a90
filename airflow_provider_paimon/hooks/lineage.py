"""PaimonLineageHook: the ``paimon_lineage`` connection to the lineage store.

Connection layout (either form):

* **Extra** ``url``: a full SQLAlchemy URL (``mysql+pymysql://...``,
  ``postgresql+psycopg2://...``, ``sqlite:////path/lineage.sqlite``); Login and
  Password fill in a URL that has none.
* **Host / Port / Login / Password / Schema** with extra ``backend`` (``mysql``,
  ``mariadb``, ``postgresql``; ``sqlite`` with extra ``path``). Schema is the database
  the URL connects to, as in Airflow's MySQL and Postgres connections.

Extra ``database`` names the lineage system database (the Paimon lineage proposal's ``jdbc.database``,
default ``paimon``): a MySQL database or a PostgreSQL schema.

Secrets by origin: the connection's Password, the password and secret query values of
the extra's ``url`` (and of any other URL in the extra) are registered with the
package's secret registry (so with Airflow's masker) the moment the connection is read,
by their whole value; the URL is only ever logged masked, and reaches a job through its
environment.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook
from sqlalchemy.engine import URL

from airflow_provider_paimon.common.connection_secrets import (
    CredentialsInLocationError,
    check_location,
)
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.lineage.url import (
    DEFAULT_DATABASE,
    build_url,
    check_database_name,
    parse_url,
)
from airflow_provider_paimon.paimon.secrets import (
    mask_url,
    register_secret,
    register_url_secrets,
    scrub,
)


def url_from_connection(
    host: str | None,
    port: int | None,
    login: str | None,
    password: str | None,
    schema: str | None,
    extra: dict[str, Any],
) -> tuple[URL, str]:
    """The store URL and system database a connection describes; registers its secrets."""
    register_secret(password)
    extra = dict(extra or {})
    for value in extra.values():
        if isinstance(value, str):
            register_url_secrets(value)
    database = check_database_name(extra.get("database") or DEFAULT_DATABASE)
    if extra.get("url"):
        url = parse_url(str(extra["url"]))
        if login and url.username is None:
            url = url.set(username=login)
        if password and url.password is None:
            url = url.set(password=password)
        return url, database
    backend = str(extra.get("backend") or ("mysql" if host else "sqlite"))
    if backend.lower() == "sqlite":
        return build_url("sqlite", database=extra.get("path") or None), database
    query = {str(k): str(v) for k, v in (extra.get("query") or {}).items()}
    url = build_url(backend, host=host, port=port, username=login, password=password,
                    database=schema or None, query=query)
    return url, database


class LineageUrlError(ValueError):
    """``lineage_url`` is not a SQLAlchemy URL (the message never echoes it: it may hold a password)."""


def resolve_lineage_store(
    conn_id: str | None, url: str | None, database: str | None
) -> tuple[str | None, str | None]:
    """(URL with its password, system database) of the lineage store a task names.

    One home for what operators accept: a ``paimon_lineage`` connection id, or a
    SQLAlchemy ``url`` (templated, so maybe blank) plus an optional ``database``;
    neither: ``(None, None)``, no store. The password is registered with Airflow's
    masker either way; the URL goes to a job's environment, never its command line.
    Raises ``LineageUrlError`` for a URL that does not parse or carries a password, and Airflow's
    not-found error for a missing connection.
    """
    database = (database or "").strip() or None
    conn_id = (conn_id or "").strip()
    if conn_id:
        hook = PaimonLineageHook(conn_id)
        store_url = hook.get_url()  # registers the password for masking
        return store_url.render_as_string(hide_password=False), database or hook.get_database()
    url = (url or "").strip()
    if not url:
        return None, None
    from sqlalchemy.engine import make_url

    register_url_secrets(url)  # before any message could name it
    try:
        check_location("lineage_url", url)  # a password belongs in a paimon_lineage connection
    except CredentialsInLocationError as err:
        raise LineageUrlError(str(err)) from None
    try:
        make_url(url)
    except Exception:  # noqa: BLE001 - any parse failure is a bad argument; not echoed
        raise LineageUrlError(
            "lineage_url is not a SQLAlchemy URL (expected dialect+driver://host/database, "
            "or sqlite:////path; credentials go in a 'paimon_lineage' connection)"
        ) from None
    return url, database


class PaimonLineageHook(BaseHook):
    """Open the lineage store named by a ``paimon_lineage`` connection.

    :param lineage_conn_id: the connection (default ``paimon_lineage_default``).
    """

    conn_name_attr = "lineage_conn_id"
    default_conn_name = "paimon_lineage_default"
    conn_type = "paimon_lineage"
    hook_name = "Apache Paimon lineage store"

    def __init__(self, lineage_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.lineage_conn_id = lineage_conn_id
        self._resolved: tuple[URL, str] | None = None

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Connection form: what each field means for the lineage store."""
        return {
            "hidden_fields": [],
            "relabeling": {"schema": "Database to connect to", "extra": "Extra (url, backend, database, path, query)"},
            "placeholders": {
                "host": "mysql.example.com",
                "port": "3306",
                "schema": "(optional) database the URL connects to",
                "extra": '{"backend": "mysql", "database": "paimon"} or {"url": "postgresql+psycopg2://..."}',
            },
        }

    def _resolve(self) -> tuple[URL, str]:
        if self._resolved is None:
            conn = self.get_connection(self.lineage_conn_id)
            url, database = url_from_connection(
                conn.host, conn.port, conn.login, conn.password, conn.schema, conn.extra_dejson
            )
            register_secret(url.password)
            self._resolved = (url, database)
            self.log.info("lineage store %s (database %s)", mask_url(url), database)
        return self._resolved

    def get_url(self) -> URL:
        """The store's SQLAlchemy URL (``str()`` of it masks the password)."""
        return self._resolve()[0]

    def get_database(self) -> str:
        """The lineage system database (MySQL database / PostgreSQL schema)."""
        return self._resolve()[1]

    def get_store(self, create: bool = True, read_only: bool = False) -> LineageStore:
        """An open ``LineageStore``; close it (or use it in a ``with`` block) when done.

        ``read_only=True`` (for readers: pages, checks) creates, upgrades and writes
        nothing, whatever ``create`` says.
        """
        url, database = self._resolve()
        return LineageStore.from_url(url, database, create=create, read_only=read_only)

    def test_connection(self) -> tuple[bool, str]:
        """For the UI's Test button: can the store be opened (without creating it)?"""
        try:
            with self.get_store(read_only=True) as store:
                return True, f"lineage store {store.url} at schema version {store.schema_version}"
        except Exception as err:  # noqa: BLE001 - the message is the answer
            return False, scrub(str(err))
