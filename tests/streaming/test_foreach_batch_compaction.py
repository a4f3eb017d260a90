"""``foreach_batch_writer`` compacts its own table in the background, as the sink does (#21).

Real local Spark queries, ``db.src`` (one pypaimon snapshot per micro-batch) -> a sink
table through ``writeStream.foreachBatch(foreach_batch_writer(...))``:

- with the coordinator on, the live file count stays small, COMPACT snapshots appear
  under the stream's ``-compact`` commit user, and plain pypaimon reads back exactly
  the source's rows, each once;
- ``write-only=true`` as the writer's option turns it off (every micro-batch's file stays);
- a table that would never compact (``compaction.min.file-num`` 1000) compacts when the
  query's own option says 3 (the options are the table's, overridable per query);
- SIGKILLed in the background compaction (before its COMPACT commit, then right after
  it), the query restarts exactly once and no file is left that no snapshot names.

Here the worker thread runs in the driver (``foreachBatch`` commits there).
"""

from __future__ import annotations

import textwrap

import pytest
from support.kill import ROOT, run_script_until_killed

from airflow_provider_paimon.paimon.compaction.options import _table_option_map
from airflow_provider_paimon.spark.datasource.streaming_writer import FAULT_GROUP_ENV
from airflow_provider_paimon.spark.native.foreach_batch import foreach_batch_writer

from .helpers import append, data_files_on_disk, live_files, make_table, reload, table_ids
from .test_streaming_compaction import (
    _pending,
    _pending_files,
    _referenced,
    _sink_user,
    _source,
    _stream_batches,
    _wait_quiet,
)

pytestmark = pytest.mark.spark
BATCHES = 4  # 4 small files: one bin with min-file-num 3


def drain(spark, warehouse: str, checkpoint: str, sink: str = "db.dst", options: dict | None = None) -> None:
    """db.src -> ``sink`` through foreach_batch_writer, one source snapshot per micro-batch."""
    src = (
        spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src")
        .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
        .option("max-snapshots-per-trigger", "1").load()
    )
    writer = foreach_batch_writer(sink, warehouse=warehouse, checkpoint_location=checkpoint, options=options)
    query = (src.writeStream.foreachBatch(writer).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None


def test_foreach_batch_keeps_its_table_compact_write_only_and_query_options(spark, warehouse, tmp_path):
    ids = _source(warehouse, BATCHES)
    make_table(warehouse, "db.dst")
    make_table(warehouse, "db.wo")
    make_table(warehouse, "db.ovr", options={"compaction.min.file-num": "1000"})
    drain(spark, warehouse, str(tmp_path / "ck"))
    drain(spark, warehouse, str(tmp_path / "ck-wo"), sink="db.wo", options={"write-only": "true"})
    drain(spark, warehouse, str(tmp_path / "ck-ovr"), sink="db.ovr", options={"compaction.min.file-num": "3"})
    _wait_quiet(warehouse, "db.dst", str(tmp_path / "ck"))
    _wait_quiet(warehouse, "db.ovr", str(tmp_path / "ck-ovr"))

    for name in ("db.dst", "db.ovr"):
        table = reload(warehouse, name)
        assert table_ids(table) == sorted(ids), name  # plain pypaimon: every source row, once
        assert _stream_batches(table) == list(range(BATCHES)), name  # one APPEND per micro-batch
        compacts = [s for s in table.snapshot_manager().list_snapshots() if s.commit_kind == "COMPACT"]
        assert compacts and {s.commit_user for s in compacts} == {f"{_sink_user(table)}-compact"}, name
        assert len(live_files(table)) <= 3, name  # vs one file per micro-batch
        assert data_files_on_disk(table.table_path) <= _referenced(table), name  # no stray file
    assert _table_option_map(reload(warehouse, "db.ovr"))["compaction.min.file-num"] == "1000"  # unchanged

    wo = reload(warehouse, "db.wo")
    assert table_ids(wo) == sorted(ids)
    assert len(live_files(wo)) == BATCHES  # write-only: every micro-batch's file stays
    assert {s.commit_kind for s in wo.snapshot_manager().list_snapshots()} == {"APPEND"}


JOB = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {root!r})
    sys.path.insert(0, os.path.join({root!r}, "tests"))
    from airflow_provider_paimon.spark.session import local_session
    os.environ[{group_env!r}] = str(os.getpgrp())
    warehouse, checkpoint = sys.argv[1], sys.argv[2]
    spark = local_session("foreach-compact-kill", master="local[1]",
                          conf={{"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m"}})
    from streaming.test_foreach_batch_compaction import drain
    drain(spark, warehouse, checkpoint)
    time.sleep(30)  # the background compaction's fault kills this process before then
    """
)


def _killed_run(tmp_path, warehouse: str, checkpoint: str, fault: str) -> None:
    run_script_until_killed(tmp_path, JOB.format(root=ROOT, group_env=FAULT_GROUP_ENV), fault, warehouse, checkpoint)


def test_foreach_batch_sigkill_in_background_compaction_then_restart_is_exactly_once(spark, warehouse, tmp_path):
    ids = _source(warehouse, 5)
    make_table(warehouse, "db.dst")
    checkpoint = str(tmp_path / "ck")

    # 1. killed while the compaction scheduled after batch 2 (3 small files) has
    #    rewritten its bin but not committed it
    _killed_run(tmp_path, warehouse, checkpoint, "compact-before-commit:2")
    dst = reload(warehouse, "db.dst")
    killed = _pending_files(dst, checkpoint)
    assert killed and not killed & _referenced(dst)  # the killed job's files, named by no snapshot
    assert "COMPACT" not in {s.commit_kind for s in dst.snapshot_manager().list_snapshots()}

    # 2. restarted: the killed job's files are deleted; killed again right after the
    #    first COMPACT commit of this run
    _killed_run(tmp_path, warehouse, checkpoint, "compact-after-commit:*")
    dst = reload(warehouse, "db.dst")
    assert not killed & data_files_on_disk(dst.table_path)
    assert "COMPACT" in {s.commit_kind for s in dst.snapshot_manager().list_snapshots()}
    assert _pending_files(dst, checkpoint) <= _referenced(dst)  # committed: its files are live

    # 3. a clean restart in this session, with more source rows
    append(reload(warehouse, "db.src"), [100, 101])
    ids += [100, 101]
    drain(spark, warehouse, checkpoint)
    _wait_quiet(warehouse, "db.dst", checkpoint)
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == sorted(ids)  # each row exactly once
    batches = _stream_batches(dst)
    assert batches == sorted(set(batches)) == list(range(len(batches)))  # one commit per batch id
    assert data_files_on_disk(dst.table_path) <= _referenced(dst)  # nothing left behind
    assert not _pending(checkpoint)
