"""The fast append write path: files and metadata as pypaimon writes them, read by plain pypaimon."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_paimon.paimon.parquet_encoding import dictionary_columns
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
    return _fast_write_table(table.copy(options) if options else table, SCHEMA, data)


def _commit(table, messages: list) -> None:
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()


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


def test_fast_path_dictionary_only_for_repeating_columns_and_rolls_files(probe, tmp_path):
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
    assert any("DICTIONARY" in e for e in encodings["name"])  # 13 values
    assert any("DICTIONARY" in e for e in encodings["day"])  # 30 values
    for unique in ("id", "ntz", "point.x"):  # a value per row
        assert not any("DICTIONARY" in e for e in encodings[unique]), unique
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


# ---------------------------------------------------------------- partitioned tables

PART_SCHEMA = pa.schema([*SCHEMA, pa.field("region", pa.string()), pa.field("dt", pa.date32())])


def _part_data(start: int, n: int, regions=("eu", "us", None)) -> pa.Table:
    base = _data(start, n)
    ids = base.column("id").to_pylist()
    return base.append_column("region", pa.array([regions[i % len(regions)] for i in ids], pa.string())) \
        .append_column("dt", pa.array([datetime.date(2024, 1, 1 + i % 2) for i in ids], pa.date32()))


def _fast_write_table(table, schema, data: pa.Table, chunk: int = 1000) -> list:
    assert fast_append.unsupported_reason(table) is None
    writer = fast_append.FastAppendWriter(table, schema)
    try:
        for batch in data.to_batches(max_chunksize=chunk):
            writer.write(batch)
        messages = writer.prepare_commit()
    finally:
        writer.close()
    _commit(table, messages)
    return messages


def _folders(messages) -> dict:
    import os

    return {m.partition: {os.path.dirname(f.file_path) for f in m.new_files} for m in messages}


def test_partitioned_fast_write_matches_pypaimons_writer(probe):
    """Same partitions, folders (NULL partition included), metadata and rows as pypaimon's writer."""
    probe.create("db.part", PART_SCHEMA, partition_keys=["region", "dt"])
    probe.create("db.ref", PART_SCHEMA, partition_keys=["region", "dt"])
    data = _part_data(0, 6000)
    ours = _fast_write_table(probe.table("db.part"), PART_SCHEMA, data)

    table = probe.table("db.ref")
    table_write = table.new_batch_write_builder().new_write()
    table_write.write_arrow(data)
    theirs = table_write.prepare_commit()
    table_write.close()
    _commit(table, theirs)

    assert {m.partition for m in ours} == {m.partition for m in theirs}
    assert len(ours) == 6  # (eu|us|NULL) x 2 days
    as_ref = {p: {d.replace("db.db/part/", "db.db/ref/") for d in dirs} for p, dirs in _folders(ours).items()}
    assert as_ref == _folders(theirs)
    assert any("__DEFAULT_PARTITION__" in d for dirs in as_ref.values() for d in dirs)
    by_partition = {m.partition: m.new_files[0] for m in theirs}
    skip = {"file_name", "file_size", "creation_time", "file_path"}
    for message in ours:
        assert message.bucket == 0
        (mine,) = message.new_files
        for key, value in vars(by_partition[message.partition]).items():
            if key not in skip:
                assert repr(getattr(mine, key)) == repr(value), (message.partition, key)
    assert _sorted(probe.read_arrow("db.part").select(data.column_names)) == _sorted(data)
    assert _sorted(probe.read_arrow("db.ref").select(data.column_names)) == _sorted(data)

    # partition pruning sees the same partitions
    for name in ("db.part", "db.ref"):
        builder = probe.table(name).new_read_builder()
        builder = builder.with_filter(builder.new_predicate_builder().equal("region", "eu"))
        got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        assert set(got.column("region").to_pylist()) == {"eu"} and got.num_rows == 2000


def test_interleaved_partitions_keep_open_files_and_buffers_bounded(probe, monkeypatch):
    """Rows of 40 partitions interleaved in every batch, 4 open files allowed: one file per partition.

    The 4 partitions met first get fast-path files; the other 36 go through pypaimon's
    writer (no partition's file is finished early, which would make tiny files).
    """
    monkeypatch.setattr(fast_append, "MAX_OPEN_FILES", 4)
    monkeypatch.setattr(fast_append, "BUFFER_BYTES_LIMIT", 64 * 1024)
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("payload", pa.string())])
    probe.create("db.many", schema, partition_keys=["p"])
    table = probe.table("db.many")
    n = 40_000
    data = pa.table(
        {"id": list(range(n)), "p": [i % 40 for i in range(n)], "payload": [f"row {i}" for i in range(n)]},
        schema=schema,
    )
    writer = fast_append.FastAppendWriter(table, schema)
    most_open, most_buffered = 0, 0
    try:
        for batch in data.to_batches(max_chunksize=2000):
            writer.write(batch)
            most_open = max(most_open, len(writer._open))
            most_buffered = max(most_buffered, writer._buffered_bytes)
        messages = writer.prepare_commit()
    finally:
        writer.close()
    _commit(table, messages)

    assert most_open == 4
    assert most_buffered <= 64 * 1024
    files = {m.partition: [f for f in m.new_files] for m in messages}
    assert sorted(files) == [(p,) for p in range(40)]
    assert all(len(f) == 1 for f in files.values())
    fast = {p for p, (f,) in files.items()
            if not pq.ParquetFile(f.file_path).metadata.row_group(0).column(0).has_dictionary_page}
    assert fast == {(0,), (1,), (2,), (3,)}  # the rest: pypaimon's writer (dictionary on every column)
    assert sum(f.row_count for fs in files.values() for f in fs) == n
    got = probe.read_arrow("db.many")
    assert sorted(got.column("id").to_pylist()) == list(range(n))
    assert all(r["id"] % 40 == r["p"] for r in got.select(["id", "p"]).to_pylist())


def test_object_storage_keeps_fewer_files_open(s3_warehouse, monkeypatch):
    """On S3 each open output stream holds up to an upload part in memory, so a task
    keeps at most MAX_OPEN_FILES_REMOTE files open there (the rest: pypaimon's writer)."""
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    monkeypatch.setattr(fast_append, "MAX_OPEN_FILES_REMOTE", 3)
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32())])
    catalog = open_catalog(s3_warehouse.uri, s3_warehouse.options)
    catalog.create_database("db", True)
    catalog.create_table("db.many", Schema.from_pyarrow_schema(schema, partition_keys=["p"]), False)
    table = load_table(catalog, "db.many")
    n = 2_000
    data = pa.table({"id": list(range(n)), "p": [i % 10 for i in range(n)]}, schema=schema)
    writer = fast_append.FastAppendWriter(table, schema)
    assert writer.max_open_files == 3
    most_open = 0
    try:
        for batch in data.to_batches(max_chunksize=500):
            writer.write(batch)
            most_open = max(most_open, len(writer._open))
        messages = writer.prepare_commit()
    finally:
        writer.close()
    _commit(table, messages)
    assert most_open == 3
    assert sorted(m.partition for m in messages) == [(p,) for p in range(10)]
    builder = load_table(catalog, "db.many").new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(got.column("id").to_pylist()) == list(range(n))


def test_local_tables_keep_the_larger_cap(probe):
    probe.create("db.cap", SCHEMA)
    writer = fast_append.FastAppendWriter(probe.table("db.cap"), SCHEMA)
    try:
        assert writer.max_open_files == fast_append.MAX_OPEN_FILES > fast_append.MAX_OPEN_FILES_REMOTE
    finally:
        writer.close()


def test_partitioned_abort_deletes_every_partitions_files(probe, monkeypatch):
    monkeypatch.setattr(fast_append, "MAX_OPEN_FILES", 2)  # some files finished, some open
    probe.create("db.pabort", PART_SCHEMA, partition_keys=["region", "dt"])
    writer = fast_append.FastAppendWriter(probe.table("db.pabort"), PART_SCHEMA)
    for batch in _part_data(0, 6000).to_batches(max_chunksize=500):
        writer.write(batch)
    writer._flush_buffer(next(iter(writer._open.values())))
    writer._wait()
    assert probe.data_files()
    writer.abort()
    writer.close()
    assert not probe.data_files()
    assert probe.snapshot_ids("db.pabort") == []


def test_dictionary_columns_by_repetition():
    schema = pa.schema([("u", pa.int64()), ("r", pa.int64()), ("s", pa.string()), ("b", pa.bool_()),
                        ("n", pa.string())])
    n = 10_000
    rows = pa.table({"u": list(range(n)), "r": [i % 7 for i in range(n)], "s": [f"s{i}" for i in range(n)],
                     "b": [i % 2 == 0 for i in range(n)], "n": [None] * n}, schema=schema)
    assert dictionary_columns(schema, {}, rows) == ["r", "n"]
    assert dictionary_columns(schema, {}) == ["s", "n"]  # no rows: strings
    assert dictionary_columns(schema, {"parquet.enable.dictionary": "false"}, rows) is False
    # a repeating column whose dictionary would outgrow the page: PLAIN from the start
    wide = pa.table({"w": [("x" * 400) + str(i % 5000) for i in range(n)]})
    assert dictionary_columns(wide.schema, {}, wide) == []


@pytest.mark.spark
def test_spark_partitioned_write_uses_fast_path_and_reads_back(spark, paimon_io, probe):
    read, write = paimon_io
    df = spark.range(0, 5000).selectExpr(
        "id", "concat('u', cast(id % 10 as string)) as name", "cast(id % 4 as int) as part"
    )
    write(df, "db.sparkpart", create_table="true", partition_keys="part")
    files = [f for f in probe.data_files() if f.endswith(".parquet")]
    assert len(files) >= 4 and all("/part=" in f for f in files)
    for path in files:
        meta = pq.ParquetFile(f"{probe.warehouse}/{path}").metadata
        columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
                   for i in range(meta.num_columns)}
        assert not columns["id"].has_dictionary_page  # written by fast_append (pypaimon: dictionary)
        assert columns["name"].has_dictionary_page
    got = probe.read_arrow("db.sparkpart")
    assert sorted(got.column("id").to_pylist()) == list(range(5000))
    back = read("db.sparkpart").collect()
    assert sorted((r.id, r.part) for r in back) == [(i, i % 4) for i in range(5000)]
