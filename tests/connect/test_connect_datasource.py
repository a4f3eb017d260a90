"""The ``paimon`` source and ``register`` on a Spark Connect session (beside tests/spark/).

The suite's Connect server cannot import the package: every read and write here runs
the package ``register(spark)`` shipped with ``spark.addArtifacts``. Results are
compared with plain pypaimon and with pypaimon-rust (an independent reader).
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from independent_reader import rust_rows
from pypaimon import CatalogFactory, Schema

from airflow_provider_paimon.paimon.catalog import load_table

T = "db.events"


def pypaimon_rows(warehouse: str, table: str, branch: str | None = None) -> list[tuple]:
    t = load_table(CatalogFactory.create({"warehouse": warehouse}), table, branch)
    builder = t.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(tuple(r.values()) for r in data.to_pylist())


def snapshot_ids(warehouse: str, table: str, branch: str | None = None) -> list[int]:
    t = load_table(CatalogFactory.create({"warehouse": warehouse}), table, branch)
    return sorted(s.id for s in t.snapshot_manager().list_snapshots())


def events(spark, start: int, end: int):
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id", "concat('d', cast(id % 3 as string)) as day", "cast(id * 2 as int) as v"
    )


def expected(start: int, end: int) -> list[tuple]:
    return sorted((i, f"d{i % 3}", i * 2) for i in range(start, end))


def read(spark, warehouse, table, **options):
    reader = spark.read.format("paimon").option("warehouse", warehouse).option("table", table)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def write(df, warehouse, table, mode="append", **options):
    writer = df.write.format("paimon").mode(mode).option("warehouse", warehouse).option("table", table)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


def test_the_session_is_connect_and_register_ships_the_package_once(connect_spark, connect_server):
    from airflow_provider_paimon.spark import register
    from airflow_provider_paimon.spark.session import (
        app_id,
        app_name,
        default_parallelism,
        is_connect,
        ship_package,
        spark_conf,
    )

    assert is_connect(connect_spark)
    assert app_name(connect_spark) == "paimon-connect-tests"
    assert (app_id(connect_spark) or "").startswith("local-")
    assert default_parallelism(connect_spark) == 2  # the server's local[2]
    assert spark_conf(connect_spark)["spark.master"] == "local[2]"
    assert ship_package(connect_spark) is None  # the fixture's register(spark) shipped it
    register(connect_spark)  # again: no AttributeError, nothing shipped twice
    assert ship_package(connect_spark) is None

    def origin(_):  # where the server's Python worker imports the package from
        import airflow_provider_paimon

        return [airflow_provider_paimon.__file__]

    from pyspark.sql.functions import udf

    where = connect_spark.range(1).select(udf(lambda _: origin(_)[0], "string")("id")).first()[0]
    assert ".zip" in where and os.path.basename(where.split(".zip")[0]).startswith("airflow_provider_paimon")


def test_a_session_that_shipped_nothing_cannot_import_the_package(connect_server):
    """The server's workers have no package of their own: the virtualenv's editable
    install is hidden from them (also in the workers forked from the suite's daemon
    zygote, which has it), so what they run is only ever what a client shipped."""
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.functions import udf

    def probe(_):
        try:
            import airflow_provider_paimon
        except ModuleNotFoundError:
            return "not importable"
        return airflow_provider_paimon.__file__

    session = SparkSession.builder.remote(connect_server.url).create()  # nothing registered
    try:
        assert session.range(1).select(udf(probe, "string")("id")).first()[0] == "not importable"
    finally:
        session.stop()


def test_write_then_read_match_pypaimon_and_the_independent_reader(connect_spark, warehouse):
    write(events(connect_spark, 0, 60), warehouse, T, **{"create-table": "true", "partition-keys": "day"})
    write(events(connect_spark, 60, 90), warehouse, T)
    assert snapshot_ids(warehouse, T) == [1, 2]
    assert pypaimon_rows(warehouse, T) == expected(0, 90)
    assert sorted(rust_rows(warehouse, T)) == expected(0, 90)
    df = read(connect_spark, warehouse, T)
    assert df.schema.fieldNames() == ["id", "day", "v"]
    assert sorted(tuple(r) for r in df.collect()) == expected(0, 90)
    # time travel and projection options
    assert sorted(tuple(r) for r in read(connect_spark, warehouse, T, **{"snapshot-id": 1}).collect()) == expected(0, 60)
    assert read(connect_spark, warehouse, T, columns="v,id").schema.fieldNames() == ["v", "id"]
    # overwrite
    write(events(connect_spark, 0, 3), warehouse, T, mode="overwrite")
    assert pypaimon_rows(warehouse, T) == expected(0, 3)


def test_partition_filter_reads_only_the_named_partition(connect_spark, warehouse):
    write(events(connect_spark, 0, 30), warehouse, T, **{"create-table": "true", "partition-keys": "day"})
    got = sorted(tuple(r) for r in read(connect_spark, warehouse, T, **{"partition-filter": "day = 'd1'"}).collect())
    assert got == [row for row in expected(0, 30) if row[1] == "d1"] and got
    with pytest.raises(Exception, match="applies to batch reads only"):
        write(events(connect_spark, 0, 1), warehouse, T, **{"partition-filter": "day = 'd1'"})


def test_branch_option_and_session_redirect(connect_spark, warehouse):
    from airflow_provider_paimon.spark import register

    write(events(connect_spark, 0, 10), warehouse, T, **{"create-table": "true"})
    table = load_table(CatalogFactory.create({"warehouse": warehouse}), T)
    _branch(table, "fix")
    write(events(connect_spark, 100, 103), warehouse, T, branch="fix")
    assert pypaimon_rows(warehouse, T, "fix") == sorted(expected(0, 10) + expected(100, 103))
    assert pypaimon_rows(warehouse, T) == expected(0, 10)
    assert sorted(rust_rows(warehouse, T, branch="fix")) == pypaimon_rows(warehouse, T, "fix")
    key = "spark.paimon.branch.db.events"
    connect_spark.conf.set(key, "fix")
    try:
        register(connect_spark)  # the redirect reaches the server's workers with the class
        assert sorted(tuple(r) for r in read(connect_spark, warehouse, T).collect()) == pypaimon_rows(warehouse, T, "fix")
        write(events(connect_spark, 200, 201), warehouse, T)
    finally:
        connect_spark.conf.unset(key)
        register(connect_spark)
    assert (200, "d2", 400) in pypaimon_rows(warehouse, T, "fix")
    assert pypaimon_rows(warehouse, T) == expected(0, 10)  # main untouched
    assert sorted(tuple(r) for r in read(connect_spark, warehouse, T).collect()) == expected(0, 10)


def _branch(table, name: str) -> None:
    table.create_tag("t1")
    table.branch_manager().create_branch(name, "t1")


def test_merge_schema_adds_columns_in_one_write(connect_spark, warehouse):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema), False)
    df = connect_spark.createDataFrame([(2, "b", 1.5)], "id BIGINT, v STRING, score DOUBLE")
    write(df, warehouse, "db.t", **{"write.merge-schema": "true"})
    assert load_table(CatalogFactory.create({"warehouse": warehouse}), "db.t").field_names == ["id", "v", "score"]
    assert pypaimon_rows(warehouse, "db.t") == [(2, "b", 1.5)]
    with pytest.raises(Exception, match=r"column\(s\) not in the table: w\b"):  # without the option
        write(connect_spark.createDataFrame([(3, "c", 1.0, "x")], "id BIGINT, v STRING, score DOUBLE, w STRING"),
              warehouse, "db.t")
    assert snapshot_ids(warehouse, "db.t") == [1]


def test_streaming_read_to_write_available_now(connect_spark, warehouse, tmp_path):
    write(events(connect_spark, 0, 20), warehouse, "db.src", **{"create-table": "true"})
    write(events(connect_spark, 0, 0), warehouse, "db.dst", **{"create-table": "true"})
    query = (
        connect_spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
        .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    )
    query.awaitTermination(240)
    assert query.exception() is None
    assert pypaimon_rows(warehouse, "db.dst") == expected(0, 20)
