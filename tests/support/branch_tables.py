"""Helpers for the branch/tag tests: real tables written and read with plain pypaimon."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pyarrow as pa
from pypaimon import Schema

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from support.pypaimon_writes import commit_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make_table(warehouse: str, name: str = "db.t", options: dict[str, str] | None = None) -> tuple[Any, Any]:
    catalog = open_catalog(warehouse)
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, options=options or {}), False)
    return catalog, load_table(catalog, name)


def write(table: Any, ids: list[int], tag: str = "m") -> None:
    """One commit (one snapshot) with rows ``id`` -> ``f"{tag}{id}"``."""
    commit_rows(table, [{"id": i, "v": f"{tag}{i}"} for i in ids], SCHEMA)


def rows(catalog: Any, name: str = "db.t", branch: str | None = None) -> list[tuple]:
    """All rows of main (or ``branch``) read by a freshly loaded pypaimon table."""
    table = load_table(catalog, name, branch)
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    cols = data.column_names
    return sorted(tuple(r[c] for c in cols) for r in data.to_pylist())


def tree(path: str) -> dict[str, str]:
    """Every file under ``path`` with a hash of its bytes (to assert "nothing written")."""
    out = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, path)] = hashlib.sha1(fh.read()).hexdigest()
    return out


def table_dir(warehouse: str, name: str = "db.t") -> str:
    db, t = name.split(".")
    return os.path.join(warehouse, f"{db}.db", t)


def files_in(warehouse: str, sub: str, name: str = "db.t") -> list[str]:
    d = os.path.join(table_dir(warehouse, name), sub)
    return sorted(os.listdir(d)) if os.path.isdir(d) else []
