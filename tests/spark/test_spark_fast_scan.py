"""The fast read path: same rows as pypaimon's reader, used only where it fits, safe to stop.

The reader's ``read()`` is called in this process (no Spark job) where a test needs to
see which path a split took; the Spark tests compare whole scans with the path on
and off (``spark.fast-scan=false``).
"""

from __future__ import annotations

import datetime
import decimal
import threading

import pyarrow as pa
import pytest
from pyspark.sql.datasource import EqualTo, GreaterThan

from airflow_provider_paimon.spark import fast_scan
from airflow_provider_paimon.spark.datasource import PaimonDataSource

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
        ("p", pa.string()),
    ]
)


def _data(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": ids,
            "name": [None if i % 7 == 0 else f"n{i % 13}" for i in ids],
            "price": [decimal.Decimal(i % 1000) / 100 for i in ids],
            "ts": [
                datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i)
                for i in ids
            ],
            "ntz": [datetime.datetime(2024, 1, 1) + datetime.timedelta(microseconds=i) for i in ids],
            "day": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 30) for i in ids],
            "raw": [bytes([i % 256]) * 3 for i in ids],
            "tags": [[f"t{i % 3}"] * (i % 3) for i in ids],
            "attrs": [[("a", i)] for i in ids],
            "point": [{"x": i * 0.5, "y": -i * 0.5} for i in ids],
            "p": [f"p{i % 3}" for i in ids],
        },
        schema=SCHEMA,
    )


def _reader(warehouse: str, table: str, filters=(), **options: str):
    """The data source's reader, as Spark would build it (schema inferred, filters pushed)."""
    source = PaimonDataSource({"warehouse": warehouse, "table": table, **options})
    reader = source.reader(source.schema())
    if filters:
        list(reader.pushFilters(list(filters)))
    return reader


def _read_in_process(reader) -> tuple[list[dict], int, int]:
    """(rows, splits read fast, splits read by pypaimon) of a whole scan, without Spark."""
    counts = {"fast": 0, "files": 0}
    original = fast_scan.FastScan.read_files

    def counting(self, files):
        counts["fast"] += 1
        counts["files"] += len(files)
        return original(self, files)

    fast_scan.FastScan.read_files = counting
    try:
        batches = [b for part in reader.partitions() for b in reader.read(part)]
    finally:
        fast_scan.FastScan.read_files = original
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    splits = sum(len(part.splits) for part in reader.partitions())
    return sorted(rows, key=lambda r: r["id"]), counts["fast"], splits - counts["fast"]


@pytest.fixture()
def events(probe):
    """A partitioned append table written in two commits (two files per partition)."""
    probe.create("db.events", SCHEMA, partition_keys=["p"])
    probe.write_arrow("db.events", _data(0, 3000))
    probe.write_arrow("db.events", _data(3000, 3000))
    return _data(0, 6000)


def test_plain_append_table_is_read_by_the_fast_path_with_the_same_rows(probe, events):
    rows, fast, slow = _read_in_process(_reader(probe.warehouse, "db.events"))
    assert (fast, slow) == (3, 0)  # one split per partition, all read fast
    slow_rows, fast_off, _ = _read_in_process(_reader(probe.warehouse, "db.events", **{"spark.fast-scan": "false"}))
    assert fast_off == 0
    assert rows == slow_rows
    plain = probe.read_arrow("db.events").to_pylist()
    assert [r["id"] for r in rows] == sorted(r["id"] for r in plain) == list(range(6000))


def test_pushed_filters_drop_rows_and_prune_partitions(probe, events):
    reader = _reader(probe.warehouse, "db.events", filters=[EqualTo(("p",), "p1"), GreaterThan(("id",), 5000)])
    rows, fast, slow = _read_in_process(reader)
    assert (fast, slow) == (1, 0)
    assert [r["id"] for r in rows] == [i for i in range(5001, 6000) if i % 3 == 1]


def test_primary_key_table_goes_through_pypaimon(probe):
    probe.create("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    probe.write_arrow("db.pk", _data(0, 100))
    probe.write_arrow("db.pk", _data(50, 100))  # updates ids 50..99
    table = probe.table("db.pk")
    assert fast_scan.table_unsupported_reason(table) == "primary-key table (merge on read)"
    rows, fast, slow = _read_in_process(_reader(probe.warehouse, "db.pk"))
    assert fast == 0 and slow >= 1
    assert [r["id"] for r in rows] == list(range(150))


def test_files_of_an_older_schema_go_through_pypaimon(probe):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    small = pa.schema([("id", pa.int64()), ("v", pa.string())])
    probe.create("db.evolved", small)
    probe.write_arrow("db.evolved", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=small))
    probe.catalog.alter_table("db.evolved", [SchemaChange.add_column("w", AtomicType("INT"))], False)
    wider = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.int32())])
    probe.write_arrow("db.evolved", pa.table({"id": [3], "v": ["c"], "w": [7]}, schema=wider))

    table = probe.table("db.evolved")
    splits = table.new_read_builder().new_scan().plan().splits()
    reasons = {fast_scan.split_unsupported_reason(s, table.table_schema.id) for s in splits}
    assert any(r and "schema 0" in r for r in reasons), reasons
    rows, _fast, slow = _read_in_process(_reader(probe.warehouse, "db.evolved"))
    assert slow >= 1
    assert rows == [{"id": 1, "v": "a", "w": None}, {"id": 2, "v": "b", "w": None}, {"id": 3, "v": "c", "w": 7}]


def test_fast_and_slow_paths_agree_through_spark(spark, probe, events):
    def scan(**options):
        return sorted(
            spark.read.format("paimon").option("warehouse", probe.warehouse).option("table", "db.events")
            .options(**options).load().where("id % 5 = 0 AND p <> 'p2'").collect()
        )

    fast, slow = scan(), scan(**{"spark.fast-scan": "false"})
    assert len(fast) == len([i for i in range(0, 6000, 5) if i % 3 != 2])
    assert fast == slow


def test_prefetch_hands_producer_errors_to_the_consumer():
    def broken():
        yield pa.record_batch({"a": [1]})
        raise OSError("disk gone")

    got = []
    with pytest.raises(OSError, match="disk gone"):
        for batch in fast_scan.prefetched(broken()):
            got.append(batch)
    assert len(got) == 1


def test_prefetch_stops_the_producer_when_the_consumer_stops():
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield pa.record_batch({"a": [i]})
            i += 1

    stream = fast_scan.prefetched(endless(), depth=2)
    assert next(stream).column(0).to_pylist() == [0]
    stream.close()  # what Spark does when a limit is reached or the task is cancelled
    count = len(produced)
    assert not any(t.name == "paimon-fast-scan" for t in threading.enumerate())
    assert count <= 5 and len(produced) == count  # stopped, within depth of the consumer
