"""Decoded data files kept across the model tests' reads (``tables.Reader``).

The model tests read a table after every commit and every compaction; a bucket that
changed is read again whole, so most of its files were decoded by an earlier read.
pypaimon opens each small Parquet file with a pyarrow dataset scanner (about 2 ms a
file, most of a read's cost), for bytes it decoded before: a data file of a table is
written once and never changed (new files get new names), and ``kept_file_reads``
checks that with the file's identity (path, size, modification time in ns, inode) and
decodes it again when any of them differs.

What is kept is only the scanner's batches of one file for one projection, filter and
batch size. Everything a read checks still runs on every read: planning from the
snapshot, pypaimon's split generation, its choice between a raw and a merged read
from the files' metadata (levels, retract counts), the sort-merge with the table's
merge function and the drop of retracts. Compaction, writes and the other readers
(pypaimon-rust, the LSM checks) never see the kept batches: the patch is active only
inside ``with kept_file_reads(...)`` around ``Reader``'s reads.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pypaimon.read.reader import format_pyarrow_reader


class _Scanned:
    """What ``FormatPyArrowReader`` takes from ``dataset.scanner(...)``: its reader."""

    def __init__(self, schema: pa.Schema, batches: list[pa.RecordBatch]) -> None:
        self.schema = schema
        self.batches = batches

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.batches)


class _KeptDataset:
    """A file's pyarrow dataset whose plain scans are decoded once per identity."""

    def __init__(self, dataset: Any, identity: tuple, kept: dict) -> None:
        self._dataset = dataset
        self._identity = identity
        self._kept = kept

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dataset, name)

    def scanner(self, *args: Any, **kwargs: Any) -> Any:
        if args:
            return self._dataset.scanner(*args, **kwargs)
        key = (self._identity, tuple(
            (name, str(value) if name == "filter" and value is not None else repr(value))
            for name, value in sorted(kwargs.items())
        ))
        scanned = self._kept.get(key)
        if scanned is None:
            scanner = self._dataset.scanner(**kwargs)
            scanned = _Scanned(scanner.projected_schema, list(scanner.to_reader()))
            self._kept[key] = scanned
        return scanned


@contextlib.contextmanager
def kept_file_reads(kept: dict) -> Iterator[None]:
    """pypaimon's data file reads inside the block decode each file identity once into ``kept``."""
    original = format_pyarrow_reader._file_format_dataset

    def dataset(file_io: Any, file_format: str, file_path: str, cache_max_size: int,
                file_size: int | None = None) -> Any:
        path = file_io.to_filesystem_path(file_path)
        try:
            st = os.stat(path)
        except OSError:  # not a local file: read as pypaimon does
            return original(file_io, file_format, file_path, cache_max_size, file_size)
        identity = (file_format, path, st.st_size, st.st_mtime_ns, st.st_ino)
        found = kept.get(identity)
        if found is None:
            found = _KeptDataset(original(file_io, file_format, file_path, cache_max_size, file_size),
                                 identity, kept)
            kept[identity] = found
        return found

    format_pyarrow_reader._file_format_dataset = dataset
    try:
        yield
    finally:
        format_pyarrow_reader._file_format_dataset = original
