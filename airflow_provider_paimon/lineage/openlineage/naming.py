"""OpenLineage names for Paimon tables: namespace = warehouse URI, name = ``db.table``.

Paimon's own (Flink) lineage names a table ``db.table`` inside the warehouse, and
``db.table$branch_NAME`` on a branch. We keep that, so the same table gets the same
OpenLineage identity whichever engine, helper or path spelling produced the event:
``/data/wh``, ``file:/data/wh`` and ``file:///data/wh/`` are one warehouse.

A REST catalog (catalog option ``metastore=rest``) is different: its ``warehouse`` is
the name of a catalog on the REST server at option ``uri``, not a path, and the server
decides where the files are. Its namespace is ``paimon+rest://<server>[<uri
path>]/<warehouse>``: the server's authority (lower-case host, port, no credentials),
the path of ``uri`` if any, then the catalog name, so the same catalog is one namespace
whichever client, scheme (``http``/``https``) or trailing slash named it, and two
catalogs on one server are two namespaces (OpenLineage's Iceberg integration names a
REST-catalog table by the catalog URI; Paimon's REST servers hold several catalogs,
hence the name). A JDBC catalog (``metastore=jdbc``) keeps the warehouse URI: its
``warehouse`` is the folder its tables live in (``WH/db.db/table``), the database only
indexes them.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_paimon.paimon.names import is_main
from airflow_provider_paimon.paimon.secrets import strip_userinfo

__all__ = [
    "REST_SCHEME",
    "catalog_type",
    "dataset_name",
    "is_rest_namespace",
    "location_identifier",
    "rest_namespace",
    "table_location",
    "warehouse_namespace",
]

REST_SCHEME = "paimon+rest"


def _is_local_path(value: str) -> bool:
    """A value without a URI scheme (or with a Windows drive letter) is a local path."""
    scheme = urlsplit(value).scheme
    return len(scheme) <= 1


def catalog_type(catalog_options: Mapping[str, Any] | None) -> str:
    """The catalog's ``metastore`` option, lower-cased: ``filesystem`` (default), ``jdbc``, ``rest``."""
    value = str((catalog_options or {}).get("metastore") or "").strip().lower()
    return value or "filesystem"


def warehouse_namespace(warehouse_uri: str, catalog_options: Mapping[str, Any] | None = None) -> str:
    """Normalise a warehouse path or URI into the dataset namespace.

    - a local path (relative paths are made absolute, ``~`` expanded) becomes
      ``file:///abs/path``; ``file:/p``, ``file://localhost/p`` and ``file:///p`` all
      become ``file:///p``;
    - other URIs keep scheme (lower-cased) and authority, lose any user info
      (credentials must never end up in lineage: also ``file://user:pw@host/share``, and
      a password holding ``/``, ``?``, ``#`` or ``@``, found as the secret policy finds
      it), query and fragment;
    - no trailing slash, and ``.``/``..``/doubled slashes are folded;
    - with ``catalog_options`` of a REST catalog (``metastore=rest``), the warehouse is
      a catalog name: :func:`rest_namespace` of option ``uri`` and that name. Other
      options are ignored (a JDBC catalog's warehouse is a path).

    Idempotent: a namespace this returned normalises to itself, with or without options.
    """
    value = str(warehouse_uri or "").strip()
    if not value:
        raise ValueError("warehouse URI is empty")
    if catalog_type(catalog_options) == "rest" and not is_rest_namespace(value):
        return rest_namespace((catalog_options or {}).get("uri"), value)
    if "://" in value:  # an authority: its user info goes before anything parses it
        value = strip_userinfo(value)
    if _is_local_path(value):
        path = os.path.abspath(os.path.expanduser(value)).replace(os.sep, "/")
        return "file://" + _clean_path(path)
    parts = urlsplit(value)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            # file://host/share: keep the host, it is part of the identity
            return f"file://{parts.netloc}{_clean_path(parts.path or '/')}"
        return "file://" + _clean_path(parts.path or "/")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if scheme == REST_SCHEME:
        netloc = netloc.lower()  # a server's host name, as rest_namespace writes it
    path = _clean_path(parts.path) if parts.path not in ("", "/") else ""
    return f"{scheme}://{netloc}{path}"


def rest_namespace(uri: Any, warehouse: str) -> str:
    """``paimon+rest://<host[:port]>[<uri path>]/<warehouse>`` for catalog ``warehouse`` on server ``uri``.

    ``uri`` is the REST catalog's ``uri`` option (``http(s)://host[:port][/path]``); its
    scheme, credentials, query and trailing slash are dropped and the host lower-cased.
    ``warehouse`` is the catalog name: one path segment.
    """
    server = str(uri or "").strip()
    if not server:
        raise ValueError("a REST catalog (metastore=rest) needs its 'uri' option to name its namespace")
    parts = urlsplit(strip_userinfo(server if "://" in server else f"http://{server}"))
    host = parts.netloc.rsplit("@", 1)[-1].lower()
    if not host:
        raise ValueError(f"REST catalog uri {server!r} names no server")
    name = str(warehouse or "").strip().strip("/")
    if not name or "/" in name:
        raise ValueError(f"a REST catalog's warehouse is a catalog name (one path segment), not {warehouse!r}")
    path = _clean_path(parts.path) if parts.path not in ("", "/") else ""
    return f"{REST_SCHEME}://{host}{path}/{name}"


def is_rest_namespace(namespace: str) -> bool:
    """Is ``namespace`` a REST catalog's (``paimon+rest://...``)?"""
    return urlsplit(str(namespace).strip()).scheme.lower() == REST_SCHEME


def _clean_path(path: str) -> str:
    """Fold ``//``, ``.`` and ``..`` and drop the trailing slash (``/`` stays ``/``)."""
    if not path.startswith("/"):
        path = "/" + path
    cleaned = posixpath.normpath(path)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    return cleaned


def dataset_name(database: str, table: str, branch: str | None = None) -> str:
    """``db.table``, or ``db.table$branch_NAME`` on a branch other than main."""
    if not database or not table:
        raise ValueError("database and table must both be non-empty")
    base = f"{database}.{table}"
    if is_main(branch):
        return base
    return f"{base}$branch_{branch}"


def table_location(warehouse_uri: str, database: str, table: str) -> str:
    """Physical table folder in Paimon's filesystem-catalog layout: ``WH/db.db/table``.

    A branch lives inside the same folder (``branch/branch-NAME``), so the location
    does not depend on the branch. A REST catalog's server places tables itself, so
    there is no such layout: ``ValueError``.
    """
    namespace = warehouse_namespace(warehouse_uri)
    if is_rest_namespace(namespace):
        raise ValueError(f"the tables of REST catalog {namespace} have no warehouse layout; ask the catalog")
    return f"{namespace}/{database}.db/{table}"


def location_identifier(location: str) -> tuple[str, str]:
    """Split a physical location into OpenLineage's (namespace, name) for files.

    Follows OpenLineage's naming conventions for file systems: a local path is
    namespace ``file`` with the absolute path as name; an object store or HDFS
    location is namespace ``scheme://authority`` with the path as name.
    """
    normalised = warehouse_namespace(location)
    parts = urlsplit(normalised)
    if parts.scheme == "file" and not parts.netloc:
        return "file", parts.path
    path = parts.path or "/"
    if parts.scheme in ("s3", "s3a", "s3n", "gs", "oss", "abfs", "abfss", "wasb", "wasbs"):
        path = path.lstrip("/") or "/"
    return f"{parts.scheme}://{parts.netloc}", path
