"""The writer's commit protocol, called the way Spark calls it (tasks, then one commit).

These drive ``PaimonWriter.write`` / ``commit`` / ``abort`` in-process with Arrow
batches, so file-level outcomes (rolled files, deleted files, one snapshot, the
published events) can be checked exactly; one test goes through real Spark to
show the events reach the event log from Spark's own worker processes.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from airflow_provider_paimon.spark import commit_events
from airflow_provider_paimon.spark.datasource.source import PaimonDataSource

pytestmark = pytest.mark.spark

T = "db.clicks"
SCHEMA = StructType([StructField("id", LongType()), StructField("day", StringType())])
ARROW = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture(autouse=True)
def _quick_second_sweep(monkeypatch):
    from airflow_provider_paimon.spark.datasource import writer

    monkeypatch.setattr(writer, "SECOND_SWEEP_DELAY_S", 0.05)


def _batch(start: int, n: int) -> pa.RecordBatch:
    ids = list(range(start, start + n))
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array([f"d{i % 2}" for i in ids])], schema=ARROW)


def _writer(warehouse, overwrite=False, **options):
    base = {"warehouse": warehouse, "table": T, "create-table": "true", "partition-keys": "day"}
    base.update(options)
    return PaimonDataSource(base).writer(SCHEMA, overwrite)


def test_tasks_then_one_commit_make_one_snapshot_and_publish_it(warehouse, probe, tmp_path):
    seen = []
    listener = commit_events.add_listener(seen.append)
    log = str(tmp_path / "events.jsonl")
    try:
        writer = _writer(warehouse, **{"event-log": log})
        task1 = writer.write(iter([_batch(0, 50)]))
        task2 = writer.write(iter([_batch(50, 30), _batch(80, 20)]))
        assert probe.snapshot_ids(T) == []  # written, not yet visible
        assert len(probe.data_files()) >= 2
        writer.commit([task1, task2])
    finally:
        commit_events.remove_listener(listener)
    assert probe.snapshot_ids(T) == [1]
    assert probe.read_arrow(T).num_rows == 100
    (event,) = seen
    assert isinstance(event, commit_events.CommitEvent)
    assert (event.database, event.table, event.branch) == ("db", "clicks", "main")
    assert (event.snapshot_id, event.commit_kind, event.row_count) == (1, "APPEND", 100)
    assert commit_events.read_event_log(log) == [event]


def test_abort_deletes_the_files_of_successful_tasks(warehouse, probe):
    writer = _writer(warehouse)
    done = writer.write(iter([_batch(0, 40)]))
    assert probe.data_files()
    writer.abort([done, None])
    assert probe.data_files() == set()
    assert probe.snapshot_ids(T) == []


def test_abort_also_removes_files_of_tasks_whose_result_never_arrived(warehouse, probe):
    writer = _writer(warehouse)
    writer.write(iter([_batch(0, 40)]))  # e.g. killed by Spark while reporting back
    reported = writer.write(iter([_batch(40, 10)]))
    assert len(probe.data_files()) == 4
    writer.abort([reported, None])
    assert probe.data_files() == set()


def test_failing_task_removes_files_it_already_rolled(warehouse, probe):
    # tiny target file size: the task rolls several files before it fails
    writer = _writer(warehouse, **{"target-file-size": "1 kb"})

    def batches():
        for i in range(5):
            yield _batch(i * 2000, 2000)
        raise RuntimeError("source died")

    with pytest.raises(RuntimeError, match="source died"):
        writer.write(batches())
    assert probe.data_files() == set()


def test_abort_after_a_landed_commit_keeps_the_files(warehouse, probe):
    writer = _writer(warehouse)
    done = writer.write(iter([_batch(0, 10)]))
    writer.commit([done])
    files = probe.data_files()
    writer.abort([done])  # Spark may call abort if something fails after commit
    assert probe.data_files() == files
    assert probe.read_arrow(T).num_rows == 10


def test_precommit_compact_merges_small_files_into_the_same_snapshot(warehouse, probe):
    writer = _writer(warehouse, **{"precommit-compact": "true"})
    tasks = [writer.write(iter([_batch(i * 10, 10)])) for i in range(4)]
    assert len(probe.data_files()) == 8  # 4 tasks x 2 partitions
    writer.commit(tasks)
    assert probe.snapshot_ids(T) == [1]
    splits = probe.table(T).new_read_builder().new_scan().plan().splits()
    assert sum(len(s.files) for s in splits) == 2  # one merged file per partition
    assert sorted(probe.read_arrow(T).column("id").to_pylist()) == list(range(40))


def test_spark_write_and_read_publish_events_to_the_event_log(spark, paimon_io, tmp_path):
    read, write = paimon_io
    log = str(tmp_path / "spark-events.jsonl")
    df = spark.range(0, 20).selectExpr("id", "concat('d', cast(id % 2 as string)) as day")
    write(df, T, create_table="true", partition_keys="day", event_log=log)
    assert read(T, event_log=log).where("day = 'd1'").count() == 10
    events = commit_events.read_event_log(log)
    kinds = [(e.kind, e.snapshot_id) for e in events]
    assert kinds[0] == ("commit", 1)
    assert ("scan", 1) in kinds[1:]
    assert events[0].row_count == 20
