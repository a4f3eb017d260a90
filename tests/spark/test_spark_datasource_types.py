"""Every Spark type the data source supports round-trips exactly; others fail early."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

T = "db.types"

SCHEMA = (
    "b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT NOT NULL, i64 BIGINT, f32 FLOAT, f64 DOUBLE, "
    "dec DECIMAL(20,4), s STRING, bin BINARY, d DATE, ts TIMESTAMP, tsn TIMESTAMP_NTZ, "
    "arr ARRAY<INT>, arr_s ARRAY<STRUCT<x: INT, y: STRING>>, m MAP<STRING, BIGINT>, "
    "m_arr MAP<INT, ARRAY<DOUBLE>>, st STRUCT<a: INT, b: STRUCT<c: STRING, d: DATE>>"
)

UTC = dt.timezone.utc
ROWS = [
    (
        True, -8, -16, 32, -64, 1.5, -2.25, Decimal("1234567890123456.7890"), "héllo", b"\x00\xff",
        dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        dt.datetime(2024, 1, 2, 3, 4, 5, 654321),
        [1, None, 3], [(1, "a"), (2, None)], {"k": 1, "n": None},
        {7: [1.0, None]}, (5, ("c", dt.date(1970, 1, 1))),
    ),
    (None, None, None, 0, None, None, None, None, None, None, None, None, None,
     None, None, None, None, None),
    (False, 127, 32767, -1, 2**62, float("inf"), -0.0, Decimal("-0.0001"), "", b"",
     dt.date(1, 1, 1), dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(9999, 12, 31, 23, 59, 59),
     [], [], {}, {}, (None, None)),
]


def _sorted(rows):
    return sorted(rows, key=lambda r: r.i32)


def test_all_types_round_trip_spark_paimon_spark_and_pypaimon(spark, paimon_io, probe):
    read, write = paimon_io
    df = spark.createDataFrame(ROWS, SCHEMA)
    write(df, T, create_table="true")
    back = read(T)
    assert back.schema == df.schema  # names, types and nullability
    assert _sorted(back.collect()) == _sorted(df.collect())

    # plain pypaimon sees the same values, with Paimon's types
    arrow = probe.read_arrow(T).sort_by("i32")
    table_types = {f.name: str(f.type) for f in probe.table(T).table_schema.fields}
    assert table_types["ts"] == "TIMESTAMP_LTZ(6)"
    assert table_types["tsn"] == "TIMESTAMP(6)"
    assert table_types["i32"] == "INT NOT NULL"
    assert table_types["dec"] == "DECIMAL(20, 4)"
    first = arrow.slice(2, 1).to_pylist()[0]
    assert first["ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert first["tsn"] == dt.datetime(2024, 1, 2, 3, 4, 5, 654321)
    assert first["dec"] == Decimal("1234567890123456.7890")
    assert sorted(first["m"]) == [("k", 1), ("n", None)]
    assert first["st"] == {"a": 5, "b": {"c": "c", "d": dt.date(1970, 1, 1)}}


def test_table_written_by_pypaimon_with_all_types_reads_in_spark(spark, paimon_io, probe):
    from airflow_provider_paimon.spark.datasource.types import spark_to_arrow_schema

    read, _ = paimon_io
    df = spark.createDataFrame(ROWS, SCHEMA)
    arrow_schema = spark_to_arrow_schema(df.schema)
    data = pa.Table.from_pylist([r.asDict(recursive=True) for r in df.collect()], schema=arrow_schema)
    probe.create(T, arrow_schema)
    probe.write_arrow(T, data)
    back = read(T)
    assert back.schema == df.schema
    assert _sorted(back.collect()) == _sorted(df.collect())


def test_unsupported_type_fails_before_anything_is_written(spark, paimon_io, probe):
    _, write = paimon_io
    df = spark.sql("select 1 as id, interval '1' day as gap")
    with pytest.raises(Exception, match=r"unsupported column type.*gap"):
        write(df, T, create_table="true")
    assert probe.state() == ([], [])
    assert not probe.catalog.list_databases() or "types" not in probe.catalog.list_tables("db")
