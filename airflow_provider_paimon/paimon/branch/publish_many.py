"""Publish several branches as one change: replace main of many tables under one journal.

A correction that spans a chain of tables (a source fixed on branch ``fix`` and every
table derived from it recomputed on its own ``fix`` branch) is only useful when *all*
of them reach main. Doing ``replace_main`` table by table leaves, after a crash, some
tables switched and the rest forgotten. Here one warehouse-level journal lists every
table, its branch and its backup, and each table goes through the same steps as
``replace_main`` (``replace_main.apply_plan``), so:

- killed at any step, a rerun with the same arguments (or :func:`resume_publish`)
  finishes every table; nothing is switched twice;
- each table reads its old or its new main throughout (never a mix), with the same
  single schema window as ``replace_main`` (docs/branches.md);
- tables switch one after another in the caller's order (a cascade plan's topological
  order), so between two switches a reader can see the earlier tables new and the later
  ones old — never the other way round;
- every table gets one backup branch of the same name, and :func:`undo_publish` puts
  every previous main back (also crash-safe, also rerunnable).

The journal is ``<warehouse>/_cascade/publish.json`` (or ``journal_path``), written
through the catalog's file IO (a conditional PUT on object storage), created only if
absent: one multi-table publish or undo at a time per journal. It holds each table's
replace-main plan, recorded *before* that table's own ``.branch-op.json`` is written,
so "is this table done" is answered the way replace-main answers it: the planned
snapshot exists with the planned uuid. Steps (fault points): ``publish.journal``, then
per table ``publish.plan``, the ``replace_main.*`` points, ``publish.table``; the
journal is removed last. Undo: ``undo_publish.journal``, then per table (in reverse
order) ``undo_publish.plan``, ``replace_main.*``, ``undo_publish.table``.

Everything that can be checked is checked before the journal is written (tables and
branches exist, no table twice, backup name free everywhere, no other operation
pending, every branch can replace its main), so bad input changes nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from .. import faults, fileops
from ..catalog import load_table, open_catalog
from ..errors import (
    AlreadyExistsError,
    BranchNotFoundError,
    ConcurrentModificationError,
    InvalidArgumentError,
    PaimonError,
)
from ..names import UNICODE_PROFILE, name_profile, parse_table_name, validate_branch_name
from ..snapshots import TableLayout, latest_snapshot_id
from ._common import require_branch
from .create import plan_branch_files, publish_branch
from .journal import describe, read_journal, remove_journal, write_journal
from .replace_main import (
    already_replaced,
    apply_plan,
    default_backup_name,
    journal_entry,
    make_plan,
    rollback,
    switched,
)

JOURNAL_DIR = "_cascade"
JOURNAL_FILE = "publish.json"
PUBLISH = "publish"
UNDO = "undo_publish"


# --------------------------------------------------------------------------- API


def publish_branches(
    catalog: Any,
    tables: Sequence[tuple[str, str]],
    *,
    backup_name: str | None = None,
    journal_path: str | None = None,
    catalog_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Replace main of every ``(db.table, branch)`` with its branch, in the given order.

    ``catalog`` is a catalog (``paimon.catalog.open_catalog``) or a warehouse path/URI
    (then ``catalog_options`` open it). ``backup_name`` names each table's backup
    branch (default ``backup_main_<UTC time>``, free on every table). A pending publish
    of the same tables is resumed (``backup_name`` may then be omitted); anything else
    pending is refused with the way to finish or undo it.
    """
    catalog = _open(catalog, catalog_options)
    pairs = _pairs(tables)
    if backup_name is not None:  # each table's own profile is checked when it is loaded
        validate_branch_name(backup_name, UNICODE_PROFILE)
    io, path = _journal(catalog, journal_path)
    doc = _read(io, path)
    if doc is not None:
        _require_same(doc, PUBLISH, [n for n, _ in pairs], pairs, backup_name, path)
        return _run_publish(catalog, io, path, doc, resumed=True)
    targets = [(name, branch, _checked_layout(catalog, name, branch, backup_name)) for name, branch in pairs]
    for name, branch, layout in targets:
        require_branch(layout, branch)
        _refuse_other_operation(name, layout)
    done = [already_replaced(layout, branch) for _, branch, layout in targets]
    if all(d is not None for d in done):
        return _unchanged_everywhere(targets, path)
    for (name, branch, layout), d in zip(targets, done, strict=True):
        if d is None:
            _check_plannable(name, layout, branch)
    bk = _choose_backup(targets, backup_name)
    doc = {
        "op": PUBLISH,
        "id": uuid.uuid4().hex,
        "backup": bk,
        "started": _now_iso(),
        "tables": [{"table": n, "branch": b, "plan": None, "unchanged": False} for n, b, _ in targets],
    }
    _create(io, path, doc)
    faults.check("publish.journal")
    return _run_publish(catalog, io, path, doc, resumed=False)


def undo_publish(
    catalog: Any,
    tables: Sequence[str | tuple[str, str]] | None = None,
    *,
    backup_name: str | None = None,
    journal_path: str | None = None,
    catalog_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Put back every table's main from before a publish, in reverse order.

    With a publish pending (killed, or stopped by an error), no arguments are needed:
    tables already switched are restored, the one in flight is finished or rolled
    back, the rest were never touched. After a finished publish give its tables (the
    same list, or just the names) and its ``backup_name`` (in the publish result).
    """
    catalog = _open(catalog, catalog_options)
    io, path = _journal(catalog, journal_path)
    names = None if tables is None else _names(tables)
    if backup_name is not None:  # names an existing backup: checked as a reference
        validate_branch_name(backup_name, UNICODE_PROFILE)
    doc = _read(io, path)
    if doc is not None:
        _require_same(doc, doc.get("op", "?"), names, None, backup_name, path)
        resumed = doc["op"] == UNDO
        if doc["op"] == PUBLISH:
            _refuse_empty_backups(doc)
            doc = dict(doc, op=UNDO, publish_id=doc["id"], id=uuid.uuid4().hex, undo_started=_now_iso())
            for entry in doc["tables"]:
                entry["undo_plan"] = None
            _write(io, path, doc)  # one atomic overwrite turns the pending publish into its undo
            faults.check("undo_publish.journal")
        return _run_undo(catalog, io, path, doc, resumed=resumed)
    if names is None or backup_name is None:
        raise InvalidArgumentError(
            f"no publish is pending in {path}; to undo a finished publish pass its tables and "
            "backup_name (the 'backup_name' of the publish result)"
        )
    targets = [(name, _layout(catalog, name)) for name in names]
    for name, layout in targets:
        _refuse_other_operation(name, layout)
        _check_backup(name, layout, backup_name)
    doc = {
        "op": UNDO,
        "id": uuid.uuid4().hex,
        "publish_id": None,
        "backup": backup_name,
        "started": _now_iso(),
        "tables": [{"table": n, "branch": None, "plan": None, "unchanged": False, "undo_plan": None} for n in names],
    }
    _create(io, path, doc)
    faults.check("undo_publish.journal")
    return _run_undo(catalog, io, path, doc, resumed=False)


def resume_publish(
    catalog: Any, *, journal_path: str | None = None, catalog_options: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """Finish whatever publish or undo is pending (``None`` when nothing is)."""
    catalog = _open(catalog, catalog_options)
    io, path = _journal(catalog, journal_path)
    doc = _read(io, path)
    if doc is None:
        return None
    if doc["op"] == PUBLISH:
        return _run_publish(catalog, io, path, doc, resumed=True)
    return _run_undo(catalog, io, path, doc, resumed=True)


def pending_publish(
    catalog: Any, *, journal_path: str | None = None, catalog_options: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """The pending multi-table publish/undo journal document, or ``None``."""
    catalog = _open(catalog, catalog_options)
    io, path = _journal(catalog, journal_path)
    return _read(io, path)


def journal_location(catalog: Any, journal_path: str | None = None) -> str:
    """Where the multi-table journal of ``catalog`` lives (``<warehouse>/_cascade/publish.json``)."""
    return _journal(catalog, journal_path)[1]


# ------------------------------------------------------------------ publish steps


def _run_publish(catalog: Any, io: Any, path: str, doc: dict[str, Any], *, resumed: bool) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for i, entry in enumerate(doc["tables"]):
        try:
            results.append(_publish_one(catalog, io, path, doc, i))
        except PaimonError as exc:
            switched_so_far = ", ".join(r["table"] for r in results) or "none"
            raise type(exc)(
                f"publish stopped at table {entry['table']} (branch {entry['branch']!r}): {exc}. "
                f"Tables already reading their branch: {switched_so_far}. The journal {path} is kept: "
                "fix the cause and rerun publish_branches with the same tables (or resume_publish) "
                "to finish, or undo_publish to restore every table"
            ) from exc
    fileops.delete_file(io, path)
    return {
        "publish_id": doc["id"],
        "backup_name": doc["backup"],
        "journal": path,
        "resumed": resumed,
        "unchanged": False,
        "tables": results,
    }


def _publish_one(catalog: Any, io: Any, path: str, doc: dict[str, Any], i: int) -> dict[str, Any]:
    """One table's replace-main, resumable from any point (see the module docstring)."""
    entry = doc["tables"][i]
    name, branch, bk = entry["table"], entry["branch"], doc["backup"]
    bkp = {"kind": "branch", "name": bk}
    table = load_table(catalog, name)
    layout = TableLayout.of(table)
    pending = read_journal(layout)
    resumed = pending is not None
    if pending is not None:
        if pending.get("publish") != doc["id"]:
            _refuse_other_operation(name, layout)
        plan = pending["plan"]
    elif entry["plan"] is not None and switched(layout, entry["plan"]):
        return _table_result(entry, bk, entry["plan"], resumed=True)
    elif entry["unchanged"] and layout.branch_exists(bk):
        return _unchanged_result(name, branch, bk, layout, resumed=True)
    else:
        require_branch(layout, branch)
        if layout.branch_exists(bk):
            raise AlreadyExistsError(
                f"backup branch {bk!r} appeared on table {name} while the publish was pending; "
                "delete or rename it"
            )
        if already_replaced(layout, branch) is not None:
            # main already reads as the branch: nothing to switch, but keep the backup so
            # that undo treats every table alike
            entry.update(plan=None, unchanged=True)
            _write(io, path, doc)
            faults.check("publish.plan")
            files = plan_branch_files(layout, tag=None, snapshot_id=latest_snapshot_id(layout, None), source=None)
            publish_branch(layout, bk, files)
            faults.check("publish.table")
            return _unchanged_result(name, branch, bk, layout, resumed=False)
        plan = make_plan(layout, branch, bkp)
        entry.update(plan=plan, unchanged=False)
        _write(io, path, doc)  # recorded before the table's own journal: "done" = switched(plan)
        faults.check("publish.plan")
        write_journal(layout, journal_entry(branch, bkp, plan, publish=doc["id"]))
        faults.check("replace_main.journal")
    apply_plan(table, layout, branch, plan)
    remove_journal(layout)
    faults.check("publish.table")
    return _table_result(entry, bk, plan, resumed=resumed)


# --------------------------------------------------------------------- undo steps


def _run_undo(catalog: Any, io: Any, path: str, doc: dict[str, Any], *, resumed: bool) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for i in reversed(range(len(doc["tables"]))):
        entry = doc["tables"][i]
        try:
            results.append(_undo_one(catalog, io, path, doc, i))
        except PaimonError as exc:
            raise type(exc)(
                f"undo stopped at table {entry['table']}: {exc}. The journal {path} is kept: fix the "
                "cause and rerun undo_publish (or resume_publish) to finish"
            ) from exc
    fileops.delete_file(io, path)
    return {
        "undo_id": doc["id"],
        "publish_id": doc.get("publish_id"),
        "backup_name": doc["backup"],
        "journal": path,
        "resumed": resumed,
        "tables": results[::-1],
    }


def _undo_one(catalog: Any, io: Any, path: str, doc: dict[str, Any], i: int) -> dict[str, Any]:
    entry = doc["tables"][i]
    name, bk = entry["table"], doc["backup"]
    table = load_table(catalog, name)
    layout = TableLayout.of(table)
    pending = read_journal(layout)
    if pending is not None:
        owner = pending.get("publish")
        if owner == doc["id"]:  # this undo's own step was in flight
            apply_plan(table, layout, bk, pending["plan"])
            remove_journal(layout)
            faults.check("undo_publish.table")
            return _undo_result(name, bk, restored=True, plan=pending["plan"])
        if doc.get("publish_id") is None or owner != doc["publish_id"]:
            _refuse_other_operation(name, layout)
        p_plan = pending["plan"]
        if not switched(layout, p_plan):
            # the publish never switched this table: drop its preparation (and backup)
            rollback(layout, p_plan)
            faults.check("undo_publish.table")
            return _undo_result(name, bk, restored=False, plan=None)
        apply_plan(table, layout, entry["branch"], p_plan)  # switched: finish it, then restore below
        remove_journal(layout)
    elif entry.get("undo_plan") is not None and switched(layout, entry["undo_plan"]):
        return _undo_result(name, bk, restored=True, plan=entry["undo_plan"])
    if doc.get("publish_id") is not None and not (entry["plan"] is not None and switched(layout, entry["plan"])):
        # undo of an unfinished publish: this table was never switched (or already read as
        # its branch), its main is the one from before the publish
        return _undo_result(name, bk, restored=False, plan=None)
    _check_backup(name, layout, bk)
    if already_replaced(layout, bk) is not None:
        return _undo_result(name, bk, restored=True, plan=None)
    plan = make_plan(layout, bk, None)
    entry["undo_plan"] = plan
    _write(io, path, doc)
    faults.check("undo_publish.plan")
    write_journal(layout, journal_entry(bk, None, plan, publish=doc["id"]))
    faults.check("replace_main.journal")
    apply_plan(table, layout, bk, plan)
    remove_journal(layout)
    faults.check("undo_publish.table")
    return _undo_result(name, bk, restored=True, plan=plan)


# -------------------------------------------------------------------- validation


def _open(catalog: Any, options: dict[str, str] | None) -> Any:
    if isinstance(catalog, str):
        return open_catalog(catalog, options)
    if options:
        raise InvalidArgumentError("catalog_options are only used with a warehouse path; the catalog is already open")
    return catalog


def _journal(catalog: Any, journal_path: str | None) -> tuple[Any, str]:
    io = getattr(catalog, "file_io", None)
    warehouse = getattr(catalog, "warehouse", None)
    if io is None or (journal_path is None and not warehouse):
        raise InvalidArgumentError(
            "publishing several tables needs a file-system or JDBC catalog (its file IO holds the "
            "journal); a REST catalog manages branches itself"
        )
    if journal_path is not None:
        if not str(journal_path).strip():
            raise InvalidArgumentError("journal_path is blank; omit it to use <warehouse>/_cascade/publish.json")
        return io, str(journal_path)
    return io, f"{str(warehouse).rstrip('/')}/{JOURNAL_DIR}/{JOURNAL_FILE}"


def _pairs(tables: Any) -> list[tuple[str, str]]:
    if isinstance(tables, (str, bytes)) or not isinstance(tables, Sequence) or not tables:
        raise InvalidArgumentError(
            "tables must be a non-empty list of (database.table, branch) pairs, "
            "e.g. [('ods.orders', 'fix'), ('dws.sales', 'fix')]"
        )
    out: list[tuple[str, str]] = []
    for item in tables:
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise InvalidArgumentError(f"{item!r} is not a (database.table, branch) pair")
        name, branch = item
        validate_branch_name(branch, UNICODE_PROFILE)  # each table's own profile: _checked_layout
        out.append((_canonical(name), branch))
    _refuse_duplicates([n for n, _ in out])
    return out


def _names(tables: Any) -> list[str]:
    if isinstance(tables, (str, bytes)) or not isinstance(tables, Sequence) or not tables:
        raise InvalidArgumentError("tables must be a non-empty list of database.table names (or publish pairs)")
    names = [_canonical(t if isinstance(t, str) else t[0]) for t in tables]
    _refuse_duplicates(names)
    return names


def _canonical(name: Any) -> str:
    database, table = parse_table_name(name)
    return f"{database}.{table}"


def _refuse_duplicates(names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidArgumentError(f"table {name} is listed twice; list each table once")
        seen.add(name)


def _layout(catalog: Any, name: str) -> TableLayout:
    return TableLayout.of(load_table(catalog, name))


def _checked_layout(catalog: Any, name: str, branch: str, backup_name: str | None) -> TableLayout:
    """The table's layout, once its branch (and backup) name pass the table's name profile."""
    table = load_table(catalog, name)
    profile = name_profile(table)
    validate_branch_name(branch, profile)
    if backup_name is not None:
        validate_branch_name(backup_name, profile)
    return TableLayout.of(table)


def _refuse_other_operation(name: str, layout: TableLayout) -> None:
    pending = read_journal(layout)
    if pending is not None:
        raise ConcurrentModificationError(
            f"table {name} has another pending branch operation: {describe(pending)}; "
            "rerun that operation to finish it first"
        )


def _check_plannable(name: str, layout: TableLayout, branch: str) -> None:
    """Run replace-main's planning (reads only) so its refusals come before any write."""
    try:
        make_plan(layout, branch, None)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"table {name}: {exc}; nothing was published") from exc


def _check_backup(name: str, layout: TableLayout, bk: str) -> None:
    if not layout.branch_exists(bk):
        raise BranchNotFoundError(
            f"backup branch {bk!r} does not exist on table {name}; pass the backup_name the publish "
            "reported (every table of one publish has the same backup name)"
        )
    if latest_snapshot_id(layout, bk) is None:
        raise InvalidArgumentError(
            f"backup branch {bk!r} of table {name} is empty (main had no snapshot before the "
            "publish); replace-main cannot restore an empty main, truncate the table instead"
        )


def _refuse_empty_backups(doc: dict[str, Any]) -> None:
    """Undo restores from backups; a table whose main was empty before has nothing to restore."""
    for entry in doc["tables"]:
        plan = entry.get("plan")
        if plan is not None and plan.get("Lm") is None:
            raise InvalidArgumentError(
                f"table {entry['table']} had no snapshot on main before the publish, so its backup is "
                "empty and replace-main cannot restore it; finish the publish with resume_publish and "
                "truncate that table instead"
            )


def _choose_backup(targets: list[tuple[str, str, TableLayout]], given: str | None) -> str:
    if given is not None:
        for name, _, layout in targets:
            if layout.branch_exists(given):
                raise AlreadyExistsError(
                    f"backup branch {given!r} already exists on table {name}; choose another backup_name"
                )
        return given
    base = name = default_backup_name()
    n = 1
    while any(layout.branch_exists(name) for _, _, layout in targets):
        n += 1
        name = f"{base}_{n}"
    return name


def _require_same(
    doc: dict[str, Any],
    op: str,
    names: list[str] | None,
    pairs: list[tuple[str, str]] | None,
    backup_name: str | None,
    path: str,
) -> None:
    """A pending journal may only be resumed by a call naming the same tables."""
    pending_pairs = [(e["table"], e.get("branch")) for e in doc.get("tables", [])]
    same = doc.get("op") == op
    if same and names is not None:
        same = names == [t for t, _ in pending_pairs]
    if same and pairs is not None:
        same = pairs == pending_pairs
    if same and backup_name is not None:
        same = backup_name == doc.get("backup")
    if not same:
        raise ConcurrentModificationError(
            f"another multi-table operation is pending in {path}: {describe_publish(doc)}. "
            + _how_to_finish(doc)
        )


def describe_publish(doc: dict[str, Any]) -> str:
    """One line naming a pending publish/undo: what, which tables, which backup, since when."""
    what = "publish" if doc.get("op") == PUBLISH else "undo of a publish"
    tables = ", ".join(
        f"{e['table']} <- {e['branch']}" if doc.get("op") == PUBLISH else e["table"] for e in doc.get("tables", [])
    )
    return f"{what} {doc.get('id', '?')} of [{tables}] (backup branch {doc.get('backup')!r}, started {doc.get('started')})"


def _how_to_finish(doc: dict[str, Any]) -> str:
    if doc.get("op") == PUBLISH:
        pairs = [(e["table"], e["branch"]) for e in doc.get("tables", [])]
        return (
            f"Finish it with publish_branches(catalog, {pairs!r}) or resume_publish(catalog), "
            "or restore every table with undo_publish(catalog); then run this one"
        )
    return "Finish it with undo_publish(catalog) or resume_publish(catalog); then run this one"


# ----------------------------------------------------------------------- helpers


def _read(io: Any, path: str) -> dict[str, Any] | None:
    text = fileops.read_text(io, path)
    return json.loads(text) if text else None


def _write(io: Any, path: str, doc: dict[str, Any]) -> None:
    fileops.write_atomic(io, path, json.dumps(doc, indent=2, sort_keys=True))


def _create(io: Any, path: str, doc: dict[str, Any]) -> None:
    if not fileops.create_new(io, path, json.dumps(doc, indent=2, sort_keys=True)):
        other = _read(io, path) or {}
        raise ConcurrentModificationError(
            f"another multi-table operation started in {path} meanwhile: {describe_publish(other)}. "
            + _how_to_finish(other)
        )


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _table_result(entry: dict[str, Any], bk: str, plan: dict[str, Any], *, resumed: bool) -> dict[str, Any]:
    return {
        "table": entry["table"],
        "branch": entry["branch"],
        "backup": bk,
        "main_snapshot_id": plan["N"],
        "previous_main_snapshot_id": plan["Lm"],
        "branch_snapshot_id": plan["Lb"],
        "schema_id": plan["target_schema"],
        "unchanged": False,
        "resumed": resumed,
    }


def _unchanged_result(name: str, branch: str, bk: str | None, layout: TableLayout, *, resumed: bool) -> dict[str, Any]:
    latest = latest_snapshot_id(layout, None)
    return {
        "table": name,
        "branch": branch,
        "backup": bk,
        "main_snapshot_id": latest,
        "previous_main_snapshot_id": latest,
        "branch_snapshot_id": latest_snapshot_id(layout, branch),
        "schema_id": None,
        "unchanged": True,
        "resumed": resumed,
    }


def _unchanged_everywhere(targets: list[tuple[str, str, TableLayout]], path: str) -> dict[str, Any]:
    """Every main already reads as its branch (a retried publish that had finished)."""
    return {
        "publish_id": None,
        "backup_name": None,
        "journal": path,
        "resumed": False,
        "unchanged": True,
        "tables": [_unchanged_result(n, b, None, layout, resumed=False) for n, b, layout in targets],
    }


def _undo_result(name: str, bk: str, *, restored: bool, plan: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "table": name,
        "backup": bk,
        "restored": restored,
        "main_snapshot_id": None if plan is None else plan["N"],
    }
