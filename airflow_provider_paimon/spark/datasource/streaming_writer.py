"""``writeStream.format("paimon")``: each micro-batch is one commit, exactly once.

Protocol (Paimon's own, with Spark's micro-batch id as the barrier):

* every micro-batch ``B`` is committed as ONE snapshot whose ``commitIdentifier`` is
  ``B`` and whose ``commitUser`` is fixed for the query: it is created once and kept
  in ``<checkpointLocation>/paimon-sink/sink.json`` (with the sink it belongs to), so
  a restarted query uses the same user and a checkpoint reused for another sink is
  refused before anything is written;
* before committing ``B`` the sink looks for a snapshot of its ``commitUser`` with
  ``commitIdentifier >= B`` (Java's ``filterCommitted``); if there is one, ``B`` was
  committed before a crash and Spark is replaying it: the replay's new files are
  deleted and nothing is committed;
* the files of an attempt are listed in ``paimon-sink/pending-B`` before its commit,
  so when a crash hit between writing files and committing them, the replay deletes
  those orphans before committing its own files.

After each micro-batch's commit the table's snapshot retention is applied to the
branch written (``paimon.maintenance.after_commit``, as Paimon's sinks do; off with
``write-only=true``). The sink's own newest snapshot is never expired
(``snapshot.num-retained.min`` >= 1), which is what replay detection reads.

Then the stream compacts its own table, as Paimon's sinks for append tables without
buckets do (``paimon.compaction.after_commit``: a compact coordinator fed each
commit's delta, one background worker thread that commits COMPACT snapshots under the
commit user ``<commitUser>-compact``, never blocking or failing the stream; off with
``write-only=true``). The worker records each job in ``paimon-sink/compact-pending-*.json``
so files of a job killed mid-way are cleaned up when the query restarts.

Executors write files with the batch writer's task code (``writer.PaimonWriter``),
so type conversion and file layout are the same as for ``df.write``. With
``precommit-compact=true`` the batch's small files are merged on the driver before
the commit (Paimon's pre-commit merging for short micro-batches).

Fault injection for the kill tests: ``PAIMON_STREAMING_FAULT=<point>:<batch id>``
with point ``before-commit`` (files written and listed, not committed) or
``after-commit`` (snapshot committed, Spark's commit log not yet written), or
``compact-before-commit`` / ``compact-after-commit`` (the background compaction
scheduled after that batch, around its COMPACT commit; ``*`` for any batch) kills the
Spark process group named by ``PAIMON_STREAMING_FAULT_GROUP`` (the test's child
process group: driver, JVM) and this worker's own group with SIGKILL at that point.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import pickle
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from airflow_provider_paimon.paimon.compaction.after_commit import compact_after_commit
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.precommit import merge_commit_messages
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, PaimonError
from airflow_provider_paimon.paimon.maintenance.after_commit import expire_after_commit
from airflow_provider_paimon.paimon.merging_commit import merging_commit

from .. import commit_events
from ..connect_carry import CarriedOnConnect
from ..lineage import direct as lineage_direct
from ..lineage.connect_openlineage import stream_run_id
from ..lineage.guard import LineageStoreUnreachableError, check_before_commit
from ..options import PaimonOptions
from .write_setup import plan_write
from .writer import PaimonWriter, TaskCommit, WritePlan, task_messages_of

log = logging.getLogger(__name__)

FAULT_ENV = "PAIMON_STREAMING_FAULT"
FAULT_GROUP_ENV = "PAIMON_STREAMING_FAULT_GROUP"
FAULT_POINTS = ("before-commit", "after-commit", "compact-before-commit", "compact-after-commit")
STATE_DIR = "paimon-sink"
COMPACT_PENDING = "compact-pending-"  # + job prefix + .json
# Options Spark or this module reads; never passed to pypaimon as table options.
STREAM_WRITE_OPTIONS = frozenset({"checkpointlocation", "commit-user", "queryname", "path"})


class CheckpointMismatchError(PaimonError):
    """A checkpoint location belongs to a streaming query with a different sink."""


@dataclass(frozen=True)
class StreamCommitEvent(commit_events.CommitEvent):
    """A micro-batch was committed: ``batch_id`` (the barrier id) produced ``snapshot_id``."""

    batch_id: int = -1
    replayed: bool = False


# ------------------------------------------------------------------ checkpoint files


def _checkpoint_fs(location: str) -> tuple[Any, str]:
    """pyarrow filesystem and path for a checkpoint location (local path or URI)."""
    from pyarrow import fs

    if location.startswith("file:"):
        location = "/" + location[len("file:"):].lstrip("/")
    if "://" not in location:
        return fs.LocalFileSystem(), os.path.abspath(location)
    return fs.FileSystem.from_uri(location)


class CheckpointState:
    """The sink's own files under the query's checkpoint location."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._fs, base = _checkpoint_fs(location)
        self.root = f"{base.rstrip('/')}/{STATE_DIR}"

    def _read(self, path: str) -> bytes | None:
        from pyarrow import fs

        if self._fs.get_file_info(path).type == fs.FileType.NotFound:
            return None
        with self._fs.open_input_stream(path) as fh:
            return fh.read()

    def _write(self, path: str, data: bytes) -> None:
        """Write via a temporary file and a rename, so a reader never sees half a file."""
        self._fs.create_dir(self.root, recursive=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with self._fs.open_output_stream(tmp) as fh:
            fh.write(data)
        self._fs.move(tmp, path)

    def sink_identity(self) -> dict[str, str] | None:
        raw = self._read(f"{self.root}/sink.json")
        return None if raw is None else json.loads(raw.decode("utf-8"))

    def bind(self, identity: dict[str, str], commit_user: str | None) -> str:
        """The query's commit user; creates it on first use, refuses a different sink."""
        saved = self.sink_identity()
        if saved is None:
            record = dict(identity, commitUser=commit_user or f"spark-stream-{uuid.uuid4()}")
            self._write(f"{self.root}/sink.json", json.dumps(record, sort_keys=True).encode())
            saved = self.sink_identity() or record
        differs = [k for k in identity if saved.get(k) != identity[k]]
        if differs:
            raise CheckpointMismatchError(
                f"checkpoint {self.location} belongs to a streaming query writing to "
                f"{_describe(saved)}, not {_describe(identity)}; give this query its own "
                "checkpointLocation (a checkpoint is never shared between sinks)"
            )
        if commit_user is not None and saved["commitUser"] != commit_user:
            raise CheckpointMismatchError(
                f"checkpoint {self.location} was written with commit user "
                f"{saved['commitUser']!r}, but option 'commit-user' is {commit_user!r}; "
                "drop the option or use a new checkpointLocation"
            )
        return str(saved["commitUser"])

    def pending_path(self, batch_id: int) -> str:
        return f"{self.root}/pending-{int(batch_id)}"

    def read_pending(self, batch_id: int) -> list[Any]:
        raw = self._read(self.pending_path(batch_id))
        return [] if raw is None else pickle.loads(raw)

    def write_pending(self, batch_id: int, messages: list[Any]) -> None:
        self._write(self.pending_path(batch_id), pickle.dumps(messages))

    def clear_pending(self, batch_id: int) -> None:
        self._delete(self.pending_path(batch_id))

    def _delete(self, path: str) -> None:
        from pyarrow import fs

        if self._fs.get_file_info(path).type != fs.FileType.NotFound:
            self._fs.delete_file(path)


class CompactPending:
    """The background compaction's job records (``worker.PendingStore``) in the checkpoint."""

    def __init__(self, state: CheckpointState) -> None:
        self.state = state

    def _path(self, record: dict[str, Any]) -> str:
        return f"{self.state.root}/{COMPACT_PENDING}{record['prefix'].strip('-')}.json"

    def records(self) -> list[dict[str, Any]]:
        from pyarrow import fs

        try:
            infos = self.state._fs.get_file_info(fs.FileSelector(self.state.root, allow_not_found=True))
        except OSError:
            return []
        out = []
        for info in infos:
            if info.base_name.startswith(COMPACT_PENDING) and info.base_name.endswith(".json"):
                raw = self.state._read(info.path)
                if raw:
                    out.append(json.loads(raw.decode("utf-8")))
        return out

    def write(self, record: dict[str, Any]) -> None:
        self.state._write(self._path(record), json.dumps(record, sort_keys=True).encode())

    def clear(self, record: dict[str, Any]) -> None:
        self.state._delete(self._path(record))


def _describe(identity: dict[str, str]) -> str:
    return f"{identity.get('table')} (branch {identity.get('branch')}) in {identity.get('warehouse')}"


# ------------------------------------------------------------------ setup (driver)


def create_stream_writer(
    opts: PaimonOptions, schema: StructType, overwrite: bool,
    snapshot_properties: dict[str, str] | None = None,
) -> PaimonStreamWriter:
    """Check the sink and the checkpoint before the first micro-batch runs.

    ``snapshot_properties`` go on every micro-batch's snapshot (``paimon.commit_properties``).
    """
    if overwrite:
        raise InvalidArgumentError(
            "the paimon streaming sink appends: use outputMode('append') (or 'update' for "
            "aggregations written as new rows); 'complete' would rewrite the table each batch"
        )
    table_options = {k: v for k, v in opts.table_options.items() if k not in STREAM_WRITE_OPTIONS}
    sink_opts = dataclasses.replace(opts, table_options=table_options)
    if opts.overwrite_partition is not None:
        raise InvalidArgumentError("option 'overwrite-partition' is for batch writes only")
    plan = plan_write(sink_opts, schema, overwrite=False,  # table, branch, schema checks
                      snapshot_properties=snapshot_properties)
    # the stream's compaction options (target-file-size, ...): refused now, not after a commit
    CompactionOptions.from_mapping(table_options)
    location = (opts.raw.get("checkpointlocation") or "").strip()
    given_user = (opts.raw.get("commit-user") or "").strip() or None
    if not location:
        if given_user is not None:
            # Replays are still recognised by the user's commit user; without a place
            # for pending-file lists, a crash between write and commit leaves orphans.
            return PaimonStreamWriter(dataclasses.replace(plan, commit_user=given_user), None)
        raise InvalidArgumentError(
            "the paimon streaming sink needs option 'checkpointLocation' on writeStream "
            "(it keeps the query's commit user there, which makes replays exactly-once), "
            "or an explicit 'commit-user' that stays the same for the query"
        )
    state = CheckpointState(location)
    identity = {"warehouse": opts.warehouse, "table": opts.table, "branch": opts.branch_name}
    commit_user = state.bind(identity, given_user)
    return PaimonStreamWriter(dataclasses.replace(plan, commit_user=commit_user), location)


# ------------------------------------------------------------------ the writer


class PaimonStreamWriter(CarriedOnConnect, DataSourceStreamArrowWriter):
    """Executors write files; the driver commits each micro-batch once."""

    def __init__(self, plan: WritePlan, checkpoint_location: str | None) -> None:
        self.plan = plan
        self.checkpoint_location = checkpoint_location

    @property
    def commit_user(self) -> str:
        return self.plan.commit_user

    def _task_writer(self) -> PaimonWriter:
        return PaimonWriter(self.plan)

    # -- executor -------------------------------------------------------------

    def write(self, iterator: Any) -> TaskCommit:
        done = self._task_writer().write(iterator)
        done.stream_run = stream_run_id(TaskContext.get())  # for the commit's lineage events
        return done

    # -- driver ---------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        batch_id = int(batchId)
        task_messages = task_messages_of(messages)
        rows = sum(m.row_count for m in messages if isinstance(m, TaskCommit))
        state = CheckpointState(self.checkpoint_location) if self.checkpoint_location else None
        table = self._task_writer()._table()
        done = last_committed_snapshot(table, self.commit_user)
        if done is not None and done.commit_identifier >= batch_id:
            log.info(
                "paimon sink: batch %s already committed (snapshot %s by %s); dropping the replay",
                batch_id, done.id, self.commit_user,
            )
            _delete_files(table, self.commit_user, task_messages)
            if state is not None:
                state.clear_pending(batch_id)
            snapshot = find_batch_snapshot(table, self.commit_user, batch_id)
            if snapshot is not None:
                self._publish(snapshot, batch_id, rows, replayed=True)
            return
        self._check_lineage_store(table, task_messages, batch_id)
        if state is not None:
            orphans = _not_in(state.read_pending(batch_id), task_messages)
            if orphans:
                log.info("paimon sink: deleting files of a crashed attempt of batch %s", batch_id)
                _delete_files(table, self.commit_user, orphans)
            if task_messages:
                state.write_pending(batch_id, task_messages)
        if self.plan.opts.precommit_compact and task_messages:
            task_messages = self._merge_small_files(table, task_messages, state, batch_id)
        _fault("before-commit", batch_id)
        table_commit = merging_commit(  # Paimon's manifest merge inside this commit
            table.new_stream_write_builder()._with_commit_user(self.commit_user).new_commit(),
            self.plan.opts.table_options,
        )
        try:
            table_commit.commit(
                task_messages, batch_id, snapshot_properties=self.plan.snapshot_properties or None
            )
        except BaseException:
            if find_batch_snapshot(table, self.commit_user, batch_id) is None:
                _delete_files(table, self.commit_user, task_messages)
                if state is not None:
                    state.clear_pending(batch_id)
            raise
        finally:
            table_commit.close()
        _fault("after-commit", batch_id)
        if state is not None:
            state.clear_pending(batch_id)
        snapshot = find_batch_snapshot(table, self.commit_user, batch_id)
        if snapshot is not None:
            self._publish(snapshot, batch_id, rows, replayed=False)
            lineage_direct.on_commit(  # option-driven lineage (a Connect session's capture)
                self.plan.opts, int(snapshot.id), str(snapshot.commit_kind), batch_id=batch_id,
                run=self.plan.snapshot_properties, identity=commit_events.identity_fields(snapshot),
                stream_run=next((m.stream_run for m in messages if isinstance(m, TaskCommit) and m.stream_run), None),
            )
            expire_after_commit(table, branch=self.plan.opts.branch, options=self.plan.opts.table_options)
            self._compact_after_commit(table, state, batch_id)

    def _compact_after_commit(self, table: Any, state: CheckpointState | None, batch_id: int) -> None:
        """Hand the table's small files to the stream's background compaction (never raises)."""
        opts = self.plan.opts
        compact_after_commit(
            table,
            stream_key=(opts.warehouse, opts.table, opts.branch_name, self.commit_user),
            commit_user=self.commit_user,
            options=opts.table_options,
            batch_id=batch_id,
            pending=CompactPending(state) if state is not None else None,
            fault=_fault,
            snapshot_properties=self.plan.snapshot_properties,  # the run, on COMPACT snapshots too
        )

    def _check_lineage_store(self, table: Any, task_messages: list[Any], batch_id: int) -> None:
        """``onStoreFailure=fail``: refuse to commit while the lineage store is down.

        A no-op unless lineage capture runs with ``fail`` (``spark.lineage.guard``). On failure
        this attempt's files are deleted and nothing is committed; the query fails, and
        its restart replays ``batch_id`` and commits it once.
        """
        opts = self.plan.opts
        try:
            what = f"micro-batch {batch_id} of {opts.table} (branch {opts.branch_name})"
            check_before_commit(what, opts.capture_routing)
            lineage_direct.check_store_before_commit(opts, what)
        except LineageStoreUnreachableError:
            _delete_files(table, self.commit_user, task_messages)
            raise

    def _merge_small_files(
        self, table: Any, task_messages: list[Any], state: CheckpointState | None, batch_id: int
    ) -> list[Any]:
        """``precommit-compact``: merge this batch's small files before committing them.

        The merged files replace the task files in the pending list, so a crash after
        the merge still leaves a list of exactly the files to delete on replay.
        """
        merged = merge_commit_messages(table, task_messages, self.plan.opts.raw)
        if state is not None:
            state.write_pending(batch_id, merged)
        return merged

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        task_messages = task_messages_of(messages)
        if not task_messages:
            return
        table = self._task_writer()._table()
        done = last_committed_snapshot(table, self.commit_user)
        if done is not None and done.commit_identifier >= int(batchId):
            return
        _delete_files(table, self.commit_user, task_messages)

    def _publish(self, snapshot: Any, batch_id: int, rows: int, replayed: bool) -> None:
        commit_events.publish_for(
            self.plan.opts,
            StreamCommitEvent,
            snapshot_id=int(snapshot.id),
            commit_kind=str(snapshot.commit_kind),
            row_count=rows,
            batch_id=batch_id,
            replayed=replayed,
            **{"commit_user": self.commit_user, **commit_events.identity_fields(snapshot)},
        )


# ------------------------------------------------------------------ helpers


def _snapshots_of(table: Any, commit_user: str) -> Iterator[Any]:
    """The retained snapshots ``commit_user`` wrote, newest first."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None:
        return
    earliest = manager.try_get_earliest_snapshot(latest.id).id
    for snapshot_id in range(latest.id, earliest - 1, -1):
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        if snapshot is not None and snapshot.commit_user == commit_user:
            yield snapshot


def last_committed_snapshot(table: Any, commit_user: str) -> Any | None:
    """Newest snapshot written by ``commit_user`` (its identifier is the last batch committed)."""
    return next(_snapshots_of(table, commit_user), None)


def find_batch_snapshot(table: Any, commit_user: str, batch_id: int) -> Any | None:
    """The APPEND snapshot ``commit_user`` committed for ``batch_id``, if any."""
    for snapshot in _snapshots_of(table, commit_user):
        if snapshot.commit_identifier == batch_id and snapshot.commit_kind != "COMPACT":
            return snapshot
        if snapshot.commit_identifier < batch_id:
            return None
    return None


def _file_names(messages: list[Any]) -> set[str]:
    return {f.file_name for m in messages for f in m.new_files}


def _not_in(old: list[Any], new: list[Any]) -> list[Any]:
    """Messages of ``old`` whose files are not also in ``new`` (never delete live files)."""
    keep = _file_names(new)
    return [m for m in old if not (_file_names([m]) & keep)]


def _delete_files(table: Any, commit_user: str, messages: list[Any]) -> None:
    if not messages:
        return
    table_commit = table.new_stream_write_builder()._with_commit_user(commit_user).new_commit()
    try:
        table_commit.abort(messages)
    finally:
        table_commit.close()


def _fault(point: str, batch_id: int) -> None:
    """Test hook: SIGKILL the whole Spark process (JVM and Python) at ``point``."""
    armed = os.environ.get(FAULT_ENV, "")
    if armed not in (f"{point}:{batch_id}", f"{point}:*"):
        return
    log.warning("fault injection: killing the query at %s of batch %s", point, batch_id)
    groups = [os.getpgrp()]
    if os.environ.get(FAULT_GROUP_ENV, "").isdigit():
        groups.insert(0, int(os.environ[FAULT_GROUP_ENV]))
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    os._exit(137)
