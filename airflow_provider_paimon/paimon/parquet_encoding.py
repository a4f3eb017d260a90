"""Which Parquet columns to dictionary-encode: the ones whose values repeat.

pyarrow's default (and so pypaimon's writer) dictionary-encodes every column and,
when a column's dictionary outgrows pyarrow's dictionary page limit (1 MiB), switches
to PLAIN mid-column. Such mixed column chunks cost write CPU for a dictionary that is
thrown away, and Spark's vectorized Parquet reader reads them about 15% slower than
chunks in one encoding (measured in docs/datasource.md, native read). Paimon Java's
writer (parquet-mr) mostly avoids it: at a column's first page it checks whether the
dictionary encoding is smaller than PLAIN and, if not, writes the column PLAIN from
the start. The files we write ourselves (the data source's fast append path, the
compaction rewrite) decide the same way up front, from the first rows they write.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .option_values import bool_option

# Table option that sets dictionary encoding for every column (``true``/``false``).
DICTIONARY_OPTION = "parquet.enable.dictionary"
# Rows of a file's first row group looked at to pick its dictionary columns, and
# the dictionary size beyond which pyarrow would fall back to PLAIN mid-column.
DICTIONARY_SAMPLE_ROWS = 64 * 1024
DICTIONARY_LIMIT_BYTES = 1024 * 1024
# A column of (nearly) unique values shows it in its first rows.
_DICTIONARY_PROBE_ROWS = 1024


def dictionary_columns(
    schema: pa.Schema, raw_options: dict[str, str], first_rows: pa.Table | None = None
) -> bool | list[str]:
    """``use_dictionary`` for pyarrow: the columns whose values repeat, unless the table option says.

    A column is dictionary-encoded when, in the file's first row group
    (``first_rows``; its first ``DICTIONARY_SAMPLE_ROWS``), its distinct values are
    at most half its values and their dictionary fits ``DICTIONARY_LIMIT_BYTES``
    (pyarrow's dictionary page limit). pyarrow (and so pypaimon) dictionary-encodes
    every column and, when a dictionary outgrows that limit, switches to PLAIN
    mid-column (see the module docstring). Without ``first_rows``: string and binary
    columns only.
    """
    if str(raw_options.get(DICTIONARY_OPTION) or "").strip():
        return bool_option(raw_options, DICTIONARY_OPTION, True)
    t = pa.types
    if first_rows is None:
        return [
            f.name
            for f in schema
            if t.is_string(f.type) or t.is_large_string(f.type) or t.is_binary(f.type) or t.is_large_binary(f.type)
        ]
    sample = first_rows.slice(0, DICTIONARY_SAMPLE_ROWS)
    return [f.name for f in schema if _repeats(f.type, sample.column(f.name))]


def _repeats(data_type: pa.DataType, column: pa.ChunkedArray) -> bool:
    """Whether a dictionary pays for ``column``'s values (see ``dictionary_columns``)."""
    t = pa.types
    if t.is_boolean(data_type) or t.is_nested(data_type) or t.is_null(data_type):
        return False  # booleans are bit-packed; nested columns: the list names top-level columns only
    values = column.length() - column.null_count
    if values == 0:
        return True  # all NULL: nothing to encode either way
    try:
        # a column of (nearly) unique values shows it in its first rows: decide there
        # without hashing the whole sample (ids, timestamps, free text)
        head = column.slice(0, _DICTIONARY_PROBE_ROWS)
        head_values = head.length() - head.null_count
        if head_values and pc.count_distinct(head).as_py() * 2 > head_values:
            return False
        distinct = pc.count_distinct(column).as_py()
    except pa.ArrowNotImplementedError:  # a type pyarrow cannot hash: leave it PLAIN
        return False
    if distinct * 2 > values:
        return False
    width = column.nbytes / column.length()  # about the bytes of one value
    return distinct * width <= DICTIONARY_LIMIT_BYTES
