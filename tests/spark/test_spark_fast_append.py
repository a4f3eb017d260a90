"""The fast append write path: files and metadata as pypaimon writes them, read by plain pypaimon."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_paimon.spark.datasource import fast_append

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("name", pa.string()),
        ("price", pa.decimal128(12, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("day", pa.date32()),
        ("raw", pa.binary()),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int32())),
        ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
    ]
)


def _data(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    base = datetime.datetime(2024, 1, 1)
    return pa.table(
        {
            "id": ids,
            "name": [None if i % 7 == 0 else f"n{i % 13}" for i in ids],
            "price": [decimal.Decimal(i % 1000) / 100 for i in ids],
            "ts": [
                datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
                + datetime.timedelta(seconds=i)
                for i in ids
            ],
            "ntz": [base + datetime.timedelta(microseconds=i) for i in ids],
            "day": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 30) for i in ids],
            "raw": [bytes([i % 256]) * 3 for i in ids],
            "tags": [[f"t{i % 3}"] * (i % 3) for i in ids],
            "attrs": [[("a", i)] for i in ids],
            "point": [{"x": i * 0.5, "y": -i * 0.5} for i in ids],
        },
        schema=SCHEMA,
    )


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _fast_write(probe, name: str, data: pa.Table, options: dict | None = None) -> list:
    table = probe.table(name)
    if options:
        table = table.copy(options)
    assert fast_append.unsupported_reason(table) is None
    writer = fast_append.FastAppendWriter(table, SCHEMA)
    try:
        for batch in data.to_batches(max_chunksize=1000):
            writer.write(batch)
        messages = writer.prepare_commit()
    finally:
        writer.close()
    builder = table.new_batch_write_builder()
    commit = builder.new_commit()
    commit.commit(messages)
    commit.close()
    return messages


def test_fast_path_files_read_back_with_plain_pypaimon(probe):
    probe.create("db.fast", SCHEMA)
    probe.write_arrow("db.fast", _data(0, 100))  # pypaimon's own writer first
    messages = _fast_write(probe, "db.fast", _data(100, 5000))

    assert _sorted(probe.read_arrow("db.fast")) == _sorted(
        pa.concat_tables([_data(0, 100), _data(100, 5000)])
    )
    assert probe.snapshot_ids("db.fast") == [1, 2]

    # The metadata is what pypaimon's append writer records for the same rows.
    table = probe.table("db.fast")
    table_write = table.new_batch_write_builder().new_write()
    table_write.write_arrow(_data(100, 5000))
    pypaimon_meta = table_write.prepare_commit()[0].new_files[0]
    table_write.abort()
    table_write.close()
    ours = messages[0].new_files[0]
    skip = {"file_name", "file_size", "creation_time", "file_path"}
    for key, value in vars(pypaimon_meta).items():
        if key not in skip:
            assert repr(getattr(ours, key)) == repr(value), key
    assert ours.row_count == 5000
    assert ours.file_name.startswith("data-") and ours.file_name.endswith("-0.parquet")
    assert (messages[0].partition, messages[0].bucket) == ((), 0)


def test_fast_path_dictionary_only_for_strings_and_rolls_files(probe, tmp_path):
    probe.create("db.roll", SCHEMA)
    messages = _fast_write(probe, "db.roll", _data(0, 20000), {"target-file-size": "200 kb"})
    files = messages[0].new_files
    assert len(files) > 1
    assert sum(f.row_count for f in files) == 20000
    assert _sorted(probe.read_arrow("db.roll")) == _sorted(_data(0, 20000))

    meta = pq.ParquetFile(files[0].file_path).metadata
    encodings = {}
    for i in range(meta.num_columns):
        column = meta.row_group(0).column(i)
        encodings[column.path_in_schema] = column.encodings
    assert any("DICTIONARY" in e for e in encodings["name"])
    assert not any("DICTIONARY" in e for e in encodings["id"])
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_stats_based_filtering_still_works_after_fast_write(probe):
    probe.create("db.filter", SCHEMA)
    _fast_write(probe, "db.filter", _data(0, 3000))
    table = probe.table("db.filter")
    builder = table.new_read_builder()
    builder = builder.with_filter(builder.new_predicate_builder().greater_or_equal("id", 2990))
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(got.column("id").to_pylist()) == list(range(2990, 3000))


def test_abort_deletes_written_files(probe):
    probe.create("db.abort", SCHEMA)
    table = probe.table("db.abort").copy({"target-file-size": "100 kb"})
    writer = fast_append.FastAppendWriter(table, SCHEMA)
    for batch in _data(0, 10000).to_batches(max_chunksize=1000):
        writer.write(batch)
    assert probe.data_files()
    writer.abort()
    writer.close()
    assert not probe.data_files()


@pytest.mark.parametrize(
    ("create", "reason"),
    [
        ({"partition_keys": ["name"]}, "partitioned table"),
        ({"primary_keys": ["id"], "options": {"bucket": "2"}}, "primary-key table"),
        ({"options": {"bucket": "2", "bucket-key": "id"}}, "bucketed table"),
        ({"options": {"file.format": "orc"}}, "file.format is not parquet"),
        ({"options": {"metadata.stats-mode": "full"}}, "metadata.stats-mode=full"),
        ({"options": {"spark.fast-append-write": "false"}}, "spark.fast-append-write=false"),
    ],
)
def test_other_tables_use_pypaimons_writer(probe, create, reason):
    schema = SCHEMA
    if "primary_keys" in create:
        schema = pa.schema([f.with_nullable(False) if f.name == "id" else f for f in SCHEMA])
    probe.create("db.other", schema, **create)
    assert fast_append.unsupported_reason(probe.table("db.other")) == reason


@pytest.mark.spark
def test_spark_write_uses_fast_path_and_reads_back(spark, paimon_io, probe):
    read, write = paimon_io
    df = spark.range(0, 3000).selectExpr("id", "concat('u', cast(id % 10 as string)) as name")
    write(df, "db.sparkfast", create_table="true")
    files = [f for f in probe.data_files() if f.endswith(".parquet")]
    assert files
    meta = pq.ParquetFile(f"{probe.warehouse}/{files[0]}").metadata
    id_column = next(
        meta.row_group(0).column(i)
        for i in range(meta.num_columns)
        if meta.row_group(0).column(i).path_in_schema == "id"
    )
    assert not any("DICTIONARY" in e for e in id_column.encodings)  # written by fast_append
    got = probe.read_arrow("db.sparkfast")
    assert sorted(got.column("id").to_pylist()) == list(range(3000))
    assert sorted(r[0] for r in read("db.sparkfast").select("id").collect()) == list(range(3000))
