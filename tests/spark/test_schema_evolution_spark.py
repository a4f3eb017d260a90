"""Schema evolution seen from Spark.

``write.merge-schema=true``: a DataFrame column the table lacks is added (nullable) on the
written branch before the data commit; everything else is checked first; plain pypaimon
reads the result (old rows null in the new column). And the data source's reads after
``alter_table`` (batch and time travel) match plain pypaimon's."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.tag import create_tag
from airflow_provider_paimon.spark import write_table
from airflow_provider_paimon.spark.types import SchemaMismatchError

BASE = pa.schema([("id", pa.int64()), ("v", pa.string())])
MERGE = {"write.merge-schema": "true"}


def _schema_files(warehouse: str, branch: str | None = None) -> list[str]:
    d = os.path.join(warehouse, "db.db", "t")
    if branch:
        d = os.path.join(d, "branch", f"branch-{branch}")
    return sorted(os.listdir(os.path.join(d, "schema")))


@pytest.fixture()
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
        ("id BIGINT, score DOUBLE", "missing column\\(s\\) v"),
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


def test_explicit_cast_is_refused(spark, warehouse, t):
    df = spark.createDataFrame([(2, "b")], "id BIGINT, v STRING")
    with pytest.raises(InvalidArgumentError, match="explicit-cast' is not supported"):
        write_table(df, "db.t", warehouse=warehouse, options={**MERGE, "write.merge-schema.explicit-cast": "true"})


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
