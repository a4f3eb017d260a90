"""``alter_table``: change a table's schema on main or on a branch, as ONE new schema.

The change list is parsed (``changes.py``) and checked against the branch's latest
schema (``rules.py``) as a whole before anything is written; only then is the new
schema computed, by pypaimon's ``SchemaManager`` (field ids, moves, option renames are
Paimon's rules), and committed as ``schema-(N+1)`` with a real create-if-absent, in the
branch's own schema folder (``branch/branch-NAME/schema/`` for a branch), as Paimon
Java's ``SchemaManager.commitChanges`` does. We do not call ``commit_changes`` itself:
it retries forever against a concurrent change (re-validating nothing of ours) and
its file write is pypaimon's exists-then-rename, not the warehouse's safe create.

A change list that changes nothing (an option set to its current value, a type
"changed" to itself) writes nothing and reports ``changed: False``, so a rerun of a
task whose schema change already landed is harmless where the changes allow it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pypaimon.common.json_util import JSON
from pypaimon.schema.schema_change import Move, SchemaChange
from pypaimon.schema.schema_manager import SchemaManager

from .. import fileops
from ..branch._common import require_branch
from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..names import MAIN_BRANCH, is_main, name_profile, validate_branch_name
from ..snapshots import TableLayout, latest_snapshot, table_branch
from .changes import Change, SchemaChangeError, parse_changes
from .rules import NULL_TO_NOT_NULL_OPTION, check_changes

log = logging.getLogger(__name__)


def check_alter(table: Any, changes: Any, *, branch: str | None = None) -> dict[str, Any]:
    """What ``alter_table`` would do, without writing: the same checks, the same result
    (``changed`` says whether it would write a schema; ``new_schema_id`` stays the old
    one). Raises as ``alter_table`` would. For preflights (``PaimonPreflightOperator``).
    """
    return _prepare(table, changes, branch)[0]


def alter_table(table: Any, changes: Any, *, branch: str | None = None) -> dict[str, Any]:
    """Apply ``changes`` (a list of change dicts) to ``table`` on ``branch`` (default: main,
    or the branch ``table`` was loaded on). All are validated first; nothing is written
    unless all pass. Returns the old and new schema id and the changes applied.
    """
    result, layout, branch, old, new, parsed = _prepare(table, changes, branch)
    branch_name = result["branch"]
    if not result["changed"]:
        log.info("schema of %s on %s already as requested (schema %s); nothing written",
                 result["table"], branch_name, old.id)
        return result
    path = layout.schema_path(branch, new.id)
    if not fileops.create_new(layout.file_io, path, JSON.to_json(new, indent=2)):
        raise ConcurrentModificationError(
            f"schema {new.id} of {result['table']} on {branch_name} was written by someone else "
            "while this change was prepared; nothing written, rerun to apply it on top"
        )
    result.update(new_schema_id=new.id)
    log.info("altered %s on %s: schema %s -> %s (%s)", result["table"], branch_name, old.id, new.id,
             "; ".join(c.describe() for c in parsed))
    return result


def _prepare(table: Any, changes: Any, branch: str | None) -> tuple[Any, ...]:
    """Parse and check ``changes``, compute the new schema; write nothing."""
    parsed = parse_changes(changes)
    layout = TableLayout.of(table)
    if branch is None:
        branch = table_branch(table)
    if branch is not None and not is_main(branch):
        validate_branch_name(branch, name_profile(table))
        require_branch(layout, branch)
    branch_name = MAIN_BRANCH if branch is None or is_main(branch) else branch
    manager = SchemaManager(layout.file_io, layout.table_path, branch_name)
    old = manager.latest()
    if old is None:
        raise InvalidArgumentError(f"table {layout.table_path} has no schema on {_where(branch)}")
    snapshot = latest_snapshot(layout, branch)
    row_count = _row_count(snapshot)
    model = check_changes(old, parsed, has_snapshots=snapshot is not None, row_count=row_count)
    new = _generate(manager, old, [c for i, c in enumerate(parsed) if i not in model.skipped])
    result = {
        "table": _table_name(table),
        "branch": branch_name,
        "old_schema_id": old.id,
        "new_schema_id": old.id,
        "changes": [c.as_dict() for c in parsed],
        "skipped": [c.as_dict() for i, c in enumerate(parsed) if i in model.skipped],
        "columns": [f.name for f in new.fields],
        "changed": not _same(old, new),
    }
    return result, layout, branch, old, new, parsed


def to_schema_changes(parsed: list[Change]) -> list[Any]:
    """pypaimon ``SchemaChange`` objects for already checked changes."""
    out = []
    for c in parsed:
        a = c.args
        if c.op == "add_column":
            move = None
            if a.get("first"):
                move = Move.first(a["name"])
            elif "after" in a:
                move = Move.after(a["name"], a["after"])
            elif "before" in a:
                move = Move.before(a["name"], a["before"])
            out.append(SchemaChange.add_column(a["name"], c.data_type, a.get("comment"), move))
        elif c.op == "drop_column":
            out.append(SchemaChange.drop_column(a["name"]))
        elif c.op == "rename_column":
            out.append(SchemaChange.rename_column(a["name"], a["new_name"]))
        elif c.op == "update_column_type":
            out.append(SchemaChange.update_column_type(a["name"], c.data_type, keep_nullability=True))
        elif c.op == "update_column_nullability":
            out.append(SchemaChange.update_column_nullability(a["name"], a["nullable"]))
        elif c.op == "update_comment":
            out.append(SchemaChange.update_comment(a["comment"]))
        elif c.op == "set_option":
            out.append(SchemaChange.set_option(a["key"], a["value"]))
        elif c.op == "remove_option":
            out.append(SchemaChange.remove_option(a["key"]))
        else:  # pragma: no cover - parse_changes knows every op
            raise SchemaChangeError(f"unsupported op {c.op!r}")
    return out


def _generate(manager: SchemaManager, old: Any, parsed: list[Change]) -> Any:
    """The next schema by pypaimon's rules. NOT NULL was already judged by ``rules.py``
    (refused when the branch holds rows), so pypaimon's blanket switch is turned off for
    this computation only and the option is not left in the new schema."""
    flag_was = old.options.get(NULL_TO_NOT_NULL_OPTION)
    base = old.copy(new_options={**old.options, NULL_TO_NOT_NULL_OPTION: "false"})
    try:
        new = manager._generate_table_schema(base, to_schema_changes(parsed))
    except Exception as err:  # noqa: BLE001 - pypaimon raises ValueError/RuntimeError/its own
        raise SchemaChangeError(f"schema change refused by Paimon's rules, nothing written: {err}") from None
    options = dict(new.options)
    if flag_was is None:
        options.pop(NULL_TO_NOT_NULL_OPTION, None)
    else:
        options[NULL_TO_NOT_NULL_OPTION] = flag_was
    new.options = options
    try:
        from pypaimon.schema.schema_manager import _validate_blob_fields, _validate_options

        _validate_options(new.options)
        _validate_blob_fields(new.fields, new.options, new.primary_keys, new.partition_keys)
    except ValueError as err:
        raise SchemaChangeError(f"schema change refused by Paimon's rules, nothing written: {err}") from None
    return new


def _same(old: Any, new: Any) -> bool:
    def doc(s: Any) -> dict[str, Any]:
        d = json.loads(JSON.to_json(s))
        return {k: v for k, v in d.items() if k not in ("id", "timeMillis")}

    return doc(old) == doc(new)


def _row_count(snapshot: dict[str, Any] | None) -> int | None:
    """Rows of the latest snapshot; ``None`` when the snapshot does not say (old format)."""
    if snapshot is None:
        return 0
    count = snapshot.get("totalRecordCount")
    return None if count is None else int(count)


def _table_name(table: Any) -> str:
    ident = getattr(table, "identifier", None)
    if ident is not None:
        return f"{ident.get_database_name()}.{ident.get_table_name()}"
    return str(getattr(table, "table_path", "?"))


def _where(branch: str | None) -> str:
    return "main" if is_main(branch) else f"branch {branch!r}"
