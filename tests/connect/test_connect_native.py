"""The native helpers on a Spark Connect session (beside tests/spark/test_native_*.py and
the native part of test_branch_redirect.py): ``read_table``, ``write_table``,
``register_views``, ``foreach_batch_writer``, compared with plain pypaimon."""

from __future__ import annotations

import pyarrow as pa
from independent_reader import rust_rows
from pypaimon import CatalogFactory, Schema
from support.pypaimon_writes import commit_rows
from test_connect_datasource import pypaimon_rows, snapshot_ids

from airflow_provider_paimon.paimon.catalog import load_table

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.int32())])


def _table(warehouse: str, name: str, rows: list[tuple], partition_keys=None) -> None:
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, partition_keys=partition_keys), False)
    if rows:
        commit_rows(catalog.get_table(name), [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def _rows(n0: int, n1: int) -> list[tuple]:
    return [(i, f"d{i % 3}", i * 2) for i in range(n0, n1)]


def test_read_table_with_filter_and_time_travel(connect_spark, warehouse):
    from airflow_provider_paimon.spark import read_table

    _table(warehouse, "db.t", _rows(0, 30), partition_keys=["day"])
    _table_append(warehouse, "db.t", _rows(30, 40))
    df = read_table(connect_spark, "db.t", warehouse=warehouse)
    assert sorted(tuple(r) for r in df.collect()) == pypaimon_rows(warehouse, "db.t") == sorted(_rows(0, 40))
    assert df.native_plan.native_files > 0  # Spark's own Parquet reader on the server
    got = read_table(connect_spark, "db.t", warehouse=warehouse, filter="day = 'd1' AND id >= 10")
    assert sorted(tuple(r) for r in got.collect()) == [r for r in sorted(_rows(0, 40)) if r[1] == "d1" and r[0] >= 10]
    old = read_table(connect_spark, "db.t", warehouse=warehouse, snapshot_id=1)
    assert sorted(tuple(r) for r in old.collect()) == sorted(_rows(0, 30))


def _table_append(warehouse: str, name: str, rows: list[tuple]) -> None:
    table = load_table(CatalogFactory.create({"warehouse": warehouse}), name)
    commit_rows(table, [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def test_write_table_commits_one_snapshot_the_independent_reader_reads(connect_spark, warehouse):
    from airflow_provider_paimon.spark import write_table

    _table(warehouse, "db.t", [], partition_keys=["day"])
    df = connect_spark.createDataFrame(_rows(0, 50), "id BIGINT, day STRING, v INT")
    result = write_table(df, "db.t", warehouse=warehouse)
    assert snapshot_ids(warehouse, "db.t") == [result.snapshot_id] == [1]
    assert pypaimon_rows(warehouse, "db.t") == sorted(_rows(0, 50))
    assert sorted(rust_rows(warehouse, "db.t")) == sorted(_rows(0, 50))
    write_table(connect_spark.createDataFrame(_rows(0, 2), "id BIGINT, day STRING, v INT"), "db.t",
                warehouse=warehouse, mode="overwrite")
    assert pypaimon_rows(warehouse, "db.t") == sorted(_rows(0, 2))


def test_register_views_for_sql(connect_spark, warehouse):
    from airflow_provider_paimon.spark import register_views

    _table(warehouse, "db.a", _rows(0, 5))
    _table(warehouse, "db.b", _rows(5, 7))
    assert register_views(connect_spark, "db", warehouse=warehouse, prefix="c_") == {"c_a": "db.a", "c_b": "db.b"}
    try:
        got = connect_spark.sql("SELECT id FROM c_a UNION ALL SELECT id FROM c_b").collect()
        assert sorted(r.id for r in got) == list(range(7))
    finally:
        connect_spark.catalog.dropTempView("c_a")
        connect_spark.catalog.dropTempView("c_b")


def test_foreach_batch_writer_commits_each_micro_batch_once(connect_spark, warehouse, tmp_path):
    from airflow_provider_paimon.spark import foreach_batch_writer

    _table(warehouse, "db.src", _rows(0, 12))
    _table(warehouse, "db.dst", [])
    cp = str(tmp_path / "cp")
    query = (
        connect_spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
        .writeStream.foreachBatch(foreach_batch_writer("db.dst", warehouse=warehouse, checkpoint_location=cp))
        .option("checkpointLocation", cp).trigger(availableNow=True).start()
    )
    query.awaitTermination(300)
    assert query.exception() is None
    assert pypaimon_rows(warehouse, "db.dst") == sorted(_rows(0, 12))
    assert snapshot_ids(warehouse, "db.dst") == [1]
