"""The streaming sink compacts its own table in the background (issue #21).

Real local Spark queries, ``db.src`` (one pypaimon snapshot per micro-batch) ->
``db.dst`` through the ``paimon`` sink, ``compaction.min.file-num`` 3:

- with the coordinator on, the live file count stays small, COMPACT snapshots appear
  under the stream's ``-compact`` commit user, and the table reads back (plain
  pypaimon) exactly the source's rows, each once;
- with ``write-only=true`` as a query option, every micro-batch's file stays;
- SIGKILLed in the background compaction (before its COMPACT commit, then right after
  it), the query restarts exactly once, and no file is left that no snapshot names.

The worker runs in Spark's Python commit process, after the query's own commits, so
the checks first wait until the table is quiet.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from support.kill import run_stream_job

from airflow_provider_paimon.paimon.compaction.scan import live_entries
from airflow_provider_paimon.spark.datasource.streaming_writer import COMPACT_PENDING, STATE_DIR

from .helpers import append, data_files_on_disk, live_files, make_table, reload, table_ids
from .stream_job import drain

pytestmark = pytest.mark.spark
BATCHES = 6


def _source(warehouse: str, batches: int = BATCHES) -> list[int]:
    src = make_table(warehouse)
    ids: list[int] = []
    for i in range(batches):
        append(src, [2 * i, 2 * i + 1])
        ids += [2 * i, 2 * i + 1]
    return ids


def _pending(checkpoint: str) -> list[str]:
    """The checkpoint's records of compaction jobs not finished (one file per job)."""
    folder = os.path.join(checkpoint, STATE_DIR)
    return [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(COMPACT_PENDING)]


def _wait_quiet(warehouse: str, name: str, checkpoint: str, quiet_s: float = 2.5, timeout: float = 60) -> None:
    """Until the table's latest snapshot stays the same for ``quiet_s`` and no job is pending."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        snap = reload(warehouse, name).snapshot_manager().get_latest_snapshot()
        now = snap.id if snap else None
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s and not _pending(checkpoint):
            return
        time.sleep(0.25)
    raise AssertionError(f"{name} kept changing for {timeout} s")


def _referenced(table) -> set[str]:
    """Data files any retained snapshot reads."""
    out: set[str] = set()
    for snap in table.snapshot_manager().list_snapshots():
        out |= {e.file.file_name for e in live_entries(table, snap)}
    return out


def _stream_batches(table, user_suffix: str = "") -> list[int]:
    sink_users = {s.commit_user for s in table.snapshot_manager().list_snapshots() if s.commit_kind == "APPEND"}
    assert len(sink_users) == 1
    user = next(iter(sink_users))
    return [s.commit_identifier for s in table.snapshot_manager().list_snapshots() if s.commit_user == user]


def test_sink_keeps_its_table_compact_and_write_only_turns_it_off(spark, warehouse, tmp_path):
    ids = _source(warehouse)
    make_table(warehouse, "db.dst")
    make_table(warehouse, "db.wo")
    drain(spark, warehouse, str(tmp_path / "ck"))
    drain(spark, warehouse, str(tmp_path / "ck-wo"), sink="db.wo", sink_options={"write-only": "true"})
    _wait_quiet(warehouse, "db.dst", str(tmp_path / "ck"))

    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == sorted(ids)  # every source row, once
    assert _stream_batches(dst) == list(range(BATCHES))  # one APPEND per micro-batch
    compacts = [s for s in dst.snapshot_manager().list_snapshots() if s.commit_kind == "COMPACT"]
    assert compacts and {s.commit_user for s in compacts} == {f"{_sink_user(dst)}-compact"}
    assert len(live_files(dst)) <= 3  # vs one file per micro-batch
    assert data_files_on_disk(dst.table_path) <= _referenced(dst)  # no stray file

    wo = reload(warehouse, "db.wo")
    assert table_ids(wo) == sorted(ids)
    assert len(live_files(wo)) == BATCHES  # write-only: every micro-batch's file stays
    assert {s.commit_kind for s in wo.snapshot_manager().list_snapshots()} == {"APPEND"}


def _sink_user(table) -> str:
    return next(s.commit_user for s in table.snapshot_manager().list_snapshots() if s.commit_kind == "APPEND")


def test_sigkill_in_background_compaction_then_restart_is_exactly_once(spark, warehouse, tmp_path):
    ids = _source(warehouse, 5)
    make_table(warehouse, "db.dst")
    checkpoint = str(tmp_path / "ck")

    # 1. killed while the compaction scheduled after batch 2 (3 small files) has
    #    rewritten its bin but not committed it
    assert run_stream_job(warehouse, checkpoint, "compact-before-commit:2") == -signal.SIGKILL
    dst = reload(warehouse, "db.dst")
    killed = _pending_files(dst, checkpoint)
    assert killed and not killed & _referenced(dst)  # the killed job's files, named by no snapshot
    assert "COMPACT" not in {s.commit_kind for s in dst.snapshot_manager().list_snapshots()}

    # 2. restarted: the killed job's files are deleted; killed again right after the
    #    first COMPACT commit of this run
    assert run_stream_job(warehouse, checkpoint, "compact-after-commit:*") == -signal.SIGKILL
    dst = reload(warehouse, "db.dst")
    assert not killed & data_files_on_disk(dst.table_path)
    assert "COMPACT" in {s.commit_kind for s in dst.snapshot_manager().list_snapshots()}
    assert _pending_files(dst, checkpoint) <= _referenced(dst)  # committed: its files are live

    # 3. a clean restart in this session, with more source rows
    src = reload(warehouse, "db.src")
    append(src, [100, 101])
    ids += [100, 101]
    drain(spark, warehouse, checkpoint)
    _wait_quiet(warehouse, "db.dst", checkpoint)
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == sorted(ids)  # each row exactly once
    batches = _stream_batches(dst)
    assert batches == sorted(set(batches)) == list(range(len(batches)))  # one commit per batch id
    assert data_files_on_disk(dst.table_path) <= _referenced(dst)  # nothing left behind
    assert not _pending(checkpoint)


def _pending_files(table, checkpoint: str) -> set[str]:
    """Files of jobs still recorded as pending (their run was killed; the next run decides)."""
    import json

    prefixes = []
    for path in _pending(checkpoint):
        with open(path) as fh:
            prefixes.append(json.load(fh)["prefix"])
    return {f for f in data_files_on_disk(table.table_path) if f.startswith(tuple(prefixes))} if prefixes else set()
