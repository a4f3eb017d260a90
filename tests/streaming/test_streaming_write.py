"""``writeStream.format("paimon")``: one commit per micro-batch, replays recognised."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_paimon.spark import commit_events
from airflow_provider_paimon.spark.options import parse_options

from .helpers import SCHEMA, append, data_files_on_disk, live_files, make_table, reload, table_ids

pytestmark = pytest.mark.spark


def _sink_options(warehouse: str, checkpoint: str, **extra: str) -> dict[str, str]:
    # write-only: these tests count the sink's own commits; no background COMPACT beside them
    return {"warehouse": warehouse, "table": "db.dst", "checkpointLocation": checkpoint, "write-only": "true", **extra}


def _consumer(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        text = fh.read()
    return json.loads(text) if text else None


def _wait(condition, query, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert query.isActive, query.exception()
        assert time.monotonic() < deadline, "streaming query did not get there in time"
        time.sleep(0.2)


def _snapshots(table):
    return table.snapshot_manager().list_snapshots()


def test_running_branch_to_branch_stream_commits_each_batch_with_its_id(spark, warehouse, tmp_path):
    src = make_table(warehouse)
    append(src, [1])
    src.create_tag("t1", 1)
    src.branch_manager().create_branch("fix", "t1")
    src_fix = reload(warehouse, branch="fix")
    append(src_fix, [2, 3])
    append(src, [100])  # main moves on; the branch stream must not see it
    dst = make_table(warehouse, "db.dst")
    append(dst, [0])
    dst.create_tag("base", 1)
    dst.branch_manager().create_branch("fix", "base")
    checkpoint, events = str(tmp_path / "ck"), str(tmp_path / "events.jsonl")

    df = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("table", "db.src")
        .option("branch", "fix")
        .option("consumer-id", "fixer")
        .option("scan.mode", "from-snapshot")
        .option("scan.snapshot-id", "1")
        .option("max-snapshots-per-trigger", "1")
        .option("event-log", events)
        .load()
    )
    query = (
        df.writeStream.format("paimon")
        .options(**_sink_options(warehouse, checkpoint, branch="fix", **{"event-log": events}))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    branch_consumer = os.path.join(src.table_path, "branch", "branch-fix", "consumer", "consumer-fixer")
    try:
        _wait(lambda: table_ids(reload(warehouse, "db.dst", branch="fix")) == [0, 1, 2, 3], query)
        append(src_fix, [4])  # arrives while the query runs: read like a queue
        _wait(lambda: _consumer(branch_consumer) == {"nextSnapshot": 4}, query)
    finally:
        query.stop()
    assert query.exception() is None

    sink = reload(warehouse, "db.dst", branch="fix")
    assert table_ids(sink) == [0, 1, 2, 3, 4]
    assert table_ids(reload(warehouse, "db.dst")) == [0]  # main untouched
    with open(os.path.join(checkpoint, "paimon-sink", "sink.json")) as fh:
        identity = json.load(fh)
    assert identity["table"] == "db.dst" and identity["branch"] == "fix"
    mine = [s for s in _snapshots(sink) if s.commit_user == identity["commitUser"]]
    assert [(s.commit_identifier, s.commit_kind) for s in mine] == [(0, "APPEND"), (1, "APPEND"), (2, "APPEND")]
    # The branch's consumer file holds the position; main has none.
    assert _consumer(branch_consumer) == {"nextSnapshot": 4}
    assert not os.path.exists(os.path.join(src.table_path, "consumer"))
    # Lineage: each sink commit names its batch id; the source reports what it consumed.
    logged = commit_events.read_event_log(events)
    commits = {e.snapshot_id for e in logged if e.kind == "commit"}
    assert commits == {s.id for s in mine}
    consumed = {e.snapshot_id for e in logged if e.kind == "scan"}
    assert {2, 3} <= consumed and consumed <= {1, 2, 3}
    with open(events) as fh:
        raw = [json.loads(line) for line in fh]
    assert sorted(e["batch_id"] for e in raw if e["kind"] == "commit") == [0, 1, 2]


def _task(writer, ids):
    batch = pa.RecordBatch.from_pylist([{"id": i, "v": f"v{i}"} for i in ids], schema=SCHEMA)
    return writer.write(iter([batch]))


def test_replayed_batch_is_not_committed_twice_and_its_files_are_deleted(warehouse, tmp_path):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from airflow_provider_paimon.spark.datasource.streaming_writer import (
        CheckpointState,
        create_stream_writer,
    )

    make_table(warehouse, "db.dst")
    schema = StructType([StructField("id", LongType()), StructField("v", StringType())])
    checkpoint = str(tmp_path / "ck")
    writer = create_stream_writer(parse_options(_sink_options(warehouse, checkpoint)), schema, False)

    writer.commit([_task(writer, [1, 2])], 0)
    sink = reload(warehouse, "db.dst")
    committed = live_files(sink)
    replay = _task(writer, [1, 2])  # Spark re-runs batch 0 after a crash
    writer.commit([replay], 0)
    sink = reload(warehouse, "db.dst")
    assert len(_snapshots(sink)) == 1 and table_ids(sink) == [1, 2]
    assert data_files_on_disk(sink.table_path) == committed  # the replay's files are gone

    # A crash between writing files and committing them leaves a pending list behind;
    # the replay deletes those orphans and commits its own files once.
    crashed = _task(writer, [3])
    CheckpointState(checkpoint).write_pending(1, crashed.messages)
    writer.commit([_task(writer, [3])], 1)
    sink = reload(warehouse, "db.dst")
    assert table_ids(sink) == [1, 2, 3]
    assert data_files_on_disk(sink.table_path) == live_files(sink)
    assert [s.commit_identifier for s in _snapshots(sink)] == [0, 1]

    # A writer made again from the same checkpoint has the same commit user.
    again = create_stream_writer(parse_options(_sink_options(warehouse, checkpoint)), schema, False)
    assert again.commit_user == writer.commit_user


def test_precommit_compact_merges_a_batch_small_files(warehouse, tmp_path):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from airflow_provider_paimon.spark.datasource.streaming_writer import create_stream_writer

    make_table(warehouse, "db.dst")
    schema = StructType([StructField("id", LongType()), StructField("v", StringType())])
    options = _sink_options(warehouse, str(tmp_path / "ck"), **{"precommit-compact": "true"})
    writer = create_stream_writer(parse_options(options), schema, False)
    writer.commit([_task(writer, [1]), _task(writer, [2]), _task(writer, [3])], 0)
    sink = reload(warehouse, "db.dst")
    assert table_ids(sink) == [1, 2, 3]
    assert len(live_files(sink)) == 1  # three task files merged into one
    assert data_files_on_disk(sink.table_path) == live_files(sink)
    assert [(s.commit_identifier, s.commit_kind) for s in _snapshots(sink)] == [(0, "APPEND")]


def test_bad_sink_input_fails_before_any_commit(warehouse, tmp_path):
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from airflow_provider_paimon.spark.datasource.streaming_writer import create_stream_writer

    make_table(warehouse, "db.dst")
    make_table(warehouse, "db.other")
    good = StructType([StructField("id", LongType()), StructField("v", StringType())])
    checkpoint = str(tmp_path / "ck")
    create_stream_writer(parse_options(_sink_options(warehouse, checkpoint)), good, False)
    cases = [
        (_sink_options(warehouse, checkpoint, table="db.other"), good, "belongs to a streaming query writing to db.dst"),
        (_sink_options(warehouse, checkpoint, **{"commit-user": "someone"}), good, "commit user"),
        (_sink_options(warehouse, str(tmp_path / "c2"), table="db.nope"), good, "does not exist"),
        (_sink_options(warehouse, str(tmp_path / "c3"), branch="nope"), good, "branch 'nope' does not exist"),
        (
            _sink_options(warehouse, str(tmp_path / "c4")),
            StructType([StructField("id", IntegerType()), StructField("v", StringType())]),
            "column id is int in the DataFrame but bigint in the table",
        ),
        ({"warehouse": warehouse, "table": "db.dst"}, good, "needs option 'checkpointLocation'"),
        ({"warehouse": warehouse, "table": "db.dst", "snapshot-id": "1", "commit-user": "u"}, good, "for reading"),
    ]
    for options, schema, message in cases:
        with pytest.raises(Exception, match=message):
            create_stream_writer(parse_options(options), schema, False)
    with pytest.raises(Exception, match="outputMode"):
        create_stream_writer(parse_options(_sink_options(warehouse, str(tmp_path / "c5"))), good, True)
    explicit = create_stream_writer(
        parse_options({"warehouse": warehouse, "table": "db.dst", "commit-user": "etl-1"}), good, False
    )
    assert explicit.commit_user == "etl-1" and explicit.checkpoint_location is None
    for name in ("db.dst", "db.other"):
        assert _snapshots(reload(warehouse, name)) == []
