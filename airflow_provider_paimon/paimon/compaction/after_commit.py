"""Compaction after a streaming writer's commit: coordinator plus worker, per stream.

Paimon's streaming sinks for append tables without buckets compact their own table
after their commits (a compact coordinator and compact workers beside the writer),
unless ``write-only`` is true, in which case a separate compaction job does it. The
``paimon`` streaming sink (and ``foreachBatch`` through it) calls
:func:`compact_after_commit` after each micro-batch's commit, next to
``maintenance.after_commit.expire_after_commit``.

Per stream (warehouse, table, branch, commit user) this process keeps one
``CompactCoordinator`` (seeded by one scan, then fed each snapshot's delta) and one
``CompactWorker`` thread. After a commit: finished jobs hand their files back, the
view catches up with the new snapshots, and if the worker is idle and the planner's
rules find bins, they go to the worker. The call takes a few milliseconds (reading
the new snapshots' delta manifests) and never waits for a rewrite.

Options are the table's, overridable per query (Paimon's dynamic options):
``write-only=true`` turns it off; ``target-file-size``,
``compaction.small-file-ratio``, ``compaction.min.file-num``,
``source.split.open-file-cost`` steer it as for ``CompactionOperator``. Primary-key
tables follow Paimon's writer rules for their LSM tree instead
(``paimon.lsm.after_commit.LsmStreamCompaction``: universal minor compaction in the
background, waits only past ``num-sorted-run.stop-trigger``, first-row and full
compactions waited for). Tables it cannot compact (fixed-bucket append tables,
deletion vectors) are left alone with one INFO line per stream.

It never fails the write: the commit has landed, so any error is logged and
``None`` returned. Streams are kept in a small LRU map, so a long-lived process that
runs many queries keeps at most ``MAX_STREAMS`` of them; a worker thread ends by
itself when idle.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from .after_commit_policy import WRITE_ONLY, Decision, warn_after_commit, write_only  # noqa: F401 - WRITE_ONLY: public here too
from .coordinator import CompactCoordinator
from .errors import NotCompactableError
from .options import CompactionOptions
from .scan import table_name
from .worker import CompactJob, CompactWorker, Fault, PendingStore, recover

log = logging.getLogger(__name__)

MAX_STREAMS = 8


class StreamCompaction:
    """The coordinator and worker of one stream in this process."""

    def __init__(
        self,
        table: Any,
        options: CompactionOptions,
        commit_user: str,
        pending: PendingStore | None = None,
        fault: Fault | None = None,
        **worker_kwargs: Any,
    ) -> None:
        self.coordinator = CompactCoordinator(table, options)
        if pending is not None:
            recover(table, pending)
        self.worker = CompactWorker(options, f"{commit_user}-compact", pending=pending, fault=fault,
                                    **worker_kwargs)
        self.options = options
        self.jobs_committed = 0
        self.jobs_failed = 0

    def after_commit(self, table: Any, batch_id: int = -1,
                     properties: Mapping[str, str] | None = None) -> Decision:
        for result in self.worker.results():
            self.coordinator.release(result.job.bins)
            if result.committed:
                self.jobs_committed += 1
            elif result.error:
                self.jobs_failed += 1
        self.coordinator.table = table  # newest schema for reading manifests
        self.coordinator.catch_up()
        if self.worker.busy:
            return Decision("busy", small_files=self.coordinator.small_files)
        bins = self.coordinator.plan()
        if not bins:
            return Decision("nothing", small_files=self.coordinator.small_files)
        self.coordinator.reserve(bins)
        files = sum(b.file_count for b in bins)
        if not self.worker.submit(CompactJob(table, bins, batch_id, dict(properties or {}))):
            self.coordinator.release(bins)
            return Decision("refused", len(bins), files, self.coordinator.small_files)
        return Decision("submitted", len(bins), files, self.coordinator.small_files)


_STREAMS: OrderedDict[tuple, Any] = OrderedDict()  # StreamCompaction / LsmStreamCompaction / None
_LOCK = threading.Lock()


def compact_after_commit(
    table: Any,
    *,
    stream_key: tuple,
    commit_user: str,
    options: Mapping[str, Any] | None = None,
    batch_id: int = -1,
    pending: PendingStore | None = None,
    fault: Fault | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
) -> Decision | None:
    """After a stream's commit to ``table``: update its coordinator, maybe start a rewrite.

    ``stream_key`` names the stream (warehouse, table, branch, commit user);
    ``options`` are the query's own options over the table's; ``pending`` is where
    the worker records a job before writing (the sink's checkpoint);
    ``snapshot_properties`` go on the COMPACT snapshot (the stream's run). Never raises.
    """
    try:
        if write_only(table, options):
            return Decision("off")
        with _LOCK:
            if stream_key in _STREAMS:
                _STREAMS.move_to_end(stream_key)
                stream = _STREAMS[stream_key]
            else:
                stream = _start(table, commit_user, options, pending, fault)
                _STREAMS[stream_key] = stream
                while len(_STREAMS) > MAX_STREAMS:
                    _STREAMS.popitem(last=False)
        if stream is None:
            return Decision("not-compactable")
        return stream.after_commit(table, batch_id, snapshot_properties)
    except Exception as err:  # noqa: BLE001 - the commit has landed; never fail it
        warn_after_commit(table, "scheduling its compaction", err)
        return None


def _start(table: Any, commit_user: str, options: Mapping[str, Any] | None,
           pending: PendingStore | None, fault: Fault | None) -> Any:
    try:
        if table.is_primary_key_table:  # Paimon's writer rules for the LSM tree
            from ..lsm.after_commit import LsmStreamCompaction

            return LsmStreamCompaction(table, options, commit_user, pending, fault)
        compaction_options = CompactionOptions.from_table(table, options)
        return StreamCompaction(table, compaction_options, commit_user, pending, fault)
    except NotCompactableError as err:
        log.info("paimon: the stream into %s does not compact its table (%s)", table_name(table), err)
        return None


def stream_compaction(stream_key: tuple) -> Any:
    """The stream's compaction state in this process (tests, benchmarks)."""
    with _LOCK:
        return _STREAMS.get(stream_key)


def forget(stream_key: tuple) -> None:
    """Drop a stream's state (tests)."""
    with _LOCK:
        _STREAMS.pop(stream_key, None)
