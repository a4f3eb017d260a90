"""``spark.readStream.format("paimon")`` with real streaming queries on real tables."""

from __future__ import annotations

import json
import os

import pytest

from .helpers import append, compact, make_table, reload

pytestmark = pytest.mark.spark


def _stream(spark, warehouse, **options):
    reader = spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src")
    for key, value in options.items():
        reader = reader.option(key.replace("_", "-"), str(value))
    return reader.load()


def _drain(df, checkpoint: str) -> tuple[list[int], list[int]]:
    """Run an availableNow query; (ids read, rows of each non-empty micro-batch)."""
    seen: dict[int, list[int]] = {}

    def collect(batch_df, batch_id):
        seen[batch_id] = [r.id for r in batch_df.collect()]

    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert not query.isActive
    ids = sorted(i for rows in seen.values() for i in rows)
    return ids, [len(seen[b]) for b in sorted(seen) if seen[b]]


def _consumer(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


def test_latest_full_then_appends_once_each_compaction_skipped_consumer_saved(spark, warehouse, tmp_path):
    table = make_table(warehouse)
    append(table, [1, 2])
    append(table, [3, 4])
    checkpoint = str(tmp_path / "ck")
    df = _stream(spark, warehouse, consumer_id="etl", max_snapshots_per_trigger=1)

    ids, batches = _drain(df, checkpoint)
    assert ids == [1, 2, 3, 4]  # the latest snapshot in full
    assert batches == [4]

    append(table, [5])
    append(table, [6])
    assert compact(reload(warehouse)) == 5  # rewrites rows 1..6 into new files
    append(table, [7])
    ids, batches = _drain(df, checkpoint)
    assert ids == [5, 6, 7]  # every new row once, nothing from the COMPACT snapshot
    assert batches == [1, 1, 1]  # one APPEND snapshot per micro-batch
    consumer = os.path.join(table.table_path, "consumer", "consumer-etl")
    assert _consumer(consumer) == {"nextSnapshot": 7}

    # A new query (new checkpoint) with the same consumer-id resumes where it stopped.
    append(table, [8])
    ids, _ = _drain(df, str(tmp_path / "ck2"))
    assert ids == [8]
    assert _consumer(consumer) == {"nextSnapshot": 8}


def test_bad_input_fails_before_reading(spark, warehouse):
    from airflow_provider_paimon.spark.datasource.streaming_reader import create_stream_reader
    from airflow_provider_paimon.spark.options import parse_options

    table = make_table(warehouse)
    append(table, [1])
    with pytest.raises(Exception, match="does not exist"):
        _stream(spark, warehouse, table="db.nope").schema  # noqa: B018
    with pytest.raises(Exception, match="branch 'nope' does not exist"):
        _stream(spark, warehouse, branch="nope").schema  # noqa: B018
    schema = _stream(spark, warehouse).schema
    # What Spark calls when the query starts (before any micro-batch):
    for options, message in [
        ({"scan.mode": "sideways"}, "scan.mode 'sideways' is unknown"),
        ({"snapshot-id": "1"}, "time-travel a batch read"),
        ({"consumer-id": "a/b"}, "consumer-id 'a/b' is not valid"),
    ]:
        opts = parse_options({"warehouse": warehouse, "table": "db.src", **options})
        with pytest.raises(Exception, match=message):
            create_stream_reader(opts, schema)
