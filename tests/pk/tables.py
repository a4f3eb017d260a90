"""Primary-key tables for the model tests: create, write and read with plain pypaimon."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pypaimon import Schema

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.lsm.input_changelog import use_input_changelog
from airflow_provider_paimon.paimon.lsm.retracts import with_delete_counts

from .scenarios import KEYS, PARTITION_KEYS, SCHEMA, as_tuples, table_options


def create(warehouse: str, name: str, variant: str, extra: dict[str, str] | None = None) -> Any:
    catalog = open_catalog(warehouse)
    catalog.create_database(name.split(".")[0], True)
    schema = Schema.from_pyarrow_schema(
        SCHEMA, partition_keys=PARTITION_KEYS, primary_keys=KEYS,
        options=table_options(variant, extra),
    )
    catalog.create_table(name, schema, False)
    return load_table(catalog, name)


def reload(warehouse: str, name: str, branch: str | None = None) -> Any:
    return load_table(open_catalog(warehouse), name, branch)


def write(table: Any, rows: list[dict[str, Any]]) -> None:
    """One pypaimon batch commit of ``rows`` (in order).

    The files' retract counts are set as Paimon Java's writer sets them (pypaimon 2.1
    records 0, which makes its own reader show deleted rows: ``lsm.retracts``); with
    ``changelog-producer=input`` the raw rows are the changelog, as Java writes it.
    """
    builder = table.new_batch_write_builder()
    writer = use_input_changelog(builder.new_write(), "data-test-")  # as the data source's tasks
    commit = builder.new_commit()
    try:
        writer.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        commit.commit(with_delete_counts(table, writer.prepare_commit()))
    finally:
        writer.close()
        commit.close()


def read(table: Any, snapshot_id: int | None = None) -> list[tuple]:
    """Every visible row, as plain pypaimon reads it, sorted like ``PkModel.rows()``."""
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return as_tuples(builder.new_read().to_arrow(splits)) if splits else []
