"""Record how many retract rows (``-U``/``-D``) each new primary-key data file holds.

pypaimon 2.1's key-value writer records ``delete_row_count = 0`` for every file it
writes, even for files holding ``-D`` rows. Readers trust that number: a split of one
file with no delete rows is read raw, without the merge that drops retracts, so a
commit whose only file in a bucket holds a delete would show the deleted row (and any
file whose key range overlaps no other is read the same way). Paimon Java's writer
counts retract rows into ``deleteRowCount``; this does the same for pypaimon's files
before they are committed, by reading each file's ``_VALUE_KIND`` column.

Only tables with ``rowkind.field`` can get retract rows from pypaimon's writer, so
other tables are left as they are.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .engines import rowkind_field

VALUE_KIND = "_VALUE_KIND"
_RETRACT_BYTES = pa.array([1, 3], pa.int8())


def retract_count(kinds: pa.Array | pa.ChunkedArray) -> int:
    """How many of ``kinds`` (``_VALUE_KIND`` bytes) are ``-U`` or ``-D``."""
    return int(pc.sum(pc.is_in(kinds, value_set=_RETRACT_BYTES.cast(kinds.type))).as_py() or 0)


def read_value_kinds(table: Any, file: Any) -> pa.ChunkedArray:
    """The ``_VALUE_KIND`` column of one committed-or-not data file of ``table``."""
    path = file.file_path or file.external_path
    name = file.file_name
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        # ParquetFile reads the one column directly: a third of read_table's cost (its
        # dataset and thread pool), for files of a few rows every write checks
        with table.file_io.new_input_stream(path) as stream:
            return pq.ParquetFile(stream).read(columns=[VALUE_KIND], use_threads=False).column(VALUE_KIND)
    if name.endswith(".orc"):
        import pyarrow.orc as orc

        with table.file_io.new_input_stream(path) as stream:
            return orc.ORCFile(pa.BufferReader(stream.read())).read(columns=[VALUE_KIND]).column(VALUE_KIND)
    raise ValueError(f"cannot count retract rows of {name}: only Parquet and ORC files are read here")


def with_delete_counts(table: Any, messages: list[Any]) -> list[Any]:
    """``messages`` with each new data file's ``delete_row_count`` set from its rows."""
    if not table.is_primary_key_table or rowkind_field(table) is None:
        return messages
    for message in messages:
        files = []
        for f in message.new_files:
            count = retract_count(read_value_kinds(table, f))
            files.append(f if count == (f.delete_row_count or 0) else dataclasses.replace(f, delete_row_count=count))
        message.new_files = files
    return messages
