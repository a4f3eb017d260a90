"""Read a Paimon table with an independent implementation: pypaimon-rust.

pypaimon-rust (PyPI, Paimon's Rust implementation with a DataFusion binding) shares no
code with pypaimon or with this package, so a table state it reads back with the same
rows was written in Paimon's format, not merely in a shape our own reader accepts. It
is a test-only dependency (the ``test`` extra).

Usage::

    from independent_reader import rust_rows
    assert rust_rows(warehouse, "db.t") == sorted(pypaimon_rows)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa


def rust_table(
    warehouse: str,
    table: str,
    branch: str | None = None,
    options: dict[str, str] | None = None,
) -> Any:
    """pypaimon-rust's handle of ``table`` (``db.t``) on ``branch`` (main when None)."""
    import pypaimon_rust.datafusion as rust

    catalog = rust.PaimonCatalog({"warehouse": str(warehouse), **(options or {})})
    name = table if branch in (None, "", "main") else f"{table}$branch_{branch}"
    return catalog.get_table(name)


def rust_read(
    warehouse: str,
    table: str,
    branch: str | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    columns: list[str] | None = None,
    options: dict[str, str] | None = None,
) -> pa.Table:
    """Every row of the table (at ``snapshot_id`` or ``tag``) as read by pypaimon-rust."""
    handle = rust_table(warehouse, table, branch, options)
    read_options: dict[str, str] = {}
    if snapshot_id is not None:
        read_options["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        read_options["scan.tag-name"] = tag
    builder = handle.new_read_builder(read_options or None)
    if columns:
        builder = builder.with_projection(list(columns))
    plan = builder.new_scan().plan()
    batches = builder.new_read().read(plan.splits()) if len(plan) else []
    if batches:
        return pa.Table.from_batches(batches)
    fields = [f.name() for f in handle.schema().fields()]
    names = list(columns) if columns else fields
    return pa.table({name: pa.array([], pa.null()) for name in names})


def rust_rows(warehouse: str, table: str, **kwargs: Any) -> list[tuple]:
    """``rust_read`` as a sorted list of row tuples (columns in table order), for equality
    checks against plain pypaimon's rows."""
    data = rust_read(warehouse, table, **kwargs)
    columns = [data.column(i).to_pylist() for i in range(data.num_columns)]
    return sorted(zip(*columns, strict=True), key=repr) if columns else []


def rust_snapshot_ids(warehouse: str, table: str, branch: str | None = None) -> list[int]:
    """The snapshot ids pypaimon-rust lists for the table, ascending."""
    return sorted(s.id() for s in rust_table(warehouse, table, branch).list_snapshots())


def require() -> None:
    """Fail (``CI=true``) or skip when pypaimon-rust is not importable (the test extra has it)."""
    import os

    import pytest

    try:
        import pypaimon_rust.datafusion  # noqa: F401
    except ImportError as err:
        message = f"pypaimon-rust is not installed ({err}); `uv pip install pypaimon-rust` (test extra)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


def read_rows(warehouse: str, table: str = "db.t", **kwargs: Any) -> Counter:
    """The table's rows as pypaimon-rust reads them, as a multiset of tuples."""
    data = rust_read(warehouse, table, **kwargs)
    return Counter(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))
