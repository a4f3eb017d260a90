"""``spark.readStream.format("paimon")``: a table read like a queue.

Offsets are snapshot positions (``{"nextSnapshot": N}``: every snapshot below N has
been read), so a micro-batch is a range of snapshots and replaying it plans the same
files again. The planning rules (start modes, COMPACT skipping, rate limits) live in
``paimon/stream_scan.py``; this module adapts them to Spark's ``DataSourceStreamReader``:

* ``initialOffset`` is a "not started" marker; the start (``scan.mode`` or the
  ``consumer-id``'s saved position) is resolved on the first ``latestOffset`` and
  written into that first end offset, so a query restarted before its first batch
  committed replays exactly the range it planned;
* ``latestOffset`` honours ``max-snapshots-per-trigger`` / ``max-files-per-trigger``
  unless Spark asks for everything, and the ``availableNow`` target;
* ``partitions`` turns the range into pypaimon splits, ``read`` reads them on the
  executors through the batch reader's code path (same Arrow conversion);
* ``commit`` saves the consumer position in the read branch's ``consumer/`` folder
  and publishes a scan event with the consumed snapshot for lineage capture.

Primary-key tables are read as their changelog with option ``read.changelog=true``
(``changelog_read``: each change once, its kind in column ``rowkind``, a bucket's
changes in commit order in one Spark partition); without it they are refused.

Every offset produced here also names its table (``db.table``), branch and
warehouse; an offset handed back that names another table or branch (a checkpoint
reused for another source) is refused. Offsets without those fields (older
checkpoints) are accepted as they are.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from airflow_provider_paimon.paimon import consumers
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.snapshot_identity import table_identity
from airflow_provider_paimon.paimon.stream_scan import (
    StreamOffset,
    StreamPlanner,
    StreamScanConfig,
    check_offset_table,
    parse_stream_scan_config,
)

from .. import commit_events
from ..connect_carry import CarriedOnConnect
from ..lineage import direct as lineage_direct
from ..options import PaimonOptions
from ..tables import open_table
from .changelog_read import changelog_schema, check_stream, group_by_bucket, read_changes
from .reader import PaimonReader, SplitGroup, pack_splits
from .types import check_read_schema, table_spark_schema

log = logging.getLogger(__name__)

# Options read here; they must not reach pypaimon as dynamic table options (pypaimon
# would time-travel on scan.snapshot-id / scan.timestamp-millis).
STREAM_READ_OPTIONS = frozenset(
    {
        "scan.mode",
        "scan.snapshot-id",
        "scan.timestamp-millis",
        "scan.file-creation-time-millis",
        "max-snapshots-per-trigger",
        "max-files-per-trigger",
        "streaming-read-overwrite",
        "consumer-id",
        "read.changelog",
    }
)
# ReadMaxFiles stands for "apply our option limits" when only a snapshot limit is set.
_NO_FILE_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class StreamScanEvent(commit_events.ScanEvent):
    """A micro-batch of a streaming read was committed: it consumed ``snapshot_id``.

    ``snapshot_id`` is the last snapshot of the micro-batch's range (the Paimon lineage proposal's
    "source consumed snapshot"); ``next_snapshot`` the saved position. Spark does not
    tell a source the micro-batch id, so ``batch_id`` is ``None`` here; lineage
    capture pairs it through the query progress (its source ``endOffset`` holds the
    same ``nextSnapshot``).
    """

    next_snapshot: int = 0
    consumer_id: str = ""
    batch_id: int | None = None


def stream_read_options(opts: PaimonOptions) -> PaimonOptions:
    """``opts`` without the streaming keys in its dynamic table options."""
    if opts.time_travel:
        raise InvalidArgumentError(
            "options 'snapshot-id' / 'tag' time-travel a batch read; a streaming read starts "
            "with 'scan.mode' ('from-snapshot', 'from-snapshot-full', 'from-timestamp', ...) "
            "and 'scan.snapshot-id' / 'scan.timestamp-millis'"
        )
    table_options = {k: v for k, v in opts.table_options.items() if k not in STREAM_READ_OPTIONS}
    return dataclasses.replace(opts, table_options=table_options)


def create_stream_reader(opts: PaimonOptions, schema: StructType) -> PaimonStreamReader:
    """Validate everything up front (table, branch, options, schema), then build the reader."""
    config = parse_stream_scan_config(opts.raw)
    consumer_id = (opts.raw.get("consumer-id") or "").strip() or None
    if consumer_id is not None:
        consumers.validate_consumer_id(consumer_id)
    table_opts = stream_read_options(opts)
    table = open_table(table_opts)  # raises for an unknown table or branch

    changes = check_stream(table, opts.raw, opts.table)  # primary keys: read.changelog
    StreamPlanner(table, config)  # raises for what a stream of this table cannot read
    full = table_spark_schema(table)
    check_read_schema(schema, changelog_schema(table, full, opts.table) if changes else full, opts.table)
    return PaimonStreamReader(table_opts, schema, config, consumer_id, changes=changes)


class PaimonStreamReader(CarriedOnConnect, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Reads one table (branch) incrementally; lives in Spark's driver-side Python worker."""

    def __init__(
        self,
        opts: PaimonOptions,
        schema: StructType,
        config: StreamScanConfig,
        consumer_id: str | None,
        changes: bool = False,
    ) -> None:
        self.opts = opts
        self.schema = schema
        self.config = config
        self.consumer_id = consumer_id
        self.changes = changes  # a primary-key table's changelog, with a rowkind column
        self._start: StreamOffset | None = None  # resolved once per query run
        self._target: int | None = None  # availableNow: last snapshot to read
        self._planner_cache: StreamPlanner | None = None
        self._recorded: int | None = None  # next_snapshot last saved / announced

    # -- planning (driver) -----------------------------------------------------

    # -- offsets: positions that name their table --------------------------------

    def _offset(self, value: dict) -> StreamOffset:
        """Parse an offset Spark hands back; refuse one of another table or branch."""
        offset = StreamOffset.from_json(value)
        opts = self.opts
        check_offset_table(offset, f"{opts.database}.{opts.table_name}", opts.branch_name, value)
        if offset.warehouse is not None and offset.warehouse != opts.warehouse:
            # The same warehouse may be spelled differently (file:/x, /x, s3a:// vs s3://).
            log.warning(
                "paimon stream %s: checkpoint offset was written for warehouse %s, the query "
                "reads %s", opts.table, offset.warehouse, opts.warehouse,
            )
        return offset

    def _json(self, offset: StreamOffset) -> dict:
        """``offset`` as Spark's JSON, with this stream's table, branch and warehouse, and
        the identity of the snapshot it has read (lineage's source commit)."""
        opts = self.opts
        return dataclasses.replace(
            offset,
            table=f"{opts.database}.{opts.table_name}",
            branch=opts.branch_name,
            warehouse=opts.warehouse,
            lineage_commit=self._commit_of(offset.lineage_snapshot) if offset.started else None,
        ).to_json()

    def _commit_of(self, snapshot_id: int | None) -> dict | None:
        """The snapshot's identity as offset JSON (one file read per snapshot, cached)."""
        if snapshot_id is None:
            return None
        cache = self.__dict__.setdefault("_commits", {})
        if snapshot_id not in cache:
            found = table_identity(self._planner().table, snapshot_id)
            if len(cache) > 64:  # a long-running stream: keep only recent positions
                cache.clear()
            cache[snapshot_id] = None if found is None else {
                "commitUser": found.commit_user, "commitIdentifier": found.commit_identifier,
                "timeMillis": found.time_millis}
        return cache[snapshot_id]

    def _planner(self) -> StreamPlanner:
        if self._planner_cache is None:
            self._planner_cache = StreamPlanner(open_table(self.opts), self.config)
        return self._planner_cache

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_planner_cache"] = None  # executors open their own table
        return state

    def initialOffset(self) -> dict:  # noqa: N802 - Spark's name
        return self._json(StreamOffset(next_snapshot=0))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        if self.config.max_files_per_trigger is not None:
            return ReadMaxFiles(self.config.max_files_per_trigger)
        if self.config.max_snapshots_per_trigger is not None:
            return ReadMaxFiles(_NO_FILE_LIMIT)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """Fix the last snapshot to read now; later snapshots wait for the next run."""
        self._target = self._planner().latest_id() or 0

    def reportLatestOffset(self) -> dict | None:  # noqa: N802
        latest = self._planner().latest_id()
        return None if latest is None else self._json(StreamOffset(next_snapshot=latest + 1))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # noqa: N802
        begin = self._offset(start)
        planner = self._planner()
        if isinstance(limit, ReadMaxFiles):
            max_files = limit.max_files if limit.max_files < _NO_FILE_LIMIT else None
            max_snapshots = self.config.max_snapshots_per_trigger
        else:  # ReadAllAvailable (Trigger.Once, ...) or a limit we do not interpret
            max_files = max_snapshots = None
        if begin.started:
            self._record_progress(begin)
            position = planner.advance(
                begin.next_snapshot, self._target, max_snapshots, max_files
            )
            if position == begin.next_snapshot:
                return start  # nothing new: the same offset, so Spark runs no batch
            return self._json(
                StreamOffset(next_snapshot=position, data_snapshot=planner.data_snapshot_before(position))
            )
        # First range of a new query: resolve the start once and pin it in the offset.
        if self._start is None:
            saved = (
                consumers.read_next_snapshot(planner.table, self.consumer_id)
                if self.consumer_id
                else None
            )
            self._start = planner.resolve_start(saved)
            log.info("paimon stream %s starts at %s", self.opts.table, self._start)
        start_pos = self._start
        taken = 1 if start_pos.full_snapshot is not None else 0
        position = planner.advance(
            start_pos.next_snapshot, self._target, max_snapshots, max_files, taken_files=taken
        )
        return self._json(
            StreamOffset(
                next_snapshot=position,
                full_snapshot=start_pos.full_snapshot,
                start_snapshot=start_pos.next_snapshot,
                data_snapshot=planner.data_snapshot_before(position),
            )
        )

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, finish = self._offset(start), self._offset(end)
        if begin == finish:
            return []
        self._note_scan(finish)
        planner = self._planner()
        splits = planner.range_splits(begin, finish)
        if not splits:
            return []
        if self.changes:
            groups = group_by_bucket(splits, self.opts.min_partitions or len(splits))
        else:
            groups = pack_splits(splits, self.opts.min_partitions or len(splits))
        return [SplitGroup(i, group, finish.consumed_snapshot) for i, group in enumerate(groups)]

    def _note_scan(self, finish: StreamOffset) -> None:
        """Option-driven lineage (a Connect session's capture, or lineage options without a
        capture): this micro-batch read up to ``finish``'s snapshot; the sink's next commit
        of the job takes it as its source. A replanned batch notes the same snapshot again
        (the commit keeps one per table). A no-op when a classic capture records."""
        identity = commit_events.identity_fields(self._commit_of(finish.lineage_snapshot))
        lineage_direct.on_scan(self.opts, finish.lineage_snapshot, identity=identity)

    def commit(self, end: dict) -> None:
        """Spark finished every range up to ``end``: save and announce the position."""
        self._record_progress(self._offset(end))

    def _record_progress(self, done: StreamOffset) -> None:
        """Save the consumer position and publish the consumed snapshot, once per position.

        Called from ``commit`` and from ``latestOffset``: Spark commits a source only
        when it plans the next batch, so with ``availableNow`` the last batch is never
        committed through ``commit``; but ``latestOffset(start)`` is only asked once
        the batch ending at ``start`` is in Spark's commit log, so it is safe there too.
        """
        if not done.started or done.next_snapshot == self._recorded:
            return
        planner = self._planner()
        if self.consumer_id:
            consumers.save_next_snapshot(planner.table, self.consumer_id, done.next_snapshot)
        self._recorded = done.next_snapshot
        commit_events.publish_for(
            self.opts,
            StreamScanEvent,
            snapshot_id=done.lineage_snapshot,  # never a COMPACT one (see StreamOffset)
            next_snapshot=done.next_snapshot,
            consumer_id=self.consumer_id or "",
        )

    # -- reading (executors) ---------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read the partition's splits exactly as a batch read would."""
        if not isinstance(partition, SplitGroup):
            raise InvalidArgumentError(f"unexpected input partition {partition!r}")
        if self.changes:
            if partition.splits:
                yield from read_changes(open_table(self.opts), self.schema, partition.splits)
            return
        yield from PaimonReader(self.opts, self.schema).read(partition)
