"""Fast write path: Parquet data files of a plain append table, written straight by pyarrow.

pypaimon's batch writer is general (buckets, primary keys, blobs, row tracking...),
and for the most common Spark target, an append table without buckets
(partitioned or not), it pays for that generality on every Arrow batch Spark hands
over: schema checks, and a buffer that holds each whole file in memory until the
end, so the Parquet encoding never overlaps with Spark producing the next rows.

``FastAppendWriter`` writes such a table's files itself: per partition it buffers
about one row group (``ROW_GROUP_ROWS``), encodes it on a background thread while
the next batches arrive, rolls files at the table's ``target-file-size`` (measured
as pypaimon does, in Arrow bytes), and returns the same ``CommitMessage`` /
``DataFileMeta`` that pypaimon's writer would (partition tuple and folder from
pypaimon's own row key extractor and path factory, file name pattern, bucket 0,
sequence numbers 0, schema id, empty key and value statistics as in the default
``metadata.stats-mode=none``), so the commit, plain pypaimon and Paimon Java read
the files like any other.

Parquet settings follow pypaimon's: ``file.compression`` and
``file.compression.zstd-level`` (default zstd level 1) and the page index
(``parquet.write-page-index.enabled``, on by default). One deliberate difference:
a column is dictionary-encoded only when its values repeat
(``paimon.parquet_encoding.dictionary_columns``),
where pyarrow's default encodes every column and falls back to PLAIN mid-column
when the dictionary outgrows its page: such mixed column chunks cost write CPU and
Spark's vectorized reader reads them slower. Table option
``parquet.enable.dictionary`` (``true``/``false``) sets it for every column instead.

Anything else (primary keys, buckets, ORC/Avro, ``metadata.stats-mode`` other
than ``none``, data evolution, row tracking, external paths, changelog files,
blob/vector/variant columns, map shredding, row-count rolling) goes through
pypaimon's writer unchanged; ``unsupported_reason`` says why.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_paimon.paimon.fileops import local_path
from airflow_provider_paimon.paimon.option_values import bool_option
from airflow_provider_paimon.paimon.parquet_encoding import dictionary_columns

# Rows per Parquet row group (pyarrow's default for write_table, so files look like
# pypaimon's): also how much the writer buffers before encoding.
ROW_GROUP_ROWS = 1024 * 1024
# Option that turns off this path (falls back to pypaimon's writer).
FAST_WRITE_OPTION = "spark.fast-append-write"
# Arrow bytes buffered, over every open file of one task, before the largest
# buffer is written out as a (smaller) row group: bounds memory when rows of many
# partitions arrive interleaved.
BUFFER_BYTES_LIMIT = 128 * 1024 * 1024
# Files one task keeps open at a time (one per partition it is writing); rows of
# partitions beyond that go through pypaimon's writer (see FastAppendWriter).
MAX_OPEN_FILES = 256
# The same on object storage and other remote file systems, where every open output
# stream holds up to an upload part in memory (Arrow's S3 stream: about 10 MiB):
# 200 open files on the loopback S3 server peaked at 2.9 GB of RSS against 0.8 GB
# for pypaimon's writer; with 32, at 0.74 GB.
MAX_OPEN_FILES_REMOTE = 32


def unsupported_reason(table: Any) -> str | None:
    """Why ``table`` must be written by pypaimon's writer, or ``None`` if this path fits."""
    from pypaimon.common.options.core_options import ChangelogProducer, CoreOptions
    from pypaimon.table.bucket_mode import BucketMode

    options = table.options
    raw = options.options.to_map()
    checks = (
        (not bool_option(raw, FAST_WRITE_OPTION, True), f"{FAST_WRITE_OPTION}=false"),
        (bool(table.is_primary_key_table), "primary-key table"),
        (table.bucket_mode() != BucketMode.BUCKET_UNAWARE, "bucketed table"),
        (
            options.file_format(CoreOptions.FILE_FORMAT_PARQUET) != CoreOptions.FILE_FORMAT_PARQUET,
            "file.format is not parquet",
        ),
        (options.metadata_stats_enabled(), "metadata.stats-mode=full"),
        (str(raw.get("metadata.stats-mode", "none")).lower() != "none", "metadata.stats-mode set"),
        (bool(options.data_evolution_enabled(False)), "data evolution"),
        (bool(options.row_tracking_enabled(False)), "row tracking"),
        (bool(options.deletion_vectors_enabled(False)), "deletion vectors"),
        (options.data_file_external_paths() is not None, "external data paths"),
        (options.changelog_producer() != ChangelogProducer.NONE, "changelog producer"),
        (bool(options.variant_shredding_schema()), "variant shredding"),
        (
            options.target_file_row_num() != CoreOptions.TARGET_FILE_ROW_NUM.default_value(),
            "target-file-row-num",
        ),
        (_has_special_fields(table), "blob, vector or variant column"),
        (_map_shredding_active(table), "map shared shredding"),
    )
    for failed, reason in checks:
        if failed:
            return reason
    return None


def _has_special_fields(table: Any) -> bool:
    text = " ".join(str(f.type).upper() for f in table.table_schema.fields)
    return any(word in text for word in ("BLOB", "VECTOR", "VARIANT", "MULTISET"))


def _map_shredding_active(table: Any) -> bool:
    try:
        from pypaimon.write.map_shared_shredding_writer import MapSharedShreddingWriter

        return MapSharedShreddingWriter(table.fields, table.options, "parquet", None).is_active()
    except Exception:  # noqa: BLE001 - cannot tell: let pypaimon handle it
        return True


class _OpenFile:
    """One data file being written: its partition, its Parquet writer and the rows buffered for it."""

    __slots__ = ("buffer", "buffer_bytes", "buffer_rows", "bytes", "name", "partition", "path", "rows",
                 "stream", "writer")

    def __init__(self, partition: tuple, path: str, name: str) -> None:
        self.partition = partition
        self.path = path
        self.name = name
        self.stream: Any = None  # opened with the writer, at the first row group
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0  # rows in this file (written or buffered)
        self.bytes = 0  # Arrow bytes of those rows (what target-file-size measures)
        self.buffer: list[pa.RecordBatch] = []
        self.buffer_rows = 0
        self.buffer_bytes = 0


class FastAppendWriter:
    """Writes Arrow batches of ``schema`` as Parquet data files of ``table`` (bucket 0).

    A partitioned table gets one open file per partition the task meets: rows are
    split by partition with pypaimon's own row key extractor (so partition tuples,
    folders and null partitions are exactly pypaimon's), each partition buffers
    about one row group, and at most ``BUFFER_BYTES_LIMIT`` of rows are buffered in
    all (the largest buffer is written as a row group first; since each batch's
    partition slices share its buffers until the last of them is written, the memory
    held can reach about twice that, still far below pypaimon's writer, which keeps
    every partition's whole file in memory). A task that meets more
    than ``MAX_OPEN_FILES`` partitions (``MAX_OPEN_FILES_REMOTE`` off the local file
    system, where each open stream buffers an upload part) writes the rest with pypaimon's writer
    (``overflow_writer``), as every partitioned table was written before: finishing
    files early instead would turn rows of many interleaved partitions into
    thousands of tiny files.
    """

    def __init__(self, table: Any, schema: pa.Schema, overflow_writer: Callable[[], Any] | None = None) -> None:
        from pypaimon.common.options.core_options import CoreOptions
        from pypaimon.write.writer.parquet_writer_options import create_parquet_writer_options

        self.table = table
        self.schema = schema
        self.file_io = table.file_io
        options = table.options
        self.target_file_size = options.target_file_size(False)
        self.prefix = options.data_file_prefix()
        self._raw_options = options.options.to_map()
        compression = options.file_compression()
        self.parquet_kwargs: dict[str, Any] = {
            "compression": compression,
            **create_parquet_writer_options(options),
        }
        if str(compression).lower() == "zstd":
            self.parquet_kwargs["compression_level"] = options.file_compression_zstd_level()
        self._format = CoreOptions.FILE_FORMAT_PARQUET
        self._extractor = table.create_row_key_extractor() if table.partition_keys else None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paimon-parquet")
        self._pending: Future | None = None
        self._open: dict[tuple, _OpenFile] = {}  # by partition
        self._buffered_bytes = 0  # Arrow bytes buffered over every open file
        self._done: dict[tuple, list[Any]] = {}  # partition -> DataFileMeta of finished files
        self._paths: list[str] = []  # every file started (for abort)
        self._new_overflow = overflow_writer or (lambda: table.new_batch_write_builder().new_write())
        self._overflow: Any = None  # pypaimon's TableWrite, once a partition goes past the cap
        self._overflow_partitions: set[tuple] = set()
        local = local_path(str(table.table_path)) is not None
        self.max_open_files = MAX_OPEN_FILES if local else MAX_OPEN_FILES_REMOTE

    # -- writing ----------------------------------------------------------------

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._extractor is None:
            self._write_rows((), batch)
            return
        groups = self._extractor.extract_partition_bucket_groups(batch)
        if len(groups) == 1:
            self._write_rows(tuple(groups[0][0]), batch)
            return
        # one gather of the whole batch in partition order, then a zero-copy slice per
        # partition (a take per partition costs more than the rows it moves)
        ordered = batch.take(pa.chunked_array([rows for _, _, rows in groups]).combine_chunks())
        offset = 0
        for partition, _bucket, rows in groups:
            self._write_rows(tuple(partition), ordered.slice(offset, len(rows)))
            offset += len(rows)

    def _write_rows(self, partition: tuple, batch: pa.RecordBatch) -> None:
        nbytes = batch.nbytes  # computed from the buffers on every access
        current = self._open.get(partition)
        if current is None and (partition in self._overflow_partitions or len(self._open) >= self.max_open_files):
            self._overflow_partitions.add(partition)
            if self._overflow is None:
                self._overflow = self._new_overflow()
            self._overflow.write_arrow(batch)
            return
        if current is not None and current.bytes and current.bytes + nbytes > self.target_file_size:
            self._finish_file(current)
            current = None
        if current is None:
            current = self._start_file(partition)
        current.buffer.append(batch)
        current.buffer_rows += batch.num_rows
        current.buffer_bytes += nbytes
        current.rows += batch.num_rows
        current.bytes += nbytes
        self._buffered_bytes += nbytes
        if current.buffer_rows >= ROW_GROUP_ROWS:
            self._flush_buffer(current)
        while self._buffered_bytes > BUFFER_BYTES_LIMIT:
            self._flush_buffer(max(self._open.values(), key=lambda f: f.buffer_bytes))

    def _start_file(self, partition: tuple) -> _OpenFile:
        from pypaimon.utils.file_store_path_factory import canonical_data_file_path

        name = f"{self.prefix}{uuid.uuid4()}-0.{self._format}"
        path = canonical_data_file_path(self.table, partition, 0, name)
        self._paths.append(path)
        current = self._open[partition] = _OpenFile(partition, path, name)
        return current

    def _flush_buffer(self, current: _OpenFile) -> None:
        """Hand ``current``'s buffered rows to the encoding thread as one row group."""
        if not current.buffer:
            return
        table = pa.Table.from_batches(current.buffer, schema=self.schema)
        self._buffered_bytes -= current.buffer_bytes
        current.buffer, current.buffer_rows, current.buffer_bytes = [], 0, 0
        self._wait()
        if current.writer is None:  # the file's first row group picks its dictionary columns
            current.stream = self.file_io.new_output_stream(current.path)
            try:
                current.writer = pq.ParquetWriter(
                    current.stream,
                    self.schema,
                    use_dictionary=dictionary_columns(self.schema, self._raw_options, table),
                    **self.parquet_kwargs,
                )
            except BaseException:
                current.stream.close()
                current.stream = None
                raise
        self._pending = self._pool.submit(current.writer.write_table, table, row_group_size=ROW_GROUP_ROWS)

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def _finish_file(self, current: _OpenFile) -> None:
        self._flush_buffer(current)
        self._wait()
        del self._open[current.partition]
        assert current.writer is not None, "a started file has rows, so its writer is open"
        current.writer.close()
        current.stream.close()
        self._done.setdefault(current.partition, []).append(self._file_meta(current))

    def _file_meta(self, current: _OpenFile) -> Any:
        from pypaimon.data.timestamp import Timestamp
        from pypaimon.manifest.schema.data_file_meta import DataFileMeta
        from pypaimon.manifest.schema.simple_stats import SimpleStats
        from pypaimon.table.row.generic_row import GenericRow

        # What pypaimon's AppendOnlyDataWriter records for an unaware-bucket append
        # file with metadata.stats-mode=none: no keys, no value stats, sequence 0..0.
        return DataFileMeta.create(
            file_name=current.name,
            file_size=self.file_io.get_file_size(current.path),
            row_count=current.rows,
            min_key=GenericRow([], []),
            max_key=GenericRow([], []),
            key_stats=SimpleStats.empty_stats(),
            value_stats=SimpleStats.empty_stats(),
            min_sequence_number=0,
            max_sequence_number=0,
            schema_id=self.table.table_schema.id,
            level=0,
            extra_files=[],
            creation_time=Timestamp.now(),
            delete_row_count=0,
            file_source=0,
            value_stats_cols=[],
            external_path=None,
            first_row_id=None,
            write_cols=None,
            file_path=current.path,
        )

    # -- ending ----------------------------------------------------------------

    def prepare_commit(self) -> list[Any]:
        """Finish every open file; one commit message per partition written."""
        from pypaimon.write.commit_message import CommitMessage

        for current in list(self._open.values()):
            self._finish_file(current)
        messages = [
            CommitMessage(
                partition=partition,
                bucket=0,
                new_files=list(files),
                changelog_files=[],
                total_buckets=None,
            )
            for partition, files in self._done.items()
        ]
        if self._overflow is not None:
            messages.extend(self._overflow.prepare_commit())
        return messages

    def abort(self) -> None:
        """Delete every file this writer started (committed or not)."""
        with contextlib.suppress(BaseException):  # the write already failed
            self._wait()
        for current in self._open.values():
            for closer in (current.writer, current.stream):
                if closer is not None:
                    with contextlib.suppress(Exception):  # best effort before deleting
                        closer.close()
        self._open = {}
        self._buffered_bytes = 0
        for path in self._paths:
            self.file_io.delete_quietly(path)
        self._done = {}
        if self._overflow is not None:
            self._overflow.abort()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._overflow is not None:
            self._overflow.close()
