"""``write_table``: Spark's Parquet writer writes Paimon data files, pypaimon commits them.

Every test reads back through plain pypaimon and through the ``paimon`` data source
and compares with the DataFrame written (or with what the data source writes).
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from test_spark_datasource_types import ROWS as TYPE_ROWS
from test_spark_datasource_types import SCHEMA as TYPE_SCHEMA

from airflow_provider_paimon.spark import write_table

pytestmark = pytest.mark.spark


def _pypaimon_rows(probe, name, branch=None, key="id"):
    return sorted(probe.read_arrow(name, branch).to_pylist(), key=lambda r: (r[key] is None, r[key]))


def _spark_rows(df, key="id"):
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: (r[key] is None, r[key]))


def _table_files(warehouse, name):
    db, t = name.split(".")
    root = os.path.join(warehouse, f"{db}.db", t)
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            found.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(found)


def test_all_types_identical_via_pypaimon_and_data_source(spark, warehouse, probe, paimon_io):
    read, write = paimon_io
    df = spark.createDataFrame(TYPE_ROWS, TYPE_SCHEMA)
    # the reference: the same rows written by the data source into a twin table
    write(df, "db.ref", create_table="true")
    result = write_table(df, "db.types", warehouse=warehouse, options={"create-table": "true"})
    assert result.row_count == len(TYPE_ROWS) and result.snapshot_id == 1
    assert probe.latest("db.types").commit_kind == "APPEND"

    ours = probe.read_arrow("db.types").sort_by("i32")
    ref = probe.read_arrow("db.ref").sort_by("i32")
    assert ours.schema == ref.schema
    assert ours.to_pylist() == ref.to_pylist()
    back = read("db.types")
    assert back.schema == df.schema
    assert sorted(back.collect(), key=lambda r: r.i32) == sorted(df.collect(), key=lambda r: r.i32)

    # Paimon's layout, names and Parquet settings
    files = [f for f in _table_files(warehouse, "db.types") if f.startswith("bucket-")]
    assert files and all(f.startswith("bucket-0/data-") and f.endswith("-0.parquet") for f in files)
    meta = pq.ParquetFile(os.path.join(warehouse, "db.db", "types", files[0])).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    ts = pq.ParquetFile(os.path.join(warehouse, "db.db", "types", files[0])).schema_arrow.field("ts").type
    assert str(ts) == "timestamp[us, tz=UTC]"  # INT64 micros, not INT96
    assert not any("staging" in f for f in _table_files(warehouse, "db.types"))


def test_partitioned_with_nulls_keeps_partition_columns_in_files(spark, warehouse, probe, paimon_io):
    read, _ = paimon_io
    rows = [(i, f"v{i}", ["a", "b", None][i % 3], dt.date(2026, 1, 1 + i % 2)) for i in range(30)]
    df = spark.createDataFrame(rows, "id INT, v STRING, region STRING, day DATE").repartition(3)
    write_table(
        df, "db.p", warehouse=warehouse,
        options={"create-table": "true", "partition-keys": "region,day"},
    )
    expected = _spark_rows(df)
    assert _pypaimon_rows(probe, "db.p") == expected
    assert _spark_rows(read("db.p")) == expected
    files = [f for f in _table_files(warehouse, "db.p") if f.endswith(".parquet")]
    folders = {os.path.dirname(f) for f in files}
    days = [(dt.date(2026, 1, d) - dt.date(1970, 1, 1)).days for d in (1, 2)]  # legacy names, as pypaimon
    assert folders == {
        f"region={r}/day={d}/bucket-0" for r in ("a", "b", "__DEFAULT_PARTITION__") for d in days
    }
    # the partition columns are inside the files, as Paimon writes them
    one = pq.ParquetFile(os.path.join(warehouse, "db.db", "p", files[0]))
    assert one.schema_arrow.names == ["id", "v", "region", "day"]
    # pypaimon's partition pruning finds the files by partition value
    table = probe.table("db.p")
    builder = table.new_read_builder()
    pred = builder.new_predicate_builder().equal("region", "b")
    splits = builder.with_filter(pred).new_scan().plan().splits()
    got = builder.new_read().to_arrow(splits).to_pylist()
    assert sorted(r["id"] for r in got) == [r["id"] for r in expected if r["region"] == "b"]


def test_overwrite_whole_static_and_dynamic(spark, warehouse, probe):
    schema = "id INT, part STRING"
    first = spark.createDataFrame([(1, "x"), (2, "y"), (3, "z"), (4, "x"), (5, "y"), (6, "z")], schema)
    write_table(first.repartition(3), "db.o", warehouse=warehouse,
                options={"create-table": "true", "partition-keys": "part", "precommit-compact": "true"})
    table = probe.table("db.o")
    files = [f for sp in table.new_read_builder().new_scan().plan().splits() for f in sp.files]
    assert len(files) == 3  # precommit-compact merged each partition's small files into one
    assert _pypaimon_rows(probe, "db.o") == _spark_rows(first)
    write_table(first.filter("id > 3"), "db.o", warehouse=warehouse, mode="overwrite")
    assert _pypaimon_rows(probe, "db.o") == _spark_rows(first.filter("id > 3"))

    write_table(spark.createDataFrame([(10, "x")], schema), "db.o", warehouse=warehouse,
                mode="overwrite", options={"overwrite-partition": "part=x"})
    assert _pypaimon_rows(probe, "db.o") == [
        {"id": 5, "part": "y"}, {"id": 6, "part": "z"}, {"id": 10, "part": "x"}]
    assert probe.latest("db.o").commit_kind == "OVERWRITE"

    write_table(spark.createDataFrame([(20, "y"), (21, "w")], schema), "db.o", warehouse=warehouse,
                mode="overwrite", options={"overwrite-mode": "dynamic"})
    assert _pypaimon_rows(probe, "db.o") == [
        {"id": 6, "part": "z"}, {"id": 10, "part": "x"}, {"id": 20, "part": "y"}, {"id": 21, "part": "w"}]

    write_table(spark.createDataFrame([(30, "q")], schema), "db.o", warehouse=warehouse, mode="overwrite")
    assert _pypaimon_rows(probe, "db.o") == [{"id": 30, "part": "q"}]

    before = probe.state()
    with pytest.raises(Exception, match=r"overwrite-partition.*part=q"):
        write_table(spark.createDataFrame([(40, "q")], schema), "db.o", warehouse=warehouse,
                    mode="overwrite", options={"overwrite-partition": "part=x"})
    assert probe.state() == before


def test_branch_append_leaves_main_alone(spark, warehouse, probe):
    df = spark.createDataFrame([(1, "a")], "id INT, v STRING")
    write_table(df, "db.b", warehouse=warehouse, options={"create-table": "true"})
    probe.table("db.b").branch_manager().create_branch("fix")
    from airflow_provider_paimon.spark.commit_events import EVENT_LOG_ENV, read_event_log

    events = os.path.join(warehouse, "..", "events.jsonl")
    env = spark.sparkContext.environment
    env[EVENT_LOG_ENV] = events  # as lineage capture routes the data source's events
    try:
        write_table(spark.createDataFrame([(2, "b")], "id INT, v STRING"), "db.b",
                    warehouse=warehouse, branch="fix")
    finally:
        env.pop(EVENT_LOG_ENV)
    assert EVENT_LOG_ENV not in os.environ
    (event,) = read_event_log(events)
    assert (event.table, event.branch, event.snapshot_id, event.row_count) == ("b", "fix", 1, 1)
    assert _pypaimon_rows(probe, "db.b", "fix") == [{"id": 2, "v": "b"}]  # created empty
    assert _pypaimon_rows(probe, "db.b") == [{"id": 1, "v": "a"}]


def test_stats_mode_full_matches_pypaimons_own_metadata(spark, warehouse, probe):
    """Column statistics from Spark's footers equal those pypaimon computes from the rows."""
    from airflow_provider_paimon.spark.datasource.types import spark_to_arrow_schema

    schema = "id INT, f DOUBLE, s STRING, d DATE, ts TIMESTAMP, dec DECIMAL(10,2), dec2 DECIMAL(30,3), arr ARRAY<INT>"
    data = [
        (i, i * 0.5 if i % 4 else None, f"s{i:03d}", dt.date(2026, 1, 1 + i % 28),
         dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i),
         Decimal(i) / 4, Decimal(i) * 1000, [i])
        for i in range(50)
    ]
    df = spark.createDataFrame(data, schema).coalesce(1)
    opts = {"metadata.stats-mode": "full"}
    arrow_schema = spark_to_arrow_schema(df.schema)
    probe.create("db.ref", arrow_schema, options=opts)
    probe.create("db.s", arrow_schema, options=opts)
    import pyarrow as pa

    probe.write_arrow("db.ref", pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=arrow_schema))
    write_table(df, "db.s", warehouse=warehouse)

    def stats(name):
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.manifest_list_manager import ManifestListManager

        table = probe.table(name)
        metas = ManifestListManager(table).read_all(table.snapshot_manager().get_latest_snapshot())
        files = [e.file for m in metas for e in ManifestFileManager(table).read(m.file_name, drop_stats=False)]
        assert len(files) == 1
        vs = files[0].value_stats
        return vs.min_values.data, vs.max_values.data, vs.null_counts, files[0].value_stats_cols

    ref_min, ref_max, ref_nulls, ref_cols = stats("db.ref")
    our_min, our_max, our_nulls, our_cols = stats("db.s")
    assert (our_min, our_max, our_cols) == (ref_min, ref_max, ref_cols)  # Paimon's binary rows, byte for byte
    assert our_nulls[:-1] == ref_nulls[:-1] and ref_nulls[1] == 13
    assert our_nulls[-1] is None  # a nested column's null count is not in a footer: unknown
    # and pypaimon's statistics pruning uses them
    table = probe.table("db.s")
    builder = table.new_read_builder()
    pred = builder.new_predicate_builder().greater_than("id", 100)
    assert builder.with_filter(pred).new_scan().plan().splits() == []


def test_refusals_name_the_data_source_and_change_nothing(spark, warehouse, probe):
    import pyarrow as pa

    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
    probe.create("db.pk", schema, primary_keys=["id"], options={"bucket": "1"})
    probe.create("db.bk", schema, options={"bucket": "2", "bucket-key": "id"})
    df = spark.createDataFrame([(1, "a")], "id INT, v STRING")
    before = probe.state()
    for name, what in (("db.pk", "primary-key"), ("db.bk", "bucketed")):
        with pytest.raises(Exception, match=rf"{what}.*paimon data source"):
            write_table(df, name, warehouse=warehouse)
    with pytest.raises(Exception, match="mode must be 'append' or 'overwrite'"):
        write_table(df, "db.pk", warehouse=warehouse, mode="upsert")
    with pytest.raises(Exception, match="create-table"):
        write_table(df, "db.missing", warehouse=warehouse)
    with pytest.raises(Exception, match="given twice"):
        write_table(df, "db.bk", warehouse=warehouse, options={"table": "db.other"})
    # a table option holding a credential is never stored: the table is not created
    with pytest.raises(Exception, match=r"option\(s\) 'data-file.external-paths' look like credentials") as err:
        write_table(df, "db.new", warehouse=warehouse,
                    options={"create-table": "true", "data-file.external-paths": "s3://AK:Pw,(x)/9z@b/ext"})
    assert "Pw,(x)" not in str(err.value) and not os.path.exists(os.path.join(warehouse, "db.db", "new"))
    assert probe.state() == before
