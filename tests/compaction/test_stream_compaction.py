"""A streaming writer's compaction (coordinator + background worker) on real tables.

The "stream" here is plain pypaimon commits, each followed by the sink's hook
``compact_after_commit``; the Spark sink itself is tested in
tests/streaming/test_streaming_compaction.py.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

from airflow_provider_paimon.paimon.compaction import after_commit as hook
from airflow_provider_paimon.paimon.compaction.after_commit import (
    StreamCompaction,
    compact_after_commit,
)
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.plan import plan_compaction
from airflow_provider_paimon.paimon.compaction.rewrite import FILE_SOURCE_COMPACT, rewrite_files
from airflow_provider_paimon.paimon.compaction.worker import ATTEMPT_PROPERTY, recover

from .helpers import (
    SMALL,
    append,
    batch,
    data_file_count,
    make_table,
    overwrite_partition,
    reload,
    row_multiset,
    row_multiset_of_table,
)


class MemoryPending:
    def __init__(self) -> None:
        self.by_prefix = {}

    @property
    def record(self):
        return next(iter(self.by_prefix.values()), None)

    def records(self):
        return list(self.by_prefix.values())

    def write(self, record) -> None:
        self.by_prefix[record["prefix"]] = dict(record)

    def clear(self, record) -> None:
        self.by_prefix.pop(record["prefix"], None)


def _stream(table, key, commits: int, start: int = 0, options=None, pending=None):
    decisions = []
    written = []
    for i in range(commits):
        data = batch(start + i * 40, 40)
        append(table, data)
        written.append(data)
        decisions.append(compact_after_commit(table, stream_key=key, commit_user="u", options=options,
                                              batch_id=i, pending=pending))
    return decisions, written


def _expected(written) -> object:
    import pyarrow as pa

    return row_multiset_of_table(pa.concat_tables(written))


def test_stream_keeps_its_table_compact_in_the_background(warehouse):
    table = make_table(warehouse, options=SMALL)
    key = ("w", "t", "main", "bg")
    try:
        pending = MemoryPending()
        decisions, written = _stream(table, key, 30, pending=pending)
        stream = hook.stream_compaction(key)
        assert stream.worker.wait_idle(30)
        assert {d.action for d in decisions} >= {"submitted", "nothing"}
        t = reload(warehouse)
        for _ in range(10):  # the stream's next commits find nothing left to do
            if compact_after_commit(t, stream_key=key, commit_user="u").action == "nothing":
                break
            assert stream.worker.wait_idle(30)
        assert stream.jobs_committed >= 2 and stream.jobs_failed == 0
        assert plan_compaction(t, stream.options).is_empty  # the batch planner agrees
        # 30 commits x 2 partitions wrote 60 files; compaction keeps a few alive
        assert data_file_count(t) <= 8
        assert row_multiset(t) == _expected(written)  # every row once
        kinds = [s.commit_kind for s in t.snapshot_manager().list_snapshots()]
        assert kinds.count("APPEND") == 30 and "COMPACT" in kinds
        compacts = [s for s in t.snapshot_manager().list_snapshots() if s.commit_kind == "COMPACT"]
        assert {s.commit_user for s in compacts} == {"u-compact"}  # never the stream's own user
        assert pending.record is None
    finally:
        hook.forget(key)


def test_write_only_turns_it_off_from_the_table_or_the_query(warehouse):
    table = make_table(warehouse, options=dict(SMALL, **{"write-only": "true"}))
    decisions, _ = _stream(table, ("w", "t", "main", "wo1"), 6)
    assert {d.action for d in decisions} == {"off"}
    other = make_table(warehouse, "db.q", options=SMALL)
    decisions, _ = _stream(other, ("w", "q", "main", "wo2"), 6, options={"write-only": "true"})
    assert {d.action for d in decisions} == {"off"}
    assert data_file_count(reload(warehouse)) == 12
    assert hook.stream_compaction(("w", "t", "main", "wo1")) is None


def test_query_options_override_the_tables(warehouse):
    table = make_table(warehouse, options=SMALL)
    key = ("w", "t", "main", "ovr")
    try:
        decisions, _ = _stream(table, key, 6, options={"compaction.min.file-num": "50"})
        assert {d.action for d in decisions} == {"nothing"}
        assert hook.stream_compaction(key).options.min_file_num == 50
    finally:
        hook.forget(key)


def _blocking_rewriter(gate: threading.Event, calls: list):
    from airflow_provider_paimon.paimon.compaction.runner import rewrite_bins_locally

    def factory(table):
        inner = rewrite_bins_locally(table)

        def rewrite(bins, target, prefix):
            calls.append(prefix)
            assert gate.wait(20)
            return inner(bins, target, prefix)

        return rewrite

    return factory


def test_busy_worker_never_blocks_and_a_conflict_gives_the_bin_up(warehouse):
    table = make_table(warehouse, options=SMALL)
    for i in range(3):
        append(table, batch(i * 40, 40))
    gate, calls = threading.Event(), []
    stream = StreamCompaction(table, CompactionOptions.from_table(table), "u",
                              rewriter=_blocking_rewriter(gate, calls))
    assert stream.after_commit(table).action == "submitted"  # bins of partitions a and b
    append(table, batch(500, 40))
    started = time.monotonic()
    assert stream.after_commit(table).action == "busy"  # returns at once while the rewrite waits
    assert time.monotonic() - started < 2
    # partition b is overwritten while the worker rewrites: its bin must be given up
    overwrite_partition(table, "b", 900, rows=10)
    expected = row_multiset(reload(warehouse))
    gate.set()
    assert stream.worker.wait_idle(30)
    [result] = stream.worker.results()
    assert result.committed and result.bins_given_up == 1 and result.files_before == 3
    t = reload(warehouse)
    assert row_multiset(t) == expected
    assert t.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    on_disk = {f for _, _, fs in os.walk(t.table_path) for f in fs if f.startswith(calls[0])}
    live = {e.file.file_name for e in _live(t)}
    assert on_disk and on_disk <= live  # the given-up bin's files were deleted


def _live(table):
    from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

    return live_entries(table, latest_snapshot(table))


def test_a_failing_rewrite_is_logged_and_leaves_the_table_as_it_was(warehouse, caplog):
    table = make_table(warehouse, options=SMALL)
    for i in range(3):
        append(table, batch(i * 40, 40))
    before = row_multiset(table)

    def broken(_table):
        def rewrite(bins, target, prefix):
            raise OSError("disk full")
        return rewrite

    pending = MemoryPending()
    stream = StreamCompaction(table, CompactionOptions.from_table(table), "u", pending=pending, rewriter=broken)
    assert stream.after_commit(table).action == "submitted"
    assert stream.worker.wait_idle(30)
    append(table, batch(1_000, 40))
    assert stream.after_commit(table).action == "submitted"  # offered again after a later commit
    assert stream.worker.wait_idle(30)
    assert stream.after_commit(table).action in ("submitted", "nothing")
    assert stream.jobs_failed == 2
    assert "disk full" in caplog.text and "write-only=true" in caplog.text
    t = reload(warehouse)
    assert all(s.commit_kind == "APPEND" for s in t.snapshot_manager().list_snapshots())
    assert row_multiset(t) != before and pending.record is None


def test_thread_ends_when_idle_and_nothing_grows_per_commit(warehouse):
    table = make_table(warehouse, options=SMALL)
    stream = StreamCompaction(table, CompactionOptions.from_table(table), "leak-check", idle_exit_s=0.3)

    def ours() -> int:
        return sum(1 for t in threading.enumerate() if t.name.endswith("leak-check-compact"))

    for i in range(40):
        append(table, batch(i * 40, 40))
        stream.after_commit(table, i)
        assert ours() <= 1
    assert stream.worker.wait_idle(30)
    time.sleep(1.0)
    assert not stream.worker.thread_alive and ours() == 0
    first = stream.worker.submitted
    assert first >= 1  # on a busy machine one job may have taken every bin of the 40 commits
    # more commits after the idle exit: a new thread takes the next job, then ends again
    for i in range(40, 48):
        append(table, batch(i * 40, 40))
        stream.after_commit(table, i)
        assert ours() <= 1
    assert stream.worker.wait_idle(30)
    time.sleep(1.0)
    assert stream.worker.submitted > first
    assert not stream.worker.thread_alive and ours() == 0
    stream.after_commit(table, 48)  # results collected: no reservation left behind
    assert stream.coordinator.reserved == 0 or stream.worker.busy
    assert stream.coordinator.scans == 1  # one scan at start, deltas after


def test_recover_deletes_a_killed_jobs_files_and_keeps_a_committed_ones(warehouse):
    from airflow_provider_paimon.paimon.compaction.commit import CompactChange, commit_compaction
    from airflow_provider_paimon.paimon.compaction.result import bin_folders

    table = make_table(warehouse, options=SMALL)
    for i in range(3):
        append(table, batch(i * 40, 40))
    entries = [e for e in _live(table) if e.partition.values[0] == "a"]
    files = [e.file for e in entries]
    part, bucket = tuple(entries[0].partition.values), entries[0].bucket
    pending = MemoryPending()

    def attempt(prefix):
        from airflow_provider_paimon.paimon.compaction.plan import CompactionBin

        b = CompactionBin(part, bucket, entries[0].total_buckets, tuple(files))
        pending.write({"prefix": prefix, "base_snapshot": table.snapshot_manager().get_latest_snapshot().id,
                       "folders": bin_folders(table, [b])})
        return rewrite_files(table, part, bucket, files, 1 << 30, FILE_SOURCE_COMPACT, prefix)

    def on_disk(prefix):
        return {f for _, _, fs in os.walk(table.table_path) for f in fs if f.startswith(prefix)}

    attempt("data-compact-running1-")  # a job whose process is alive: never touched
    pending.by_prefix["data-compact-running1-"].update(host=socket.gethostname(), pid=os.getpid())
    assert recover(table, pending) == ["running"] and on_disk("data-compact-running1-")
    pending.by_prefix.clear()

    attempt("data-compact-killed01-")  # killed before its commit
    assert on_disk("data-compact-killed01-")
    assert recover(table, pending) == ["deleted 1"]
    assert not on_disk("data-compact-killed01-") and pending.record is None

    new = attempt("data-compact-landed01-")  # killed after its commit
    commit_compaction(table, [CompactChange(part, bucket, entries[0].total_buckets, files, new)],
                      properties={ATTEMPT_PROPERTY: "data-compact-landed01-"})
    assert recover(table, pending) == ["committed"]
    assert on_disk("data-compact-landed01-") == {f.file_name for f in new}
    assert len(_live(reload(warehouse))) == 4  # b's 3 files + the compacted one


def test_recover_treats_a_zombie_owner_as_dead(warehouse):
    """A killed job's worker can stay a zombie (ended, not reaped: orphans wait for PID 1)
    while kill(pid, 0) still succeeds on it; its record must be recovered, not left
    "running" with its files kept."""
    import subprocess

    table = make_table(warehouse, options=SMALL)
    append(table, batch(0, 40))
    base = table.snapshot_manager().get_latest_snapshot().id
    owner = subprocess.Popen(["sleep", "30"])
    pending = MemoryPending()
    record = {"prefix": "data-compact-zombie01-", "base_snapshot": base, "folders": [],
              "host": socket.gethostname(), "pid": owner.pid}
    try:
        pending.write(dict(record))
        assert recover(table, pending) == ["running"]  # alive: left alone
        owner.kill()
        deadline = time.monotonic() + 10  # ended, and not reaped (no wait() yet)
        while b") Z " not in Path(f"/proc/{owner.pid}/stat").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(owner.pid, 0)  # still "exists" for kill
        assert recover(table, pending) == ["deleted 0"] and pending.record is None
    finally:
        owner.kill()
        owner.wait()


def test_compact_snapshots_name_the_streams_run(warehouse):
    """The stream's own COMPACT snapshots carry the run's properties beside the attempt's prefix."""
    table = make_table(warehouse, options=SMALL)
    key = ("w", "t", "main", "runlink")
    run = {"airflow.dag_id": "stream_dag", "airflow.run_id": "manual__1", "spark.app.id": "local-9"}
    try:
        for i in range(8):
            append(table, batch(i * 40, 40))
            compact_after_commit(table, stream_key=key, commit_user="u", batch_id=i,
                                 snapshot_properties=run)
        assert hook.stream_compaction(key).worker.wait_idle(30)
        compacts = [s for s in reload(warehouse).snapshot_manager().list_snapshots()
                    if s.commit_kind == "COMPACT"]
        assert compacts
        for snap in compacts:
            assert {k: snap.properties[k] for k in run} == run
            assert snap.properties[ATTEMPT_PROPERTY].startswith("data-")  # recovery still finds it
    finally:
        hook.forget(key)
