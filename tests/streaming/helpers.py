"""Helpers for streaming tests: real append tables written with plain pypaimon."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
from pypaimon import Schema
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
# Small files and a low threshold so compaction has something to merge.
SMALL = {"target-file-size": "32kb", "compaction.min.file-num": "3", "source.split.open-file-cost": "1b"}
# A sink table whose stream never compacts (its test counts snapshots and files exactly);
# the stream's compaction itself is tested in test_streaming_compaction.py.
NO_STREAM_COMPACTION = {"compaction.min.file-num": "1000"}


def make_table(warehouse: str, name: str = "db.src", options: dict[str, str] | None = None) -> Any:
    catalog = open_catalog(warehouse)
    catalog.create_database(name.split(".")[0], True)
    schema = Schema.from_pyarrow_schema(SCHEMA, options=dict(SMALL, **(options or {})))
    catalog.create_table(name, schema, False)
    return load_table(catalog, name)


def reload(warehouse: str, name: str = "db.src", branch: str | None = None) -> Any:
    return load_table(open_catalog(warehouse), name, branch)


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def append(table: Any, ids: list[int], overwrite: bool = False) -> int:
    """Commit ``ids`` as one snapshot; returns its id."""
    return commit_arrow(table, rows(ids), overwrite={} if overwrite else None)


def compact(table: Any) -> int:
    """Run the project's compaction (a COMPACT snapshot); returns the new snapshot id."""
    from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
    from airflow_provider_paimon.paimon.compaction.runner import compact as run

    result = run(table, CompactionOptions.from_table(table))
    assert result.committed, result
    snap = table.snapshot_manager().get_latest_snapshot()
    assert snap.commit_kind == "COMPACT"
    return snap.id


def read_ids(table: Any, splits: list[Any]) -> list[int]:
    if not splits:
        return []
    return sorted(table.new_read_builder().new_read().to_arrow(splits).column("id").to_pylist())


def table_ids(table: Any) -> list[int]:
    builder = table.new_read_builder()
    return read_ids(table, builder.new_scan().plan().splits())


def data_files_on_disk(table_path: str) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(table_path):
        if os.path.basename(root).startswith("bucket-"):
            out.update(f for f in files if f.startswith("data-"))
    return out


def live_files(table: Any) -> set[str]:
    builder = table.new_read_builder()
    return {f.file_name for s in builder.new_scan().plan().splits() for f in s.files}
