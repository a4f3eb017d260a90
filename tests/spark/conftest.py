"""Helpers for the data source tests: read tables with plain pypaimon, list files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from support.pypaimon_writes import commit_arrow


def _catalog(warehouse: str) -> Any:
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse})


class PaimonProbe:
    """Looks at a warehouse without Spark: tables, snapshots, data files, rows."""

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.catalog = _catalog(warehouse)

    def table(self, name: str, branch: str | None = None) -> Any:
        from airflow_provider_paimon.paimon.catalog import load_table

        return load_table(_catalog(self.warehouse), name, branch)

    def snapshot_ids(self, name: str, branch: str | None = None) -> list[int]:
        try:
            table = self.table(name, branch)
        except LookupError:
            return []
        return sorted(s.id for s in table.snapshot_manager().list_snapshots())

    def latest(self, name: str, branch: str | None = None) -> Any:
        return self.table(name, branch).snapshot_manager().get_latest_snapshot()

    def data_files(self) -> set[str]:
        """Every data file under the warehouse (bucket folders), as relative paths."""
        found = set()
        for root, _dirs, files in os.walk(self.warehouse):
            if "bucket-" in root:
                for f in files:
                    found.add(os.path.relpath(os.path.join(root, f), self.warehouse))
        return found

    def state(self) -> tuple:
        """Everything a failed write must leave unchanged."""
        snaps = []
        for root, _dirs, files in os.walk(self.warehouse):
            for f in files:
                if f.startswith("snapshot-"):
                    snaps.append(os.path.join(root, f))
        return (sorted(snaps), sorted(self.data_files()))

    def read_arrow(self, name: str, branch: str | None = None, **time_travel: str) -> Any:
        table = self.table(name, branch)
        if time_travel:
            table = table.copy(time_travel)
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        return builder.new_read().to_arrow(splits)

    def write_arrow(self, name: str, data: Any, branch: str | None = None, overwrite: bool = False) -> None:
        commit_arrow(self.table(name, branch), data, overwrite={} if overwrite else None)

    def create(self, name: str, schema: Any, partition_keys=None, primary_keys=None, options=None) -> Any:
        from pypaimon import Schema

        db = name.split(".")[0]
        self.catalog.create_database(db, True)
        self.catalog.create_table(
            name, Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                             primary_keys=primary_keys, options=options), False
        )
        return self.table(name)


@pytest.fixture
def probe(warehouse: str) -> PaimonProbe:
    return PaimonProbe(warehouse)


@pytest.fixture
def paimon_io(spark, warehouse: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(read(table, **options), write(df, table, mode='append', **options))`` on ``warehouse``."""

    def read(table: str, **options: Any) -> Any:
        reader = spark.read.format("paimon").option("warehouse", warehouse).option("table", table)
        for key, value in options.items():
            reader = reader.option(key.replace("_", "-"), str(value))
        return reader.load()

    def write(df: Any, table: str, mode: str = "append", **options: Any) -> None:
        writer = df.write.format("paimon").mode(mode).option("warehouse", warehouse).option("table", table)
        for key, value in options.items():
            writer = writer.option(key.replace("_", "-"), str(value))
        writer.save()

    return read, write


def rows(df: Any, *order: str) -> list[tuple]:
    """A DataFrame's rows as sorted plain tuples."""
    return sorted(tuple(r) for r in (df.orderBy(*order) if order else df).collect())
