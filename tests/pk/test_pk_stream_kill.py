"""A primary-key table's changelog streamed exactly once across real SIGKILLs.

The append stream's kill test (``tests/streaming/test_streaming_kill.py``) with a
primary-key source (``changelog-producer=input``, ``read.changelog=true``) read from
its first snapshot, one snapshot per micro-batch, into an append table that keeps
every change as a row (``rowkind`` and the source's columns). Killed after batch 2's
commit, before Spark's commit log (one killed process: the kill before a commit is
the sink's alone and the append test covers it), then restarted cleanly: Spark
replays batch 2, the source plans the same changelog range again, the sink knows it
committed it; the sink holds each change of the source exactly once (the model's raw
changelog of each commit), the COMPACT snapshot in between gave none, and no stray
file is left.
"""

from __future__ import annotations

import json
import os
import signal

import pyarrow as pa
import pytest
from pypaimon import Schema
from streaming.helpers import NO_STREAM_COMPACTION, data_files_on_disk, live_files
from streaming.stream_job import drain
from support.kill import run_stream_job

from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys

from . import tables
from .scenarios import FIELDS, SCHEMA, Feed, model_for, seed_for
from .tables import write
from .test_pk_changelog import input_changes

pytestmark = pytest.mark.spark
SOURCE = {"read.changelog": "true"}


def test_sigkill_then_restart_streams_each_change_once(spark, warehouse, tmp_path):
    variant = "deduplicate"
    seed = seed_for(variant)
    model = model_for(variant, {"changelog-producer": "input"})
    tables.create(warehouse, "db.src", variant, {"changelog-producer": "input"})
    sink_schema = pa.schema([pa.field("rowkind", pa.string()), *SCHEMA])
    open_catalog(warehouse).create_table(
        "db.dst", Schema.from_pyarrow_schema(sink_schema, options=NO_STREAM_COMPACTION), False)
    feed = Feed(model, seed)
    expected: list[tuple] = []

    def commit() -> None:
        rows = feed.commit()
        write(tables.reload(warehouse, "db.src"), rows)
        model.commit(rows)
        expected.extend(input_changes(model, rows))

    for n in range(4):
        commit()
        if n == 1:  # snapshot 3: a COMPACT one, which carries no change
            assert compact_primary_keys(tables.reload(warehouse, "db.src"), "full").committed
    checkpoint = str(tmp_path / "ck")
    options = json.dumps(SOURCE)
    assert run_stream_job(warehouse, checkpoint, "after-commit:2", options) == -signal.SIGKILL
    assert [s.commit_identifier for s in tables.reload(warehouse, "db.dst").snapshot_manager().list_snapshots()] \
        == [0, 1, 2]
    assert not os.path.exists(os.path.join(checkpoint, "commits", "2"))  # Spark never saw it done
    commit()
    drain(spark, warehouse, checkpoint, source_options=SOURCE)

    dst = tables.reload(warehouse, "db.dst")
    builder = dst.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    rows = list(zip(*(got.column(c).to_pylist() for c in ["rowkind", *FIELDS]), strict=True))
    assert sorted(rows, key=repr) == sorted(expected, key=repr), f"seed {seed}"  # each change once
    snapshots = dst.snapshot_manager().list_snapshots()
    assert [s.commit_identifier for s in snapshots] == [0, 1, 2, 3, 4]  # one per source commit
    assert data_files_on_disk(dst.table_path) == live_files(dst)  # no orphan, no replay leftovers
    assert not [f for f in os.listdir(os.path.join(checkpoint, "paimon-sink")) if f.startswith("pending-")]
