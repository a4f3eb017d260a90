"""Bad input fails with a clear message and changes nothing (no snapshot, no files).

Most checks call the data source the way Spark's planner does
(``PaimonDataSource(options).writer(schema, overwrite)`` / ``.schema()``), which
is fast; a few go through a real Spark write to show the message reaches the user.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from airflow_provider_paimon.paimon.errors import (
    BranchNotFoundError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
)
from airflow_provider_paimon.spark.datasource.source import PaimonDataSource
from airflow_provider_paimon.spark.datasource.types import SchemaMismatchError

pytestmark = pytest.mark.spark

T = "db.orders"
_TYPES = {"BIGINT": LongType(), "STRING": StringType(), "DOUBLE": DoubleType(), "INT": IntegerType()}


def ddl(text: str) -> StructType:
    """``"a BIGINT, b STRING"`` as a StructType, without a SparkSession."""
    fields = [part.split() for part in text.split(",")]
    return StructType([StructField(name, _TYPES[kind]) for name, kind in fields])


SCHEMA = ddl("id BIGINT, day STRING, amount DOUBLE")


@pytest.fixture
def table(probe):
    """``db.orders`` partitioned by day, with one snapshot (written by plain pypaimon)."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("day", pa.string()), ("amount", pa.float64())])
    probe.create(T, schema, partition_keys=["day"])
    probe.write_arrow(T, pa.table({"id": [1, 2], "day": ["d1", "d2"], "amount": [1.0, 2.0]}, schema=schema))
    state = probe.state()
    assert len(state[0]) == 1 and len(state[1]) == 2
    return state


def _source(wh, **options):
    base = {"warehouse": wh, "table": T}
    base.update({k.replace("_", "-"): v for k, v in options.items()})
    return PaimonDataSource({k: v for k, v in base.items() if v is not None})


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"warehouse": None}, InvalidArgumentError, "option 'warehouse' is missing"),
        ({"table": None}, InvalidArgumentError, "option 'table' is missing"),
        ({"table": "orders"}, InvalidArgumentError, "must be 'database.table'"),
        ({"table": "nodb.orders"}, TableNotFoundError, "database 'nodb' does not exist"),
        ({"table": "db.nope"}, TableNotFoundError, r"table db.nope does not exist \(tables in db: orders\)"),
        ({"branch": "nobranch"}, BranchNotFoundError, "branch 'nobranch' does not exist"),
        ({"tag": "notag"}, TagNotFoundError, r"tag 'notag' does not exist.*\(tags: none\)"),
        ({"snapshot_id": "7"}, SnapshotNotFoundError, r"snapshot 7 does not exist.*snapshots up to 1"),
        ({"snapshot_id": "x"}, InvalidArgumentError, "'snapshot-id' must be an integer"),
    ],
)
def test_bad_read_options(table, warehouse, probe, options, error, message):
    with pytest.raises(error, match=message):
        _source(warehouse, **options).schema()
    assert probe.state() == table


@pytest.mark.parametrize(
    ("schema_ddl", "options", "overwrite", "error", "message"),
    [
        ("id BIGINT, amount DOUBLE", {}, False, SchemaMismatchError, r"missing column\(s\) day"),
        ("id STRING, day STRING, amount DOUBLE", {}, False, SchemaMismatchError,
         "column id is string in the DataFrame but bigint in the table"),
        ("id BIGINT, day STRING, amount DOUBLE, extra INT", {}, False, SchemaMismatchError,
         r"not in the table: extra"),
        ("id BIGINT, day STRING, amount DOUBLE", {"overwrite_partition": "region=eu"}, True,
         InvalidArgumentError, "region, which is not a partition column of db.orders"),
        ("id BIGINT, day STRING, amount DOUBLE", {"overwrite_partition": "region=eu"}, False,
         InvalidArgumentError, "needs mode\\('overwrite'\\)"),
        ("id BIGINT, day STRING, amount DOUBLE", {"table": "db.missing"}, False,
         TableNotFoundError, "add .option\\('create-table', 'true'\\)"),
        ("id BIGINT, day STRING, amount DOUBLE", {"branch": "nobranch"}, False,
         BranchNotFoundError, "branch 'nobranch' does not exist"),
        ("id BIGINT, day STRING, amount DOUBLE", {"snapshot_id": "1"}, False,
         InvalidArgumentError, "are for reading"),
        ("id BIGINT, day STRING, amount DOUBLE", {"partition_keys": "id"}, False,
         InvalidArgumentError, "'partition-keys' is id but table db.orders has day"),
        ("id BIGINT, day STRING, amount DOUBLE", {"overwrite_mode": "sometimes"}, True,
         InvalidArgumentError, "'overwrite-mode' must be 'static' or 'dynamic'"),
    ],
)
def test_bad_writes_fail_before_any_file(table, warehouse, probe, schema_ddl, options, overwrite, error, message):
    with pytest.raises(error, match=message):
        _source(warehouse, **options).writer(ddl(schema_ddl), overwrite)
    assert probe.state() == table
    assert probe.catalog.list_tables("db") == ["orders"]


def test_create_table_with_unknown_key_column_creates_nothing(warehouse, probe):
    with pytest.raises(InvalidArgumentError, match="'partition-keys' names column\\(s\\) region"):
        _source(warehouse, create_table="true", partition_keys="region").writer(SCHEMA, False)
    assert probe.catalog.list_databases() == []


def test_mismatched_append_through_spark_changes_nothing(spark, table, paimon_io, probe):
    _, write = paimon_io
    bad = spark.createDataFrame([(3, 4.0)], "id BIGINT, amount DOUBLE")
    with pytest.raises(Exception, match=r"missing column\(s\) day"):
        write(bad, T)
    with pytest.raises(Exception, match="region, which is not a partition column"):
        write(spark.createDataFrame([(3, "d3", 4.0)], SCHEMA), T, mode="overwrite", overwrite_partition="region=eu")
    assert probe.state() == table


def test_failed_job_commits_nothing_and_removes_its_files(spark, table, paimon_io, probe):
    """One task fails (the others succeed and wrote files): no snapshot, no file left."""
    from pyspark.sql.functions import col, udf

    _, write = paimon_io

    @udf("double")
    def explode_on_last(x):
        if x >= 399:
            raise RuntimeError("boom in a write task")
        return float(x)

    df = (
        spark.range(0, 400, numPartitions=4)
        .select(col("id"), (col("id") % 2).cast("string").alias("day"), explode_on_last(col("id")).alias("amount"))
    )
    with pytest.raises(Exception, match="boom in a write task"):
        write(df, T)
    assert probe.state() == table
