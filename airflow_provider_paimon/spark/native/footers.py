"""Parquet footers -> pypaimon ``DataFileMeta``: what the driver learns about a file without reading it.

``write_table`` lets Spark's own Parquet writer produce a table's data files. Paimon
needs, for each file, the metadata its own writer would have recorded: row count,
size, schema id, level 0, sequence numbers 0..0, no key statistics (append tables
have no keys) and, only with ``metadata.stats-mode=full``, per-column value
statistics (min, max, null count) in Paimon's binary-row format. All of it is in the
file's footer (row groups' column chunk statistics), so the driver reads footers
only, never data pages; the one exception is the partition value, read from the
first row of the file's partition columns (one tiny column chunk each), because
footer statistics of long strings may be missing or truncated.

``footer_file_meta`` builds the ``DataFileMeta`` exactly as pypaimon's
``DataWriter._create_data_file_meta`` does, so manifests written for these files
are indistinguishable from pypaimon's (checked by tests against pypaimon's own
metadata for the same rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class Footer:
    """What one written Parquet file holds, from its footer."""

    row_count: int
    size: int
    # partition values (typed as pypaimon types them: the table's Arrow types, as_py)
    partition: tuple
    # per table column: (min, max, null_count); None when stats are not recorded
    column_stats: list[tuple[Any, Any, int | None]] | None


def read_footer(
    file_io: Any,
    path: str,
    arrow_schema: pa.Schema,
    partition_keys: list[str],
    with_stats: bool,
) -> Footer:
    """Read ``path``'s footer (and its first row's partition columns)."""
    size = file_io.get_file_size(path)
    with file_io.new_input_stream(path) as stream:
        parquet = pq.ParquetFile(stream)
        meta = parquet.metadata
        partition: tuple = ()
        if partition_keys and meta.num_rows:
            first = parquet.read_row_group(0, columns=partition_keys).slice(0, 1)
            partition = tuple(
                _typed(first.column(k)[0].as_py(), arrow_schema.field(k).type) for k in partition_keys
            )
        stats = _column_stats(meta, arrow_schema) if with_stats else None
    return Footer(row_count=meta.num_rows, size=size, partition=partition, column_stats=stats)


def _column_stats(meta: pq.FileMetaData, arrow_schema: pa.Schema) -> list[tuple[Any, Any, int | None]]:
    """Min, max and null count per top-level column, merged over row groups.

    Matches pypaimon's ``_get_column_stats``: nested and map columns get no min/max;
    an all-null column has min = max = None. A leaf whose footer lacks statistics
    (Parquet writers skip very long values) gets None, meaning "unknown" to readers.
    """
    leaf_of = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
    out: list[tuple[Any, Any, int | None]] = []
    for field in arrow_schema:
        j = leaf_of.get(field.name)
        if j is None:  # nested (struct, list, map): no single leaf, no min/max
            out.append((None, None, None))
            continue
        out.append(_leaf_stats(meta, j, field.type))
    return out


def _leaf_stats(meta: pq.FileMetaData, j: int, arrow_type: pa.DataType) -> tuple[Any, Any, int | None]:
    lo: Any = None
    hi: Any = None
    nulls: int | None = 0
    values = 0
    known = True
    for g in range(meta.num_row_groups):
        chunk = meta.row_group(g).column(j)
        stats = chunk.statistics
        if stats is None or not stats.has_null_count:
            nulls = None
        elif nulls is not None:
            nulls += stats.null_count
        non_null = chunk.num_values - (stats.null_count if stats is not None and stats.has_null_count else 0)
        if stats is None or not stats.has_min_max:
            if stats is None or not stats.has_null_count or non_null > 0:
                known = False
            continue
        values += non_null
        low, high = _min_max(stats, arrow_type)
        if low is None or high is None:
            known = False
            continue
        lo = low if lo is None or low < lo else lo
        hi = high if hi is None or high > hi else hi
    if not known or values == 0 or pa.types.is_large_binary(arrow_type):
        return None, None, nulls
    return _typed(lo, arrow_type), _typed(hi, arrow_type), nulls


def _min_max(stats: Any, arrow_type: pa.DataType) -> tuple[Any, Any]:
    """A chunk's min and max as Python values (decimals decoded from their physical form)."""
    if pa.types.is_decimal(arrow_type):
        return _decimal(stats.min_raw, arrow_type.scale), _decimal(stats.max_raw, arrow_type.scale)
    try:
        return stats.min, stats.max
    except (pa.ArrowNotImplementedError, ValueError):  # a type pyarrow cannot convert: unknown
        return None, None


def _decimal(raw: Any, scale: int) -> Decimal:
    """Unscaled INT32 / INT64 / big-endian two's complement bytes -> ``Decimal``."""
    unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
    return Decimal(unscaled).scaleb(-scale)


def _typed(value: Any, arrow_type: pa.DataType) -> Any:
    """``value`` as pypaimon holds a value of ``arrow_type`` (``pyarrow`` scalar ``as_py``)."""
    if value is None:
        return None
    return pa.array([value]).cast(arrow_type).to_pylist()[0]


def footer_file_meta(table: Any, file_name: str, file_path: str, footer: Footer) -> Any:
    """The ``DataFileMeta`` pypaimon's append writer records for such a file."""
    from pypaimon.data.timestamp import Timestamp
    from pypaimon.manifest.schema.data_file_meta import DataFileMeta
    from pypaimon.manifest.schema.simple_stats import SimpleStats
    from pypaimon.table.row.generic_row import GenericRow

    if footer.column_stats is None:
        value_stats = SimpleStats.empty_stats()
        stats_cols: list[str] | None = []
    else:
        fields = list(table.fields)
        value_stats = SimpleStats(
            GenericRow([s[0] for s in footer.column_stats], fields),
            GenericRow([s[1] for s in footer.column_stats], fields),
            [s[2] for s in footer.column_stats],
        )
        stats_cols = None
    return DataFileMeta.create(
        file_name=file_name,
        file_size=footer.size,
        row_count=footer.row_count,
        min_key=GenericRow([], []),
        max_key=GenericRow([], []),
        key_stats=SimpleStats.empty_stats(),
        value_stats=value_stats,
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=table.table_schema.id,
        level=0,
        extra_files=[],
        creation_time=Timestamp.now(),
        delete_row_count=0,
        file_source=0,
        value_stats_cols=stats_cols,
        external_path=None,
        first_row_id=None,
        write_cols=None,
        file_path=file_path,
    )
