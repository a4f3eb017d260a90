"""Partition spec text -> the Python value pypaimon holds for the column's Paimon type."""

from __future__ import annotations

import datetime as dt
import re
import time
from decimal import Decimal

import pyarrow as pa
import pytest

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partitions import (
    format_partition_value,
    parse_partition_spec,
    parse_partition_value,
    parse_partition_values,
    split_partition_text,
)

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("type_text", "text", "expected"),
    [
        ("STRING", " eu ", " eu "),
        ("VARCHAR(3)", "abc", "abc"),
        ("TINYINT", "-128", -128),
        ("INT NOT NULL", " 7 ", 7),
        ("BIGINT", "1099511627776", 2**40),
        ("FLOAT", "0.1", pa.scalar(0.1, pa.float32()).as_py()),
        ("DOUBLE", "-2.5e3", -2500.0),
        ("DECIMAL(10, 2)", "1.5", Decimal("1.50")),
        ("DECIMAL(10, 2)", "-0.250", Decimal("-0.25")),
        ("BOOLEAN", "TRUE", True),
        ("BOOLEAN", "false", False),
        ("DATE", "2026-11-03", dt.date(2026, 11, 3)),
        ("TIMESTAMP(6)", "2026-11-03 10:15", dt.datetime(2026, 11, 3, 10, 15)),
        ("TIMESTAMP(6)", "2026-11-03T10:15:00.123", dt.datetime(2026, 11, 3, 10, 15, 0, 123000)),
        ("TIMESTAMP(3)", "2026-11-03 10:15:00.120000", dt.datetime(2026, 11, 3, 10, 15, 0, 120000)),
        ("TIMESTAMP(6)", "2026-11-03", dt.datetime(2026, 11, 3)),
        ("TIMESTAMP_LTZ(6)", "2026-11-03 10:15:00Z", dt.datetime(2026, 11, 3, 10, 15, tzinfo=UTC)),
        ("TIMESTAMP_LTZ(6)", "2026-11-03T10:15:00+01:00", dt.datetime(2026, 11, 3, 9, 15, tzinfo=UTC)),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "2026-11-03 10:15-0230",
         dt.datetime(2026, 11, 3, 12, 45, tzinfo=UTC)),
        ("TIME(0)", "10:15", dt.time(10, 15)),
        ("DATE", "__DEFAULT_PARTITION__", None),
    ],
)
def test_values_parse_to_the_columns_python_value(type_text, text, expected):
    assert parse_partition_value("p", type_text, text) == expected


@pytest.mark.parametrize(
    ("type_text", "text", "hint"),
    [
        ("DATE", "2026-13-45", "month must be in 1..12"),
        ("DATE", "2026-11-3", "yyyy-MM-dd"),
        ("DATE", "20760", "20760 is 2026-11-03"),  # a legacy folder name copied by hand
        ("INT", "abc", "not a whole number"),
        ("INT", "1.0", "not a whole number"),
        ("INT", "3000000000", "out of range"),
        ("TINYINT", "128", "out of range -128..127"),
        ("BIGINT", "1e3", "not a whole number"),
        ("DECIMAL(10, 2)", "1.555", "more than 2 decimal places"),
        ("DECIMAL(4, 2)", "100", "more than 2 digits before the decimal point"),
        ("DECIMAL(10, 2)", "NaN", "not a number"),
        ("BOOLEAN", "yes", "true or false"),
        ("BOOLEAN", "1", "true or false"),
        ("TIMESTAMP(6)", "2026-11-03 25:00", "hour must be in 0..23"),
        ("TIMESTAMP(6)", "2026-11-03 10:15Z", "takes no offset"),
        ("TIMESTAMP(3)", "2026-11-03 10:15:00.0001", "precision of 3"),
        ("TIMESTAMP_LTZ(6)", "yesterday", "yyyy-MM-dd HH:mm:ss"),
        ("VARCHAR(3)", "abcd", "longer than 3 characters"),
        ("DOUBLE", "one", "not a number"),
    ],
)
def test_bad_values_name_column_type_value_and_the_fix(type_text, text, hint):
    with pytest.raises(InvalidArgumentError) as err:
        parse_partition_value("dt", type_text, text, what="option 'overwrite-partition'")
    message = str(err.value)
    assert message.startswith("option 'overwrite-partition': value ")
    assert repr(text) in message and "'dt'" in message and type_text in message
    assert hint in message


def test_unsupported_partition_type_is_refused():
    with pytest.raises(InvalidArgumentError, match="'b' has type BYTES, which a partition spec cannot select"):
        parse_partition_value("b", "BYTES", "x")


def test_timestamp_ltz_without_offset_is_local_time(monkeypatch):
    """As Paimon Java reads it in the JVM's default zone."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        value = parse_partition_value("ts", "TIMESTAMP_LTZ(6)", "2026-11-03 10:15:00")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert value == dt.datetime(2026, 11, 3, 15, 15, tzinfo=UTC)


def test_spec_checks_columns_and_uses_the_tables_default_name():
    types = {"dt": "DATE", "hr": "INT"}
    assert parse_partition_values(types, {"dt": "2026-11-03", "hr": "NULLPART"}, "NULLPART") == {
        "dt": dt.date(2026, 11, 3), "hr": None,
    }
    with pytest.raises(InvalidArgumentError, match=re.escape("names region, which is not a partition column of db.t")):
        parse_partition_values(types, {"region": "eu"}, table="db.t")
    with pytest.raises(InvalidArgumentError, match="is not partitioned"):
        parse_partition_values({}, {"dt": "2026-11-03"})
    with pytest.raises(InvalidArgumentError, match="COLUMN=VALUE"):
        split_partition_text("dt")
    assert split_partition_text("dt=2026-11-03,hr=3") == {"dt": "2026-11-03", "hr": "3"}


def test_parse_spec_of_a_real_table(tmp_path):
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    schema = pa.schema([("d", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")), ("x", pa.int32())])
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        schema, partition_keys=["d", "ts"], options={"partition.default-name": "NONE"}), False)
    table = catalog.get_table("db.t")
    assert parse_partition_spec(table, {"d": "2026-11-03", "ts": "NONE"}) == {
        "d": dt.date(2026, 11, 3), "ts": None,
    }
    with pytest.raises(InvalidArgumentError, match=re.escape("not a partition column of db.t")):
        parse_partition_spec(table, {"x": "1"})


@pytest.mark.parametrize(
    ("type_text", "value"),
    [
        ("BOOLEAN", True),
        ("DATE", dt.date(2026, 11, 3)),
        ("TIMESTAMP(6)", dt.datetime(2026, 11, 3, 10, 15, 0, 5)),
        ("TIMESTAMP_LTZ(6)", dt.datetime(2026, 11, 3, 10, 15, tzinfo=UTC)),
        ("DECIMAL(10, 2)", Decimal("1.50")),
        ("INT", None),
    ],
)
def test_formatted_values_parse_back(type_text, value):
    assert parse_partition_value("p", type_text, format_partition_value(value)) == value
