"""Replace main with a branch (the Paimon branch proposal's replace-main-branch), crash-safe.

Afterwards main reads exactly as the branch did (rows and schema), and main's history
is kept: the replacement is ONE new snapshot ``N = Lm + 1`` on main whose manifests are
the branch's latest state, so snapshot ids on main keep growing, time travel to old
main still works, the next write to main gets ``N + 1``, and the switch is a single
create-if-absent of ``snapshot-N``, which also loses cleanly against a concurrent
commit. The previous main is kept as a backup branch (default) or tag, named in the
result, so ``replace_main(table, backup_name)`` undoes it.

The new snapshot is an ``OVERWRITE`` commit: its base manifest list is the branch's
full file list and its delta list is empty, so streaming readers of main do not
re-read the branch's last commit as new data. It keeps the branch snapshot's
``commitUser``/``commitIdentifier`` so a streaming job moved from the branch to main
resumes exactly once.

Schema: the branch's data files name branch schema ids, so main must hold identical
schemas under those ids. Schemas the branch added are copied to main; if main's own
latest schema is then not the branch's latest, the branch's latest is added as a new
schema id. If main and branch changed the schema independently (same id, different
content), replace-main is refused (fast-forward rewrites main's history instead).

Steps (each a fault point ``replace_main.<step>``; all driven by the journal's plan,
all idempotent): ``journal`` -> ``backup`` -> ``manifests`` -> ``check`` ->
``schemas`` -> ``switch`` -> ``hint`` -> journal removed. Only ``schemas`` and
``switch`` are visible to readers, and ``schemas`` only when the schema changes (see
docs/branches.md for that window).
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone
from typing import Any

from .. import faults, fileops
from ..commit_properties import RUN_KEYS, airflow_properties
from ..errors import AlreadyExistsError, ConcurrentModificationError, InvalidArgumentError
from ..names import name_profile, refuse_lookalike, validate_branch_name, validate_tag_name
from ..snapshots import (
    TableLayout,
    branch_names,
    latest_snapshot_id,
    read_schema,
    read_snapshot,
    read_tag,
    require_snapshot,
    schema_ids,
    snapshot_ids,
    tag_names,
    to_json,
)
from ._common import require_branch
from .create import plan_branch_files, publish_branch
from .journal import remove_journal, resumable_plan, write_journal

OP = "replace_main"
BACKUP_KINDS = ("branch", "tag")
_SCHEMA_VOLATILE = ("id", "timeMillis")


def default_backup_name() -> str:
    return "backup_main_" + datetime.now(timezone.utc).strftime("%Y%m%d_%H%M%S")


def replace_main(
    table: Any,
    branch: str,
    *,
    backup: bool = True,
    backup_name: str | None = None,
    backup_kind: str = "branch",
    snapshot_properties: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Make main of ``table`` read as ``branch``; rerun after a crash to finish.

    ``snapshot_properties`` (the Airflow run and Spark app, ``paimon.commit_properties``)
    go on the new main snapshot in place of the branch snapshot's: they name the run
    that replaced main (the branch's own snapshot keeps naming the run that wrote it);
    default: the Airflow run in this process's environment. Kept in the journal, so a resumed run writes those of the run that started.
    """
    layout = TableLayout.of(table)
    profile = name_profile(table)
    validate_branch_name(branch, profile)
    plan = resumable_plan(layout, OP, branch)
    resumed = plan is not None
    if plan is None:
        require_branch(layout, branch)
        done = already_replaced(layout, branch)
        if done is not None:
            return done
        bkp = _validate_backup(layout, backup, backup_name, backup_kind, profile)
        plan = make_plan(layout, branch, bkp)
        if snapshot_properties is not None:
            plan["run_properties"] = dict(snapshot_properties)
        write_journal(layout, journal_entry(branch, bkp, plan))
        faults.check("replace_main.journal")
    apply_plan(table, layout, branch, plan)
    remove_journal(layout)
    return {
        "branch": branch,
        "main_snapshot_id": plan["N"],
        "previous_main_snapshot_id": plan["Lm"],
        "branch_snapshot_id": plan["Lb"],
        "schema_id": plan["target_schema"],
        "backup": plan["backup"],
        "resumed": resumed,
        "unchanged": False,
    }


def already_replaced(layout: TableLayout, branch: str) -> dict[str, Any] | None:
    """The result to return when main already reads as the branch's latest snapshot.

    That is the case after a completed replace-main (an Airflow retry of a task that
    succeeded but failed to report) or a fast-forward; nothing is written then.
    """
    lb = latest_snapshot_id(layout, branch)
    lm = latest_snapshot_id(layout, None)
    if lb is None or lm is None:
        return None
    b_doc = read_snapshot(layout, branch, lb) or {}
    m_doc = read_snapshot(layout, None, lm) or {}
    props = m_doc.get("properties") or {}
    same_file = b_doc.get("uuid") is not None and m_doc.get("uuid") == b_doc.get("uuid")
    replaced = props.get("replace-main.branch") == branch and props.get("replace-main.branch-snapshot-id") == str(lb)
    if not (same_file or replaced):
        return None
    return {
        "branch": branch,
        "main_snapshot_id": lm,
        "previous_main_snapshot_id": lm,
        "branch_snapshot_id": lb,
        "schema_id": int(m_doc["schemaId"]),
        "backup": None,
        "resumed": False,
        "unchanged": True,
    }


def journal_entry(branch: str, bkp: dict[str, str] | None, plan: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The ``.branch-op.json`` document of one replace-main (``extra``: who runs it, e.g. a publish)."""
    return {"op": OP, "branch": branch, "backup": bkp, "started": _now(), "plan": plan, **extra}


def _now() -> int:
    return int(time.time() * 1000)


def _validate_backup(layout: TableLayout, backup: bool, name: str | None, kind: str,
                     profile: str) -> dict[str, str] | None:
    if not backup:
        if name is not None:
            raise InvalidArgumentError("a backup name was given together with 'no backup'")
        return None
    if kind not in BACKUP_KINDS:
        raise InvalidArgumentError(f"backup kind must be one of {', '.join(BACKUP_KINDS)}, got {kind!r}")
    if name is None:
        name = default_backup_name()
        base, n = name, 1
        while layout.branch_exists(name) or read_tag(layout, None, name) is not None:
            n += 1
            name = f"{base}_{n}"
    if kind == "branch":
        validate_branch_name(name, profile)
        if layout.branch_exists(name):
            raise AlreadyExistsError(f"backup branch {name!r} already exists; choose another --backup-name")
        refuse_lookalike("branch", name, branch_names(layout))
    else:
        validate_tag_name(name, profile)
        if read_tag(layout, None, name) is not None:
            raise AlreadyExistsError(f"backup tag {name!r} already exists; choose another --backup-name")
        refuse_lookalike("tag", name, tag_names(layout, None))
        if latest_snapshot_id(layout, None) is None:
            raise InvalidArgumentError("main has no snapshot to keep as a backup tag; use a backup branch")
    return {"kind": kind, "name": name}


def _schema_body(doc: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (doc or {}).items() if k not in _SCHEMA_VOLATILE}


def make_plan(layout: TableLayout, branch: str, bkp: dict[str, str] | None) -> dict[str, Any]:
    """Decide ids, names and documents up front; refuse what cannot be done cleanly."""
    lb = latest_snapshot_id(layout, branch)
    if lb is None:
        raise InvalidArgumentError(
            f"branch {branch!r} has no snapshot; write to it before it can replace main"
        )
    lm = latest_snapshot_id(layout, None)
    m_doc = read_snapshot(layout, None, lm) if lm is not None else None
    main_schemas = schema_ids(layout, None)
    add_schemas = []
    for sid in schema_ids(layout, branch):
        b_schema = read_schema(layout, branch, sid)
        if sid in main_schemas:
            if _schema_body(read_schema(layout, None, sid)) != _schema_body(b_schema):
                raise InvalidArgumentError(
                    f"main and branch {branch!r} both changed the schema since the branch point "
                    f"(schema {sid} differs); replace-main cannot keep main's history consistent. "
                    "Use fast-forward (which rewrites main's history) instead"
                )
        else:
            add_schemas.append(sid)
    b_latest_doc = read_schema(layout, branch, max(schema_ids(layout, branch)))
    top = max(main_schemas + add_schemas)
    extra = None
    if top not in add_schemas and _schema_body(read_schema(layout, None, top)) != _schema_body(b_latest_doc):
        extra = top + 1
    target = extra if extra is not None else top
    n = (lm or 0) + 1
    if snapshot_ids(layout, None) and max(snapshot_ids(layout, None)) >= n:
        n = max(snapshot_ids(layout, None)) + 1
    op_id = uuid.uuid4().hex
    return {
        "op_id": op_id,
        "Lb": lb,
        "Lm": lm,
        "main_latest_uuid": None if m_doc is None else m_doc.get("uuid"),
        "N": n,
        "snapshot_uuid": str(uuid.uuid4()),
        "time_millis": _now(),
        "add_schemas": add_schemas,
        "extra_schema": extra,
        "target_schema": target,
        "base_list": f"manifest-list-{op_id}-0",
        "delta_list": f"manifest-list-{op_id}-1",
        "backup": bkp,
        # the Airflow run of this process (AIRFLOW_CTX_*), for the new main snapshot
        "run_properties": airflow_properties(),
    }


def apply_plan(table: Any, layout: TableLayout, branch: str, plan: dict[str, Any]) -> None:
    """Run (or finish) every step of ``plan`` up to the hint; the caller removes the journal.

    Public so that a multi-table publish (``publish_many.py``) drives the same steps.
    """
    io = layout.file_io
    snap_path = layout.snapshot_path(None, plan["N"])
    mine = switched(layout, plan)
    if not mine:
        require_branch(layout, branch)
        _backup(layout, plan)
        faults.check("replace_main.backup")
        sizes = _write_manifest_lists(table, layout, branch, plan)
        faults.check("replace_main.manifests")
        _check_unchanged(layout, plan)
        faults.check("replace_main.check")
        _write_schemas(layout, branch, plan)
        faults.check("replace_main.schemas")
        doc = _new_snapshot(layout, branch, plan, sizes)
        if not fileops.create_new(io, snap_path, to_json(doc)) and not switched(layout, plan):
            rollback(layout, plan)
            raise ConcurrentModificationError(
                f"a commit to main took snapshot {plan['N']} during replace-main; main keeps it, "
                "nothing was replaced; run replace-main again"
            )
    faults.check("replace_main.switch")
    hint = layout.hint_path(None, "LATEST")
    if fileops.read_text(io, hint) != str(plan["N"]):
        fileops.write_atomic(io, hint, str(plan["N"]))
    faults.check("replace_main.hint")


def switched(layout: TableLayout, plan: dict[str, Any]) -> bool:
    """Whether the plan's switch happened: ``snapshot-N`` exists with the planned uuid."""
    doc = read_snapshot(layout, None, plan["N"])
    return doc is not None and doc.get("uuid") == plan["snapshot_uuid"]


def _backup(layout: TableLayout, plan: dict[str, Any]) -> None:
    bkp = plan["backup"]
    if bkp is None:
        return
    io = layout.file_io
    if bkp["kind"] == "branch":
        if not layout.branch_exists(bkp["name"]):
            files = plan_branch_files(layout, tag=None, snapshot_id=plan["Lm"], source=None)
            publish_branch(layout, bkp["name"], files)
    else:
        doc = require_snapshot(layout, None, plan["Lm"])
        fileops.create_new(io, layout.tag_path(None, bkp["name"]), to_json(doc))


def _write_manifest_lists(table: Any, layout: TableLayout, branch: str, plan: dict[str, Any]) -> tuple[int, int]:
    """Base list = the branch's whole file list, delta list = empty (hidden until the switch)."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    b_doc = require_snapshot(layout, branch, plan["Lb"])
    manager = ManifestListManager(table)
    metas = manager.read(b_doc["baseManifestList"], b_doc.get("baseManifestListSize"))
    metas += manager.read(b_doc["deltaManifestList"], b_doc.get("deltaManifestListSize"))
    base_size = manager.write(plan["base_list"], metas)
    delta_size = manager.write(plan["delta_list"], [])
    return int(base_size), int(delta_size)


def _write_schemas(layout: TableLayout, branch: str, plan: dict[str, Any]) -> None:
    io = layout.file_io
    for sid in plan["add_schemas"]:
        src, dst = layout.schema_path(branch, sid), layout.schema_path(None, sid)
        if fileops.read_text(io, dst) is None:
            fileops.copy_atomic(io, src, dst)
    if plan["extra_schema"] is not None:
        dst = layout.schema_path(None, plan["extra_schema"])
        if fileops.read_text(io, dst) is None:
            top = max(schema_ids(layout, branch))
            doc = read_schema(layout, branch, top)
            if doc is None:
                raise ConcurrentModificationError(f"schema {top} of branch {branch!r} is gone; rerun")
            doc["id"] = plan["extra_schema"]
            doc["timeMillis"] = plan["time_millis"]
            fileops.write_atomic(io, dst, to_json(doc))


def _check_unchanged(layout: TableLayout, plan: dict[str, Any]) -> None:
    now = latest_snapshot_id(layout, None)
    doc = read_snapshot(layout, None, now) if now is not None else None
    if now != plan["Lm"] or (doc or {}).get("uuid") != plan["main_latest_uuid"]:
        rollback(layout, plan)
        raise ConcurrentModificationError(
            f"main changed during replace-main (latest snapshot {now}, expected {plan['Lm']}); "
            "main keeps that commit and nothing was replaced; run replace-main again"
        )


def rollback(layout: TableLayout, plan: dict[str, Any]) -> None:
    """Undo the invisible preparation after losing against a concurrent commit."""
    io = layout.file_io
    used = {
        int(d["schemaId"])
        for sid in snapshot_ids(layout, None)
        if (plan["Lm"] or 0) < sid and (d := read_snapshot(layout, None, sid)) is not None
    }
    for sid in [*plan["add_schemas"], plan["extra_schema"]]:
        if sid is not None and sid not in used:
            fileops.delete_file(io, layout.schema_path(None, sid))
    for name in (plan["base_list"], plan["delta_list"]):
        fileops.delete_file(io, f"{layout.table_path}/manifest/{name}")
    bkp = plan["backup"]
    if bkp is not None:
        if bkp["kind"] == "branch":
            fileops.delete_tree(io, layout.root(bkp["name"]))
        else:
            fileops.delete_file(io, layout.tag_path(None, bkp["name"]))
    remove_journal(layout)


def _new_snapshot(layout: TableLayout, branch: str, plan: dict[str, Any], sizes: tuple[int, int]) -> dict[str, Any]:
    b_doc = require_snapshot(layout, branch, plan["Lb"])
    m_total = 0
    if plan["Lm"] is not None:
        m_total = int((read_snapshot(layout, None, plan["Lm"]) or {}).get("totalRecordCount") or 0)
    doc = dict(b_doc)
    for key in ("changelogManifestList", "changelogManifestListSize", "changelogRecordCount"):
        doc.pop(key, None)
    props = {k: v for k, v in (doc.get("properties") or {}).items() if k not in RUN_KEYS}
    props.update(plan.get("run_properties") or {})
    props.update(
        {
            "replace-main.branch": branch,
            "replace-main.branch-snapshot-id": str(plan["Lb"]),
            "replace-main.previous-snapshot-id": str(plan["Lm"]),
        }
    )
    if plan.get("backup"):  # where the old main went: the table history page links to it
        props["replace-main.backup-kind"] = plan["backup"]["kind"]
        props["replace-main.backup-name"] = plan["backup"]["name"]
    total = int(b_doc.get("totalRecordCount") or 0)
    doc.update(
        {
            "id": plan["N"],
            "schemaId": plan["target_schema"],
            "baseManifestList": plan["base_list"],
            "baseManifestListSize": sizes[0],
            "deltaManifestList": plan["delta_list"],
            "deltaManifestListSize": sizes[1],
            "commitKind": "OVERWRITE",
            "timeMillis": plan["time_millis"],
            "totalRecordCount": total,
            "deltaRecordCount": total - m_total,
            "uuid": plan["snapshot_uuid"],
            "properties": props,
        }
    )
    return doc
