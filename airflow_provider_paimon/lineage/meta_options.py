"""The lineage proposal's catalog options, turned into this package's lineage settings.

The Paimon lineage proposal turns lineage on with catalog options::

    CREATE CATALOG c WITH ('table-lineage' = 'true', 'data-lineage' = 'true',
        'lineage-meta' = 'jdbc', 'jdbc.url' = 'jdbc:mysql://db:3306/x',
        'jdbc.username' = 'u', 'jdbc.password' = 'p', 'jdbc.database' = 'paimon')

Wherever catalog options are accepted (the ``paimon`` data source's options, the Spark
conf as ``spark.paimon.catalog.<key>``, the ``paimon`` connection's extra) they go
through ``lineage_meta_options`` here, so every entry point reads them alike:

* ``table-lineage`` / ``data-lineage`` are flags and fail closed (``maybe`` is an
  error). Either one turns lineage on; table lineage alone records only which tables a
  job reads and writes, data lineage alone only the snapshot links of each barrier.
* ``lineage-meta`` names the store's factory (``jdbc`` by default, see ``meta``); an
  identifier no installed factory has is an error naming the installed ones.
* ``jdbc.url`` is a JDBC URL as Java writes it (``jdbc:mysql://host:3306/db``,
  ``jdbc:mariadb://...``, ``jdbc:postgresql://host/db``, ``jdbc:sqlite:/path/x.db``)
  or a SQLAlchemy URL; it becomes the SQLAlchemy URL of the Python driver installed
  here. ``jdbc.driver`` (a JDBC class such as ``com.mysql.cj.jdbc.Driver``, or a
  Python driver name such as ``pymysql``) must fit the URL. ``jdbc.username`` and
  ``jdbc.password`` are put into the URL object only: ``repr``, ``describe`` and every
  error show the URL masked.
* ``jdbc.database`` is the system database (default ``paimon``).

Nothing here imports Spark or Airflow, and nothing touches a database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.option_values import parse_bool

from ..paimon.secrets import mask_url
from .errors import InvalidLineageArgumentError
from .jdbc import (
    JDBC_DRIVER,
    JDBC_PASSWORD,
    JDBC_URL,
    JDBC_USERNAME,
    from_jdbc,
    with_credentials,
)
from .meta import installed_identifiers
from .url import DEFAULT_DATABASE, backend_of, check_database_name, parse_url, scrub

if TYPE_CHECKING:  # SQLAlchemy is imported where a URL is built: see lineage/url.py
    from sqlalchemy.engine import URL

TABLE_LINEAGE = "table-lineage"
DATA_LINEAGE = "data-lineage"
LINEAGE_META = "lineage-meta"
JDBC_DATABASE = "jdbc.database"
#: The proposal's lineage options, in the order the docs list them.
SEED_KEYS = (
    TABLE_LINEAGE, DATA_LINEAGE, LINEAGE_META, JDBC_URL, JDBC_DRIVER, JDBC_USERNAME,
    JDBC_PASSWORD, JDBC_DATABASE,
)
#: Keys that only the lineage store reads. pypaimon's JDBC catalog hands every other
#: ``jdbc.*`` option to its DB-API driver as a keyword, so these must not reach it.
LINEAGE_ONLY_KEYS = (TABLE_LINEAGE, DATA_LINEAGE, LINEAGE_META, JDBC_URL, JDBC_DRIVER, JDBC_DATABASE)
#: The factory used when ``lineage-meta`` is not given.
DEFAULT_META = "jdbc"

@dataclass(frozen=True)
class LineageMetaOptions:
    """The proposal's lineage options, checked. ``url`` holds credentials: never log it.

    ``options`` is every catalog option given, not only the lineage ones (the factory's
    context and the ``options`` table; secrets included, hidden from ``repr``). ``url`` is None when ``jdbc.url`` was not given (the store then
    comes from our own settings or the default SQLite file).
    """

    table_lineage: bool
    data_lineage: bool
    meta: str = DEFAULT_META
    url: URL | None = field(default=None, repr=False)
    database: str = DEFAULT_DATABASE
    database_given: bool = False
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def enabled(self) -> bool:
        return self.table_lineage or self.data_lineage

    @property
    def masked_url(self) -> str:
        return "(default store)" if self.url is None else mask_url(self.url)

    def describe(self) -> str:
        return (
            f"table-lineage={str(self.table_lineage).lower()} "
            f"data-lineage={str(self.data_lineage).lower()} lineage-meta={self.meta} "
            f"store={self.masked_url} database={self.database}"
        )

    def __repr__(self) -> str:
        return f"LineageMetaOptions({self.describe()})"


def has_lineage_proposal_options(options: Mapping[str, Any]) -> bool:
    """Whether ``options`` turn the proposal's lineage on or configure its store."""
    return any(str(k).lower() in (TABLE_LINEAGE, DATA_LINEAGE, LINEAGE_META) for k in options)


def pypaimon_catalog_options(options: Mapping[str, Any]) -> dict[str, str]:
    """``options`` without the proposal's lineage keys when they turn lineage on.

    The proposal puts its switches and its store (``table-lineage``, ``lineage-meta``,
    ``jdbc.url``...) among a catalog's options; they are the lineage store's, not
    pypaimon's (pypaimon's JDBC catalog hands every ``jdbc.*`` option to its driver as a
    keyword). Whoever merges a connection's or a job's options before opening a catalog
    calls this; ``paimon.catalog.open_catalog`` itself knows nothing of lineage.
    """
    conf = {str(k): str(v) for k, v in options.items()}
    if not has_lineage_proposal_options(conf):
        return conf
    return {k: v for k, v in conf.items() if k.lower() not in LINEAGE_ONLY_KEYS}


def lineage_proposal_options(options: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """The proposal's keys among ``options`` (``prefix`` stripped, keys lower-cased)."""
    found: dict[str, str] = {}
    for key, value in options.items():
        name = str(key)
        if prefix:
            if not name.startswith(prefix):
                continue
            name = name[len(prefix):]
        name = name.lower()
        if name in SEED_KEYS and value is not None:
            found[name] = str(value)
    return found


def lineage_meta_options(
    options: Mapping[str, Any],
    *,
    where: str = "catalog option",
    known_metas: Callable[[], list[str]] | None = None,
) -> LineageMetaOptions | None:
    """The lineage settings ``options`` ask for; None when they name no lineage flag.

    ``options``: catalog options (keys as the proposal writes them). ``where`` says how
    the user wrote them, for messages (``spark.paimon.catalog.``, ``option``...).
    ``known_metas`` lists the installed ``lineage-meta`` identifiers (default: the
    entry point group, see ``meta.installed_identifiers``). Raises
    ``InvalidLineageArgumentError`` for a bad flag, an unknown factory, a JDBC URL no
    installed driver serves or credentials that contradict the URL's.
    """
    opts = lineage_proposal_options(options)
    if not any(k in opts for k in (TABLE_LINEAGE, DATA_LINEAGE)):
        if LINEAGE_META in opts:
            raise InvalidLineageArgumentError(
                f"{where} '{LINEAGE_META}' is set but neither '{TABLE_LINEAGE}' nor "
                f"'{DATA_LINEAGE}' is: add '{TABLE_LINEAGE}' = 'true' and/or "
                f"'{DATA_LINEAGE}' = 'true' to record lineage, or remove '{LINEAGE_META}'"
            )
        return None
    table = _flag(opts, TABLE_LINEAGE, where)
    data = _flag(opts, DATA_LINEAGE, where)
    meta = (opts.get(LINEAGE_META) or DEFAULT_META).strip().lower()
    if known_metas is None:
        known_metas = installed_identifiers
    known = known_metas()
    if meta not in known:
        raise InvalidLineageArgumentError(
            f"{where} '{LINEAGE_META}' is {meta!r}, but no lineage store factory of that name "
            f"is installed; installed: {', '.join(sorted(known)) or 'none'} (a factory is "
            "registered in the entry point group 'airflow_provider_paimon.lineage_meta')"
        )
    database_given = bool((opts.get(JDBC_DATABASE) or "").strip())
    database = (opts.get(JDBC_DATABASE) or "").strip() or DEFAULT_DATABASE
    try:
        check_database_name(database)
    except InvalidLineageArgumentError as err:
        raise InvalidLineageArgumentError(f"{where} '{JDBC_DATABASE}': {err}") from None
    url = None
    raw_url = (opts.get(JDBC_URL) or "").strip()
    if raw_url:
        url = sqlalchemy_url(
            raw_url,
            driver=opts.get(JDBC_DRIVER),
            username=opts.get(JDBC_USERNAME),
            password=opts.get(JDBC_PASSWORD),
            where=where,
        )
    elif meta == DEFAULT_META and (opts.get(JDBC_USERNAME) or opts.get(JDBC_DRIVER)):
        raise InvalidLineageArgumentError(
            f"{where} '{JDBC_USERNAME}'/'{JDBC_DRIVER}' given without '{JDBC_URL}': add "
            f"'{JDBC_URL}' (e.g. 'jdbc:mysql://host:3306/paimon') or remove them"
        )
    return LineageMetaOptions(
        table_lineage=table,
        data_lineage=data,
        meta=meta,
        url=url,
        database=database,
        database_given=database_given,
        options={str(k): str(v) for k, v in options.items() if v is not None},
    )


def _flag(opts: Mapping[str, str], key: str, where: str) -> bool:
    """A flag that fails closed: ``maybe`` is an error, never "off"."""
    try:
        return parse_bool(opts.get(key), f"{where} '{key}'", default=False)
    except InvalidArgumentError as err:
        raise InvalidLineageArgumentError(str(err)) from None


def sqlalchemy_url(
    jdbc_url: str,
    *,
    driver: str | None = None,
    username: str | None = None,
    password: str | None = None,
    where: str = "catalog option",
) -> URL:
    """The SQLAlchemy URL of ``jdbc_url`` (JDBC or SQLAlchemy form), credentials set.

    Every message shows the URL masked, and a password in the JDBC URL's query string
    (``?password=``) is treated like ``jdbc.password``.
    """
    text = jdbc_url.strip()
    if not text.lower().startswith("jdbc:"):  # already a SQLAlchemy URL
        return with_credentials(parse_url(text), username, password, where, text)
    return from_jdbc(text, driver=driver, username=username, password=password, where=where)


def safe_text(text: str, settings: LineageMetaOptions) -> str:
    """``text`` with the store's secrets (and the given ``jdbc.password``) removed."""
    if settings.url is not None:
        text = scrub(text, settings.url)
    secret = lineage_proposal_options(settings.options).get(JDBC_PASSWORD)
    if secret:
        text = text.replace(secret, "***")
    return text


def store_identity(url: URL | None, database: str) -> tuple[Any, ...]:
    """What makes two store settings the same store (the password does not)."""
    if url is None:
        return (None, database)

    return (backend_of(url), url.host, url.port, url.database, url.username, database)
