"""Stream offsets name their table, branch and warehouse; old offsets still read.

The reader is driven the way Spark drives it (``initialOffset`` / ``latestOffset`` /
``partitions`` / ``commit`` with JSON dicts), without starting a query.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity, table_identity
from airflow_provider_paimon.paimon.stream_scan import OffsetTableMismatchError, StreamOffset
from airflow_provider_paimon.spark.datasource.streaming_reader import create_stream_reader
from airflow_provider_paimon.spark.options import parse_options

from .helpers import append, make_table


def _reader(warehouse, table="db.src", **options):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("id", LongType()), StructField("v", StringType())])
    opts = parse_options({"warehouse": warehouse, "table": table, **options})
    return create_stream_reader(opts, schema)


def _spark_json(offset: dict) -> dict:
    return json.loads(json.dumps(offset))  # what Spark stores and hands back


def test_offsets_name_the_table_and_old_offsets_still_work(warehouse):
    src = make_table(warehouse)
    append(src, [1])
    append(src, [2])
    src.create_tag("t1", 1)
    src.branch_manager().create_branch("fix", "t1")
    reader = _reader(warehouse)
    initial = _spark_json(reader.initialOffset())
    first = _spark_json(reader.latestOffset(initial, ReadAllAvailable()))
    # The offset carries the identity of the last snapshot it read (a reused id is told apart).
    assert SnapshotIdentity.of(first.pop("lineageCommit")) == table_identity(src, 2)
    assert first == {
        "nextSnapshot": 3,
        "fullSnapshot": 2,
        "startSnapshot": 3,
        "table": "db.src",
        "branch": "main",
        "warehouse": warehouse,
    }
    assert len(reader.partitions(initial, first)) == 1
    reader.commit(first)
    assert reader.latestOffset(first, ReadAllAvailable()) == first  # nothing new: same offset (identity not compared)

    # A checkpoint written before offsets carried their table: read on, new offsets named.
    old = {"nextSnapshot": 2}
    append(src, [3])
    later = reader.latestOffset(old, ReadAllAvailable())
    assert SnapshotIdentity.of(later.pop("lineageCommit")) == table_identity(src, 3)
    assert later == {"nextSnapshot": 4, "table": "db.src", "branch": "main", "warehouse": warehouse}
    assert len(reader.partitions(old, later)) == 1
    assert reader.latestOffset({"nextSnapshot": 4}, ReadAllAvailable()) == {"nextSnapshot": 4}
    assert StreamOffset.from_json(old) == StreamOffset.from_json(dict(old, table="db.src"))

    # The branch's offsets say so.
    on_branch = _reader(warehouse, branch="fix")
    assert _spark_json(on_branch.initialOffset())["branch"] == "fix"


def test_a_checkpoint_of_another_table_or_branch_is_refused(warehouse):
    src = make_table(warehouse)
    append(src, [1])
    other = make_table(warehouse, "db.other")
    append(other, [1])
    src.create_tag("t1", 1)
    src.branch_manager().create_branch("fix", "t1")
    written = _spark_json(
        _reader(warehouse).latestOffset(_reader(warehouse).initialOffset(), ReadAllAvailable())
    )
    for reader, message in [
        (
            _reader(warehouse, "db.other"),
            r"position in db\.src \(branch main\), but this query reads db\.other",
        ),
        (
            _reader(warehouse, branch="fix"),
            r"db\.src \(branch main\), but this query reads db\.src \(branch fix\)",
        ),
    ]:
        with pytest.raises(OffsetTableMismatchError, match=message):
            reader.latestOffset(written, ReadAllAvailable())
        with pytest.raises(OffsetTableMismatchError, match="own checkpointLocation"):
            reader.partitions(reader.initialOffset(), written)
        with pytest.raises(OffsetTableMismatchError):
            reader.commit(written)
    # Another spelling of the warehouse is only a warning (file:/x and /x are one place).
    moved = _reader(f"file://{warehouse}")
    assert moved.latestOffset(written, ReadAllAvailable())["table"] == "db.src"
