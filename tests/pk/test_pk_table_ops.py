"""Everything the package does to append tables, on a primary-key table beside one.

One scenario, parametrized over an append table and a primary-key table (2 buckets,
``changelog-producer=input``, upserts of existing keys, compacted by the writers' and
the compaction job's code), all in-process with the package's own calls: tags,
branches from a tag, fast-forward, replace-main, rollback, a schema change, snapshot
expiry, orphan cleanup, the catch-up check over a consumer. After each
step plain pypaimon and pypaimon-rust read the same rows, which are the rows the step
should leave (an append table keeps every row, a primary-key table the last version of
each key); a primary-key table's changelog (the stream source's planning and reading)
still reads after expiry and orphan cleanup.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from independent_reader import rust_rows
from pypaimon import Schema

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon import consumers
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.catchup import (
    SourceRef,
    commit_kind_reader,
    compute_catch_up,
    consumed_from_consumer_file,
)
from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys
from airflow_provider_paimon.paimon.lsm.input_changelog import use_input_changelog
from airflow_provider_paimon.paimon.maintenance import expire_snapshots, remove_orphan_files
from airflow_provider_paimon.paimon.maintenance.rollback import rollback
from airflow_provider_paimon.paimon.schema.alter import alter_table
from airflow_provider_paimon.paimon.snapshots import table_latest_snapshot_id
from airflow_provider_paimon.paimon.stream_scan import StreamOffset
from airflow_provider_paimon.paimon.tag.create import create_tag

from .changes import read_range

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
WIDE = ["id", "v", "w"]
PK_OPTIONS = {"bucket": "2", "changelog-producer": "input", "num-sorted-run.compaction-trigger": "3"}


class Expect:
    """The rows a table of ``kind`` holds after the writes so far (``rows`` sorted as readers compare)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.data: dict | list = {} if kind == "pk" else []

    def copy(self) -> Expect:
        other = Expect(self.kind)
        other.data = dict(self.data) if isinstance(self.data, dict) else list(self.data)
        return other

    def write(self, rows: list[dict]) -> None:
        for r in rows:
            row = tuple(r.get(c) for c in self.columns(r))
            if isinstance(self.data, dict):
                self.data[r["id"]] = row
            else:
                self.data.append(row)

    @staticmethod
    def columns(row: dict) -> list[str]:
        return ["id", "v", "w"] if "w" in row else ["id", "v"]

    def rows(self, width: int = 2) -> list[tuple]:
        values = self.data.values() if isinstance(self.data, dict) else self.data
        return sorted((tuple(v) + (None,) * (width - len(v)) for v in values), key=repr)


def pypaimon_rows(table) -> list[tuple]:
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    columns = [data.column(i).to_pylist() for i in range(data.num_columns)]
    return sorted(zip(*columns, strict=True), key=repr) if columns else []


def write(table, rows: list[dict], schema: pa.Schema = SCHEMA) -> None:
    builder = table.new_batch_write_builder()
    writer = use_input_changelog(builder.new_write(), "data-ops-")
    commit = builder.new_commit()
    try:
        writer.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        commit.commit(writer.prepare_commit())
    finally:
        writer.close()
        commit.close()


def rows_of(ids, tag: str) -> list[dict]:
    return [{"id": i, "v": f"{tag}{i}"} for i in ids]


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_table_operations_on_both_kinds(warehouse, kind):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    options = PK_OPTIONS if kind == "pk" else {}
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        SCHEMA, primary_keys=["id"] if kind == "pk" else None, options=options), False)

    def table(branch=None):
        return load_table(open_catalog(warehouse), "db.t", branch)

    def check(expect: Expect, branch=None, width: int = 2, where: str = "") -> None:
        got = pypaimon_rows(table(branch))
        assert got == expect.rows(width), f"{kind} {where}: pypaimon"
        assert rust_rows(warehouse, "db.t", branch=branch) == got, f"{kind} {where}: pypaimon-rust"

    main = Expect(kind)
    for ids, tag in (([1, 2, 3, 4], "a"), ([3, 4, 5, 6], "b")):
        write(table(), rows_of(ids, tag))
        main.write(rows_of(ids, tag))
    if kind == "pk":
        assert compact_primary_keys(table(), "full").committed
    check(main, where="after writes")

    # tag, branch from it, writes there, fast-forward main to it
    create_tag(table(), "t1")
    assert rust_rows(warehouse, "db.t", tag="t1") == main.rows()
    bops.create_branch(table(), "fix", tag="t1")
    fix = main.copy()
    write(table("fix"), rows_of([1, 7], "f"))
    fix.write(rows_of([1, 7], "f"))
    check(fix, "fix", where="branch")
    check(main, where="main beside the branch")
    bops.fast_forward(table(), "fix")
    main = fix.copy()
    check(main, where="after fast-forward")

    # a branch replaces main
    bops.create_branch(table(), "b2", snapshot_id=table_latest_snapshot_id(table()))
    b2 = main.copy()
    write(table("b2"), rows_of([2, 8], "r"))
    b2.write(rows_of([2, 8], "r"))
    write(table(), rows_of([9], "lost"))  # main's own write, replaced below
    bops.replace_main(table(), "b2")
    main = b2.copy()
    check(main, where="after replace-main")

    # rollback of a write
    before = table_latest_snapshot_id(table())
    write(table(), rows_of([1, 10], "x"))
    rollback(table(), snapshot_id=before)
    check(main, where="after rollback")

    # a schema change: old files read with the new column as nulls (and merged with new ones)
    alter_table(table(), [{"op": "add_column", "name": "w", "type": "INT"}])
    wide = pa.schema([*SCHEMA, ("w", pa.int32())])
    new_rows = [{"id": 2, "v": "s2", "w": 20}, {"id": 11, "v": "s11", "w": 110}]
    write(table(), new_rows, wide)
    main.write(new_rows)
    if kind == "pk":
        assert compact_primary_keys(table(), "minor", run_options={"num-sorted-run.compaction-trigger": "1"}).committed
    check(main, width=3, where="after add_column")

    # the catch-up check over a consumer: COMPACT snapshots are no lag
    ref = SourceRef.parse("db.t")
    consumers.save_next_snapshot(table(), "etl", table_latest_snapshot_id(table()) + 1)

    def lag() -> int:
        t = table()
        result = compute_catch_up([ref], {ref: consumed_from_consumer_file(t, "etl", ref)},
                                  {ref: table_latest_snapshot_id(t)}, commit_kinds={ref: commit_kind_reader(t)})
        return result.sources[0].lag

    assert lag() == 0
    write(table(), [{"id": 12, "v": "c", "w": None}], wide)
    main.write([{"id": 12, "v": "c", "w": None}])
    assert lag() == 1
    if kind == "pk":
        assert compact_primary_keys(table(), "full").committed
    consumers.save_next_snapshot(table(), "etl", table_latest_snapshot_id(table()) + 1)
    assert lag() == 0

    # expiry keeps what the latest snapshot, the tag, branches and the consumer need
    t = table()
    last_append = max(s.id for s in t.snapshot_manager().list_snapshots() if s.commit_kind == "APPEND")
    changes_before = read_range(t, StreamOffset(last_append), StreamOffset(last_append + 1), WIDE) if kind == "pk" else []
    consumers.save_next_snapshot(t, "etl", last_append)
    expire_snapshots(t, retain_max=1, retain_min=1)
    check(main, width=3, where="after expiry")

    # orphan cleanup: a stray file goes, nothing referenced does
    stray = os.path.join(t.table_path, "bucket-0", "data-stray-0.parquet")
    os.makedirs(os.path.dirname(stray), exist_ok=True)
    with open(stray, "wb") as fh:
        fh.write(b"x")
    past = (datetime.now(timezone.utc) - timedelta(days=2)).timestamp()
    for root, _dirs, files in os.walk(t.table_path):  # every file old enough to go if unreferenced
        for name in files:
            os.utime(os.path.join(root, name), (past, past))
    remove_orphan_files(table(), older_than=timedelta(days=1))
    assert not os.path.exists(stray)
    check(main, width=3, where="after orphan cleanup")
    t1 = Expect(kind)
    for ids, tag in (([1, 2, 3, 4], "a"), ([3, 4, 5, 6], "b")):
        t1.write(rows_of(ids, tag))
    assert rust_rows(warehouse, "db.t", tag="t1") == t1.rows()  # the tag still reads as it was
    if kind == "pk":  # the consumer kept the last APPEND snapshot: its changelog still reads
        assert changes_before and read_range(table(), StreamOffset(last_append),
                                             StreamOffset(last_append + 1), WIDE) == changes_before
