"""JDBC URLs (the lineage proposal's ``jdbc.url``) as SQLAlchemy URLs.

The proposal configures the store the way Paimon Java does, with a JDBC URL, a driver
class and credentials. This module maps them to the installed Python driver: the
sub-protocol picks the backend, credentials found in the URL's query are lifted into
the URL, the Java drivers' tuning properties are dropped and anything else is refused
by name. Every message shows the URL masked. It sits below ``url`` (which accepts a
JDBC URL wherever a store URL is asked for) and ``meta_options`` (the options).
"""

from __future__ import annotations

import importlib.util
import os
import urllib.parse
from typing import TYPE_CHECKING

from ..paimon.secrets import mask_url, split_userinfo
from .errors import InvalidLineageArgumentError, UnsupportedBackendError

if TYPE_CHECKING:  # imported where a URL is built: see the note in lineage/url.py
    from sqlalchemy.engine import URL

JDBC_URL = "jdbc.url"
JDBC_DRIVER = "jdbc.driver"
JDBC_USERNAME = "jdbc.username"
JDBC_PASSWORD = "jdbc.password"  # the option's name, not a password

# JDBC sub-protocol -> (SQLAlchemy backend, Python drivers in order of preference,
# JDBC driver classes that fit)
_JDBC = {
    "mysql": ("mysql", ("pymysql", "mysqldb"),
              ("com.mysql.jdbc.Driver", "com.mysql.cj.jdbc.Driver", "org.mariadb.jdbc.Driver")),
    "mariadb": ("mariadb", ("pymysql", "mysqldb"),
                ("org.mariadb.jdbc.Driver", "com.mysql.jdbc.Driver", "com.mysql.cj.jdbc.Driver")),
    "postgresql": ("postgresql", ("psycopg2", "psycopg", "pg8000"), ("org.postgresql.Driver",)),
    "sqlite": ("sqlite", ("pysqlite",), ("org.sqlite.JDBC",)),
}
# Python driver -> module that must be importable
_DRIVER_MODULES = {"pymysql": "pymysql", "mysqldb": "MySQLdb", "psycopg2": "psycopg2",
                   "psycopg": "psycopg", "pg8000": "pg8000", "pysqlite": "sqlite3"}
# JDBC URL properties the Python drivers take under another name; credentials are
# lifted out of the query into the URL, tuning knobs of the Java drivers are dropped
_CREDENTIAL_PROPERTIES = {"user": "username", "username": "username", "password": "password"}
_JAVA_ONLY_PROPERTIES = frozenset({
    "useSSL", "requireSSL", "verifyServerCertificate", "serverTimezone", "useUnicode",
    "characterEncoding", "autoReconnect", "allowPublicKeyRetrieval", "useLegacyDatetimeCode",
    "zeroDateTimeBehavior", "rewriteBatchedStatements", "cachePrepStmts", "useServerPrepStmts",
    "tcpKeepAlive", "loginTimeout", "socketTimeout", "ApplicationName", "stringtype",
    "prepareThreshold", "currentSchema",
})


def installed_driver(backend: str) -> str:
    """The Python driver this process has for ``backend`` (``mysql``, ``postgresql``...)."""
    for name in _JDBC[backend][1]:
        module = _DRIVER_MODULES[name]
        if module == "sqlite3" or importlib.util.find_spec(module) is not None:
            return name
    wanted = " or ".join(_JDBC[backend][1])
    raise UnsupportedBackendError(
        f"no Python driver for {backend} is installed; install {wanted} "
        f"(e.g. pip install {'psycopg2-binary' if backend == 'postgresql' else _JDBC[backend][1][0]})"
    )


def from_jdbc(
    text: str,
    *,
    driver: str | None = None,
    username: str | None = None,
    password: str | None = None,
    where: str = "catalog option",
) -> URL:
    """The SQLAlchemy URL of the JDBC URL ``text`` (``jdbc:...``), credentials set."""
    rest = text[len("jdbc:"):]
    sub, sep, tail = rest.partition(":")
    sub = sub.lower()
    if not sep or sub not in _JDBC:
        raise UnsupportedBackendError(
            f"{where} '{JDBC_URL}' {mask_url(text)!r} is not a supported JDBC URL; use "
            "jdbc:mysql://host:3306/db, jdbc:mariadb://host:3306/db, "
            "jdbc:postgresql://host:5432/db or jdbc:sqlite:/path/lineage.db"
        )
    backend, drivers, classes = _JDBC[sub]
    python_driver = _python_driver(driver, sub, backend, drivers, classes, where)
    if backend == "sqlite":
        from sqlalchemy.engine import URL

        return URL.create("sqlite+pysqlite", database=_sqlite_path(tail, text, where))
    url = _network_url(backend, python_driver, tail, text, where)
    return with_credentials(url, username, password, where, text)


def _python_driver(
    driver: str | None, sub: str, backend: str, drivers: tuple[str, ...],
    classes: tuple[str, ...], where: str,
) -> str:
    given = (driver or "").strip()
    if not given:
        return installed_driver(backend)
    if given in classes:
        return installed_driver(backend)
    if given.lower() in drivers:
        name = given.lower()
        module = _DRIVER_MODULES[name]
        if module != "sqlite3" and importlib.util.find_spec(module) is None:
            raise UnsupportedBackendError(
                f"{where} '{JDBC_DRIVER}' is {given!r}, which is not installed here; install it "
                f"or leave '{JDBC_DRIVER}' out to use {installed_driver(backend)}"
            )
        return name
    raise InvalidLineageArgumentError(
        f"{where} '{JDBC_DRIVER}' is {given!r}, which does not fit a jdbc:{sub} URL; use "
        f"one of {', '.join(classes + drivers)} or leave it out"
    )


def _sqlite_path(tail: str, text: str, where: str) -> str:
    path = tail
    if path.startswith("file:"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
    path = path.split("?", 1)[0]
    if path in ("", ":memory:"):
        return ":memory:"
    if path.startswith("//"):  # jdbc:sqlite://path is not a host, it is a path
        path = path[1:]
    if not path:
        raise InvalidLineageArgumentError(
            f"{where} '{JDBC_URL}' {mask_url(text)!r} names no SQLite file; use "
            "jdbc:sqlite:/path/lineage.db"
        )
    return os.path.abspath(os.path.expanduser(path))


def _network_url(backend: str, driver: str, tail: str, text: str, where: str) -> URL:
    if tail.startswith("//"):
        # the user info first, as the secret policy finds it: a password may hold ',',
        # '/', '?', '#' or '@', where urlsplit would end the host (or see several hosts)
        userinfo, bare = split_userinfo(f"{backend}:{tail}")
        parts = urllib.parse.urlsplit(bare[len(backend) + 1:])
        if "," in parts.netloc:
            raise InvalidLineageArgumentError(
                f"{where} '{JDBC_URL}' {mask_url(text)!r} lists several hosts; the lineage "
                "store connects to one: give one host"
            )
        host = parts.hostname
        try:
            port = parts.port
        except ValueError:
            raise InvalidLineageArgumentError(
                f"{where} '{JDBC_URL}' {mask_url(text)!r} has a port that is not a number"
            ) from None
        database = urllib.parse.unquote(parts.path.lstrip("/")) or None
        query_text = parts.query
        name, colon, password = (userinfo or "").partition(":")
        user = urllib.parse.unquote(name) if name else None
        secret = urllib.parse.unquote(password) if colon and password else None
    else:  # jdbc:postgresql:database (local server, default port)
        database, _, query_text = tail.partition("?")
        host, port, user, secret = None, None, None, None
        database = database.lstrip("/") or None
    query: dict[str, str] = {}
    unknown = []
    for name, value in urllib.parse.parse_qsl(query_text, keep_blank_values=True):
        if name in _CREDENTIAL_PROPERTIES:
            if _CREDENTIAL_PROPERTIES[name] == "username":
                user = user or value
            else:
                secret = secret or value
        elif name in _JAVA_ONLY_PROPERTIES:
            continue  # a Java driver's tuning knob; the Python driver has its own defaults
        elif backend == "postgresql" and name in ("sslmode", "connect_timeout", "application_name"):
            query[name] = value
        else:
            unknown.append(name)
    if unknown:
        raise InvalidLineageArgumentError(
            f"{where} '{JDBC_URL}' {mask_url(text)!r} has JDBC properties the Python driver "
            f"does not take: {', '.join(sorted(unknown))}; remove them"
        )
    from sqlalchemy.engine import URL

    return URL.create(
        f"{backend}+{driver}", username=user, password=secret, host=host, port=port,
        database=database, query=query,
    )


def with_credentials(url: URL, username: str | None, password: str | None, where: str, text: str) -> URL:
    user = (username or "").strip() or None
    if user is not None:
        if url.username not in (None, user):
            raise InvalidLineageArgumentError(
                f"{where} '{JDBC_USERNAME}' is {user!r} but '{JDBC_URL}' {mask_url(text)!r} "
                f"names user {url.username!r}; give the user in one place"
            )
        url = url.set(username=user)
    if password:
        if url.password is not None and str(url.password) != password:
            raise InvalidLineageArgumentError(
                f"{where} '{JDBC_PASSWORD}' and the password inside '{JDBC_URL}' differ; "
                "give the password in one place (preferably jdbc.password)"
            )
        if url.username is None:
            raise InvalidLineageArgumentError(
                f"{where} '{JDBC_PASSWORD}' is set but no user is: add '{JDBC_USERNAME}'"
            )
        url = url.set(password=password)
    return url
