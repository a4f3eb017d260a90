"""Fast write path: Parquet data files of a plain append table, written straight by pyarrow.

pypaimon's batch writer is general (partitions, buckets, primary keys, blobs, row
tracking...), and for the simplest and most common Spark target, an unpartitioned
append table without buckets, it pays for that generality on every Arrow batch
Spark hands over: a hash group-by to find the (partition, bucket) of each row,
schema checks, and a buffer that holds the whole file in memory until the end,
so the Parquet encoding never overlaps with Spark producing the next rows.

``FastAppendWriter`` writes such a table's files itself: it buffers about one row
group (``ROW_GROUP_ROWS``), encodes it on a background thread while the next
batches arrive, rolls files at the table's ``target-file-size`` (measured as
pypaimon does, in Arrow bytes), and returns the same ``CommitMessage`` /
``DataFileMeta`` that pypaimon's writer would (file name pattern, bucket 0,
sequence numbers 0, schema id, empty key and value statistics as in the default
``metadata.stats-mode=none``), so the commit, plain pypaimon and Paimon Java read
the files like any other.

Parquet settings follow pypaimon's: ``file.compression`` and
``file.compression.zstd-level`` (default zstd level 1) and the page index
(``parquet.write-page-index.enabled``, on by default). One deliberate difference:
dictionary encoding is used for string and binary columns only (numbers, dates,
timestamps and decimals are written PLAIN and left to the codec). Dictionary
encoding of high-cardinality numeric columns costs about twice the CPU of the
whole Parquet encoding and, with zstd, usually makes files larger rather than
smaller. Table option ``parquet.enable.dictionary`` (``true``/``false``) sets it
for every column instead.

Anything else (primary keys, buckets, partitions, ORC/Avro, ``metadata.stats-mode``
other than ``none``, data evolution, row tracking, external paths, changelog
files, blob/vector/variant columns, map shredding, row-count rolling) goes
through pypaimon's writer unchanged; ``unsupported_reason`` says why.
"""

from __future__ import annotations

import contextlib
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_paimon.paimon.option_values import bool_option

# Rows per Parquet row group (pyarrow's default for write_table, so files look like
# pypaimon's): also how much the writer buffers before encoding.
ROW_GROUP_ROWS = 1024 * 1024
# Option that turns off this path (falls back to pypaimon's writer).
FAST_WRITE_OPTION = "spark.fast-append-write"


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
        (bool(table.partition_keys), "partitioned table"),
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


def dictionary_columns(schema: pa.Schema, raw_options: dict[str, str]) -> bool | list[str]:
    """``use_dictionary`` for pyarrow: string/binary columns, unless the table option says."""
    if str(raw_options.get("parquet.enable.dictionary") or "").strip():
        return bool_option(raw_options, "parquet.enable.dictionary", True)
    t = pa.types
    return [
        f.name
        for f in schema
        if t.is_string(f.type)
        or t.is_large_string(f.type)
        or t.is_binary(f.type)
        or t.is_large_binary(f.type)
    ]


class FastAppendWriter:
    """Writes Arrow batches of ``schema`` as Parquet data files of ``table`` (bucket 0)."""

    def __init__(self, table: Any, schema: pa.Schema) -> None:
        from pypaimon.common.options.core_options import CoreOptions
        from pypaimon.write.writer.parquet_writer_options import create_parquet_writer_options

        self.table = table
        self.schema = schema
        self.file_io = table.file_io
        options = table.options
        self.target_file_size = options.target_file_size(False)
        self.prefix = options.data_file_prefix()
        compression = options.file_compression()
        self.parquet_kwargs: dict[str, Any] = {
            "compression": compression,
            "use_dictionary": dictionary_columns(schema, options.options.to_map()),
            **create_parquet_writer_options(options),
        }
        if str(compression).lower() == "zstd":
            self.parquet_kwargs["compression_level"] = options.file_compression_zstd_level()
        self._format = CoreOptions.FILE_FORMAT_PARQUET
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paimon-parquet")
        self._pending: Future | None = None
        self._buffer: list[pa.RecordBatch] = []
        self._buffer_rows = 0
        self._file: dict[str, Any] | None = (
            None  # the open file: path, name, stream, writer, rows, bytes
        )
        self._done: list[Any] = []  # DataFileMeta of finished files
        self._paths: list[str] = []  # every file started (for abort)

    # -- writing ----------------------------------------------------------------

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if (
            self._file is not None
            and self._file["bytes"]
            and self._file["bytes"] + batch.nbytes > self.target_file_size
        ):
            self._flush_buffer()
            self._finish_file()
        current = self._file if self._file is not None else self._open_file()
        self._buffer.append(batch)
        self._buffer_rows += batch.num_rows
        current["rows"] += batch.num_rows
        current["bytes"] += batch.nbytes
        if self._buffer_rows >= ROW_GROUP_ROWS:
            self._flush_buffer()

    def _open_file(self) -> dict[str, Any]:
        from pypaimon.utils.file_store_path_factory import canonical_data_file_path

        name = f"{self.prefix}{uuid.uuid4()}-0.{self._format}"
        path = canonical_data_file_path(self.table, (), 0, name)
        self._paths.append(path)
        stream = self.file_io.new_output_stream(path)
        try:
            writer = pq.ParquetWriter(stream, self.schema, **self.parquet_kwargs)
        except BaseException:
            stream.close()
            raise
        self._file = {
            "path": path,
            "name": name,
            "stream": stream,
            "writer": writer,
            "rows": 0,
            "bytes": 0,
        }
        return self._file

    def _flush_buffer(self) -> None:
        """Hand the buffered rows to the encoding thread as one row group."""
        if not self._buffer:
            return
        table = pa.Table.from_batches(self._buffer, schema=self.schema)
        self._buffer = []
        self._buffer_rows = 0
        self._wait()
        assert self._file is not None, "rows are buffered only while a file is open"
        writer = self._file["writer"]
        self._pending = self._pool.submit(writer.write_table, table, row_group_size=ROW_GROUP_ROWS)

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def _finish_file(self) -> None:
        self._wait()
        current, self._file = self._file, None
        assert current is not None, "_finish_file needs an open file"
        current["writer"].close()
        current["stream"].close()
        self._done.append(self._file_meta(current))

    def _file_meta(self, current: dict[str, Any]) -> Any:
        from pypaimon.data.timestamp import Timestamp
        from pypaimon.manifest.schema.data_file_meta import DataFileMeta
        from pypaimon.manifest.schema.simple_stats import SimpleStats
        from pypaimon.table.row.generic_row import GenericRow

        # What pypaimon's AppendOnlyDataWriter records for an unaware-bucket append
        # file with metadata.stats-mode=none: no keys, no value stats, sequence 0..0.
        return DataFileMeta.create(
            file_name=current["name"],
            file_size=self.file_io.get_file_size(current["path"]),
            row_count=current["rows"],
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
            file_path=current["path"],
        )

    # -- ending ----------------------------------------------------------------

    def prepare_commit(self) -> list[Any]:
        """Finish the open file; the commit messages for every file written."""
        from pypaimon.write.commit_message import CommitMessage

        if self._file is not None:
            self._flush_buffer()
            self._finish_file()
        if not self._done:
            return []
        return [
            CommitMessage(
                partition=(),
                bucket=0,
                new_files=list(self._done),
                changelog_files=[],
                total_buckets=None,
            )
        ]

    def abort(self) -> None:
        """Delete every file this writer started (committed or not)."""
        with contextlib.suppress(BaseException):  # the write already failed
            self._wait()
        if self._file is not None:
            for closer in (self._file["writer"].close, self._file["stream"].close):
                with contextlib.suppress(Exception):  # best effort before deleting
                    closer()
            self._file = None
        for path in self._paths:
            self.file_io.delete_quietly(path)
        self._done = []
        self._buffer = []

    def close(self) -> None:
        self._pool.shutdown(wait=True)
