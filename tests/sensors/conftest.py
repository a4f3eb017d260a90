"""Warehouse helpers for the catch-up tests: real tables written with pypaimon."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from support.pypaimon_writes import commit_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


class Tables:
    """Create tables, append snapshots, tag and branch them in one warehouse."""

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.catalog = CatalogFactory.create({"warehouse": warehouse})
        self.catalog.create_database("db", True)

    def create(self, name: str) -> None:
        self.catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)

    def table(self, name: str, branch: str | None = None):
        return self.catalog.get_table(name if not branch else f"{name}$branch_{branch}")

    def append(self, name: str, rows: int = 2, branch: str | None = None) -> int:
        """Commit one APPEND snapshot; return its id."""
        data = pa.table({"id": list(range(rows)), "v": ["x"] * rows}, schema=SCHEMA)
        return commit_arrow(self.table(name, branch), data)

    def branch(self, name: str, branch: str, tag: str) -> None:
        table = self.table(name)
        table.create_tag(tag)
        table.branch_manager().create_branch(branch, tag)

    def set_consumer(self, name: str, consumer_id: str, next_snapshot: int, branch: str | None = None) -> None:
        from pypaimon.consumer.consumer import Consumer

        self.table(name, branch).consumer_manager().reset_consumer(consumer_id, Consumer(next_snapshot))


@pytest.fixture
def tables(warehouse) -> Tables:
    return Tables(warehouse)
