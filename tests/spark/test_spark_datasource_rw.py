"""Batch read and write through the ``paimon`` data source, on real Spark and real files."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark

T = "db.events"


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def _events(spark, start: int, end: int, parts: int = 2):
    return spark.range(start, end, numPartitions=parts).selectExpr(
        "id", "concat('d', cast(id % 3 as string)) as day", "cast(id * 2 as int) as v"
    )


def test_append_creates_table_and_each_write_is_one_snapshot(spark, paimon_io, probe):
    read, write = paimon_io
    write(_events(spark, 0, 100, parts=3), T, create_table="true", partition_keys="day")
    assert probe.snapshot_ids(T) == [1]
    write(_events(spark, 100, 150, parts=2), T)
    assert probe.snapshot_ids(T) == [1, 2]
    latest = probe.latest(T)
    assert latest.commit_kind == "APPEND"
    df = read(T)
    assert df.schema.fieldNames() == ["id", "day", "v"]
    assert _rows(df) == _rows(_events(spark, 0, 150))
    assert probe.table(T).partition_keys == ["day"]


def test_where_on_a_partition_column_reads_every_partition_and_filters_exactly(spark, paimon_io, warehouse):
    """Spark's filters never narrow the plan (see reader.py); partition-filter does, on purpose."""
    from airflow_provider_paimon.spark.datasource.reader import PaimonReader
    from airflow_provider_paimon.spark.options import parse_options

    read, write = paimon_io
    write(_events(spark, 0, 90), T, create_table="true", partition_keys="day")
    df = read(T)
    opts = parse_options({"warehouse": warehouse, "table": T})
    splits, _ = PaimonReader(opts, df.schema).plan()
    assert {s.partition.values[0] for s in splits} == {"d0", "d1", "d2"}
    pruned, _ = PaimonReader(parse_options({**opts.raw, "partition-filter": "day = 'd1'"}), df.schema).plan()
    assert {s.partition.values[0] for s in pruned} == {"d1"}

    got = _rows(df.where("day = 'd1' and v > 10"))
    assert got == _rows(_events(spark, 0, 90).where("day = 'd1' and v > 10"))
    assert len(got) > 0
    assert df.count() == 90  # the filtered query above did not narrow this one


def test_projection_with_columns_option_and_user_schema(spark, paimon_io):
    read, write = paimon_io
    write(_events(spark, 0, 10), T, create_table="true")
    df = read(T, columns="v,id")
    assert df.schema.fieldNames() == ["v", "id"]
    assert _rows(df) == sorted((i * 2, i) for i in range(10))


def test_user_schema_subset_projects(spark, paimon_io, warehouse):
    _, write = paimon_io
    write(_events(spark, 0, 5), T, create_table="true")
    df = (
        spark.read.format("paimon").schema("day STRING, id BIGINT")
        .option("warehouse", warehouse).option("table", T).load()
    )
    assert _rows(df) == sorted((f"d{i % 3}", i) for i in range(5))


def test_overwrite_whole_table_static_partition_and_dynamic(spark, paimon_io, probe):
    read, write = paimon_io
    write(_events(spark, 0, 30), T, create_table="true", partition_keys="day")
    # dynamic: only partitions present in the new data are replaced
    new_d1 = spark.createDataFrame([(1000, "d1", 7)], "id BIGINT, day STRING, v INT")
    write(new_d1, T, mode="overwrite", overwrite_mode="dynamic")
    assert probe.latest(T).commit_kind == "OVERWRITE"
    expected = [r for r in _rows(_events(spark, 0, 30)) if r[1] != "d1"] + [(1000, "d1", 7)]
    assert _rows(read(T)) == sorted(expected)
    # static partition: replace d0 only (with rows of d0)
    new_d0 = spark.createDataFrame([(2000, "d0", 8)], "id BIGINT, day STRING, v INT")
    write(new_d0, T, mode="overwrite", overwrite_partition="day=d0")
    expected = [r for r in expected if r[1] != "d0"] + [(2000, "d0", 8)]
    assert _rows(read(T)) == sorted(expected)
    # plain overwrite: the whole table, even though only d2 is written
    new_d2 = spark.createDataFrame([(3000, "d2", 9)], "id BIGINT, day STRING, v INT")
    write(new_d2, T, mode="overwrite")
    assert _rows(read(T)) == [(3000, "d2", 9)]
    assert len(probe.snapshot_ids(T)) == 4


def test_time_travel_by_snapshot_and_tag(spark, paimon_io, probe):
    read, write = paimon_io
    write(_events(spark, 0, 10), T, create_table="true")
    probe.table(T).create_tag("v1")
    write(_events(spark, 10, 20), T)
    assert read(T).count() == 20
    assert _rows(read(T, snapshot_id=1)) == _rows(_events(spark, 0, 10))
    assert _rows(read(T, tag="v1")) == _rows(_events(spark, 0, 10))
    assert read(T, snapshot_id=2).count() == 20


def test_branch_write_and_read(spark, paimon_io, probe):
    read, write = paimon_io
    write(_events(spark, 0, 10), T, create_table="true")
    table = probe.table(T)
    table.create_tag("base")
    table.branch_manager().create_branch("fix", tag_name="base")
    write(_events(spark, 100, 105), T, branch="fix")
    assert read(T, branch="fix").count() == 15
    assert read(T).count() == 10
    assert probe.snapshot_ids(T) == [1]
    assert probe.snapshot_ids(T, "fix") == [1, 2]


def test_primary_key_table_merges_on_read(spark, paimon_io, probe):
    read, write = paimon_io
    first = spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0)], "k INT, name STRING, x DOUBLE")
    write(first, T, create_table="true", primary_keys="k", bucket="2")
    upsert = spark.createDataFrame([(2, "B", 20.0), (3, "c", 3.0)], "k INT, name STRING, x DOUBLE")
    write(upsert, T)
    assert probe.table(T).primary_keys == ["k"]
    assert _rows(read(T)) == [(1, "a", 1.0), (2, "B", 20.0), (3, "c", 3.0)]
    assert read(T).schema["k"].nullable is False
    # a value filter must see merged rows only: k=2 was 2.0, now 20.0
    assert _rows(read(T).where("x < 5")) == [(1, "a", 1.0), (3, "c", 3.0)]


def test_empty_table_and_empty_append(spark, paimon_io, probe):
    read, write = paimon_io
    empty = spark.createDataFrame([], "id BIGINT, s STRING")
    write(empty, T, create_table="true")
    assert probe.snapshot_ids(T) == []
    assert read(T).count() == 0
    write(spark.createDataFrame([(1, "x")], "id BIGINT, s STRING"), T)
    write(empty, T)
    assert probe.snapshot_ids(T) == [1]
