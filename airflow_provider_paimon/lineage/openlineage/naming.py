"""OpenLineage names for Paimon tables: namespace = warehouse URI, name = ``db.table``.

Paimon's own (Flink) lineage names a table ``db.table`` inside the warehouse, and
``db.table$branch_NAME`` on a branch. We keep that, so the same table gets the same
OpenLineage identity whichever engine, helper or path spelling produced the event:
``/data/wh``, ``file:/data/wh`` and ``file:///data/wh/`` are one warehouse.
"""

from __future__ import annotations

import os
import posixpath
from urllib.parse import urlsplit

from airflow_provider_paimon.paimon.names import is_main

__all__ = [
    "dataset_name",
    "location_identifier",
    "table_location",
    "warehouse_namespace",
]


def _is_local_path(value: str) -> bool:
    """A value without a URI scheme (or with a Windows drive letter) is a local path."""
    scheme = urlsplit(value).scheme
    return len(scheme) <= 1


def warehouse_namespace(warehouse_uri: str) -> str:
    """Normalise a warehouse path or URI into the dataset namespace.

    - a local path (relative paths are made absolute, ``~`` expanded) becomes
      ``file:///abs/path``; ``file:/p``, ``file://localhost/p`` and ``file:///p`` all
      become ``file:///p``;
    - other URIs keep scheme (lower-cased) and authority, lose any user info
      (credentials must never end up in lineage), query and fragment;
    - no trailing slash, and ``.``/``..``/doubled slashes are folded.
    """
    value = str(warehouse_uri or "").strip()
    if not value:
        raise ValueError("warehouse URI is empty")
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
    path = _clean_path(parts.path) if parts.path not in ("", "/") else ""
    return f"{scheme}://{netloc}{path}"


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
    does not depend on the branch.
    """
    return f"{warehouse_namespace(warehouse_uri)}/{database}.db/{table}"


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
