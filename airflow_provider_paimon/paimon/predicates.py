"""The package's predicate language: a whitelisted predicate over partition columns.

One grammar for every place a user writes a partition predicate: compaction's
``where``, the data source's ``partition-filter`` and ``read_table``'s native filters.
Compaction's ``where`` used to be handed to Spark SQL as it was, so a DAG that templates it from
params let anyone who can trigger the DAG run any Spark SQL on the driver
(``reflect('java.lang.System', 'exit', 1)``, subqueries, ...). Compaction only needs
to pick partitions, so this module parses a small SQL subset and evaluates it in
Python over the partition values; nothing of the text ever reaches a SQL engine.

Accepted (keywords in any case)::

    predicate := predicate OR predicate | predicate AND predicate | NOT predicate
               | ( predicate )
               | column op literal | literal op column     op: = == <> != < <= > >=
               | column [NOT] IN ( literal [, literal]... )
               | column [NOT] BETWEEN literal AND literal
               | column IS [NOT] NULL
    literal   := 'string' ('' escapes a quote) | number | -number | TRUE | FALSE | NULL
               | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd[ hh:mm:ss[.ffffff]]'
    column    := a partition column of the table, bare or `back-quoted`

Everything else is refused with a message naming the problem: function calls,
subqueries, other columns, comments, semicolons, double-quoted text, arithmetic.
Comparisons follow SQL: a literal is converted to the column's type (``hr = '3'``
on an INT column compares with 3; a STRING column wants a quoted literal), and
NULL makes a comparison unknown, so ``dt = NULL`` matches nothing and
``NOT (dt = NULL)`` neither (use ``IS NULL``).

Imports neither Spark nor Airflow: the operator checks ``where`` with it before
submitting, and the compact job evaluates it, so a direct job run is as safe.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgumentError

MAX_WHERE_CHARS = 10_000
#: deepest nesting of parentheses and NOTs (the parser and evaluator recurse per level)
MAX_WHERE_DEPTH = 50
_KEYWORDS = frozenset({
    "AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE", "DATE", "TIMESTAMP",
})
_SQL_WORDS = frozenset({"SELECT", "FROM", "EXISTS", "UNION", "WITH", "CASE", "LIKE", "RLIKE", "CAST"})
_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "==": operator.eq, "<>": operator.ne, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><>|!=|<=|>=|==|=|<|>)
  | (?P<punct>[(),-])
  | (?P<other>.)
    """,
    re.VERBOSE,
)

#: a predicate's value on one partition: True, False or None (SQL's unknown)
Truth = bool | None


def _refuse(where: str, problem: str) -> InvalidArgumentError:
    shown = where if len(where) <= 200 else where[:200] + "..."
    return InvalidArgumentError(
        f"where {shown!r} is refused: {problem}. Compaction's where accepts comparisons of "
        "partition columns with literals (=, <>, <, <=, >, >=, IN, BETWEEN, IS [NOT] NULL) "
        "joined by AND/OR/NOT and parentheses; nothing is submitted or changed"
    )


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, column, keyword, op, punct, end
    text: str
    pos: int


def _tokens(where: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(where):
        if where.startswith(("--", "/*"), pos) or where[pos] == "#":
            raise _refuse(where, f"comments are not allowed (at character {pos + 1})")
        if where[pos] == ";":
            raise _refuse(where, f"a semicolon ends a statement; one predicate only (at character {pos + 1})")
        if where[pos] == '"':
            raise _refuse(where, f"double quotes are not allowed; quote strings with '...' (at character {pos + 1})")
        match = _TOKEN.match(where, pos)
        assert match is not None  # 'other' matches any one character
        kind, text = match.lastgroup or "", match.group()
        if kind == "word":
            upper = text.upper()
            kind, text = ("keyword", upper) if upper in _KEYWORDS else ("column", text)
        elif kind == "quoted":
            kind, text = "column", text[1:-1].replace("``", "`")
        if kind != "space":
            out.append(_Token(kind, text, pos))
        pos = match.end()
    out.append(_Token("end", "", len(where)))
    # DATE/TIMESTAMP are literal prefixes only before a quoted value; else a column's name
    return [
        _Token("column", t.text.lower(), t.pos)
        if t.kind == "keyword" and t.text in ("DATE", "TIMESTAMP") and out[n + 1].kind != "string"
        else t
        for n, t in enumerate(out)
    ]


# --- the parsed predicate -------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A constant as written: ``kind`` is string, number, bool, null, date or timestamp."""

    kind: str
    value: Any

    def sql(self) -> str:
        if self.kind == "null":
            return "NULL"
        if self.kind == "bool":
            return "TRUE" if self.value else "FALSE"
        if self.kind == "number":
            return str(self.value)
        quoted = "'" + str(self.value).replace("'", "''") + "'"
        return f"{self.kind.upper()} {quoted}" if self.kind in ("date", "timestamp") else quoted


@dataclass(frozen=True)
class Compare:
    column: str
    op: str  # always column-on-the-left
    literal: Literal


@dataclass(frozen=True)
class InList:
    column: str
    literals: tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class Between:
    column: str
    low: Literal
    high: Literal
    negated: bool


@dataclass(frozen=True)
class IsNull:
    column: str
    negated: bool


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class BoolOp:
    op: str  # AND / OR
    operands: tuple[Node, ...]


Node = Compare | InList | Between | IsNull | Not | BoolOp


class _Parser:
    def __init__(self, where: str, columns: Sequence[str]) -> None:
        self.where = where
        self.columns = list(columns)
        self.tokens = _tokens(where)
        self.i = 0
        self.depth = 0

    def parse(self) -> Node:
        node = self.or_()
        token = self.peek()
        if token.kind != "end":
            raise self.unexpected(token, "the end of the predicate")
        return node

    # -- helpers --

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.peek()
        self.i += 1
        return token

    def accept(self, kind: str, text: str | None = None) -> bool:
        token = self.peek()
        if token.kind == kind and (text is None or token.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str, wanted: str) -> None:
        if not self.accept(kind, text):
            raise self.unexpected(self.peek(), wanted)

    def unexpected(self, token: _Token, wanted: str) -> InvalidArgumentError:
        if token.kind == "end":
            return _refuse(self.where, f"it ends where {wanted} was expected")
        if token.kind == "other":
            return _refuse(self.where, f"unexpected {token.text!r} at character {token.pos + 1}")
        return _refuse(self.where, f"expected {wanted} at character {token.pos + 1}, found {token.text!r}")

    # -- grammar --

    def or_(self) -> Node:
        operands = [self.and_()]
        while self.accept("keyword", "OR"):
            operands.append(self.and_())
        return operands[0] if len(operands) == 1 else BoolOp("OR", tuple(operands))

    def and_(self) -> Node:
        operands = [self.not_()]
        while self.accept("keyword", "AND"):
            operands.append(self.not_())
        return operands[0] if len(operands) == 1 else BoolOp("AND", tuple(operands))

    def not_(self) -> Node:
        token = self.peek()
        if self.accept("keyword", "NOT"):
            with self.nested(token):
                return Not(self.not_())
        if self.accept("punct", "("):
            if self.peek().kind == "column" and self.peek().text.upper() == "SELECT":
                raise _refuse(self.where, "subqueries are not allowed")
            with self.nested(token):
                node = self.or_()
            self.expect("punct", ")", "')'")
            return node
        return self.comparison()

    @contextlib.contextmanager
    def nested(self, token: _Token) -> Iterator[None]:
        """One more level of parentheses or NOT; refused past ``MAX_WHERE_DEPTH`` (not a RecursionError)."""
        self.depth += 1
        if self.depth > MAX_WHERE_DEPTH:
            raise _refuse(self.where, f"it nests parentheses and NOTs more than {MAX_WHERE_DEPTH} deep "
                                      f"(at character {token.pos + 1}); write it flatter")
        try:
            yield
        finally:
            self.depth -= 1

    def comparison(self) -> Node:
        start = self.peek()
        if start.kind == "column":
            column = self.column()
            token = self.peek()
            if token.kind == "op":
                self.take()
                return Compare(column, token.text, self.literal())
            negated = self.accept("keyword", "NOT")
            if self.accept("keyword", "IN"):
                return InList(column, self.in_values(), negated)
            if self.accept("keyword", "BETWEEN"):
                low = self.literal()
                self.expect("keyword", "AND", "AND (of BETWEEN low AND high)")
                return Between(column, low, self.literal(), negated)
            if not negated and self.accept("keyword", "IS"):
                is_not = self.accept("keyword", "NOT")
                self.expect("keyword", "NULL", "NULL (IS [NOT] NULL)")
                return IsNull(column, is_not)
            raise self.unexpected(self.peek(), "a comparison (=, <>, <, <=, >, >=, IN, BETWEEN, IS NULL)")
        if start.kind in ("number", "string", "keyword") or (start.kind == "punct" and start.text == "-"):
            literal = self.literal()
            token = self.peek()
            if token.kind == "op" and self.peek(1).kind == "column":
                self.take()
                column = self.column()
                return Compare(column, _MIRRORED.get(token.text, token.text), literal)
            raise _refuse(
                self.where,
                f"the comparison at character {start.pos + 1} names no partition column "
                "(each comparison is between a partition column and a literal)",
            )
        raise self.unexpected(start, "a partition column")

    def column(self) -> str:
        token = self.take()
        name = token.text
        if self.peek().kind == "punct" and self.peek().text == "(":
            raise _refuse(self.where, f"function calls are not allowed ({name}(...) at character {token.pos + 1})")
        if name.upper() in _SQL_WORDS:
            raise _refuse(self.where, f"{name.upper()} is not allowed (no subqueries, CASE, LIKE or casts)")
        if name in self.columns:
            return name
        # column names are case-insensitive, as in Spark SQL (unless two differ by case only)
        same = [c for c in self.columns if c.casefold() == name.casefold()]
        if len(same) == 1:
            return same[0]
        known = ", ".join(self.columns) or "none, the table is not partitioned"
        raise _refuse(self.where, f"{name!r} is not a partition column (partition columns: {known})")

    def literal(self) -> Literal:
        token = self.take()
        if token.kind == "string":
            return Literal("string", token.text[1:-1].replace("''", "'"))
        if token.kind == "number":
            return Literal("number", _number(token.text))
        if token.kind == "punct" and token.text == "-" and self.peek().kind == "number":
            return Literal("number", -_number(self.take().text))
        if token.kind == "keyword":
            if token.text in ("TRUE", "FALSE"):
                return Literal("bool", token.text == "TRUE")
            if token.text == "NULL":
                return Literal("null", None)
            if token.text in ("DATE", "TIMESTAMP"):
                text = self.take()
                if text.kind != "string":
                    raise self.unexpected(text, f"a quoted value after {token.text}")
                return Literal(token.text.lower(), text.text[1:-1].replace("''", "'"))
        if token.kind == "column":
            if self.peek().kind == "punct" and self.peek().text == "(":
                raise _refuse(self.where, f"function calls are not allowed ({token.text}(...) at character {token.pos + 1})")
            raise _refuse(
                self.where,
                f"{token.text!r} at character {token.pos + 1} is not a literal (compare a "
                "partition column with a constant, not with another column)",
            )
        raise self.unexpected(token, "a literal ('text', a number, DATE '...', TRUE, FALSE or NULL)")

    def in_values(self) -> tuple[Literal, ...]:
        self.expect("punct", "(", "'(' after IN")
        if self.peek().kind == "column" and self.peek().text.upper() == "SELECT":
            raise _refuse(self.where, "subqueries are not allowed")
        values = [self.literal()]
        while self.accept("punct", ","):
            values.append(self.literal())
        self.expect("punct", ")", "')' closing the IN list")
        return tuple(values)


def _number(text: str) -> int | decimal.Decimal | float:
    if re.fullmatch(r"\d+", text):
        return int(text)
    if "e" in text.lower():
        return float(text)
    return decimal.Decimal(text)


def parse_where(where: str, partition_columns: Sequence[str]) -> Node:
    """Parse ``where`` into a predicate over ``partition_columns``; refuse anything else.

    Raises ``InvalidArgumentError`` naming the problem (function call, subquery,
    unknown or non-partition column, comment, semicolon, syntax) and the accepted form.
    """
    if not isinstance(where, str) or not where.strip():
        raise InvalidArgumentError("where must not be blank; leave it out to compact every partition")
    if len(where) > MAX_WHERE_CHARS:
        raise _refuse(where, f"it is longer than {MAX_WHERE_CHARS} characters")
    if not partition_columns:
        raise InvalidArgumentError(
            "where filters partition columns only and the table is not partitioned; leave it out"
        )
    return _Parser(where, partition_columns).parse()


def columns_of(node: Node) -> set[str]:
    """The partition columns a predicate uses."""
    if isinstance(node, BoolOp):
        return set().union(*(columns_of(n) for n in node.operands))
    if isinstance(node, Not):
        return columns_of(node.operand)
    return {node.column}


# --- typing and evaluation ----------------------------------------------------------------


def _type_family(type_name: str) -> str:
    """``"DECIMAL(10, 2) NOT NULL"`` -> ``decimal``; the Python kind a column's values have."""
    base = re.sub(r"\s+NOT\s+NULL$", "", str(type_name).strip().upper()).split("(", 1)[0].strip()
    families = {
        "TINYINT": "int", "SMALLINT": "int", "INT": "int", "INTEGER": "int", "BIGINT": "int",
        "FLOAT": "float", "DOUBLE": "float", "DECIMAL": "decimal",
        "CHAR": "string", "VARCHAR": "string", "STRING": "string",
        "BOOLEAN": "bool", "DATE": "date",
        "TIMESTAMP": "timestamp", "TIMESTAMP_LTZ": "timestamp",
        "TIMESTAMP WITH LOCAL TIME ZONE": "timestamp",
    }
    return families.get(base, "")


def _convert(where: str, column: str, type_name: str, literal: Literal) -> Any:
    """The literal as a value of the column's type (SQL's implicit cast), or a clear refusal."""
    family = _type_family(type_name)
    value, kind = literal.value, literal.kind
    if kind == "null":
        return None
    try:
        if family == "string":
            if kind != "string":
                raise ValueError(f"{column} has type {type_name}: quote the value ('{literal.sql()}')")
            return value
        if family in ("int", "float", "decimal"):
            if kind == "number" or (kind == "string" and value.strip()):
                number = decimal.Decimal(str(value).strip())
                if family == "int":
                    # 1.5 stays a Decimal: hr > 1.5 compares numerically, as in SQL
                    return int(number) if number == number.to_integral_value() else number
                return float(number) if family == "float" else number
        elif family == "bool":
            if kind == "bool":
                return value
            if kind == "string" and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
        elif family == "date":
            if kind in ("date", "string"):
                return dt.date.fromisoformat(value.strip())
        elif family == "timestamp":
            if kind in ("timestamp", "date", "string"):
                return dt.datetime.fromisoformat(value.strip())
        else:
            raise ValueError(f"{column} has type {type_name}, which where cannot compare")
    except (ValueError, decimal.InvalidOperation) as err:
        problem = str(err) if str(err).startswith(column) else f"{literal.sql()} is not a valid {type_name} for {column}"
        raise _refuse(where, problem) from None
    raise _refuse(where, f"{literal.sql()} is not a valid {type_name} for {column}")


def _bind(where: str, node: Node, types: Mapping[str, str]) -> Callable[[Mapping[str, Any]], Truth]:
    """A function partition -> True/False/None (unknown) for ``node``, literals converted once."""
    if isinstance(node, BoolOp):
        parts = [_bind(where, n, types) for n in node.operands]
        return _connective(parts, decisive=node.op == "OR")
    if isinstance(node, Not):
        inner = _bind(where, node.operand, types)
        return lambda p: None if (v := inner(p)) is None else not v
    column, type_name = node.column, types[node.column]
    get = _reader(where, column, type_name)
    if isinstance(node, IsNull):
        return lambda p: (get(p) is not None) if node.negated else (get(p) is None)
    if isinstance(node, Compare):
        compare, value = _COMPARISONS[node.op], _convert(where, column, type_name, node.literal)
        return lambda p: None if (v := get(p)) is None or value is None else compare(v, value)
    if isinstance(node, Between):
        low = _convert(where, column, type_name, node.low)
        high = _convert(where, column, type_name, node.high)
        inside = _connective([
            lambda p: None if (v := get(p)) is None or low is None else v >= low,
            lambda p: None if (v := get(p)) is None or high is None else v <= high,
        ], decisive=False)
        return (lambda p: None if (v := inside(p)) is None else not v) if node.negated else inside
    values = [_convert(where, column, type_name, lit) for lit in node.literals]
    known = [v for v in values if v is not None]
    has_null = len(known) < len(values)

    def in_list(p: Mapping[str, Any]) -> Truth:
        current = get(p)
        if current is None:
            return None
        if current in known:
            return not node.negated
        return None if has_null else node.negated

    return in_list


def _reader(where: str, column: str, type_name: str) -> Callable[[Mapping[str, Any]], Any]:
    """Read a partition's value of ``column`` as its type (a value kept as text is converted;
    one that does not convert, such as ``__DEFAULT_PARTITION__``, reads as NULL)."""
    family = _type_family(type_name)

    def read(p: Mapping[str, Any]) -> Any:
        value = p[column]
        if isinstance(value, str) and family != "string":
            try:
                return _convert(where, column, type_name, Literal("string", value))
            except InvalidArgumentError:
                return None
        return value

    return read


def _connective(
    parts: list[Callable[[Mapping[str, Any]], Truth]], decisive: bool
) -> Callable[[Mapping[str, Any]], Truth]:
    """AND (``decisive=False``) or OR (``decisive=True``) in SQL's three-valued logic.

    One operand equal to ``decisive`` decides; else any unknown operand makes the
    result unknown; else it is ``not decisive``.
    """

    def evaluate(p: Mapping[str, Any]) -> Truth:
        unknown = False
        for part in parts:
            value = part(p)
            if value is decisive:
                return decisive
            unknown = unknown or value is None
        return None if unknown else not decisive

    return evaluate


def check_where(where: str, partition_types: Mapping[str, str]) -> Node:
    """Parse ``where`` and convert its literals to the columns' types; raise if refused.

    :param partition_types: partition column -> its Paimon type (``"DATE"``, ``"INT"``...).
    """
    node = parse_where(where, list(partition_types))
    _bind(where, node, partition_types)
    return node


def where_filter(where: str, partition_types: Mapping[str, str]) -> Callable[[Mapping[str, Any]], bool]:
    """A partition filter (partition dict -> selected?) for ``where``; unknown counts as no."""
    evaluate = _bind(where, parse_where(where, list(partition_types)), partition_types)
    return lambda partition: evaluate(partition) is True


def table_partition_types(table: Any) -> dict[str, str]:
    """Partition column -> Paimon type name of a pypaimon table (in partition-key order)."""
    return {f.name: str(f.type) for f in table.partition_keys_fields}
