"""Spark filters -> pypaimon predicates (no Spark job needed: pure translation + planning)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from airflow_provider_paimon.spark import filters

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("ts", pa.timestamp("us")), ("v", pa.float64())])


def _table(probe, **layout):
    table = probe.create("db.f", SCHEMA, **layout)
    return table


def test_translates_supported_filters_and_skips_the_rest(probe):
    table = _table(probe, partition_keys=["day"])
    pushed = [
        EqualTo(("day",), "d1"),
        GreaterThan(("id",), 3),
        In(("id",), (1, 2, None)),
        IsNull(("v",)),
        Not(EqualTo(("id",), 7)),
        EqualNullSafe(("day",), None),
        StringStartsWith(("day",), "d"),
        LessThanOrEqual(("v",), 2.5),
    ]
    predicate = filters.combine(pushed, table)
    assert predicate.method == "and"
    methods = [p.method for p in predicate.literals]
    assert methods == ["equal", "greaterThan", "in", "isNull", "notEqual", "isNull", "startsWith", "lessOrEqual"]
    # timestamps and nested fields are left to Spark
    assert filters.combine([EqualTo(("ts",), dt.datetime(2024, 1, 1))], table) is None
    assert filters.combine([EqualTo(("day", "x"), 1)], table) is None


def test_partition_filter_prunes_splits(probe):
    table = _table(probe, partition_keys=["day"])
    data = pa.table(
        {"id": list(range(6)), "day": ["d0", "d1", "d2"] * 2, "ts": [None] * 6, "v": [1.0] * 6}, schema=SCHEMA
    )
    probe.write_arrow("db.f", data)
    table = probe.table("db.f")
    all_splits = table.new_read_builder().new_scan().plan().splits()
    predicate = filters.combine([EqualTo(("day",), "d2")], table)
    pruned = table.new_read_builder().with_filter(predicate).new_scan().plan().splits()
    assert len(all_splits) == 3 and len(pruned) == 1
    assert pruned[0].partition.values == ["d2"]


def test_primary_key_tables_push_only_key_and_partition_filters(probe):
    table = _table(probe, partition_keys=["day"], primary_keys=["day", "id"], options={"bucket": "1"})
    assert filters.combine([GreaterThan(("v",), 1.0)], table) is None
    predicate = filters.combine([GreaterThan(("v",), 1.0), EqualTo(("id",), 1), EqualTo(("day",), "d")], table)
    assert [p.field for p in predicate.literals] == ["id", "day"]
