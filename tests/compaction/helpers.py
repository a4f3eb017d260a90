"""Helpers for compaction tests: real tables written with plain pypaimon."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from typing import Any

import pyarrow as pa
from pypaimon import Schema
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.spark.native.plan import plan_for
from airflow_provider_paimon.spark.options import parse_options

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
# Small sizes so a few KB of data behave like a real table of small files.
SMALL = {
    "target-file-size": "32kb",
    "source.split.open-file-cost": "1b",
    "compaction.min.file-num": "3",
}


def make_table(warehouse: str, name: str = "db.t", partitioned: bool = True,
               options: dict[str, str] | None = None, primary_keys: list[str] | None = None,
               bucket: int | None = None) -> Any:
    catalog = open_catalog(warehouse)
    catalog.create_database(name.split(".")[0], True)
    opts = dict(options or {})
    if bucket is not None:
        opts["bucket"] = str(bucket)
        if primary_keys is None:
            opts["bucket-key"] = "id"
    schema = Schema.from_pyarrow_schema(
        SCHEMA if primary_keys is None else pa.schema(
            [pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())]),
        partition_keys=["p"] if partitioned else None,
        primary_keys=primary_keys,
        options=opts,
    )
    catalog.create_table(name, schema, False)
    return load_table(catalog, name)


def reload(warehouse: str, name: str = "db.t", branch: str | None = None) -> Any:
    return load_table(open_catalog(warehouse), name, branch)


def batch(start: int, n: int, partitions: tuple[str, ...] = ("a", "b"), width: int = 40) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "p": [partitions[i % len(partitions)] for i in range(n)],
            "v": [hashlib.sha1(str(i).encode()).hexdigest()[: width // 2] * 2 for i in ids],
        },
        schema=SCHEMA,
    )


def append(table: Any, data: pa.Table) -> None:
    """One APPEND commit through plain pypaimon."""
    commit_arrow(table, data)


def append_many(table: Any, commits: int, rows: int = 60, start: int = 0) -> int:
    """``commits`` small commits; returns the next free id."""
    for i in range(commits):
        append(table, batch(start + i * rows, rows))
    return start + commits * rows


def read_all(table: Any) -> pa.Table:
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def row_multiset(table: Any) -> Counter:
    data = read_all(table)
    return Counter(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))


def checksum(table: Any) -> str:
    """Order-independent checksum of all rows."""
    digest = 0
    for row, count in row_multiset(table).items():
        h = int.from_bytes(hashlib.sha256(repr(row).encode()).digest()[:8], "big")
        digest = (digest + h * count) % (1 << 64)
    return f"{digest:016x}"


def data_file_count(table: Any) -> int:
    return len(live_entries(table, latest_snapshot(table)))


def snapshot_ids(table: Any) -> list[int]:
    snap = latest_snapshot(table)
    return list(range(1, snap.id + 1)) if snap else []


def files_on_disk(warehouse: str) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(warehouse):
        for f in files:
            out.add(os.path.join(root, f))
    return out


def row_multiset_of_table(data: pa.Table) -> Counter:
    """Multiset of the rows of an Arrow table."""
    return Counter(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))


def manifest_lists(table: Any, snapshot: Any) -> tuple[list, list]:
    """A snapshot's (base, delta) manifest metas."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    lists = ManifestListManager(table)
    return lists.read_base(snapshot), lists.read_delta(snapshot)


def manifest_entries(table: Any, metas: list) -> list:
    """Every entry (ADD and DELETE) of ``metas``, through pypaimon's reader."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    files = ManifestFileManager(table)
    return [e for m in metas for e in files.read(m.file_name, file_size=m.file_size)]


def overwrite_partition(table: Any, partition: str, start: int, rows: int = 4) -> None:
    """One OVERWRITE of partition ``p=partition`` through plain pypaimon (DELETE entries)."""
    commit_arrow(table, batch(start, rows, partitions=(partition,)), overwrite={"p": partition})


def _plan(warehouse, planner, filter_text=None, **options):
    opts = parse_options({"warehouse": warehouse, "table": "db.t", **options})
    plan = plan_for(opts, filter_text, planner=planner)
    groups = {
        (g.format, g.schema_id): (sorted(g.paths), g.rows, g.size, [(f.name, f.file_name) for f in g.fields])
        for g in plan.native
    }
    return plan.snapshot_id, groups, sorted(p for p, _ in plan.python_files)


def same_plan(warehouse, filter_text=None, **options):
    """Our planner's plan of ``db.t`` equals pypaimon's (the reference); returns it."""
    ours = _plan(warehouse, "auto", filter_text, **options)
    reference = _plan(warehouse, "pypaimon", filter_text, **options)
    assert ours == reference, filter_text
    return ours
