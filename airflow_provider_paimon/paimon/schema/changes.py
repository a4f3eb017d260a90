"""Schema changes as the plain dicts a DAG writes, parsed and checked for shape.

A change is a small dict so Airflow can template it and XCom can carry it::

    {"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "after": "price"}

Parsing needs no table: it checks the op, the keys each op takes and the type
strings, so an operator can refuse a malformed list when the DAG is parsed. Whether a
change fits the table (column exists, type only widens, ...) is ``rules.py``'s job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypaimon.schema.data_types import DataType, DataTypeParser

from ..errors import InvalidArgumentError

#: op -> (required keys, optional keys); "op" itself is implied
OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add_column": (("name", "type"), ("comment", "after", "before", "first", "if_not_exists")),
    "drop_column": (("name",), ("if_exists",)),
    "rename_column": (("name", "new_name"), ()),
    "update_column_type": (("name", "type"), ()),
    "update_column_nullability": (("name", "nullable"), ()),
    "update_comment": (("comment",), ()),
    "set_option": (("key", "value"), ()),
    "remove_option": (("key",), ()),
}


class SchemaChangeError(InvalidArgumentError):
    """A schema change that is malformed or does not fit the table; nothing was written."""


@dataclass(frozen=True)
class Change:
    """One parsed change: ``op`` plus its arguments, type strings already parsed."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)
    data_type: DataType | None = None

    def as_dict(self) -> dict[str, Any]:
        """The change as the dict it came from (normalised), for results and logs."""
        return {"op": self.op, **self.args}

    def describe(self) -> str:
        a = self.args
        if self.op == "add_column":
            return f"add_column {a['name']!r} {a['type']}"
        if self.op == "rename_column":
            return f"rename_column {a['name']!r} -> {a['new_name']!r}"
        if self.op == "update_column_type":
            return f"update_column_type {a['name']!r} -> {a['type']}"
        if self.op == "update_column_nullability":
            return f"update_column_nullability {a['name']!r} nullable={a['nullable']}"
        if self.op in ("set_option", "remove_option"):
            return f"{self.op} {a['key']!r}"
        if self.op == "drop_column":
            return f"drop_column {a['name']!r}"
        return self.op


def parse_type(text: Any, where: str) -> DataType:
    """A Paimon SQL type string (``BIGINT``, ``DECIMAL(10,2)``, ``STRING NOT NULL``)."""
    if not isinstance(text, str) or not text.strip():
        raise SchemaChangeError(f"{where}: 'type' must be a Paimon type string such as 'BIGINT' or 'DECIMAL(10,2)'")
    if any(ch in text for ch in "<>"):
        raise SchemaChangeError(
            f"{where}: type {text!r} is not supported here; only atomic types (INT, BIGINT, "
            "DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), DATE, TIMESTAMP(p), BOOLEAN, BYTES, ...)"
        )
    try:
        parsed = DataTypeParser.parse_atomic_type_sql_string(text.strip())
    except Exception:  # noqa: BLE001 - pypaimon raises a bare Exception for unknown types
        raise SchemaChangeError(
            f"{where}: unknown type {text!r}; use a Paimon type such as 'BIGINT', 'DOUBLE', "
            "'DECIMAL(10,2)', 'STRING', 'DATE' or 'TIMESTAMP(6)'"
        ) from None
    return parsed


def _text(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SchemaChangeError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    if value != value.strip():
        raise SchemaChangeError(f"{where}: {key!r} {value!r} has leading or trailing spaces; remove them")
    return value


def _bool(value: Any, key: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SchemaChangeError(f"{where}: {key!r} must be true or false, got {value!r}")


def parse_change(raw: Any, index: int = 0) -> Change:
    """Parse one change dict; raises ``SchemaChangeError`` naming the change and the fix."""
    where = f"change #{index + 1}"
    if not isinstance(raw, Mapping):
        raise SchemaChangeError(f"{where}: a change is a dict like {{'op': 'add_column', ...}}, got {raw!r}")
    op = raw.get("op")
    if op not in OPS:
        known = ", ".join(OPS)
        raise SchemaChangeError(f"{where}: unknown op {op!r}; use one of: {known}")
    where = f"change #{index + 1} ({op})"
    required, optional = OPS[op]
    keys = set(raw) - {"op"}
    missing = [k for k in required if k not in raw]
    if missing:
        raise SchemaChangeError(f"{where}: missing {', '.join(map(repr, missing))}")
    extra = sorted(keys - set(required) - set(optional))
    if extra:
        allowed = ", ".join(required + optional)
        raise SchemaChangeError(f"{where}: unknown key(s) {', '.join(map(repr, extra))}; {op} takes {allowed}")
    args: dict[str, Any] = {}
    data_type = None
    for key in ("name", "new_name", "after", "before", "key"):
        if key in raw:
            args[key] = _text(raw[key], key, where)
    if "type" in raw:
        data_type = parse_type(raw["type"], where)
        args["type"] = raw["type"].strip()
    if "nullable" in raw:
        args["nullable"] = _bool(raw["nullable"], "nullable", where)
    for flag in ("first", "if_not_exists", "if_exists"):
        if flag in raw:
            args[flag] = _bool(raw[flag], flag, where)
    if "comment" in raw:
        comment = raw["comment"]
        if comment is not None and not isinstance(comment, str):
            raise SchemaChangeError(f"{where}: 'comment' must be a string or null, got {comment!r}")
        args["comment"] = comment
    if "value" in raw:
        value = raw["value"]
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, (str, int, float)) or value is None:
            raise SchemaChangeError(f"{where}: 'value' must be a string or number, got {value!r}")
        args["value"] = str(value)
    if op == "add_column":
        placed = [k for k in ("after", "before") if k in args] + (["first"] if args.get("first") else [])
        if len(placed) > 1:
            raise SchemaChangeError(f"{where}: give at most one of 'after', 'before', 'first'")
    if op == "rename_column" and args["name"] == args["new_name"]:
        raise SchemaChangeError(f"{where}: new_name is the same as name ({args['name']!r})")
    return Change(op, args, data_type)


def parse_changes(raw: Any) -> list[Change]:
    """Parse a list of change dicts (all of them, so every mistake is seen at once)."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise SchemaChangeError(
            "changes must be a list of dicts like [{'op': 'add_column', 'name': 'x', 'type': 'INT'}], "
            f"got {type(raw).__name__}"
        )
    if not raw:
        raise SchemaChangeError("no changes given: pass at least one change")
    problems, out = [], []
    for i, item in enumerate(raw):
        try:
            out.append(parse_change(item, i))
        except SchemaChangeError as err:
            problems.append(str(err))
    if problems:
        raise SchemaChangeError("; ".join(problems))
    return out
