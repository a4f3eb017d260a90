"""Append tables for the snapshot-watcher tests, committed by plain pypaimon and compacted
by the project's compaction (a COMPACT snapshot). Shared by test_snapshot_trigger*.py."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
# small files and a low threshold, so the project's compaction has something to merge
SMALL = {"target-file-size": "32kb", "compaction.min.file-num": "2", "source.split.open-file-cost": "1b"}
TABLE = "db.events"


def make_table(warehouse: str) -> Any:
    from pypaimon import Schema

    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(SCHEMA, options=SMALL), False)
    return load_table(catalog, TABLE)


def table(warehouse: str, branch: str | None = None) -> Any:
    return load_table(open_catalog(warehouse), TABLE, branch)


def commit(tbl: Any, ids: list[int], overwrite: bool = False) -> int:
    """Commit ``ids`` as one APPEND (or OVERWRITE) snapshot; returns its id."""
    data = pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)
    return commit_arrow(tbl, data, overwrite={} if overwrite else None)


def compact(tbl: Any) -> int:
    from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
    from airflow_provider_paimon.paimon.compaction.runner import compact as run

    assert run(tbl, CompactionOptions.from_table(tbl)).committed
    snap = tbl.snapshot_manager().get_latest_snapshot()
    assert snap.commit_kind == "COMPACT"
    return snap.id


def reference(tbl: Any, snapshot_id: int) -> dict[str, Any]:
    """What pypaimon itself reads for a snapshot, in the payload's terms."""
    snap = tbl.snapshot_manager().get_snapshot_by_id(snapshot_id)
    return {
        "snapshot_id": snap.id,
        "commit_kind": snap.commit_kind,
        "commit_user": snap.commit_user,
        "commit_identifier": snap.commit_identifier,
        "time_millis": snap.time_millis,
        "total_record_count": snap.total_record_count,
        "delta_record_count": snap.delta_record_count,
    }
