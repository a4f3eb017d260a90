"""Writers that race commits to one table, in threads or as separate processes.

Run as a script (``python commit_race.py``) it reads a JSON job from stdin (the
catalog options carry credentials: never on a command line), commits its batches and
prints one JSON line per batch: the ids it committed, or the error it got.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.string())])


def open_table(warehouse: str, options: Mapping[str, str], name: str = "db.t", *, plain: bool = False) -> Any:
    """The table through our catalog (commit-safe), or through bare pypaimon (``plain``)."""
    if plain:
        from pypaimon import CatalogFactory

        return CatalogFactory.create({**options, "warehouse": warehouse}).get_table(name)
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    return load_table(open_catalog(warehouse, dict(options)), name)


def create_table(
    warehouse: str, options: Mapping[str, str], name: str = "db.t", table_options: Mapping[str, str] | None = None
) -> None:
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import open_catalog

    catalog = open_catalog(warehouse, dict(options))
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, options=dict(table_options or {})), False)


def commit_batch(table: Any, ids: Sequence[int], writer: str, barrier: threading.Barrier | None = None) -> None:
    """Write ``ids`` and commit them in one snapshot (after ``barrier``, to race)."""
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    try:
        write.write_arrow(pa.table({"id": list(ids), "writer": [writer] * len(ids)}, schema=SCHEMA))
        messages = write.prepare_commit()
        if barrier is not None:
            barrier.wait(timeout=60)
        commit = builder.new_commit()
        try:
            commit.commit(messages)
        finally:
            commit.close()
    finally:
        write.close()


def read_ids(warehouse: str, options: Mapping[str, str], name: str = "db.t") -> list[int]:
    """Every id in the table, read with plain pypaimon (the reference reader)."""
    table = open_table(warehouse, options, name, plain=True)
    read = table.new_read_builder()
    splits = read.new_scan().plan().splits()
    if not splits:
        return []
    return sorted(read.new_read().to_arrow(splits).column("id").to_pylist())


def main() -> None:
    job = json.load(sys.stdin)
    table = open_table(job["warehouse"], job["options"], plain=job.get("plain", False))
    for ids in job["batches"]:
        try:
            commit_batch(table, ids, job["writer"])
            print(json.dumps({"ids": ids}), flush=True)
        except Exception as err:  # noqa: BLE001 - reported to the test, which decides
            print(json.dumps({"error": f"{type(err).__name__}: {err}"}), flush=True)


if __name__ == "__main__":
    main()
