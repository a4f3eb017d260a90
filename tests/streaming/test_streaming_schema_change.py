"""The ``paimon`` streaming source across a schema change (``alter_table``): a query that
resumes from its checkpoint after the change, and a new query, read what plain pypaimon
reads: the added column null for old rows, the renamed column with its data, the
widened column with values only the new type holds."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon import Schema
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.schema import alter_table

pytestmark = pytest.mark.spark

OLD = pa.schema([("id", pa.int32()), ("v", pa.string())])
NEW = pa.schema([("id", pa.int64()), ("val", pa.string()), ("n", pa.int32())])


def _append(warehouse, data):
    commit_arrow(load_table(open_catalog(warehouse), "db.s"), data)


def _pypaimon_rows(warehouse):
    table = load_table(open_catalog(warehouse), "db.s")
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return data.schema, sorted(tuple(r.values()) for r in data.to_pylist())


def _drain(spark, warehouse, checkpoint, name):
    """One availableNow run; (columns, rows, schema) of that run. The memory sink cannot
    resume from a checkpoint, so a resumed query collects with foreachBatch."""
    df = spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.s").load()
    seen: list = []
    if name:
        writer = df.writeStream.format("memory").queryName(name)
    else:
        writer = df.writeStream.foreachBatch(lambda batch, _id: seen.extend(tuple(r) for r in batch.collect()))
    query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination(240)
    assert not query.isActive and query.exception() is None
    if name:
        seen = [tuple(r) for r in spark.table(name).collect()]
    return df.columns, sorted(seen), df.schema


def test_stream_resumes_across_add_rename_widen_and_matches_pypaimon(spark, warehouse, tmp_path):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.s", Schema.from_pyarrow_schema(OLD), False)
    _append(warehouse, pa.Table.from_pylist([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], schema=OLD))
    checkpoint = str(tmp_path / "ck")
    cols, got, _ = _drain(spark, warehouse, checkpoint, None)
    assert cols == ["id", "v"] and got == [(1, "a"), (2, "b")]

    _append(warehouse, pa.Table.from_pylist([{"id": 3, "v": "c"}], schema=OLD))  # old schema, not yet read
    alter_table(load_table(catalog, "db.s"), [
        {"op": "update_column_type", "name": "id", "type": "BIGINT"},
        {"op": "rename_column", "name": "v", "new_name": "val"},
        {"op": "add_column", "name": "n", "type": "INT"},
    ])
    _append(warehouse, pa.Table.from_pylist([{"id": 2**40, "val": "d", "n": 5}], schema=NEW))
    schema, reference = _pypaimon_rows(warehouse)
    assert reference == [(1, "a", None), (2, "b", None), (3, "c", None), (2**40, "d", 5)]

    # the same query resumes: the snapshots after its checkpoint, read in the new schema
    cols, got, spark_schema = _drain(spark, warehouse, checkpoint, None)
    assert cols == schema.names == ["id", "val", "n"]
    assert str(spark_schema["id"].dataType) == "LongType()"
    assert got == [r for r in reference if r[0] >= 3]
    # a new query (memory sink) reads the latest snapshot in full, as plain pypaimon does
    cols, got, _ = _drain(spark, warehouse, str(tmp_path / "ck2"), "fresh")
    assert cols == ["id", "val", "n"] and got == reference
