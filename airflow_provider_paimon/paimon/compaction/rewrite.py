"""Rewrite a group of data files of one partition/bucket into target-size files.

Runs wherever it is called: on a Spark executor for a compaction bin, or on the
driver for pre-commit merging. It reads the files with pypaimon (so older schemas and
any file format are handled as a reader would see them) and writes with pypaimon's
own append writer (file naming, format, compression, statistics, external paths),
with the Parquet dictionary columns chosen from the rows (``paimon.parquet_encoding``).

Sizing: pypaimon's writer rolls on in-memory Arrow bytes, which overshoot the file
size on disk several times, so the output would come out far below the target and be
picked up again by the next run. Instead the number of output files is
``floor(input bytes / target)`` (at least one) and rows are spread evenly over them,
using the inputs' bytes per row: every output is then at least about the target size
and is never a candidate again, so repeated runs settle.

Reading: a Parquet file written with the table's current schema is read straight
with pyarrow (its columns are exactly the table's); anything else (older schema, other
formats, sidecars) goes through pypaimon's reader. Opening a file through pypaimon's
reader costs about 10 ms, which dominates for thousands of small files.

Nothing here commits. On any failure the files written so far are deleted.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon.read.split import DataSplit
from pypaimon.schema.data_types import PyarrowFieldParser
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.write.writer.append_only_data_writer import AppendOnlyDataWriter

from ..parquet_encoding import DICTIONARY_SAMPLE_ROWS, dictionary_columns
from .errors import RowCountMismatchError
from .scan import resolve_path

FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1
_NO_SIZE_ROLL = 1 << 62


def output_file_count(input_bytes: int, target_file_size: int) -> int:
    """How many files ``input_bytes`` become: each at least ~``target_file_size``."""
    return max(1, input_bytes // max(1, target_file_size))


def rewrite_files(
    table: Any,
    partition: tuple,
    bucket: int,
    files: list[Any],
    target_file_size: int,
    file_source: int = FILE_SOURCE_COMPACT,
    file_prefix: str | None = None,
) -> list[Any]:
    """Read ``files`` (in order) and write their rows into new files; return their metas.

    The new files carry the sequence-number range of the inputs (min of mins, max of
    maxes), level 0 as append files do, and ``file_source`` (COMPACT for compaction,
    APPEND for pre-commit merging). ``file_prefix`` overrides the data-file prefix so
    a caller can find (and delete) every file of one attempt.
    """
    if not files:
        return []
    for f in files:
        resolve_path(table, partition, bucket, f)
    rows = sum(f.row_count for f in files)
    input_bytes = sum(f.file_size for f in files)
    n_out = min(output_file_count(input_bytes, target_file_size), max(1, rows))
    rows_per_file = max(1, math.ceil(rows / n_out)) if rows else 1

    write_table = table.copy({"data-file.prefix": file_prefix}) if file_prefix else table
    writer = AppendOnlyDataWriter(
        write_table, tuple(partition), bucket, 0, options=write_table.options
    )
    writer.target_file_size = _NO_SIZE_ROLL
    writer.target_file_row_num = rows_per_file
    try:
        written = 0
        for batch in _with_dictionary_choice(writer, read_files(table, partition, bucket, files)):
            if batch.num_rows:
                writer.write(batch)
                written += batch.num_rows
        new_files = writer.prepare_commit()
        writer.close()
    except BaseException:
        writer.abort()
        raise
    if written != rows or sum(f.row_count for f in new_files) != rows:
        delete_files(table, partition, bucket, new_files)

        raise RowCountMismatchError(
            f"rewriting {len(files)} files of partition {partition} bucket {bucket} read "
            f"{written} rows and wrote {sum(f.row_count for f in new_files)}, expected {rows}"
        )
    min_seq = min(f.min_sequence_number for f in files)
    max_seq = max(f.max_sequence_number for f in files)
    return [
        dataclasses.replace(f, min_sequence_number=min_seq, max_sequence_number=max_seq,
                            level=0, file_source=file_source)
        for f in new_files
    ]


def _with_dictionary_choice(writer: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, after setting ``writer``'s Parquet dictionary columns from the first of them.

    pypaimon's writer leaves pyarrow's default, a dictionary for every column that
    falls back to PLAIN mid-column when it overflows (slower to read with Spark, see
    ``paimon.parquet_encoding``). The choice is made once per rewrite from its first
    ``DICTIONARY_SAMPLE_ROWS`` rows, so the first batches are held until then.
    """
    if getattr(writer, "file_format", None) != "parquet" or not isinstance(
        getattr(writer, "parquet_writer_options", None), dict
    ):
        yield from batches
        return
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        held.append(batch)
        rows += batch.num_rows
        if rows >= DICTIONARY_SAMPLE_ROWS:
            break
    if held:
        first = pa.Table.from_batches(held)
        raw = writer.options.options.to_map()
        writer.parquet_writer_options = {
            **writer.parquet_writer_options,
            "use_dictionary": dictionary_columns(first.schema, raw, first),
        }
    yield from held
    yield from batches


READ_BATCH_ROWS = 64 * 1024
WHOLE_FILE_READ_BYTES = 32 * 1024 * 1024  # small files: one read, no batch iteration


def read_files(table: Any, partition: tuple, bucket: int, files: list[Any]) -> Iterator[pa.RecordBatch]:
    """Record batches of ``files`` in order, as a reader of the table sees them."""
    schema = PyarrowFieldParser.from_paimon_schema(table.fields)
    slow: list[Any] = []

    def flush_slow() -> Iterator[pa.RecordBatch]:
        if not slow:
            return
        split = DataSplit(
            list(slow), GenericRow(list(partition), table.partition_keys_fields), bucket,
            raw_convertible=True,
        )
        yield from table.new_read_builder().new_read().to_arrow_batch_reader([split])
        slow.clear()

    for f in files:
        parquet = _open_same_schema_parquet(table, f, schema)
        if parquet is None:
            slow.append(f)
            continue
        yield from flush_slow()
        if f.file_size <= WHOLE_FILE_READ_BYTES:
            batches = parquet.read().combine_chunks().to_batches()
        else:
            batches = parquet.iter_batches(batch_size=READ_BATCH_ROWS)
        for batch in batches:
            yield batch if batch.schema.equals(schema) else _conform(batch, schema)
    yield from flush_slow()


def _open_same_schema_parquet(table: Any, file: Any, schema: pa.Schema) -> Any:
    """A ``ParquetFile`` for ``file`` if it can be read as is, else ``None``."""
    if (
        file.schema_id != table.table_schema.id
        or not file.file_name.endswith(".parquet")
        or file.extra_files
        or file.write_cols
    ):
        return None
    try:
        parquet = pq.ParquetFile(_open(table, file.physical_path()))
    except Exception:  # noqa: BLE001 - the general reader will report real problems
        return None
    actual = parquet.schema_arrow
    if actual.names != schema.names or any(
        not a.type.equals(e.type) for a, e in zip(actual, schema, strict=True)
    ):
        return None
    return parquet


def _open(table: Any, path: str) -> Any:
    """A local path is opened by pyarrow itself (memory-mapped); others via the table's FileIO."""
    if "://" not in path or path.startswith("file://"):
        local = path[len("file://"):] if path.startswith("file://") else path
        return pa.memory_map(local, "r")
    return table.file_io.new_input_stream(path)


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Same names and types; only field metadata / nullability differ."""
    return pa.RecordBatch.from_arrays(batch.columns, schema=schema)


def delete_files(table: Any, partition: tuple, bucket: int, files: list[Any]) -> None:
    """Delete data files (and their sidecars) that were written but never committed."""
    for f in files:
        resolve_path(table, partition, bucket, f)
        for path in f.collect_files():
            table.file_io.delete_quietly(path)
