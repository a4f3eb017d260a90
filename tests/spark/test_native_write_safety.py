"""``write_table`` failures leave nothing; ``foreach_batch_writer`` is exactly-once across SIGKILLs."""

from __future__ import annotations

import os
import textwrap

import pyarrow as pa
import pytest
from support.kill import ROOT, run_script_until_killed

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.spark import write_table
from airflow_provider_paimon.spark.datasource.streaming_writer import FAULT_GROUP_ENV
from airflow_provider_paimon.spark.native.foreach_batch import foreach_batch_writer
from airflow_provider_paimon.spark.native.write import FAULT_BEFORE_COMMIT

pytestmark = pytest.mark.spark


def _everything_under(warehouse):
    return sorted(
        os.path.relpath(os.path.join(d, f), warehouse) for d, _, files in os.walk(warehouse) for f in files
    )


def _ids(probe, name):
    return sorted(probe.read_arrow(name).column("id").to_pylist())


@pytest.fixture
def appended(spark, warehouse, probe):
    """A partitioned table with one committed write; returns its file listing."""
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id INT, p STRING")
    write_table(df, "db.f", warehouse=warehouse, options={"create-table": "true", "partition-keys": "p"})
    return _everything_under(warehouse)


def test_job_failing_mid_write_leaves_no_file_and_no_snapshot(spark, warehouse, probe, appended):
    from pyspark.sql import functions as F

    df = spark.range(0, 2000, numPartitions=4).selectExpr("cast(id as int) as id", "cast(id % 3 as string) as p")
    failing = df.withColumn("id", F.when(F.col("id") == 1500, F.raise_error(F.lit("boom"))).otherwise(F.col("id")))
    with pytest.raises(Exception, match="boom"):
        write_table(failing, "db.f", warehouse=warehouse)
    assert _everything_under(warehouse) == appended  # no data file, no staging, no snapshot
    assert _ids(probe, "db.f") == [1, 2]


def test_fault_between_placed_files_and_commit_leaves_nothing(spark, warehouse, probe, appended):
    df = spark.createDataFrame([(3, "a"), (4, "c")], "id INT, p STRING")
    faults.set_fault(FAULT_BEFORE_COMMIT)
    try:
        with pytest.raises(faults.InjectedFault):
            write_table(df, "db.f", warehouse=warehouse)
    finally:
        faults.clear()
    # the data files were already in their bucket folders: the abort deleted them
    # (an empty partition folder of the new partition may stay, as with the data source)
    assert _everything_under(warehouse) == appended
    assert _ids(probe, "db.f") == [1, 2]
    write_table(df, "db.f", warehouse=warehouse)  # a rerun commits
    assert _ids(probe, "db.f") == [1, 2, 3, 4]


JOB = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    from airflow_provider_paimon.spark.session import local_session
    from airflow_provider_paimon.spark.native.foreach_batch import foreach_batch_writer
    os.environ[{group_env!r}] = str(os.getpgrp())
    warehouse, checkpoint = sys.argv[1], sys.argv[2]
    spark = local_session("native-foreach-kill", master="local[1]",
                          conf={{"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m"}})
    src = (spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src")
           .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
           .option("max-snapshots-per-trigger", "1").load())
    sink = foreach_batch_writer("db.dst", warehouse=warehouse, checkpoint_location=checkpoint)
    query = (src.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    """
)


def _drain(spark, warehouse, checkpoint):
    src = (
        spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src")
        .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
        .option("max-snapshots-per-trigger", "1").load()
    )
    sink = foreach_batch_writer("db.dst", warehouse=warehouse, checkpoint_location=checkpoint)
    query = src.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    query = query.trigger(availableNow=True).start()
    query.awaitTermination()
    assert query.exception() is None


def _killed_run(tmp_path, warehouse: str, checkpoint: str, fault: str) -> None:
    run_script_until_killed(tmp_path, JOB.format(root=ROOT, group_env=FAULT_GROUP_ENV), fault, warehouse, checkpoint)


def test_foreach_batch_kill_and_restart_is_exactly_once(spark, warehouse, probe, tmp_path):
    schema = pa.schema([("id", pa.int64())])
    src = probe.create("db.src", schema)
    # the stream's own compaction stays off here (it is tested in tests/streaming/)
    probe.create("db.dst", schema, options={"compaction.min.file-num": "1000"})
    for ids in ([1, 2], [3], [4, 5]):
        probe.write_arrow("db.src", pa.table({"id": ids}, schema=schema))
    checkpoint = str(tmp_path / "ck")
    dst_root = probe.table("db.dst").table_path

    def data_files():
        return {f for d, _, fs in os.walk(dst_root) for f in fs if f.endswith(".parquet")}

    _killed_run(tmp_path, warehouse, checkpoint, "before-commit:1")  # files placed, not committed
    assert _ids(probe, "db.dst") == [1, 2]
    assert len(data_files()) > 1  # batch 1's placed but uncommitted files
    _killed_run(tmp_path, warehouse, checkpoint, "after-commit:2")  # committed, Spark never knew
    assert _ids(probe, "db.dst") == [1, 2, 3, 4, 5]

    probe.write_arrow("db.src", pa.table({"id": [6]}, schema=schema))
    assert src is not None
    _drain(spark, warehouse, checkpoint)  # a clean restart replays batch 2, then batch 3
    assert _ids(probe, "db.dst") == [1, 2, 3, 4, 5, 6]  # nothing lost, nothing doubled
    snapshots = probe.table("db.dst").snapshot_manager().list_snapshots()
    assert [s.commit_identifier for s in snapshots] == [0, 1, 2, 3]
    assert len({s.commit_user for s in snapshots}) == 1
    live = {os.path.basename(f.file_path) for s in probe.table("db.dst").new_read_builder().new_scan().plan().splits()
            for f in s.files}
    assert data_files() == live  # the killed attempt's files were deleted on replay


def test_foreach_batch_needs_a_checkpoint_location(warehouse):
    with pytest.raises(Exception, match="checkpoint_location"):
        foreach_batch_writer("db.dst", warehouse=warehouse, checkpoint_location="")
