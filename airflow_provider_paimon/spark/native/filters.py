"""``read_table(filter=...)``: one predicate that prunes files in pypaimon and filters rows in Spark.

The text uses the compaction ``where`` grammar (``paimon/predicates.py``:
columns against literals, ``IN``, ``BETWEEN``, ``IS [NOT] NULL``, ``AND``/``OR``/
``NOT``), here over any top-level column, not only partition columns. Nothing of
the text reaches a SQL parser: it is parsed once, then

* turned into a pypaimon ``Predicate`` for planning, so pypaimon drops partitions
  and files whose statistics cannot match. Only comparisons whose pruning is
  exact in pypaimon are pushed (integer, string and date columns with literals
  of their own type); anything else is left out, which only means less pruning;
* turned into a Spark ``Column`` that the returned DataFrame applies to every row,
  with SQL's three-valued logic as in ``where.py``. The filter is part of the
  DataFrame's definition, so every query on it sees the same rows (unlike
  per-query push-down, see ``reader.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.predicates import (
    Between,
    BoolOp,
    Compare,
    IsNull,
    Node,
    Not,
    _convert,
    _type_family,
    check_where,
)

_PUSHABLE = {"int": int, "string": str, "date": dt.date}
_PREDICATE_OPS = {
    "=": "equal", "==": "equal", "<>": "not_equal", "!=": "not_equal",
    "<": "less_than", "<=": "less_or_equal", ">": "greater_than", ">=": "greater_or_equal",
}
_NEGATED = {"=": "<>", "==": "<>", "<>": "=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class CompiledFilter:
    text: str
    node: Node
    types: dict[str, str]  # column -> Paimon type name
    predicate: Any  # pypaimon Predicate or None (nothing pushable)

    def column(self) -> Any:
        """The filter as a Spark ``Column`` (built on demand: it needs an active session)."""
        return _spark(self.text, self.node, self.types)


def compile_filter(table: Any, text: str, table_name: str) -> CompiledFilter:
    """Parse and type-check ``text`` against ``table``; raise ``InvalidArgumentError`` naming the fix."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(
            "read_table filter is blank; give a predicate such as \"dt >= DATE '2026-11-01'\" or leave it out"
        )
    types = {f.name: str(f.type) for f in table.table_schema.fields}
    try:
        node = check_where(text, types)
    except InvalidArgumentError as err:
        message = (
            str(err)
            .replace("is not a partition column (partition columns:", "is not a column (columns:")
            .replace("Compaction's where accepts comparisons of partition columns", "read_table's filter accepts comparisons of columns")
            .removesuffix("; nothing is submitted or changed")
        )
        raise InvalidArgumentError(f"filter of read_table {table_name}: {message}") from None
    builder = table.new_read_builder().new_predicate_builder()
    return CompiledFilter(text, node, types, _predicate(text, node, types, builder, negate=False))


def _pushable(text: str, column: str, type_name: str, literal: Any) -> Any:
    """The literal's value if the comparison can be pushed exactly; ``_SKIP`` otherwise."""
    family = _type_family(type_name)
    kind = _PUSHABLE.get(family)
    if kind is None:
        return _SKIP
    value = _convert(text, column, type_name, literal)
    if value is None or type(value) is bool or not isinstance(value, kind):
        return _SKIP
    if family == "date" and isinstance(value, dt.datetime):
        return _SKIP
    return value


_SKIP = object()


def _predicate(text: str, node: Node, types: dict[str, str], pb: Any, negate: bool) -> Any:
    """A pypaimon predicate implied by ``node`` (or its negation), ``None`` when none is exact.

    NOT is pushed down to the leaves (De Morgan), which keeps SQL's three-valued
    logic: ``NOT (a = 1)`` and ``a <> 1`` are both unknown for a NULL ``a``.
    """
    if isinstance(node, Not):
        return _predicate(text, node.operand, types, pb, not negate)
    if isinstance(node, BoolOp):
        parts = [_predicate(text, n, types, pb, negate) for n in node.operands]
        conjunction = (node.op == "AND") != negate
        if conjunction:
            kept = [p for p in parts if p is not None]  # dropping a conjunct only widens
            return pb.and_predicates(kept) if kept else None
        if any(p is None for p in parts):
            return None  # an unknown disjunct could match anything
        return pb.or_predicates(parts)
    column, type_name = node.column, types[node.column]
    if isinstance(node, IsNull):
        return pb.is_not_null(column) if node.negated != negate else pb.is_null(column)
    if isinstance(node, Compare):
        value = _pushable(text, column, type_name, node.literal)
        if value is _SKIP:
            return None
        op = _NEGATED[node.op] if negate else node.op
        return getattr(pb, _PREDICATE_OPS[op])(column, value)
    if isinstance(node, Between):
        low = _pushable(text, column, type_name, node.low)
        high = _pushable(text, column, type_name, node.high)
        if low is _SKIP or high is _SKIP:
            return None
        if node.negated != negate:
            return pb.or_predicates([pb.less_than(column, low), pb.greater_than(column, high)])
        return pb.between(column, low, high)
    values = [_pushable(text, column, type_name, lit) for lit in node.literals]
    if any(v is _SKIP for v in values):
        return None  # a NULL in the list (or an odd literal): leave it to Spark
    return pb.is_not_in(column, values) if node.negated != negate else pb.is_in(column, values)


def _spark(text: str, node: Node, types: dict[str, str]) -> Any:
    from pyspark.sql import functions as F

    if isinstance(node, Not):
        return ~_spark(text, node.operand, types)
    if isinstance(node, BoolOp):
        parts = [_spark(text, n, types) for n in node.operands]
        return functools.reduce((lambda a, b: a & b) if node.op == "AND" else (lambda a, b: a | b), parts)
    column, type_name = node.column, types[node.column]
    col = F.col(f"`{column.replace('`', '``')}`")
    if isinstance(node, IsNull):
        return col.isNotNull() if node.negated else col.isNull()

    def lit(literal: Any) -> Any:
        value = _convert(text, column, type_name, literal)
        if value is None:
            return F.lit(None)
        if isinstance(value, dt.datetime):  # a SQL literal: no Python time zone guessing
            kind = "TIMESTAMP_NTZ" if _type_family(type_name) == "timestamp" and "LTZ" not in type_name.upper() and "LOCAL" not in type_name.upper() else "TIMESTAMP"
            return F.expr(f"{kind} '{value.isoformat(sep=' ')}'")
        return F.lit(value)

    if isinstance(node, Compare):
        right = lit(node.literal)
        ops = {
            "=": col == right, "==": col == right, "<>": col != right, "!=": col != right,
            "<": col < right, "<=": col <= right, ">": col > right, ">=": col >= right,
        }
        return ops[node.op]
    if isinstance(node, Between):
        inside = (col >= lit(node.low)) & (col <= lit(node.high))
        return ~inside if node.negated else inside
    found = col.isin(*[lit(v) for v in node.literals])
    return ~found if node.negated else found
