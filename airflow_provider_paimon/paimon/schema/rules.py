"""Whether a list of changes fits a table's latest schema: every rule, all changes.

The changes are replayed on a small model of the schema (columns in order, their
types and nullability, keys, options) so a later change sees the earlier ones (rename
then drop the new name, add then place after it). Every problem is collected, so one
run names them all; ``check_changes`` raises one ``SchemaChangeError`` listing them.

Refused, and why:

* dropping or renaming a partition key or primary key (files and buckets are laid out
  by them); dropping a ``bucket-key`` or ``sequence.field`` column;
* changing the type of a key column, or to a type that does not widen
  (``widening.py``): old files would be read through a lossy cast;
* a column that already exists (also when only the case differs: Spark resolves
  names case-insensitively) or does not exist; ``add_column`` with
  ``if_not_exists: true`` skips a column that exists with the same type, and
  ``drop_column`` with ``if_exists: true`` a missing one (so a retried task passes);
* adding a NOT NULL column (existing rows have no value for it);
* making a nullable column NOT NULL while the branch holds rows (Paimon cannot prove
  none of them is null), or a primary key column nullable;
* options fixed at creation (``bucket``, ``primary-key``, ``partition``, ``type``),
  and Paimon's other immutable options once the branch has snapshots;
* setting a key that is not a Paimon table option (``paimon/table_options.py``: a
  typo, or a catalog/connection setting, would be stored for every reader to see), or
  an option that looks like a credential (named by its key, never its value).
  Removing any option is allowed: it is how a credential stored before is taken out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pypaimon.common.options.core_options import CoreOptions
from pypaimon.schema.data_types import AtomicType

from ..table_options import not_table_message, not_table_options, secret_looking, secret_message
from .changes import Change, SchemaChangeError
from .widening import is_widening

#: options a table is created with and keeps: changing them re-lays out every file
FIXED_OPTIONS = {
    "bucket": "the number of buckets decides which file holds each row",
    "primary-key": "files are sorted and merged by the primary key",
    "partition": "files are laid out in one folder per partition",
    "type": "the table type decides how files are read",
}
IMMUTABLE_OPTIONS = frozenset(CoreOptions.IMMUTABLE_OPTIONS)
NULL_TO_NOT_NULL_OPTION = "alter-column-null-to-not-null.disabled"


@dataclass
class SchemaModel:
    """The parts of a schema the rules look at, updated as changes are replayed."""

    columns: list[str]
    types: dict[str, Any]  # name -> pypaimon DataType
    partition_keys: list[str]
    primary_keys: list[str]
    options: dict[str, str]
    has_snapshots: bool
    row_count: int | None  # None: the latest snapshot does not say
    problems: list[str] = field(default_factory=list)
    #: indices of changes with ``if_not_exists`` / ``if_exists`` that have nothing to do
    skipped: set[int] = field(default_factory=set)
    current: int = 0

    @classmethod
    def of(cls, schema: Any, *, has_snapshots: bool, row_count: int | None) -> SchemaModel:
        return cls(
            columns=[f.name for f in schema.fields],
            types={f.name: f.type for f in schema.fields},
            partition_keys=list(schema.partition_keys or []),
            primary_keys=list(schema.primary_keys or []),
            options=dict(schema.options or {}),
            has_snapshots=has_snapshots,
            row_count=row_count,
        )

    def _list_option(self, key: str) -> list[str]:
        return [c.strip() for c in str(self.options.get(key, "")).split(",") if c.strip()]

    def known(self) -> str:
        return ", ".join(self.columns) or "none"

    def require(self, name: str, where: str) -> bool:
        if name in self.columns:
            return True
        close = [c for c in self.columns if c.lower() == name.lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        self.problems.append(f"{where}: column {name!r} does not exist{hint}; columns: {self.known()}")
        return False

    def require_new(self, name: str, where: str) -> bool:
        if name in self.columns:
            self.problems.append(f"{where}: column {name!r} already exists; pick another name or drop it first")
            return False
        same = [c for c in self.columns if c.lower() == name.lower()]
        if same:
            self.problems.append(
                f"{where}: column {name!r} differs from existing column {same[0]!r} only by case; "
                "Spark resolves column names case-insensitively, pick another name"
            )
            return False
        return True

    def key_role(self, name: str) -> str | None:
        if name in self.partition_keys:
            return "a partition key"
        if name in self.primary_keys:
            return "a primary key column"
        return None


def _add(m: SchemaModel, c: Change, where: str) -> None:
    name = c.args["name"]
    if c.args.get("if_not_exists") and name in m.columns:
        have = m.types[name]
        if getattr(have, "type", None) != getattr(c.data_type, "type", None):
            m.problems.append(
                f"{where}: column {name!r} exists with type {have}, not {c.args['type']}; "
                "if_not_exists only skips a column that is already as requested"
            )
        m.skipped.add(m.current)
        return
    ok = m.require_new(name, where)
    if c.data_type is not None and not c.data_type.nullable:
        m.problems.append(
            f"{where}: a new column cannot be NOT NULL (existing rows have no value for {name!r}); "
            "add it nullable, fill it, then use update_column_nullability"
        )
        ok = False
    for ref_key in ("after", "before"):
        ref = c.args.get(ref_key)
        if ref is not None and not m.require(ref, f"{where} '{ref_key}'"):
            ok = False
    if not ok:
        return
    pos = len(m.columns)
    if c.args.get("first"):
        pos = 0
    elif "after" in c.args:
        pos = m.columns.index(c.args["after"]) + 1
    elif "before" in c.args:
        pos = m.columns.index(c.args["before"])
    m.columns.insert(pos, name)
    m.types[name] = c.data_type


def _drop(m: SchemaModel, c: Change, where: str) -> None:
    name = c.args["name"]
    if c.args.get("if_exists") and name not in m.columns:
        m.skipped.add(m.current)
        return
    if not m.require(name, where):
        return
    role = m.key_role(name)
    if role:
        m.problems.append(
            f"{where}: cannot drop {name!r}, it is {role}; keys are fixed when the table is created "
            "(create a new table with the new keys and copy the data)"
        )
        return
    for key in ("bucket-key", "sequence.field"):
        if name in m._list_option(key):
            m.problems.append(f"{where}: cannot drop {name!r}, option {key!r} uses it; change that option first")
            return
    if len(m.columns) == 1:
        m.problems.append(f"{where}: cannot drop {name!r}, the last column of the table")
        return
    m.columns.remove(name)
    m.types.pop(name, None)


def _rename(m: SchemaModel, c: Change, where: str) -> None:
    name, new = c.args["name"], c.args["new_name"]
    if not m.require(name, where):
        return
    role = m.key_role(name)
    if role:
        m.problems.append(
            f"{where}: cannot rename {name!r}, it is {role}; keys are fixed when the table is created"
        )
        return
    if not m.require_new(new, where):
        return
    m.columns[m.columns.index(name)] = new
    m.types[new] = m.types.pop(name)


def _retype(m: SchemaModel, c: Change, where: str) -> None:
    name = c.args["name"]
    if not m.require(name, where):
        return
    role = m.key_role(name)
    if role:
        m.problems.append(f"{where}: cannot change the type of {name!r}, it is {role}")
        return
    old = m.types[name]
    new = c.data_type
    if not isinstance(old, AtomicType):
        m.problems.append(f"{where}: column {name!r} has type {old}; only atomic column types can be changed")
        return
    if new is None:  # parse_change requires "type" for update_column_type
        m.problems.append(f"{where}: no new type given for {name!r}")
        return
    if not new.nullable:
        m.problems.append(
            f"{where}: give the type without NOT NULL ({c.args['type']!r}); "
            "nullability is changed with update_column_nullability"
        )
        return
    if not is_widening(old.type, new.type):
        m.problems.append(
            f"{where}: {old.type} -> {new.type} for {name!r} is a narrowing or incompatible change "
            "(old files would be read through a lossy cast); only widening changes are allowed "
            "(INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(10,2) -> DECIMAL(12,2), VARCHAR(n) -> STRING, ...); "
            "to change it otherwise add a new column of the new type and fill it"
        )
        return
    m.types[name] = AtomicType(new.type, old.nullable)


def _nullability(m: SchemaModel, c: Change, where: str) -> None:
    name = c.args["name"]
    if not m.require(name, where):
        return
    nullable = c.args["nullable"]
    current = m.types[name].nullable
    if nullable and name in m.primary_keys:
        m.problems.append(f"{where}: primary key column {name!r} must stay NOT NULL")
        return
    if not nullable and current and (m.row_count is None or m.row_count > 0):
        held = "rows" if m.row_count is None else f"{m.row_count} row(s)"
        m.problems.append(
            f"{where}: cannot make {name!r} NOT NULL, the branch holds {held} that "
            "may hold nulls in it (Paimon cannot check old files); keep it nullable, or declare "
            "it NOT NULL before any data is written"
        )
        return
    t = m.types[name]
    if isinstance(t, AtomicType):
        m.types[name] = AtomicType(t.type, nullable)


def _option(m: SchemaModel, c: Change, where: str) -> None:
    key = c.args["key"]
    if c.op == "set_option" and not_table_options([key]):
        m.problems.append(f"{where}: {not_table_message([key])}")
        return
    if c.op == "set_option" and secret_looking({key: c.args["value"]}):
        m.problems.append(f"{where}: {secret_message([key])}")
        return
    if c.op == "set_option" and m.options.get(key) == c.args["value"]:
        return  # no change
    if c.op == "remove_option" and key not in m.options:
        return
    if key in FIXED_OPTIONS:
        m.problems.append(
            f"{where}: option {key!r} cannot change after the table is created ({FIXED_OPTIONS[key]}); "
            "create a new table with the new setting and copy the data into it"
        )
        return
    if key in IMMUTABLE_OPTIONS and m.has_snapshots:
        m.problems.append(
            f"{where}: option {key!r} cannot change once the table has data (Paimon treats it as "
            "immutable); set it when the table is created"
        )
        return
    if key == NULL_TO_NOT_NULL_OPTION:
        m.problems.append(f"{where}: option {key!r} is managed by alter_table's own NOT NULL rule")
        return
    if c.op == "set_option":
        m.options[key] = c.args["value"]
    else:
        m.options.pop(key, None)


_RULES = {
    "add_column": _add,
    "drop_column": _drop,
    "rename_column": _rename,
    "update_column_type": _retype,
    "update_column_nullability": _nullability,
    "set_option": _option,
    "remove_option": _option,
    "update_comment": lambda m, c, where: None,
}


def check_changes(
    schema: Any, changes: list[Change], *, has_snapshots: bool, row_count: int | None
) -> SchemaModel:
    """Replay ``changes`` on ``schema``; raise one ``SchemaChangeError`` naming every problem."""
    model = SchemaModel.of(schema, has_snapshots=has_snapshots, row_count=row_count)
    for i, change in enumerate(changes):
        model.current = i
        _RULES[change.op](model, change, f"change #{i + 1} ({change.describe()})")
    if model.problems:
        raise SchemaChangeError("schema change refused, nothing written: " + "; ".join(model.problems))
    return model
