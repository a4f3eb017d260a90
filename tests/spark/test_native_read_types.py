"""``read_table`` on every type and on schema evolution gives exactly pypaimon's rows.

Tables are written by plain pypaimon (Parquet and ORC), so the files are the ones
Paimon writes: partition columns inside the files, timestamps as INT64, decimals
as fixed-length binary. Schema evolution uses pypaimon's own ``alter_table``
(add, rename, drop, widen, drop-and-re-add a name) with commits between changes,
so the snapshot holds files of several schema ids that must be mapped by field id.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pytest
from native_read_support import pypaimon_arrow, same_rows_as_pypaimon

from airflow_provider_paimon.spark.native import read_table

UTC = dt.timezone.utc

TYPES = pa.schema(
    [
        ("id", pa.int64()),
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("dec_big", pa.decimal128(30, 6)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("ts_ms", pa.timestamp("ms")),
        ("ts_ltz", pa.timestamp("us", tz="UTC")),
        ("ts_ns", pa.timestamp("ns")),
        ("arr", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.float64())),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
        ("p", pa.string()),
    ]
)


def _rows(rng: random.Random, start: int, count: int) -> dict[str, list]:
    def maybe(value):
        return None if rng.random() < 0.2 else value

    cols: dict[str, list] = {name: [] for name in TYPES.names}
    for k in range(start, start + count):
        cols["id"].append(k)
        cols["b"].append(maybe(rng.random() < 0.5))
        cols["i8"].append(maybe(rng.randint(-128, 127)))
        cols["i16"].append(maybe(rng.randint(-32768, 32767)))
        cols["i32"].append(maybe(rng.randint(-(2**31), 2**31 - 1)))
        cols["f32"].append(maybe(rng.choice([1.5, -0.0, float("nan"), float("inf"), 3.25])))
        cols["f64"].append(maybe(rng.choice([rng.uniform(-1e9, 1e9), float("nan"), -0.0, 1e300])))
        cols["dec"].append(maybe(decimal.Decimal(rng.randint(-10**9, 10**9)) / 100))
        cols["dec_big"].append(maybe(decimal.Decimal(rng.randint(-10**29, 10**29)) / 10**6))
        cols["s"].append(maybe(rng.choice(["", "a", "Ünïcode ✓", "x" * 300])))
        cols["bin"].append(maybe(bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 5)))))
        cols["day"].append(maybe(dt.date(1500, 1, 1) + dt.timedelta(days=rng.randint(0, 250_000))))
        cols["ts"].append(maybe(dt.datetime(1900, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 4 * 10**15))))
        cols["ts_ms"].append(maybe(dt.datetime(2026, 1, 1, 1, 2, 3, rng.randint(0, 999) * 1000)))
        cols["ts_ltz"].append(maybe(dt.datetime(2026, 11, 1, tzinfo=UTC) + dt.timedelta(microseconds=rng.randint(0, 10**12))))
        cols["ts_ns"].append(maybe(dt.datetime(2026, 1, 1, 0, 0, 0, rng.randint(0, 999999))))
        cols["arr"].append(maybe([maybe(rng.randint(0, 9)) for _ in range(rng.randint(0, 3))]))
        cols["m"].append(maybe([(f"k{j}", maybe(rng.random())) for j in range(rng.randint(0, 2))]))
        cols["st"].append(maybe({"x": maybe(rng.randint(0, 9)), "y": maybe(["a", None])}))
        cols["p"].append(rng.choice(["north", "south"]))
    return cols


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_every_type_matches_pypaimon(spark, probe, fmt):
    rng = random.Random(16)
    table = probe.create("db.types", TYPES, partition_keys=["p"], options={"file.format": fmt})
    for k in range(2):
        probe.write_arrow("db.types", pa.Table.from_pydict(_rows(rng, k * 60, 60), schema=TYPES))
    df = read_table(spark, "db.types", warehouse=probe.warehouse)
    plan = df.native_plan
    # nanoseconds (and ORC's dates and timestamps) are decoded differently by Spark:
    # such a table goes through the Python reader, every file, and says so
    assert plan.native_files == 0 and plan.python_file_count > 0
    assert ("ORC date/timestamp" if fmt == "orc" else "nanosecond timestamp") in plan.summary()
    ours, theirs = same_rows_as_pypaimon(df, table)
    assert ours == theirs and len(ours) == 120

    # without the nanosecond column every file is read by Spark itself
    probe.catalog.alter_table("db.types", [_drop("ts_ns")] + ([_drop(c) for c in ("ts", "ts_ms", "ts_ltz", "day")] if fmt == "orc" else []))
    table = probe.table("db.types")
    df = read_table(spark, "db.types", warehouse=probe.warehouse)
    assert df.native_plan.python_file_count == 0 and df.native_plan.native_files > 0
    ours, theirs = same_rows_as_pypaimon(df, table)
    assert ours == theirs and len(ours) == 120
    # the schema is the table's (the data source's type table)
    from airflow_provider_paimon.spark.datasource.types import table_spark_schema

    assert [(f.name, f.dataType) for f in df.schema.fields] == [
        (f.name, f.dataType) for f in table_spark_schema(table).fields
    ]


def _drop(name):
    from pypaimon.schema.schema_change import SchemaChange

    return SchemaChange.drop_column(name)


EVOLVE = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("f", pa.float32()), ("old", pa.string()),
                    ("dec", pa.decimal128(6, 2)), ("p", pa.string())])


def test_schema_evolution_maps_files_by_field_id(spark, probe):
    """Files of five schema ids, mapped as Paimon maps them: by id, NULL for added, cast for widened."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    name = "db.evolve"
    probe.create(name, EVOLVE, partition_keys=["p"])
    wh = probe.warehouse

    def write(rows):
        table = probe.table(name)
        from airflow_provider_paimon.spark.datasource.types import table_arrow_schema

        probe.write_arrow(name, pa.Table.from_pylist(rows, schema=table_arrow_schema(table)))

    write([{"id": i, "a": i * 10, "f": i + 0.1, "old": f"o{i}", "dec": decimal.Decimal(i) / 4, "p": "x"} for i in range(4)])
    alter = probe.catalog.alter_table
    alter(name, [SchemaChange.add_column("added", AtomicType("STRING"))])
    write([{"id": 10, "a": 1, "f": 2.5, "old": "o10", "dec": decimal.Decimal("1.50"), "added": "new", "p": "y"}])
    alter(name, [SchemaChange.rename_column("old", "renamed")])
    write([{"id": 20, "a": 2, "f": 3.5, "renamed": "r20", "dec": None, "added": None, "p": "x"}])
    alter(name, [SchemaChange.update_column_type("a", AtomicType("BIGINT")),
                 SchemaChange.update_column_type("f", AtomicType("DOUBLE")),
                 SchemaChange.update_column_type("dec", AtomicType("DECIMAL(12, 3)"))])
    write([{"id": 30, "a": 2**40, "f": 0.1, "renamed": "r30", "dec": decimal.Decimal("7.125"), "added": "z", "p": "y"}])
    alter(name, [SchemaChange.drop_column("added")])
    alter(name, [SchemaChange.add_column("added", AtomicType("STRING"))])  # same name, new id: old values stay gone
    write([{"id": 40, "a": 3, "f": 1.0, "renamed": None, "dec": None, "added": "again", "p": "x"}])

    table = probe.table(name)
    df = read_table(spark, name, warehouse=wh)
    plan = df.native_plan
    assert plan.python_file_count == 0
    assert len({g.schema_id for g in plan.native}) >= 4
    explained = plan.explain()
    assert "old->renamed" in explained and "added (NULL)" in explained and "cast" in explained
    ours, theirs = same_rows_as_pypaimon(df, table)
    assert ours == theirs and len(ours) == 8
    got = {r["id"]: r for r in df.collect()}
    assert got[10]["added"] is None and got[40]["added"] == "again"  # re-added name: old data not revived
    assert got[0]["renamed"] == "o0" and got[0]["a"] == 0 and got[30]["a"] == 2**40
    assert df.schema["a"].dataType.simpleString() == "bigint"
    # the same DataFrame answers projections and filters over the mapped columns
    assert df.where("renamed LIKE 'o%'").count() == 5
    assert sorted(r[0] for r in df.select("dec").where("dec IS NOT NULL").collect()) == sorted(
        v for v in pypaimon_arrow(table).column("dec").to_pylist() if v is not None
    )


def test_type_change_spark_would_cast_differently_goes_through_python(spark, probe):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    name = "db.tostring"
    probe.create(name, pa.schema([("id", pa.int64()), ("d", pa.float64())]))
    probe.write_arrow(name, pa.table({"id": [1, 2], "d": [0.1, 1e20]}))
    probe.catalog.alter_table(name, [SchemaChange.update_column_type("d", AtomicType("STRING"))])
    probe.write_arrow(name, pa.table({"id": [3], "d": ["x"]}))
    df = read_table(spark, name, warehouse=probe.warehouse)
    assert df.native_plan.python_reasons == {"type change Spark would cast differently": 1}
    assert df.native_plan.native_files == 1
    ours, theirs = same_rows_as_pypaimon(df, probe.table(name))
    assert ours == theirs and len(ours) == 3


def test_filter_on_a_value_column_prunes_files_by_statistics(spark, probe):
    """pypaimon's writer keeps min/max per file, so ``id >= 100`` skips the first commit's file."""
    name = "db.stats"
    probe.create(name, pa.schema([("id", pa.int64()), ("s", pa.string())]), options={"metadata.stats-mode": "full"})
    probe.write_arrow(name, pa.table({"id": list(range(10)), "s": ["a"] * 10}))
    probe.write_arrow(name, pa.table({"id": list(range(100, 110)), "s": ["b"] * 10}))
    everything = read_table(spark, name, warehouse=probe.warehouse)
    df = read_table(spark, name, warehouse=probe.warehouse, filter="id >= 105 OR s = 'zzz'")
    assert everything.native_plan.native_files == 2
    assert df.native_plan.native_files == 1
    assert sorted(r.id for r in df.collect()) == list(range(105, 110))
