"""Lineage store URLs: which backends, default location, and masking the password.

The store is addressed by a SQLAlchemy URL (the Paimon lineage proposal's ``jdbc.url``). Everything that
prints a URL (errors, logs, ``repr``, the CLI) goes through ``mask_url``; anything that
prints a driver's message goes through ``scrub`` so a password echoed back by a driver
is removed too.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from airflow_provider_paimon.job_contract import LINEAGE_URL_ENV
from airflow_provider_paimon.paimon import secrets

from .errors import InvalidLineageArgumentError, UnsupportedBackendError
from .jdbc import from_jdbc

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# SQLAlchemy is imported where a URL is parsed or built, not at the top: this module is
# on the import path of every Spark worker that reads or writes a ``paimon`` table (the
# data source's options name the lineage settings), and importing SQLAlchemy costs
# ~0.3 s of CPU there, for workers that never open a lineage store.

#: Default system database name (the Paimon lineage proposal's ``jdbc.database``).
DEFAULT_DATABASE = "paimon"
MASK = secrets.MASK

# backend -> (default driver, pip requirement that brings it)
_BACKENDS = {
    "sqlite": ("pysqlite", "the Python standard library"),
    "mysql": ("pymysql", "pymysql"),
    "mariadb": ("pymysql", "pymysql"),
    "postgresql": ("psycopg2", "psycopg2-binary (extra 'postgres')"),
}
_DATABASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def default_sqlite_path() -> Path:
    """``$PAIMON_HOME/lineage.sqlite`` (``~/.paimon`` when unset)."""
    home = os.environ.get("PAIMON_HOME") or str(Path.home() / ".paimon")
    return Path(home).expanduser() / "lineage.sqlite"


def default_url() -> str:
    """``$PAIMON_LINEAGE_URL``, else a SQLite file at ``default_sqlite_path()``."""
    return os.environ.get(LINEAGE_URL_ENV) or f"sqlite:///{default_sqlite_path()}"


def _is_url(value: object) -> TypeGuard[URL]:
    """Whether ``value`` is a SQLAlchemy ``URL`` (without importing SQLAlchemy: an object
    of its classes exists only once it was imported)."""
    engine_url = sys.modules.get("sqlalchemy.engine.url")
    return engine_url is not None and isinstance(value, engine_url.URL)


def _text(url: str | URL) -> str:
    return url.render_as_string(hide_password=False) if _is_url(url) else str(url)


def secrets_of(url: str | URL) -> list[str]:
    """The secret strings inside ``url`` (password, secret query values)."""
    found = secrets.secrets_in_text(_text(url))
    if _is_url(url) and url.password:
        found.append(str(url.password))  # as given, not URL-encoded
    else:
        from sqlalchemy.engine import make_url

        try:
            parsed = make_url(str(url))
        except Exception:  # noqa: BLE001 - unparsable: the text's secrets are all we have
            pass
        else:
            if parsed.password:
                found.append(str(parsed.password))
    return sorted({s for s in found if s}, key=len, reverse=True)


def register_url(url: str | URL | None) -> None:
    """Know the secrets of ``url`` from now on (``paimon/secrets.py``): its password as
    SQLAlchemy parses it (whole, whatever it holds), and whatever the policy's URL
    parser finds (the whole user info of a URL that does not parse)."""
    if url is None or url == "":
        return
    if _is_url(url):
        if url.password:
            secrets.register_secret(str(url.password))
        secrets.register_url_secrets(_text(url))
        return
    secrets.register_url_secrets(str(url))
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(str(url))
    except Exception:  # noqa: BLE001 - unparsable: the policy's parser found what there is
        return
    if parsed.password:
        secrets.register_secret(str(parsed.password))


def scrub(text: str, url: str | URL) -> str:
    """``text`` with every secret of ``url`` replaced by ``***``."""
    return secrets.scrub(text, secrets_of(url))


def backend_of(url: URL) -> str:
    """``sqlite``, ``mysql`` (MySQL and MariaDB) or ``postgresql``."""
    name = url.get_backend_name()
    return "mysql" if name == "mariadb" else name


def parse_url(url: str | URL | None) -> URL:
    """Parse and check a store URL; fill in the default driver (pymysql, psycopg2).

    A JDBC URL (``jdbc:mysql://host:3306/db``, as the lineage proposal writes
    ``jdbc.url``) is accepted too and mapped to the installed Python driver.

    Raises ``UnsupportedBackendError`` for another database and
    ``InvalidLineageArgumentError`` for text that is not a URL. Touches nothing but the
    secret policy's registry: the URL's password is known as a secret from here on
    (``register_url``), also when the URL is refused.
    """
    raw = default_url() if url is None or url == "" else url
    register_url(raw)
    if isinstance(raw, str) and raw.strip().lower().startswith("jdbc:"):
        jdbc = from_jdbc(raw.strip(), where="lineage store URL")  # the lineage proposal's form
        register_url(jdbc)
        return jdbc
    if isinstance(raw, str) and raw.startswith("postgres://"):
        raw = "postgresql://" + raw[len("postgres://"):]
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = raw if _is_url(raw) else make_url(str(raw))
    except ArgumentError:
        raise InvalidLineageArgumentError(
            f"lineage store URL {secrets.mask_url(str(raw))!r} is not a SQLAlchemy URL; use e.g. "
            "'sqlite:////path/lineage.sqlite', 'mysql+pymysql://user:pass@host:3306' or "
            "'postgresql+psycopg2://user:pass@host:5432/db'"
        ) from None
    except ValueError:  # SQLAlchemy's int(port)
        raise InvalidLineageArgumentError(
            f"lineage store URL {secrets.mask_url(str(raw))!r} has a port that is not a number; "
            "write host:PORT with a number, e.g. 'mysql+pymysql://user:pass@host:3306/db'"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in _BACKENDS:
        raise UnsupportedBackendError(
            f"lineage store URL {secrets.mask_url(parsed)!r} uses backend {backend!r}; supported are "
            "sqlite, mysql/mariadb (pymysql) and postgresql (psycopg2)"
        )
    if "+" not in parsed.drivername:
        parsed = parsed.set(drivername=f"{backend}+{_BACKENDS[backend][0]}")
    register_url(parsed)
    check_connect_arguments(parsed)
    return parsed


def check_connect_arguments(url: URL) -> None:
    """Refuse query arguments the dialect cannot convert (``connect_timeout=abc``).

    The dialect converts them when the engine is made, with a bare ``ValueError``; doing
    it here turns that into a usage error that names the URL (masked). Touches nothing.
    """
    try:
        dialect_cls = url.get_dialect()
    except Exception:  # noqa: BLE001 - unknown driver: reported when the engine is made
        return
    try:
        dialect_cls().create_connect_args(url)
    except (ValueError, TypeError) as err:
        raise InvalidLineageArgumentError(
            f"lineage store URL {secrets.mask_url(url)!r} has a bad connection argument in its query "
            f"string ({scrub(str(err), url)}); fix or remove it"
        ) from None


def driver_requirement(url: URL) -> str:
    """What to install for ``url``'s driver (for 'driver missing' errors)."""
    return _BACKENDS.get(url.get_backend_name(), ("", "its DBAPI driver"))[1]


def check_database_name(name: object) -> str:
    """The system database name must be a plain identifier (it is put into DDL)."""
    if not isinstance(name, str) or not _DATABASE_NAME.match(name):
        raise InvalidLineageArgumentError(
            f"lineage database name {name!r} must be a plain identifier (letters, digits, "
            "underscore; not starting with a digit; at most 63 characters), e.g. 'paimon'"
        )
    return name


def build_url(
    backend: str,
    *,
    host: str | None = None,
    port: int | None = None,
    username: str | None = None,
    password: str | None = None,
    database: str | None = None,
    query: dict[str, str] | None = None,
) -> URL:
    """A store URL from parts (what an Airflow connection holds)."""
    name = (backend or "").strip().lower()
    if name in ("postgres", "pg"):
        name = "postgresql"
    if name not in _BACKENDS:
        raise UnsupportedBackendError(
            f"lineage store backend {backend!r} is not supported; use sqlite, mysql, "
            "mariadb or postgresql"
        )
    from sqlalchemy.engine import URL

    if name == "sqlite":
        return URL.create("sqlite+pysqlite", database=database or str(default_sqlite_path()))
    return URL.create(
        f"{name}+{_BACKENDS[name][0]}",
        username=username or None,
        password=password or None,
        host=host or None,
        port=int(port) if port else None,
        database=database or None,
        query=query or {},
    )
