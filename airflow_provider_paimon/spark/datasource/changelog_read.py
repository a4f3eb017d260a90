"""A primary-key table's changes as rows with a row-kind column (``read.changelog``).

Spark rows have no kind, so a stream of a primary-key table carries it in a STRING
column ``rowkind`` (``+I``, ``-U``, ``+U``, ``-D``), first, as Paimon's Spark source does
with ``read.changelog=true`` (and its ``audit_log`` system table). Without that option
a primary-key stream is refused: its deletes and update-befores would look like
inserts.

Splits come from ``StreamPlanner.range_splits``: the merged state of a start
snapshot (each key's row with the kind of its last version, as Paimon's full start
reads it) and each later snapshot's changes, read unmerged by pypaimon's streaming
splits. A bucket's splits stay together, in commit order, in one Spark partition, so
a key's changes reach a ``foreachBatch`` function in the order they were committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StringType, StructField, StructType

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.option_values import bool_option

from .types import conform_batch, spark_to_arrow_schema

READ_CHANGELOG = "read.changelog"
ROWKIND = "rowkind"
_PYPAIMON_ROW_KIND = "_row_kind"


def read_changelog(raw: dict[str, str]) -> bool:
    """``read.changelog`` (false when absent); a bad value is refused."""
    return bool_option(raw, READ_CHANGELOG, False)


def changelog_schema(table: Any, full: StructType, name: str) -> StructType:
    """``full`` (the table's Spark schema) with ``rowkind`` first."""
    if ROWKIND in full.fieldNames():
        raise InvalidArgumentError(
            f"{name} has a column named {ROWKIND!r}, which read.changelog adds for the row kind; "
            "read the table without read.changelog, or rename the column"
        )
    return StructType([StructField(ROWKIND, StringType(), False), *full.fields])


def check_stream(table: Any, raw: dict[str, str], name: str) -> bool:
    """Whether a stream of ``table`` reads changes (a primary key); refusals say why."""
    wanted = read_changelog(raw)
    if not table.is_primary_key_table:
        if wanted:
            raise InvalidArgumentError(
                f"option {READ_CHANGELOG!r} is for primary-key tables; {name} is an append table, "
                "whose stream holds inserts only: drop the option"
            )
        return False
    if not wanted:
        raise InvalidArgumentError(
            f"{name} has a primary key: its stream holds changes (+I, -U, +U, -D), and Spark "
            f"rows have no kind. Set option {READ_CHANGELOG!r}='true' to get each change with "
            f"its kind in column {ROWKIND!r}"
        )
    return True


def group_by_bucket(splits: Sequence[Any], groups: int) -> list[list[Any]]:
    """Splits in ``groups`` lists, each bucket's splits together and in their order."""
    buckets: dict[tuple, list[Any]] = {}
    for split in splits:
        buckets.setdefault((tuple(split.partition.values), split.bucket), []).append(split)
    count = max(1, min(groups, len(buckets)))
    out: list[list[Any]] = [[] for _ in range(count)]
    sizes = [0] * count
    for key in sorted(buckets, key=lambda k: -sum(_rows(s) for s in buckets[k])):
        i = sizes.index(min(sizes))
        out[i].extend(buckets[key])
        sizes[i] += sum(_rows(s) for s in buckets[key])
    return [g for g in out if g]


def _rows(split: Any) -> int:
    return sum(int(getattr(f, "row_count", 0) or 0) for f in getattr(split, "files", []))


def read_changes(table: Any, schema: StructType, splits: list[Any]) -> Iterator[pa.RecordBatch]:
    """The rows of ``splits`` with their kind in ``rowkind``, as ``schema`` says."""
    target = spark_to_arrow_schema(schema)
    columns = [n for n in target.names if n != ROWKIND]
    builder = table.new_stream_read_builder().with_include_row_kind(True)
    if columns != [f.name for f in table.table_schema.fields]:
        builder = builder.with_projection(columns)
    reader = builder.new_read().to_arrow_batch_reader(splits)
    try:
        for batch in reader:
            if batch.num_rows:
                names = [ROWKIND if n == _PYPAIMON_ROW_KIND else n for n in batch.schema.names]
                yield conform_batch(batch.rename_columns(names), target)
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()
