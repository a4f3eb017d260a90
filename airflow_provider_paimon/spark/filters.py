"""Translate Spark's pushed-down filters into one pypaimon predicate.

The predicate lets pypaimon skip whole partitions (partition pruning), buckets and
files (min/max statistics) while planning, and drop rows while reading. Spark still
evaluates every filter again after the scan (``pushFilters`` hands them all back),
so a filter that pypaimon evaluates slightly differently (nulls, collations) can
only cost speed, never correctness.

Pushed: ``=``, ``<=>``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``,
``NOT =``, ``NOT IN``, ``startswith``/``endswith``/``contains`` on top-level columns
of boolean, integral, floating, string and date type. Not pushed: nested fields,
timestamps, decimals, binary (their literal types differ between Spark and Paimon's
statistics), and, on primary-key tables, non-key columns (a filter there could
drop the newest version of a row and resurface an older one).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

_PUSHABLE_PAIMON_TYPES = (
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "INTEGER",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "STRING",
    "DATE",
)


def pushable_columns(fields: Iterable[Any]) -> set[str]:
    """Names of the table's columns whose filters can be pushed to pypaimon."""
    out = set()
    for field in fields:
        type_name = str(field.type).upper().replace(" NOT NULL", "")
        if type_name in _PUSHABLE_PAIMON_TYPES or type_name.startswith(("VARCHAR", "CHAR")):
            out.add(field.name)
    return out


def _column(attribute: tuple[str, ...], columns: set[str]) -> str | None:
    if len(attribute) != 1 or attribute[0] not in columns:
        return None
    return attribute[0]


def _literal(value: Any) -> Any:
    if isinstance(value, datetime.datetime):  # never for DATE columns; be safe
        return None
    return value


def to_predicate(flt: Filter, builder: Any, columns: set[str]) -> Any | None:
    """The pypaimon predicate for one Spark filter, or ``None`` if it cannot be pushed."""
    if isinstance(flt, Not):
        child = flt.child
        if isinstance(child, EqualTo) and (col := _column(child.attribute, columns)):
            return builder.not_equal(col, child.value) if child.value is not None else None
        if isinstance(child, In) and (col := _column(child.attribute, columns)):
            values = [v for v in child.value if v is not None]
            return builder.is_not_in(col, values) if len(values) == len(child.value) else None
        if isinstance(child, IsNull) and (col := _column(child.attribute, columns)):
            return builder.is_not_null(col)
        if isinstance(child, IsNotNull) and (col := _column(child.attribute, columns)):
            return builder.is_null(col)
        return None
    col = _column(getattr(flt, "attribute", ()), columns)
    if col is None:
        return None
    if isinstance(flt, IsNull):
        return builder.is_null(col)
    if isinstance(flt, IsNotNull):
        return builder.is_not_null(col)
    if isinstance(flt, In):
        values = [v for v in flt.value if v is not None]
        return builder.is_in(col, values) if values else None
    value = _literal(flt.value)
    if isinstance(flt, EqualNullSafe):
        return builder.is_null(col) if flt.value is None else builder.equal(col, value)
    if value is None:
        return None
    simple = {
        EqualTo: builder.equal,
        GreaterThan: builder.greater_than,
        GreaterThanOrEqual: builder.greater_or_equal,
        LessThan: builder.less_than,
        LessThanOrEqual: builder.less_or_equal,
        StringStartsWith: builder.startswith,
        StringEndsWith: builder.endswith,
        StringContains: builder.contains,
    }
    make = simple.get(type(flt))
    return make(col, value) if make else None


def combine(filters: Iterable[Filter], table: Any) -> Any | None:
    """AND of every pushable filter as one predicate over ``table``'s columns, or ``None``."""
    from pypaimon.common.predicate_builder import PredicateBuilder

    fields = table.table_schema.fields
    builder = PredicateBuilder(fields)
    columns = pushable_columns(fields)
    primary_keys = list(getattr(table, "primary_keys", None) or [])
    if primary_keys:
        # A value filter must not see a row before the merge picked its latest
        # version; keep to key and partition columns (constant per key).
        columns &= set(primary_keys) | set(table.partition_keys or [])
    predicates = [p for p in (to_predicate(f, builder, columns) for f in filters) if p is not None]
    if not predicates:
        return None
    return PredicateBuilder.and_predicates(predicates)
