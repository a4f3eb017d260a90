"""``onStoreFailure=fail`` checks the lineage store BEFORE a sink commits.

The sink's commit (streaming_writer) asks ``lineage_guard`` whether the store answers;
when it does not, nothing is committed, the attempt's files are deleted and the error
names the store (password masked) and the policy. The commit of the same batch after
the store is back lands exactly once.
"""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pytest

from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.spark.lineage.guard import (
    PRECOMMIT_ENV,
    LineageStoreUnreachableError,
    check_before_commit,
    write_check_file,
)
from airflow_provider_paimon.spark.options import parse_options

from .helpers import SCHEMA, data_files_on_disk, live_files, make_table, reload, table_ids


def _task(writer, ids):
    batch = pa.RecordBatch.from_pylist([{"id": i, "v": f"v{i}"} for i in ids], schema=SCHEMA)
    return writer.write(iter([batch]))


def _writer(warehouse, checkpoint):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from airflow_provider_paimon.spark.datasource.streaming_writer import create_stream_writer

    schema = StructType([StructField("id", LongType()), StructField("v", StringType())])
    opts = parse_options(
        # write-only: no background compaction beside the commits this test counts
        {"warehouse": warehouse, "table": "db.dst", "checkpointLocation": checkpoint, "write-only": "true"}
    )
    return create_stream_writer(opts, schema, False)


def test_no_check_without_the_fail_policy(monkeypatch):
    monkeypatch.delenv(PRECOMMIT_ENV, raising=False)
    check_before_commit("anything")  # buffer / no capture: nothing to check, no error


def test_sink_refuses_to_commit_while_the_sqlite_store_is_gone(warehouse, tmp_path, monkeypatch):
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    url = f"sqlite:///{store_dir / 'lineage.sqlite'}"
    LineageStore.from_url(url).close()  # the capture creates it when it starts
    check = write_check_file(
        str(tmp_path / "spool" / "precommit-check-x.json"), url, "paimon", "etl.j"
    )
    assert os.stat(check).st_mode & 0o777 == 0o600
    monkeypatch.setenv(PRECOMMIT_ENV, check)
    make_table(warehouse, "db.dst")
    writer = _writer(warehouse, str(tmp_path / "ck"))

    writer.commit([_task(writer, [1, 2])], 0)  # store up: committed
    os.rename(store_dir, tmp_path / "away")  # the store's folder disappears
    with pytest.raises(LineageStoreUnreachableError) as err:
        writer.commit([_task(writer, [3]), _task(writer, [4])], 1)
    text = str(err.value)
    assert "onStoreFailure=fail" in text and "micro-batch 1 of db.dst" in text
    assert "lineage.sqlite" in text and "was NOT committed" in text
    sink = reload(warehouse, "db.dst")
    assert table_ids(sink) == [1, 2]  # nothing of batch 1 committed
    assert data_files_on_disk(sink.table_path) == live_files(sink)  # its files deleted
    # Spark calls abort after a failed commit: harmless on the already deleted files.
    writer.abort([], 1)

    os.rename(tmp_path / "away", store_dir)  # the store is back; the query restarts
    writer.commit([_task(writer, [3]), _task(writer, [4])], 1)  # Spark replays batch 1
    writer.commit([_task(writer, [3]), _task(writer, [4])], 1)  # ... and again: recognised
    sink = reload(warehouse, "db.dst")
    assert table_ids(sink) == [1, 2, 3, 4]  # exactly once
    assert [s.commit_identifier for s in sink.snapshot_manager().list_snapshots()] == [0, 1]
    assert data_files_on_disk(sink.table_path) == live_files(sink)


def test_error_masks_the_password(tmp_path, monkeypatch):
    url = "mysql+pymysql://lineage:Sup3rS3cret@127.0.0.1:1/paimon"  # nothing listens on port 1
    monkeypatch.setenv(
        PRECOMMIT_ENV, write_check_file(str(tmp_path / "c.json"), url, "paimon", "j")
    )
    with pytest.raises(LineageStoreUnreachableError) as err:
        check_before_commit("micro-batch 7 of db.t (branch main)")
    text = str(err.value)
    assert "Sup3rS3cret" not in text and "lineage:***@127.0.0.1:1" in text
    assert "micro-batch 7 of db.t" in text and "onStoreFailure=fail" in text


def test_batch_write_is_refused_too_and_spark_abort_cleans_up(warehouse, tmp_path, monkeypatch):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from airflow_provider_paimon.spark.datasource.write_setup import plan_write
    from airflow_provider_paimon.spark.datasource.writer import PaimonWriter

    url = f"sqlite:///{tmp_path / 'gone' / 'lineage.sqlite'}"  # its folder does not exist
    monkeypatch.setenv(
        PRECOMMIT_ENV, write_check_file(str(tmp_path / "c.json"), url, "paimon", "j")
    )
    make_table(warehouse, "db.dst")
    schema = StructType([StructField("id", LongType()), StructField("v", StringType())])
    opts = parse_options({"warehouse": warehouse, "table": "db.dst"})
    writer = PaimonWriter(plan_write(opts, schema, False))
    tasks = [_task(writer, [1]), _task(writer, [2])]
    with pytest.raises(LineageStoreUnreachableError, match=re.escape("the write to db.dst")):
        writer.commit(tasks)
    writer.abort(tasks)  # what Spark does after a failed commit
    sink = reload(warehouse, "db.dst")
    assert sink.snapshot_manager().get_latest_snapshot() is None
    assert data_files_on_disk(sink.table_path) == set()
