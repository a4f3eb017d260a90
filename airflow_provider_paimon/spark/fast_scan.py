"""Fast read path: the Parquet data files of an append table, read straight by pyarrow.

pypaimon's reader is general (merge-on-read, deletion vectors, schema evolution, row
tracking, blobs, shredded maps and variants...) and opens every data file through a
``pyarrow.dataset`` scanner with its own thread pool. For the most common Spark scan,
a plain append table whose files all have the table's current schema, none of that is
needed: each file is read row group by row group with ``pyarrow.parquet`` and handed
to Spark as is.

The other half of the gain is overlap. Spark's Python worker sends a batch over its
socket to the JVM in the same thread that asks the reader for the next one, so with
pypaimon decoding and sending alternate. ``FastScan`` decodes on a background thread
(pyarrow releases the GIL) a couple of batches ahead, while the worker sends.

A split is read this way only when every file in it qualifies (``split_unsupported_reason``
says why not); others go through pypaimon in the same task, so one scan can mix both.
Rows are filtered with the pushed-down predicate as pypaimon would (Spark re-checks
every filter anyway). Turn the path off with table/read option ``spark.fast-scan=false``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: option that turns this path off (reads then go through pypaimon's reader)
FAST_SCAN_OPTION = "spark.fast-scan"
#: decoded batches kept ready ahead of Spark (each about ``batch_rows`` rows)
PREFETCH_BATCHES = 2


def table_unsupported_reason(table: Any) -> str | None:
    """Why no split of ``table`` can be read by this path, or ``None`` if some can."""
    from pypaimon.common.options.core_options import CoreOptions

    options = table.options
    raw = options.options.to_map()
    checks = (
        (str(raw.get(FAST_SCAN_OPTION, "true")).strip().lower() == "false", f"{FAST_SCAN_OPTION}=false"),
        (bool(table.is_primary_key_table), "primary-key table (merge on read)"),
        (
            options.file_format(CoreOptions.FILE_FORMAT_PARQUET) != CoreOptions.FILE_FORMAT_PARQUET,
            "file.format is not parquet",
        ),
        (bool(options.deletion_vectors_enabled(False)), "deletion vectors"),
        (bool(options.data_evolution_enabled(False)), "data evolution"),
        (bool(options.row_tracking_enabled(False)), "row tracking"),
        (bool(options.variant_shredding_schema()), "variant shredding"),
        (_has_special_fields(table), "blob, vector, variant or multiset column"),
    )
    for failed, reason in checks:
        if failed:
            return reason
    return None


def _has_special_fields(table: Any) -> bool:
    text = " ".join(str(f.type).upper() for f in table.table_schema.fields)
    return any(word in text for word in ("BLOB", "VECTOR", "VARIANT", "MULTISET"))


def split_unsupported_reason(split: Any, schema_id: int) -> str | None:
    """Why ``split`` must go through pypaimon, or ``None`` if this path reads it."""
    if any(d is not None for d in (getattr(split, "data_deletion_files", None) or [])):
        return "deletion files"
    for meta in split.files:
        if meta.schema_id != schema_id:
            return f"file {meta.file_name} has schema {meta.schema_id}, not {schema_id}"
        if meta.write_cols is not None:
            return f"file {meta.file_name} holds only some columns"
        if not meta.file_name.endswith(".parquet"):
            return f"file {meta.file_name} is not Parquet"
    return None


class FileNeedsPypaimon(Exception):
    """A file's own schema does not fit (missing column, other type): read it with pypaimon."""


class FastScan:
    """Reads qualifying splits of ``table`` as Arrow batches of exactly ``target``."""

    def __init__(self, table: Any, target: pa.Schema, predicate: Any, batch_rows: int) -> None:
        self.table = table
        self.target = target
        self.batch_rows = batch_rows
        self.filter = _arrow_filter(predicate, table)
        self.schema_id = table.table_schema.id

    def can_read(self, split: Any) -> bool:
        return split_unsupported_reason(split, self.schema_id) is None

    def open_files(self, split: Any) -> list[pq.ParquetFile]:
        """Open (and check) every file of ``split``; ``FileNeedsPypaimon`` if one doesn't fit."""
        return [self._open(meta) for meta in split.files]

    def read_files(self, files: list[pq.ParquetFile]) -> Iterator[pa.RecordBatch]:
        """The rows of ``files``, row group by row group, filtered and conformed."""
        for parquet_file in files:
            for batch in parquet_file.iter_batches(
                batch_size=self.batch_rows, columns=self.target.names, use_threads=False
            ):
                if self.filter is None:
                    yield _conform(batch, self.target)
                    continue
                # Table.filter: RecordBatch.filter fails on an all-false mask (pyarrow 19)
                for kept in pa.Table.from_batches([batch]).filter(self.filter).to_batches():
                    if kept.num_rows:
                        yield _conform(kept, self.target)

    def _open(self, meta: Any) -> pq.ParquetFile:
        file_io = self.table.file_io
        resolve = getattr(file_io, "_get_fileio", None)  # ResolvingFileIO: pick the scheme's
        if resolve is not None:
            file_io = resolve(meta.file_path)
        parquet_file = pq.ParquetFile(file_io.new_input_stream(meta.file_path))
        have = parquet_file.schema_arrow
        for field in self.target:
            index = have.get_field_index(field.name)
            if index < 0:
                raise FileNeedsPypaimon(f"{meta.file_name} has no column {field.name!r}")
            if not _castable(have.field(index).type, field.type):
                raise FileNeedsPypaimon(f"{meta.file_name}: column {field.name!r} is {have.field(index).type}")
        return parquet_file


def _castable(have: pa.DataType, want: pa.DataType) -> bool:
    """Same type, or one a cheap cast turns into it (timestamp unit or zone label, string width)."""
    if have.equals(want):
        return True
    t = pa.types
    if t.is_timestamp(have) and t.is_timestamp(want):
        return True
    if (t.is_string(have) or t.is_large_string(have)) and (t.is_string(want) or t.is_large_string(want)):
        return True
    if (t.is_binary(have) or t.is_large_binary(have)) and (t.is_binary(want) or t.is_large_binary(want)):
        return True
    if (t.is_list(have) or t.is_large_list(have)) and (t.is_list(want) or t.is_large_list(want)):
        return _castable(have.value_type, want.value_type)
    if t.is_map(have) and t.is_map(want):  # a shredded map is stored as a struct: no match
        return _castable(have.key_type, want.key_type) and _castable(have.item_type, want.item_type)
    if t.is_struct(have) and t.is_struct(want):
        return [f.name for f in have] == [f.name for f in want] and all(
            _castable(a.type, b.type) for a, b in zip(have, want, strict=True)
        )
    return False


def _conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(target):
        return batch
    return batch.cast(target, safe=False)


def _arrow_filter(predicate: Any, table: Any) -> Any:
    """The pushed-down predicate as a pyarrow expression (``None``: keep every row)."""
    if predicate is None:
        return None
    from pypaimon.schema.data_types import PyarrowFieldParser

    return predicate.to_arrow(PyarrowFieldParser.from_paimon_schema(table.table_schema.fields))


def prefetched(batches: Iterable[pa.RecordBatch], depth: int = PREFETCH_BATCHES) -> Iterator[pa.RecordBatch]:
    """``batches``, produced on a background thread up to ``depth`` ahead of the consumer.

    Errors of the producer are raised in the consumer. When the consumer stops early
    (Spark cancels the task, a ``limit`` is reached), the producer stops at its next
    batch.
    """
    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for batch in batches:
                if stop.is_set():
                    return
                ready.put(batch)
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            ready.put(_Failure(err))
        finally:
            ready.put(done)

    worker = threading.Thread(target=produce, name="paimon-fast-scan", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is done:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                ready.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error
