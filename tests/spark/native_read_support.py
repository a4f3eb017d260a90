"""Shared by the native-read tests: compare a DataFrame with plain pypaimon, row for row."""

from __future__ import annotations

from typing import Any

from differential import canon_rows


def pypaimon_arrow(table: Any) -> Any:
    """Everything plain pypaimon reads from ``table`` (branch / time travel already applied)."""
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def same_rows_as_pypaimon(df: Any, table: Any) -> tuple[list, list]:
    """``(ours, pypaimon)`` as canonical sorted rows, both through Arrow with Spark's types.

    pypaimon's Arrow table is cast to the schema Spark produces for ``df`` (list item
    names, timestamp units and zones are labels; the values must be equal).
    """
    ours = df.toArrow()
    theirs = pypaimon_arrow(table).select(ours.schema.names)
    theirs = theirs.cast(ours.schema, safe=False) if not theirs.schema.equals(ours.schema) else theirs
    return _canon(ours), _canon(theirs)


def _canon(arrow: Any) -> list:
    return canon_rows([tuple(r.values()) for r in arrow.to_pylist()])
