"""Schema evolution seen from Spark.

``write.merge-schema=true``: a DataFrame column the table lacks is added (nullable) on the
written branch before the data commit; everything else is checked first; plain pypaimon
reads the result (old rows null in the new column). And the data source's reads after
``alter_table`` (batch and time travel) match plain pypaimon's."""

from __future__ import annotations

import decimal
import os
import re

import pyarrow as pa
import pytest

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.tag import create_tag
from airflow_provider_paimon.spark import write_table
from airflow_provider_paimon.spark.datasource.types import SchemaMismatchError

BASE = pa.schema([("id", pa.int64()), ("v", pa.string())])
MERGE = {"write.merge-schema": "true"}


def _schema_files(warehouse: str, branch: str | None = None, table: str = "t") -> list[str]:
    d = os.path.join(warehouse, "db.db", table)
    if branch:
        d = os.path.join(d, "branch", f"branch-{branch}")
    return sorted(os.listdir(os.path.join(d, "schema")))


@pytest.fixture
def t(probe):
    probe.create("db.t", BASE)
    probe.write_arrow("db.t", pa.Table.from_pylist([{"id": 1, "v": "a"}], schema=BASE))
    return probe


def _rows(probe, branch=None):
    data = probe.read_arrow("db.t", branch)
    return sorted(tuple(r.values()) for r in data.to_pylist())


def test_new_columns_added_and_written_in_one_write(spark, warehouse, t, paimon_io):
    _, write = paimon_io
    df = spark.createDataFrame([(2, "b", 1.5, "x")], "id BIGINT, v STRING, score DOUBLE, tag STRING")
    write(df, "db.t", **{"write.merge-schema": "true"})
    assert _schema_files(warehouse) == ["schema-0", "schema-1"]  # both columns in one schema
    assert t.table("db.t").field_names == ["id", "v", "score", "tag"]
    assert t.snapshot_ids("db.t") == [1, 2]
    assert _rows(t) == [(1, "a", None, None), (2, "b", 1.5, "x")]
    # the same DataFrame again: nothing to add, no new schema
    write(df, "db.t", **{"write.merge-schema": "true"})
    assert _schema_files(warehouse) == ["schema-0", "schema-1"] and t.snapshot_ids("db.t") == [1, 2, 3]


def test_without_the_option_an_extra_column_is_the_usual_error(spark, warehouse, t, paimon_io):
    _, write = paimon_io
    before = t.state()
    df = spark.createDataFrame([(2, "b", 1.5)], "id BIGINT, v STRING, score DOUBLE")
    with pytest.raises(Exception, match="column\\(s\\) not in the table: score"):
        write(df, "db.t")
    assert t.state() == before and _schema_files(warehouse) == ["schema-0"]


@pytest.mark.parametrize(
    ("ddl", "message"),
    [
        ("id INT, v STRING, score DOUBLE", "column id is int in the DataFrame but bigint in the table"),
        ("id BIGINT, v INT, score DOUBLE", "column v is int in the DataFrame but string in the table"),
        ("id BIGINT, v STRING, V2 STRING, tags ARRAY<STRING>", "only atomic columns"),
        ("id BIGINT, v STRING, ID STRING", "differs from existing column 'id' only by case"),
    ],
)
def test_other_mismatches_refused_before_any_schema_change(spark, warehouse, t, ddl, message):
    df = spark.createDataFrame([], ddl)
    before = t.state()
    with pytest.raises((SchemaMismatchError, InvalidArgumentError), match=message):
        write_table(df, "db.t", warehouse=warehouse, options=MERGE)
    assert t.state() == before and _schema_files(warehouse) == ["schema-0"]


def test_explicit_cast_alone_is_refused(spark, warehouse, t):
    df = spark.createDataFrame([(2, "b")], "id BIGINT, v STRING")
    with pytest.raises(InvalidArgumentError, match=re.escape("explicit-cast' needs 'write.merge-schema'")):
        write_table(df, "db.t", warehouse=warehouse, options={"write.merge-schema.explicit-cast": "true"})


# --- widening, explicit casts and missing columns, on both write paths -----------------------

NUM = pa.schema([("id", pa.int64()), ("n", pa.int32()), ("f", pa.float32()), ("d", pa.decimal128(10, 2)),
                 ("v", pa.string())])
PATHS = ["datasource", "native"]


@pytest.fixture
def num(probe):
    probe.create("db.n", NUM)
    probe.write_arrow("db.n", pa.Table.from_pylist(
        [{"id": 1, "n": 10, "f": 0.5, "d": decimal.Decimal("1.25"), "v": "a"}], schema=NUM))
    return probe


def _write(path, spark, warehouse, df, options):
    if path == "native":
        write_table(df, "db.n", warehouse=warehouse, options=options)
    else:
        writer = df.write.format("paimon").mode("append").option("warehouse", warehouse).option("table", "db.n")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save()


def _num_rows(probe):
    return sorted(tuple(r.values()) for r in probe.read_arrow("db.n").to_pylist())


def _types(probe):
    return {f.name: f.type.type for f in probe.table("db.n").table_schema.fields}


@pytest.mark.parametrize("path", PATHS)
def test_wider_dataframe_types_widen_the_table_in_one_schema_change(spark, warehouse, num, path):
    df = spark.createDataFrame([(2, 2**40, 0.1, decimal.Decimal("123456789.125"), "b")],
                               "id BIGINT, n BIGINT, f DOUBLE, d DECIMAL(12,3), v STRING")
    _write(path, spark, warehouse, df, MERGE)
    assert _schema_files(warehouse, table="n") == ["schema-0", "schema-1"]
    assert _types(num) == {"id": "BIGINT", "n": "BIGINT", "f": "DOUBLE", "d": "DECIMAL(12, 3)", "v": "STRING"}
    # plain pypaimon reads the old row through the widened types, the new one exactly
    assert _num_rows(num) == [(1, 10, 0.5, decimal.Decimal("1.250"), "a"),
                              (2, 2**40, 0.1, decimal.Decimal("123456789.125"), "b")]
    # without the option the same DataFrame against the old types was the usual error
    num.create("db.m", NUM)
    with pytest.raises(SchemaMismatchError, match="column n is bigint in the DataFrame but int"):
        write_table(df, "db.m", warehouse=warehouse)


@pytest.mark.parametrize("path", PATHS)
def test_explicit_cast_casts_to_the_table_type_and_keeps_the_schema(spark, warehouse, num, path):
    df = spark.createDataFrame([(2, 7.0, 0.25, 3.5, "b"), (3, None, None, None, None)],
                               "id INT, n FLOAT, f FLOAT, d DOUBLE, v STRING")
    with pytest.raises(Exception, match="explicit-cast=true to cast"):
        _write(path, spark, warehouse, df, MERGE)
    _write(path, spark, warehouse, df, {**MERGE, "write.merge-schema.explicit-cast": "true"})
    assert _schema_files(warehouse, table="n") == ["schema-0"]  # the table keeps its types
    assert _types(num) == {"id": "BIGINT", "n": "INT", "f": "FLOAT", "d": "DECIMAL(10, 2)", "v": "STRING"}
    assert _num_rows(num) == [(1, 10, 0.5, decimal.Decimal("1.25"), "a"),
                              (2, 7, 0.25, decimal.Decimal("3.50"), "b"), (3, None, None, None, None)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("ddl", "row"),
    [
        ("id BIGINT, n FLOAT", (2, 1.5)),  # lost fraction (FLOAT does not widen INT: cast)
        ("id BIGINT, n FLOAT", (2, float("nan"))),
        ("id BIGINT, d DOUBLE", (2, 0.125)),  # a digit too many for DECIMAL(10,2)
        ("id BIGINT, d DECIMAL(20,1)", (2, decimal.Decimal("123456789012.0"))),  # overflow
        ("id BIGINT, f DOUBLE, n FLOAT", (2, 0.5, 3.0)),  # f DOUBLE widens; n=3.0 fits
    ],
)
def test_explicit_cast_value_that_does_not_fit_fails_and_writes_nothing(spark, warehouse, num, path, ddl, row):
    df = spark.createDataFrame([row], ddl)
    before = num.state()
    opts = {**MERGE, "write.merge-schema.explicit-cast": "true"}
    if row == (2, 0.5, 3.0):  # the control: fits exactly, missing columns read null
        _write(path, spark, warehouse, df, opts)
        assert _num_rows(num)[-1] == (2, 3, 0.5, None, None)
        return
    with pytest.raises(Exception, match="does not fit the table's type"):
        _write(path, spark, warehouse, df, opts)
    assert num.state() == before and _num_rows(num) == [(1, 10, 0.5, decimal.Decimal("1.25"), "a")]


@pytest.mark.parametrize("path", PATHS)
def test_missing_nullable_columns_are_written_as_null(spark, warehouse, num, path):
    df = spark.createDataFrame([(2, "b", True)], "id BIGINT, v STRING, flag BOOLEAN")
    _write(path, spark, warehouse, df, MERGE)
    assert num.table("db.n").field_names == ["id", "n", "f", "d", "v", "flag"]
    assert _num_rows(num) == [(1, 10, 0.5, decimal.Decimal("1.25"), "a", None), (2, None, None, None, "b", True)]


def test_key_columns_and_not_null_columns_refused_before_any_change(spark, warehouse, probe):
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("x", pa.int64(), nullable=False),
                        ("v", pa.string())])
    probe.create("db.k", schema, primary_keys=["k"], options={"bucket": "1"})
    before = probe.state()
    widen_key = spark.createDataFrame([(1, 2, "a")], "k BIGINT, x BIGINT, v STRING")
    with pytest.raises(Exception, match="primary key"):
        write_table(widen_key, "db.k", warehouse=warehouse, options=MERGE)  # data source: bucketed
    missing = spark.createDataFrame([(1, "a")], "k INT, v STRING")
    with pytest.raises(Exception, match="column x is NOT NULL in the table but missing"):
        missing.write.format("paimon").option("warehouse", warehouse).option("table", "db.k") \
            .option("write.merge-schema", "true").mode("append").save()
    assert probe.state() == before and _schema_files(warehouse, table="k") == ["schema-0"]


def test_native_write_to_a_branch_adds_the_column_there_only(spark, warehouse, t):
    table = t.table("db.t")
    create_tag(table, "t1")
    ops.create_branch(table, "fix", tag="t1")
    df = spark.createDataFrame([(2, "b", 7)], "id BIGINT, v STRING, n INT")
    result = write_table(df, "db.t", warehouse=warehouse, branch="fix", options=MERGE)
    assert result.row_count == 1
    assert _schema_files(warehouse, "fix") == ["schema-0", "schema-1"] and _schema_files(warehouse) == ["schema-0"]
    assert _rows(t, "fix") == [(1, "a", None), (2, "b", 7)]
    assert t.table("db.t").field_names == ["id", "v"] and _rows(t) == [(1, "a")]
    ops.replace_main(table, "fix")
    assert _rows(t) == [(1, "a", None), (2, "b", 7)]


def test_spark_reads_across_alter_match_pypaimon(spark, warehouse, t, paimon_io):
    """After add + rename + widen: the data source's batch read and time travel to the
    snapshot before the change read what plain pypaimon reads."""
    from airflow_provider_paimon.paimon.schema import alter_table

    read, _ = paimon_io
    t.create("db.w", pa.schema([("id", pa.int32()), ("v", pa.string())]))
    t.write_arrow("db.w", pa.Table.from_pylist([{"id": 1, "v": "a"}], schema=pa.schema([("id", pa.int32()),
                                                                                         ("v", pa.string())])))
    alter_table(t.table("db.w"), [{"op": "update_column_type", "name": "id", "type": "BIGINT"},
                                  {"op": "rename_column", "name": "v", "new_name": "val"},
                                  {"op": "add_column", "name": "n", "type": "INT"}])
    t.write_arrow("db.w", pa.Table.from_pylist([{"id": 2**40, "val": "b", "n": 5}],
                                               schema=pa.schema([("id", pa.int64()), ("val", pa.string()),
                                                                 ("n", pa.int32())])))
    expected = sorted(tuple(r.values()) for r in t.read_arrow("db.w").to_pylist())
    assert expected == [(1, "a", None), (2**40, "b", 5)]
    df = read("db.w")
    assert df.columns == ["id", "val", "n"] and str(df.schema["id"].dataType) == "LongType()"
    assert sorted(tuple(r) for r in df.collect()) == expected
    old = sorted(tuple(r.values()) for r in t.read_arrow("db.w", **{"scan.snapshot-id": "1"}).to_pylist())
    assert sorted(tuple(r) for r in read("db.w", snapshot_id=1).collect()) == old


def test_widening_write_on_a_branch_then_fast_forward(spark, warehouse, num):
    """A merge-schema write widens and adds on a branch only; fast_forward publishes rows
    and schema: plain pypaimon reads main as it read the branch."""
    table = num.table("db.n")
    ops.create_branch(table, "fix", snapshot_id=1)
    df = spark.createDataFrame([(2, 2**40, 0.5, decimal.Decimal("2.50"), "b", 9)],
                               "id BIGINT, n BIGINT, f FLOAT, d DECIMAL(10,2), v STRING, extra INT")
    write_table(df, "db.n", warehouse=warehouse, branch="fix", options=MERGE)
    assert _types(num) == {"id": "BIGINT", "n": "INT", "f": "FLOAT", "d": "DECIMAL(10, 2)", "v": "STRING"}
    branch = num.read_arrow("db.n", "fix")
    assert sorted(tuple(r.values()) for r in branch.to_pylist()) == [
        (1, 10, 0.5, decimal.Decimal("1.25"), "a", None), (2, 2**40, 0.5, decimal.Decimal("2.50"), "b", 9)]
    ops.fast_forward(table, "fix")
    main = num.read_arrow("db.n")
    assert main.schema == branch.schema and main.schema.field("n").type == pa.int64()
    assert sorted(tuple(r.values()) for r in main.to_pylist()) == sorted(tuple(r.values()) for r in branch.to_pylist())
