"""The compact worker of a streaming writer: one background thread, never in the way.

Paimon's streaming sinks hand compaction tasks to compact workers that run beside
the writer, and "compaction never backpressure". Here the worker is one daemon
thread in the process that commits the stream's micro-batches (Spark's Python commit
worker for the ``paimon`` sink, the driver for ``foreachBatch``):

- ``submit`` never blocks: it takes a job only when the thread is idle (a queue of
  one), otherwise the job is refused and the coordinator offers the files again
  after a later commit;
- the thread rewrites the job's bins with the compaction job's own pypaimon code
  (``rewrite_files``, a per-attempt file prefix) and commits one COMPACT snapshot
  with ``commit_compaction`` under its own commit user, so the stream's replay
  detection (which looks for the stream's commit user) never mistakes it for a batch;
- a conflict (another commit removed a file of a bin: an overwrite, another
  compaction) drops the bins that lost a file and commits the rest, up to
  ``max_retries`` times; a bin given up has its rewritten files deleted;
- any error is logged as a warning with the fix and never reaches the stream;
- the thread ends once it had no job for ``idle_exit_s``, so a query that stopped
  leaves no thread behind; the next ``submit`` starts a new one.

Crash safety: before rewriting, the job's file prefix is recorded in a
``PendingStore`` (the sink keeps one file per job in its checkpoint) with the snapshot
it started from and its process; the COMPACT snapshot carries the prefix in its
properties. A process killed mid-job leaves files no snapshot names; :func:`recover`
(called when a stream's coordinator starts in a process) deletes them when it can
prove the commit never happened, keeps them when the commit landed, and leaves the
records of jobs whose process is still alive alone. Rows are never lost or doubled either way: the
commit is one atomic snapshot.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConcurrentModificationError
from ..manifest_reader import KIND_ADD
from .commit import CompactChange, commit_compaction
from .coordinator import delta_entries
from .errors import CompactionConflictError
from .plan import CompactionBin
from .result import bin_folders, delete_attempt_files, delete_prefixed_files
from .rewrite import delete_files
from .runner import BinRewriter, rewrite_bins_locally
from .scan import latest_snapshot, live_entries, table_name

log = logging.getLogger(__name__)

#: Snapshot property naming the data-file prefix of the job that committed it.
ATTEMPT_PROPERTY = "paimon-stream-compact.prefix"
DEFAULT_IDLE_EXIT_S = 10.0
DEFAULT_MAX_RETRIES = 2
#: The stream commits beside the worker; a commit that lost the race for the next
#: snapshot id is rebuilt on the new latest snapshot up to this many times.
RENAME_ATTEMPTS = 30

Fault = Callable[[str, int], None]


class PendingStore(Protocol):
    """Where jobs record their prefix before writing (the stream's checkpoint), one record each."""

    def records(self) -> list[dict[str, Any]]: ...

    def write(self, record: dict[str, Any]) -> None: ...

    def clear(self, record: dict[str, Any]) -> None: ...


@dataclass
class CompactJob:
    """Bins chosen after the stream's commit of ``batch_id``, on ``table`` as then loaded."""

    table: Any
    bins: list[CompactionBin]
    batch_id: int = -1
    # snapshot properties of the stream's commit (the Airflow run and Spark app,
    # ``paimon.commit_properties``): the COMPACT snapshot names the same run
    properties: dict[str, str] = field(default_factory=dict)
    # primary-key tables: the LSM units behind ``bins`` (``paimon.lsm.compact.LsmUnit``)
    units: list[Any] = field(default_factory=list)


@dataclass
class JobResult:
    job: CompactJob
    committed: bool = False
    snapshot_id: int | None = None
    files_before: int = 0
    files_after: int = 0
    bins_given_up: int = 0
    error: str | None = None
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class CompactWorker:
    """One background thread that rewrites and commits one job at a time."""

    def __init__(
        self,
        options: Any,
        commit_user: str,
        *,
        rewriter: Callable[[Any], BinRewriter] = rewrite_bins_locally,
        pending: PendingStore | None = None,
        fault: Fault | None = None,
        idle_exit_s: float = DEFAULT_IDLE_EXIT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self.options = options
        self.commit_user = commit_user
        self.rewriter = rewriter
        self.pending = pending
        self.fault = fault
        self.idle_exit_s = idle_exit_s
        self.max_retries = max_retries
        self._queue: queue.Queue[CompactJob] = queue.Queue(maxsize=1)
        self._lock = threading.Lock()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._results: collections.deque[JobResult] = collections.deque(maxlen=64)
        self.submitted = 0
        self.refused = 0

    # -- the stream's side (never blocks) -------------------------------------------

    @property
    def busy(self) -> bool:
        return self._busy

    def submit(self, job: CompactJob) -> bool:
        """Hand ``job`` to the thread if it is idle; ``False`` (job refused) otherwise."""
        with self._lock:
            if self._busy:
                self.refused += 1
                return False
            self._busy = True
            self._queue.put_nowait(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name=f"paimon-compact-{self.commit_user[-12:]}", daemon=True
                )
                self._thread.start()
            self.submitted += 1
            return True

    def results(self) -> list[JobResult]:
        """Jobs finished since the last call (at most the last 64)."""
        out = []
        while True:
            try:
                out.append(self._results.popleft())
            except IndexError:
                return out

    @property
    def thread_alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no job is queued or running (tests, benchmarks); ``True`` if idle."""
        deadline = time.monotonic() + timeout
        while self._busy and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self._busy

    # -- the thread ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                job = self._queue.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            try:
                result = self._compact(job)
            except BaseException as err:  # noqa: BLE001 - a worker never takes the stream down
                result = JobResult(job, error=f"{type(err).__name__}: {err}")
            self._results.append(result)
            with self._lock:
                self._busy = False

    def _compact(self, job: CompactJob) -> JobResult:
        table = job.table
        started = time.monotonic()
        result = JobResult(job, files_before=sum(b.file_count for b in job.bins))
        prefix = f"data-compact-{uuid.uuid4().hex[:12]}-"
        base = latest_snapshot(table)
        record = {"prefix": prefix, "prefixes": self._prefixes(prefix), "base_snapshot": base.id if base else 0,
                  "folders": bin_folders(table, job.bins), "host": socket.gethostname(), "pid": os.getpid()}
        if self.pending is not None:
            self.pending.write(record)
        bins = list(job.bins)
        try:
            changes = self._rewrite(table, job, prefix)
            if self.fault is not None:
                self.fault("compact-before-commit", job.batch_id)
            snapshot = None
            for attempt in range(self.max_retries + 1):
                try:
                    snapshot = self._commit(table, changes, {**job.properties, ATTEMPT_PROPERTY: prefix})
                    break
                except CompactionConflictError as err:
                    changes, dropped = _still_alive(table, changes)
                    result.bins_given_up += len(dropped)
                    for c in dropped:
                        delete_files(table, c.partition, c.bucket, [*c.after, *c.changelog])
                    log.info("paimon stream compaction of %s conflicted (%s); %d bin(s) given up, "
                             "%d left (attempt %d)", table_name(table), err, len(dropped),
                             len(changes), attempt + 1)
                    if not changes:
                        break
            if snapshot is None:
                self._delete_attempt(table, bins, prefix, set())
                if self.pending is not None:
                    self.pending.clear(record)
                result.error = None if not changes else "conflicts on every attempt"
                return _done(result, started)
            if self.fault is not None:
                self.fault("compact-after-commit", job.batch_id)
        except ConcurrentModificationError as err:
            # lost every race for the next snapshot id, or an uncertain outcome: keep the
            # files only if a snapshot of this job exists (or may exist)
            landed = committed_by(table, base.id if base else 0, prefix)
            if landed is None or landed:
                log.warning("paimon stream compaction of %s: %s", table_name(table), err)
            else:
                self._delete_attempt(table, bins, prefix, set())
                if self.pending is not None:
                    self.pending.clear(record)
                log.info("paimon stream compaction of %s gave up: %s", table_name(table), err)
            result.error = str(err)
            return _done(result, started)
        except BaseException as err:  # noqa: BLE001 - logged and returned: the stream goes on
            self._delete_attempt(table, bins, prefix, set())
            if self.pending is not None:
                self.pending.clear(record)
            log.warning(
                "paimon stream compaction of %s failed (%s: %s); the stream goes on and offers "
                "these files again after a later commit (set write-only=true to leave compaction "
                "to CompactionOperator)", table_name(table), type(err).__name__, err,
            )
            result.error = f"{type(err).__name__}: {err}"
            return _done(result, started)
        committed = {f.file_name for c in changes for f in (*c.after, *c.changelog)}
        self._delete_attempt(table, bins, prefix, committed)
        if self.pending is not None:
            self.pending.clear(record)
        result.committed = True
        result.snapshot_id = snapshot.id
        result.files_before = sum(len(c.before) for c in changes)
        result.files_after = sum(len(c.after) for c in changes)
        _done(result, started)
        log.info("paimon stream compaction of %s: %d files into %d (COMPACT snapshot %d) in %.2f s",
                 table_name(table), result.files_before, result.files_after, snapshot.id,
                 result.duration_s)
        return result


    # -- what a job does (primary-key tables override these: ``paimon.lsm.stream``) --

    def _rewrite(self, table: Any, job: CompactJob, prefix: str) -> list[CompactChange]:
        bins = list(job.bins)
        new_files = self.rewriter(table)(bins, self.options.target_file_size, prefix)
        return [
            CompactChange(b.partition, b.bucket, b.total_buckets, list(b.files), list(after))
            for b, after in zip(bins, new_files, strict=True)
        ]

    def _commit(self, table: Any, changes: list[CompactChange], properties: dict[str, str]) -> Any:
        return commit_compaction(table, changes, commit_user=self.commit_user, properties=properties,
                                 max_rename_attempts=RENAME_ATTEMPTS)

    def _prefixes(self, prefix: str) -> list[str]:
        """The name prefixes of every file a job with ``prefix`` writes."""
        return [prefix]

    def _delete_attempt(self, table: Any, bins: list[CompactionBin], prefix: str, keep: set[str]) -> None:
        delete_attempt_files(table, bins, tuple(self._prefixes(prefix)), keep=keep)


def _done(result: JobResult, started: float) -> JobResult:
    result.duration_s = time.monotonic() - started
    return result


def _still_alive(table: Any, changes: list[CompactChange]) -> tuple[list[CompactChange], list[CompactChange]]:
    """Split ``changes`` into those whose replaced files are all alive now, and the rest."""
    alive = {
        (tuple(e.partition.values), e.bucket, e.file.file_name)
        for e in live_entries(table, latest_snapshot(table))
    }
    keep: list[CompactChange] = []
    dropped: list[CompactChange] = []
    for c in changes:
        ok = all((tuple(c.partition), c.bucket, f.file_name) in alive for f in c.before)
        (keep if ok else dropped).append(c)
    return keep, dropped


def recover(table: Any, pending: PendingStore) -> list[str]:
    """Clean up after jobs killed mid-way (their records are still in ``pending``).

    A record whose process is still alive (a job running in another commit process
    of the same query) is left alone. For the others: the job's rewritten files are
    deleted unless its COMPACT snapshot exists; when the snapshots it would have to
    look at are expired it cannot tell, and keeps them (orphan-file removal finds them
    later). Returns what it did per record, for logs and tests.
    """
    done = []
    for record in pending.records():
        if _owner_alive(record):
            done.append("running")
            continue
        done.append(_recover_one(table, pending, record))
    return done


def _owner_alive(record: dict[str, Any]) -> bool:
    pid = record.get("pid")
    if not isinstance(pid, int) or record.get("host") != socket.gethostname():
        return False  # another host: that driver is gone when its query restarted here
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` ended but was not reaped yet (``/proc`` state Z or X): dead here.

    ``kill(pid, 0)`` still succeeds on such a process. A killed job's worker is an
    orphan (its daemon died with it) and stays a zombie until PID 1 reaps it, which a
    container without an init may do late or never: its record would be left "running"
    and its files kept. Without ``/proc`` (not Linux) ``kill``'s answer stands.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")


def _recover_one(table: Any, pending: PendingStore, record: dict[str, Any]) -> str:
    prefix = str(record["prefix"])
    prefixes = tuple(str(p) for p in record.get("prefixes") or [prefix])
    snapshot = find_job_snapshot(table, int(record.get("base_snapshot") or 0), prefix)
    keep: set[str] | None
    if snapshot is None:
        keep = None
    elif snapshot is False:
        keep = set()
    else:
        keep = {e.file.file_name for e in delta_entries(table, snapshot) if e.kind == KIND_ADD}
        keep |= changelog_file_names(table, snapshot)
    if keep is None:
        log.info("paimon stream compaction: cannot tell whether job %s of %s committed (its "
                 "snapshots expired); its files are left to remove_orphan_files", prefix, table_name(table))
        pending.clear(record)
        return "unknown"
    deleted = delete_prefixed_files(table.file_io, record.get("folders") or [], prefixes, keep)
    pending.clear(record)
    log.info("paimon stream compaction: job %s of %s was %s; deleted %d leftover file(s)",
             prefix, table_name(table), "committed" if keep else "never committed", deleted)
    return "committed" if keep else f"deleted {deleted}"


def changelog_file_names(table: Any, snapshot: Any) -> set[str]:
    """Names of the changelog files ``snapshot``'s changelog manifest lists (none: empty)."""
    if not snapshot.changelog_manifest_list:
        return set()
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    metas = ManifestListManager(table).read_changelog(snapshot)
    return {e.file.file_name for e in ManifestFileManager(table).read_entries_parallel(metas)}


def find_job_snapshot(table: Any, base_snapshot: int, prefix: str) -> Any:
    """The COMPACT snapshot of job ``prefix`` after ``base_snapshot``; ``False`` if
    provably none; ``None`` if a snapshot in between is expired (cannot tell)."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None:
        return False
    for snapshot_id in range(base_snapshot + 1, latest.id + 1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        if snapshot is None:
            return None
        if (snapshot.properties or {}).get(ATTEMPT_PROPERTY) == prefix:
            return snapshot
    return False


def committed_by(table: Any, base_snapshot: int, prefix: str) -> bool | None:
    """Whether job ``prefix`` committed (``None``: cannot tell)."""
    found = find_job_snapshot(table, base_snapshot, prefix)
    return None if found is None else found is not False
