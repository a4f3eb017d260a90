"""Exactly once across real crashes: the query process is SIGKILLed, then restarted.

Three runs of ``stream_job.py``'s query on one checkpoint:

1. killed in batch 1 after its files are written, before the Paimon commit;
2. replays batch 1 (its orphans are deleted, its rows committed once), commits
   batch 2 and is killed before Spark records batch 2 in its commit log;
3. replays batch 2, which the sink recognises as committed (no second commit, the
   replay's files deleted), then goes on with a new snapshot as batch 3.

Runs 1 and 2 are killed, so each is a process of its own (a local Spark, SIGKILLed
as a whole); run 3 ends normally and runs in the test session's Spark, which saves
a third Spark start. Afterwards the sink holds every source row exactly once and no
stray data file.
"""

from __future__ import annotations

import os
import signal

import pytest
from support.kill import run_stream_job

from .helpers import (
    NO_STREAM_COMPACTION,
    append,
    data_files_on_disk,
    live_files,
    make_table,
    reload,
    table_ids,
)
from .stream_job import drain

pytestmark = pytest.mark.spark


def test_sigkill_before_and_after_commit_then_restart_is_exactly_once(spark, warehouse, tmp_path):
    src = make_table(warehouse)
    append(src, [1, 2])
    append(src, [3])
    append(src, [4, 5])
    make_table(warehouse, "db.dst", options=NO_STREAM_COMPACTION)
    checkpoint = str(tmp_path / "ck")

    assert run_stream_job(warehouse, checkpoint, "before-commit:1") == -signal.SIGKILL
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == [1, 2]  # batch 0 only
    assert os.path.exists(os.path.join(checkpoint, "paimon-sink", "pending-1"))
    assert data_files_on_disk(dst.table_path) - live_files(dst)  # batch 1's orphans

    assert run_stream_job(warehouse, checkpoint, "after-commit:2") == -signal.SIGKILL
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == [1, 2, 3, 4, 5]
    assert not os.path.exists(os.path.join(checkpoint, "commits", "2"))  # Spark never saw it done

    append(src, [6])
    drain(spark, warehouse, checkpoint)  # a clean restart, same query, same checkpoint
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == [1, 2, 3, 4, 5, 6]  # each row exactly once
    snapshots = dst.snapshot_manager().list_snapshots()
    assert len({s.commit_user for s in snapshots}) == 1  # stable across the three runs
    assert [s.commit_identifier for s in snapshots] == [0, 1, 2, 3]
    assert data_files_on_disk(dst.table_path) == live_files(dst)  # no orphan, no replay leftovers
    assert not [f for f in os.listdir(os.path.join(checkpoint, "paimon-sink")) if f.startswith("pending-")]
