"""The independent reader (pypaimon-rust) agrees with plain pypaimon on what this package
writes: time travel by snapshot and tag, a branch made by ``create_branch``, and main
after ``replace_main``. Other tests use ``independent_reader`` to check their states."""

from __future__ import annotations

import pyarrow as pa
from independent_reader import rust_rows, rust_snapshot_ids
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon.branch import create_branch, replace_main
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.tag import create_tag

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _pypaimon_rows(table) -> list[tuple]:
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True), key=repr)


def test_rust_reads_snapshots_tags_branches_and_replaced_main(warehouse):
    from pypaimon import Schema

    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    table = load_table(catalog, "db.t")
    for i in range(3):
        commit_rows(table, [{"id": i, "v": f"main-{i}"}], SCHEMA)
    create_tag(table, "t2", snapshot_id=2)
    create_branch(table, "fix", tag="t2")
    commit_rows(load_table(catalog, "db.t", "fix"), [{"id": 9, "v": "fix"}], SCHEMA)

    assert rust_snapshot_ids(warehouse, "db.t") == [1, 2, 3]
    assert rust_rows(warehouse, "db.t") == _pypaimon_rows(load_table(catalog, "db.t"))
    assert rust_rows(warehouse, "db.t", snapshot_id=2) == [(0, "main-0"), (1, "main-1")]
    assert rust_rows(warehouse, "db.t", tag="t2") == [(0, "main-0"), (1, "main-1")]
    fix_rows = rust_rows(warehouse, "db.t", branch="fix")
    assert fix_rows == [(0, "main-0"), (1, "main-1"), (9, "fix")]
    assert fix_rows == _pypaimon_rows(load_table(catalog, "db.t", "fix"))

    replace_main(load_table(open_catalog(warehouse), "db.t"), "fix")
    assert rust_rows(warehouse, "db.t") == fix_rows == _pypaimon_rows(load_table(open_catalog(warehouse), "db.t"))
