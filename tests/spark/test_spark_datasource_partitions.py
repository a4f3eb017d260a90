"""Partition columns of every type: overwrite-partition, filters and folder names.

Tables are filled with plain pypaimon (fast, and independent of the code under test);
the data source overwrites one partition and reads with filters; plain pypaimon reads
the result back.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from typing import Any, NamedTuple

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


class Case(NamedTuple):
    spark_type: str
    arrow_type: pa.DataType
    target: Any  # the partition overwritten / selected
    other: Any  # another partition, left alone
    spec: str  # how a user writes ``target`` in overwrite-partition
    literal: str  # ``target`` as a Spark SQL literal


CASES = {
    "string": Case("STRING", pa.string(), "eu", "us", "eu", "'eu'"),
    "int": Case("INT", pa.int32(), 7, 8, "7", "7"),
    "bigint": Case("BIGINT", pa.int64(), 2**40, -5, str(2**40), str(2**40)),
    "date": Case("DATE", pa.date32(), dt.date(2026, 11, 3), dt.date(2026, 11, 4), "2026-11-03",
                 "DATE '2026-11-03'"),
    "timestamp": Case("TIMESTAMP", pa.timestamp("us", tz="UTC"),
                      dt.datetime(2026, 11, 3, 10, 15, tzinfo=UTC), dt.datetime(2026, 11, 3, 11, 0, tzinfo=UTC),
                      "2026-11-03 10:15:00+00:00", "TIMESTAMP '2026-11-03 10:15:00+00:00'"),
    "timestamp_ntz": Case("TIMESTAMP_NTZ", pa.timestamp("us"), dt.datetime(2026, 11, 3, 10, 15),
                          dt.datetime(2026, 11, 3, 9, 0), "2026-11-03T10:15", "TIMESTAMP_NTZ '2026-11-03 10:15:00'"),
    "decimal": Case("DECIMAL(10,2)", pa.decimal128(10, 2), Decimal("1.50"), Decimal("2.25"), "1.5",
                    "CAST('1.50' AS DECIMAL(10,2))"),
    "boolean": Case("BOOLEAN", pa.bool_(), True, False, "true", "true"),
}
T = "db.parts"


def _arrow(case: Case, rows: list[tuple[Any, int]]) -> pa.Table:
    schema = pa.schema([("p", case.arrow_type), ("id", pa.int64())])
    return pa.Table.from_pylist([{"p": p, "id": i} for p, i in rows], schema=schema)


def _fill(probe, case: Case, rows: list[tuple[Any, int]], **options: str) -> None:
    probe.create(T, _arrow(case, []).schema, partition_keys=["p"], options=options or None)
    probe.write_arrow(T, _arrow(case, rows))


def _key(row: tuple) -> tuple:
    return (row[0] is None, str(row[0]), row[1])


def _pypaimon_rows(probe) -> list[tuple]:
    data = probe.read_arrow(T).to_pylist()
    return sorted(((r["p"], r["id"]) for r in data), key=_key)


def _spark_rows(df, schema=None) -> list[tuple]:
    """Rows (a DataFrame's, or collected rows of ``schema``) as sorted ``(p, id)``."""
    rows = df.collect() if schema is None else df
    schema = df.schema if schema is None else schema
    out = []
    for r in rows:
        p = r["p"]
        if isinstance(p, dt.datetime) and p.tzinfo is None and schema["p"].dataType.typeName() == "timestamp":
            p = p.replace(tzinfo=UTC)  # Spark hands TIMESTAMP back naive, in the session zone (UTC)
        out.append((p, r["id"]))
    return sorted(out, key=_key)


@pytest.mark.parametrize("name", list(CASES))
def test_overwrite_partition_and_filters_on_every_partition_type(spark, paimon_io, probe, name):
    """overwrite-partition replaces exactly that partition; filters on it are exact."""
    read, write = paimon_io
    case = CASES[name]
    _fill(probe, case, [(case.target, 1), (case.target, 2), (case.other, 3), (None, 4)])

    new = spark.createDataFrame([(case.target, 10), (case.target, 11)], f"p {case.spark_type}, id BIGINT")
    write(new, T, mode="overwrite", overwrite_partition=f"p={case.spec}")

    expected = sorted([(case.target, 10), (case.target, 11), (case.other, 3), (None, 4)], key=_key)
    assert _pypaimon_rows(probe) == expected
    assert probe.latest(T).commit_kind == "OVERWRITE"

    # Filters on the partition column (pushed down, and re-checked by Spark) are exact.
    # One Spark job: a union of the filtered scans, each tagged with its condition.
    from pyspark.sql import functions as F

    conditions = {
        f"p = {case.literal}": lambda p: p == case.target,
        f"p <> {case.literal}": lambda p: p is not None and p != case.target,
        f"p >= {case.literal}": lambda p: p is not None and p >= case.target,
        "p IS NULL": lambda p: p is None,
    }
    scans = [read(T, read_min_partitions=1).where(c).withColumn("c", F.lit(c)) for c in conditions]
    union = scans[0]
    for scan in scans[1:]:
        union = union.unionByName(scan)
    got = union.collect()
    for condition, keep in conditions.items():
        rows = [r for r in got if r["c"] == condition]
        assert _spark_rows(rows, union.schema) == [r for r in expected if keep(r[0])], condition


def test_overwrite_of_the_null_partition(spark, paimon_io, probe):
    _, write = paimon_io
    case = CASES["date"]
    _fill(probe, case, [(case.target, 1), (None, 2)])
    write(spark.createDataFrame([(None, 5)], "p DATE, id BIGINT"), T, mode="overwrite",
          overwrite_partition="p=__DEFAULT_PARTITION__")
    assert _pypaimon_rows(probe) == [(case.target, 1), (None, 5)]


def test_overwrite_of_some_partition_columns_replaces_every_matching_partition(spark, paimon_io, probe):
    _, write = paimon_io
    schema = pa.schema([("d", pa.date32()), ("hr", pa.int32()), ("id", pa.int64())])
    probe.create(T, schema, partition_keys=["d", "hr"])
    day, next_day = dt.date(2026, 11, 3), dt.date(2026, 11, 4)
    probe.write_arrow(T, pa.Table.from_pylist(
        [{"d": day, "hr": 1, "id": 1}, {"d": day, "hr": 2, "id": 2}, {"d": next_day, "hr": 1, "id": 3}],
        schema=schema))
    write(spark.createDataFrame([(day, 5, 9)], "d DATE, hr INT, id BIGINT"), T, mode="overwrite",
          overwrite_partition="d=2026-11-03")
    assert sorted((r["d"], r["hr"], r["id"]) for r in probe.read_arrow(T).to_pylist()) == [
        (day, 5, 9), (next_day, 1, 3),
    ]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("date", "2026-13-45", "value '2026-13-45' of partition column 'p' is not a valid DATE"),
        ("int", "abc", "value 'abc' of partition column 'p' is not a valid INT"),
        ("boolean", "yes", "use true or false"),
        ("decimal", "1.555", "more than 2 decimal places"),
    ],
)
def test_unparsable_overwrite_value_is_refused_before_any_file_is_written(
    spark, paimon_io, probe, name, value, message
):
    _, write = paimon_io
    case = CASES[name]
    _fill(probe, case, [(case.target, 1)])
    before = probe.state()
    new = spark.createDataFrame([(case.target, 10)], f"p {case.spark_type}, id BIGINT")
    with pytest.raises(Exception, match=message):
        write(new, T, mode="overwrite", overwrite_partition=f"p={value}")
    assert probe.state() == before  # no snapshot, no data file


def test_rows_outside_the_overwritten_partition_fail_the_write_cleanly(spark, paimon_io, probe):
    _, write = paimon_io
    case = CASES["date"]
    _fill(probe, case, [(case.target, 1)])
    before = probe.state()
    rows = spark.createDataFrame([(case.target, 10), (case.other, 11)], "p DATE, id BIGINT")
    with pytest.raises(Exception, match="the DataFrame has a row with p=2026-11-04; filter the DataFrame"):
        write(rows, T, mode="overwrite", overwrite_partition="p=2026-11-03")
    assert probe.state() == before


# --- partition folder names ----------------------------------------------------------


def _folders(warehouse: str) -> set[str]:
    table_dir = os.path.join(warehouse, "db.db", "parts")
    return {n for n in os.listdir(table_dir) if n.startswith("p=")}


def test_folder_names_follow_paimon_javas_rule(spark, paimon_io, probe, warehouse):
    """Paimon Java's default (``partition.legacy-name=true``) names a DATE by its days
    since 1970 and a TIMESTAMP by ``LocalDateTime.toString``; with
    ``partition.legacy-name=false`` given when the table is created, by the formatted
    value. Either way plain pypaimon and the data source read the rows back."""
    read, write = paimon_io
    df = spark.createDataFrame([(dt.date(2026, 11, 3), 1), (None, 2)], "p DATE, id BIGINT")

    write(df, T, create_table="true", partition_keys="p")
    assert _folders(warehouse) == {"p=20760", "p=__DEFAULT_PARTITION__"}
    legacy = _pypaimon_rows(probe)
    assert legacy == [(dt.date(2026, 11, 3), 1), (None, 2)] == _spark_rows(read(T))
    probe.catalog.drop_table(T, False)

    write(df, T, create_table="true", partition_keys="p", **{"partition.legacy-name": "false"})
    assert _folders(warehouse) == {"p=2026-11-03", "p=__DEFAULT_PARTITION__"}
    assert _pypaimon_rows(probe) == legacy == _spark_rows(read(T))
    # overwrite-partition and appends keep the table's naming
    write(spark.createDataFrame([(dt.date(2026, 11, 3), 7)], "p DATE, id BIGINT"), T, mode="overwrite",
          overwrite_partition="p=2026-11-03")
    write(spark.createDataFrame([(dt.date(2026, 11, 4), 8)], "p DATE, id BIGINT"), T)
    assert _folders(warehouse) == {"p=2026-11-03", "p=2026-11-04", "p=__DEFAULT_PARTITION__"}
    assert _pypaimon_rows(probe) == [(dt.date(2026, 11, 3), 7), (dt.date(2026, 11, 4), 8), (None, 2)]


def test_timestamp_folder_names_follow_paimon_javas_rule(spark, paimon_io, warehouse):
    _, write = paimon_io
    df = spark.createDataFrame([(dt.datetime(2026, 11, 3, 10, 15), 1)], "p TIMESTAMP_NTZ, id BIGINT")
    write(df, T, create_table="true", partition_keys="p")
    assert _folders(warehouse) == {"p=2026-11-03T10%3A15"}  # Java's escaped ':'


def test_table_with_old_style_folders_reads_and_appends_identically(spark, paimon_io, probe, warehouse):
    """A table written earlier (``dt=20760`` folders) reads back the same, and new writes
    keep its naming: readers find files by the table's rule, not by a stored path."""
    read, write = paimon_io
    case = CASES["date"]
    _fill(probe, case, [(case.target, 1), (case.other, 2)])
    assert _folders(warehouse) == {"p=20760", "p=20761"}
    assert _spark_rows(read(T)) == _pypaimon_rows(probe) == [(case.target, 1), (case.other, 2)]

    write(spark.createDataFrame([(dt.date(2026, 11, 5), 3)], "p DATE, id BIGINT"), T)
    assert _folders(warehouse) == {"p=20760", "p=20761", "p=20762"}
    assert _pypaimon_rows(probe) == [(case.target, 1), (case.other, 2), (dt.date(2026, 11, 5), 3)]


@pytest.mark.parametrize(
    ("option", "value"),
    [("partition.legacy-name", "false"), ("partition.default-name", "NULLS")],
)
def test_a_write_cannot_rename_the_folders_of_an_existing_table(spark, paimon_io, probe, option, value):
    """Given as a write option, these would put the files where no reader looks."""
    _, write = paimon_io
    case = CASES["date"]
    _fill(probe, case, [(case.target, 1)])
    before = probe.state()
    df = spark.createDataFrame([(dt.date(2026, 11, 4), 2), (None, 3)], "p DATE, id BIGINT")
    with pytest.raises(Exception, match=f"option '{option}'='{value}' differs from table db.parts"):
        write(df, T, **{option: value})
    assert probe.state() == before
    assert _pypaimon_rows(probe) == [(case.target, 1)]
