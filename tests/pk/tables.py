"""Primary-key tables for the model tests: create, write and read with plain pypaimon."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pypaimon import Schema

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.lsm.input_changelog import use_input_changelog
from airflow_provider_paimon.paimon.lsm.retracts import with_delete_counts

from .kept_files import kept_file_reads
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


def split_key(table: Any, split: Any) -> tuple:
    """Everything pypaimon's read of ``split`` depends on besides the table itself: its
    bucket, its files (names, levels, in order), whether it reads raw, its deletion files."""
    deletions = split.data_deletion_files
    return (
        table.table_schema.id, tuple(split.partition.values), split.bucket,
        tuple((f.file_name, f.level) for f in split.files), bool(split.raw_convertible),
        None if deletions is None else tuple(repr(d) for d in deletions),
    )


class Reader:
    """``read`` for a test that reads one table after every change, each split once.

    Every call plans the table in full (snapshot, manifests, pypaimon's split
    generator), as ``read`` does. A split whose files were all read before, the same
    files in the same order (``split_key``), is the same input to pypaimon's merge
    reader, so its rows are the ones read then; every other split is read (serially:
    the splits are tiny, and threads only add overhead under the GIL). The model tests
    read after each commit and each compaction; between two reads most buckets keep
    their files (about 40% of the files they would read again at 300 steps).
    ``reads`` / ``reused`` count the splits each way. A split read again merges files
    most of which an earlier read decoded: each file is decoded once
    (``kept_files.kept_file_reads``), its merge runs on every read.
    """

    def __init__(self) -> None:
        self._rows: dict[tuple, list[tuple]] = {}
        self._files: dict = {}  # each data file decoded once (kept_files)
        self.reads = 0
        self.reused = 0

    def read(self, table: Any) -> list[tuple]:
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        out: list[tuple] = []
        fresh = []
        for split in splits:
            key = split_key(table, split)
            if key in self._rows:
                self.reused += 1
                out.extend(self._rows[key])
            else:
                fresh.append((key, split))
        if fresh:
            reader = builder.new_read()
            with kept_file_reads(self._files):
                for key, split in fresh:
                    got = reader.to_arrow([split], parallelism=1)
                    rows = as_tuples(got) if got is not None else []
                    self._rows[key] = rows
                    self.reads += 1
                    out.extend(rows)
        return sorted(out, key=repr)
