"""Fast-forward main to a branch (the Paimon branch proposal's merge-branch), crash-safe.

The result on disk is Paimon Java's ``FileSystemBranchManager.fastForward``: with
``B`` the branch's earliest snapshot (its branch point) and ``sB`` that snapshot's
schema, main keeps its snapshots ``< B``, its schemas ``< sB`` and its tags on
snapshots ``< B``; everything of main from there on is removed and replaced by the
branch's snapshots, schemas and tags. Unlike pypaimon's version (which only copies
snapshot files) the later snapshots, schemas and tags of main go, and the ``LATEST``
/ ``EARLIEST`` hints are right afterwards.

Java deletes first and copies after, so a reader in between sees an older or empty
main. Here the order keeps "latest" pointing at old main until one atomic step:

1. ``journal``: the plan (all ids) goes to ``.branch-op.json``.
2. ``check``: main's latest is still the planned one (else ConcurrentModificationError,
   nothing visible changed).
3. ``pin_hint``: ``LATEST`` = old latest ``Lm``. Readers trust it while
   ``snapshot-(Lm+1)`` is absent, so files written behind it are invisible.
4. ``ahead``: branch snapshots with ids ``> Lm+1`` are written (invisible: gap at Lm+1).
5. ``prepare``: when the branch ends below ``Lm``: delete main's snapshots between
   ``Lb`` and ``Lm`` (``Lm`` itself stays, so the hint stays valid) and write the
   branch's ``snapshot-Lb`` (all below the valid hint: invisible).
6. ``schemas``: main's schemas from ``sB`` on become the branch's (only files whose
   bytes differ are written, so nothing changes when the schema did not diverge).
7. ``switch`` (the one visible step): create ``snapshot-(Lm+1)`` only if absent (a
   concurrent commit makes it fail: ConcurrentModificationError), or replace
   ``snapshot-Lm``, or (branch below main) delete ``snapshot-Lm``, the last of main's
   above ``Lb``, so readers find ``Lb`` as latest, then move ``LATEST`` to ``Lb``.
   After the switch no snapshot of old main lies above the new latest: a commit
   landing before the journal is finished (a writer beside a killed fast-forward)
   gets the next id and stays visible, never exposing old main behind it.
8. ``history``: main's remaining snapshots ``>= B`` become the branch's (now below
   latest: only time travel sees them). A snapshot the plan deletes is deleted only
   while it is still the one planned (same uuid): a commit that landed after the
   switch under a planned id is kept.
9. ``tags``, 10. ``hints``; then the journal is removed.
"""

from __future__ import annotations

import time
from typing import Any

from .. import faults, fileops
from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..names import name_profile, validate_branch_name
from ..snapshots import (
    TableLayout,
    earliest_snapshot_id,
    latest_snapshot_id,
    read_snapshot,
    read_tag,
    require_snapshot,
    schema_ids,
    snapshot_ids,
    tag_names,
    write_hints,
)
from ._common import require_branch
from .journal import remove_journal, resumable_plan, write_journal

OP = "fast_forward"


def fast_forward(table: Any, branch: str) -> dict[str, Any]:
    """Fast-forward main of ``table`` to ``branch``; rerun after a crash to finish."""
    layout = TableLayout.of(table)
    validate_branch_name(branch, name_profile(table))
    plan = resumable_plan(layout, OP, branch)
    resumed = plan is not None
    if plan is None:
        require_branch(layout, branch)
        plan = make_plan(layout, branch)
        write_journal(layout, {"op": OP, "branch": branch, "started": _now(), "plan": plan})
        faults.check("fast_forward.journal")
    apply_plan(layout, branch, plan)
    remove_journal(layout)
    return {
        "branch": branch,
        "main_snapshot_id": plan["Lb"],
        "previous_main_snapshot_id": plan["Lm"],
        "branch_point_snapshot_id": plan["B"],
        "removed_snapshot_ids": plan["delete_snapshots"],
        "resumed": resumed,
    }


def _now() -> int:
    return int(time.time() * 1000)


def make_plan(layout: TableLayout, branch: str) -> dict[str, Any]:
    """Decide every id the operation touches, before anything is written."""
    b_ids = snapshot_ids(layout, branch)
    if not b_ids:
        raise InvalidArgumentError(
            f"branch {branch!r} has no snapshot to fast-forward to; create it from a tag or "
            "snapshot, or write to it first"
        )
    lb = latest_snapshot_id(layout, branch)
    earliest = earliest_snapshot_id(layout, branch)
    if lb is None or earliest is None:
        raise ConcurrentModificationError(f"branch {branch!r} lost its snapshots while planning; rerun")
    copy_ids = [i for i in b_ids if earliest <= i <= lb]
    start = require_snapshot(layout, branch, earliest)
    s_b = int(start["schemaId"])
    lm = latest_snapshot_id(layout, None)
    main_latest = read_snapshot(layout, None, lm) if lm is not None else None
    m_ids = snapshot_ids(layout, None)
    b_schemas = schema_ids(layout, branch)
    delete_tags = []
    for name in tag_names(layout, None):
        doc = read_tag(layout, None, name)
        if doc is not None and int(doc["id"]) >= earliest:
            delete_tags.append(name)
    return {
        "B": earliest,
        "sB": s_b,
        "Lb": lb,
        "Lm": lm,
        "main_latest_uuid": None if main_latest is None else main_latest.get("uuid"),
        "copy_snapshots": copy_ids,
        "delete_snapshots": [i for i in m_ids if i >= earliest and i not in copy_ids],
        "delete_uuids": {
            str(i): (read_snapshot(layout, None, i) or {}).get("uuid") for i in m_ids if i >= earliest and i not in copy_ids
        },
        "copy_schemas": b_schemas,
        "delete_schemas": [i for i in schema_ids(layout, None) if i >= s_b and i not in b_schemas],
        "copy_tags": tag_names(layout, branch),
        "delete_tags": delete_tags,
    }


def _same(layout: TableLayout, src: str, dst: str) -> bool:
    return fileops.read_text(layout.file_io, src) == fileops.read_text(layout.file_io, dst)


def _copy_snapshot(layout: TableLayout, branch: str, sid: int) -> None:
    src, dst = layout.snapshot_path(branch, sid), layout.snapshot_path(None, sid)
    if not _same(layout, src, dst):
        fileops.copy_atomic(layout.file_io, src, dst)


def _switched(layout: TableLayout, branch: str, plan: dict[str, Any]) -> bool:
    """True once the switch happened: main holds the branch's latest ``Lb`` at or below
    its latest (commits may have landed on it since) and, when the branch ends below
    old main, old main's latest ``Lm`` is gone (before the switch ``Lb`` is written
    underneath it)."""
    lb, lm = plan["Lb"], plan["Lm"]
    latest = latest_snapshot_id(layout, None)
    if latest is None or latest < lb:
        return False
    if not _same(layout, layout.snapshot_path(branch, lb), layout.snapshot_path(None, lb)):
        return False
    if lm is not None and lb < lm:
        doc = read_snapshot(layout, None, lm)
        return doc is None or doc.get("uuid") != plan["main_latest_uuid"]
    first = (lm or 0) + 1
    if first in plan["copy_snapshots"] and first != lb:
        # the switch creates the branch's snapshot Lm+1; a commit that filled that gap
        # instead (a writer beside a killed run) is not a switch
        return _same(layout, layout.snapshot_path(branch, first), layout.snapshot_path(None, first))
    return True


def _still_planned(layout: TableLayout, plan: dict[str, Any], sid: int) -> bool:
    """True when main's snapshot ``sid`` is the one the plan saw (not a later commit)."""
    uuids = plan.get("delete_uuids")
    if uuids is None:  # a journal written before uuids were planned
        return True
    doc = read_snapshot(layout, None, sid)
    return doc is not None and doc.get("uuid") == uuids.get(str(sid))


def _check_unchanged(layout: TableLayout, branch: str, plan: dict[str, Any], wrote_ahead: list[int]) -> None:
    """Raise (after deleting the copies ahead that are still the branch's) when main moved on."""
    lm = plan["Lm"]
    now = latest_snapshot_id(layout, None)
    doc = read_snapshot(layout, None, now) if now is not None else None
    if now != lm or (doc or {}).get("uuid") != plan["main_latest_uuid"]:
        for sid in wrote_ahead:
            ours = read_snapshot(layout, None, sid)
            if ours is not None and ours.get("uuid") == (read_snapshot(layout, branch, sid) or {}).get("uuid"):
                fileops.delete_file(layout.file_io, layout.snapshot_path(None, sid))
        remove_journal(layout)
        raise ConcurrentModificationError(
            f"main changed during fast-forward (latest snapshot {now}, expected {lm}); "
            "nothing was switched and the commit was kept; run fast-forward again"
        )


def apply_plan(layout: TableLayout, branch: str, plan: dict[str, Any]) -> None:
    io = layout.file_io
    lm = plan["Lm"] or 0
    lb = plan["Lb"]
    copy_ids = plan["copy_snapshots"]
    ahead = [i for i in copy_ids if i > lm + 1]
    if not _switched(layout, branch, plan):
        require_branch(layout, branch)
        _check_unchanged(layout, branch, plan, ahead)  # a rerun's copies ahead go too
        faults.check("fast_forward.check")
        if plan["Lm"] is not None:
            fileops.write_atomic(io, layout.hint_path(None, "LATEST"), str(lm))
        faults.check("fast_forward.pin_hint")
        for sid in ahead:
            _copy_snapshot(layout, branch, sid)
        faults.check("fast_forward.ahead")
        _check_unchanged(layout, branch, plan, ahead)
        if lb < lm:
            for sid in plan["delete_snapshots"]:
                if lb < sid < lm:
                    fileops.delete_file(io, layout.snapshot_path(None, sid))
            _copy_snapshot(layout, branch, lb)
        faults.check("fast_forward.prepare")
        for sid in sorted(plan["delete_schemas"], reverse=True):
            fileops.delete_file(io, layout.schema_path(None, sid))
        for sid in plan["copy_schemas"]:
            src, dst = layout.schema_path(branch, sid), layout.schema_path(None, sid)
            if not _same(layout, src, dst):
                fileops.copy_atomic(io, src, dst)
        faults.check("fast_forward.schemas")
        _switch(layout, branch, plan, ahead)
    faults.check("fast_forward.switch")
    for sid in copy_ids:
        _copy_snapshot(layout, branch, sid)
    for sid in plan["delete_snapshots"]:
        if _still_planned(layout, plan, sid):
            fileops.delete_file(io, layout.snapshot_path(None, sid))
    faults.check("fast_forward.history")
    for name in plan["delete_tags"]:
        if name not in plan["copy_tags"]:
            fileops.delete_file(io, layout.tag_path(None, name))
    for name in plan["copy_tags"]:
        src, dst = layout.tag_path(branch, name), layout.tag_path(None, name)
        if fileops.exists(io, src) and not _same(layout, src, dst):
            fileops.copy_atomic(io, src, dst)
    faults.check("fast_forward.tags")
    write_hints(layout, None)
    faults.check("fast_forward.hints")


def _switch(layout: TableLayout, branch: str, plan: dict[str, Any], ahead: list[int]) -> None:
    io = layout.file_io
    lm = plan["Lm"] or 0
    lb = plan["Lb"]
    if lm + 1 in plan["copy_snapshots"]:
        text = fileops.read_text(io, layout.snapshot_path(branch, lm + 1))
        if (
            not fileops.create_new(io, layout.snapshot_path(None, lm + 1), text or "")
            and fileops.read_text(io, layout.snapshot_path(None, lm + 1)) != text
        ):
            _check_unchanged(layout, branch, plan, ahead)
    elif lb == lm:
        _copy_snapshot(layout, branch, lb)
    else:
        # the branch ends below old main: ``prepare`` left only old main's latest above
        # ``Lb``; once it is gone readers find ``Lb`` by listing, then the hint says so
        if lm > lb:
            fileops.delete_file(io, layout.snapshot_path(None, lm))
        fileops.write_atomic(io, layout.hint_path(None, "LATEST"), str(lb))
