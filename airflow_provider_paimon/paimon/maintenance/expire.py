"""Expire old snapshots of main or a branch, deleting only files nothing else needs.

Which snapshots expire is Paimon Java's ``ExpireSnapshotsImpl.expire`` rule, on the
chosen branch: with ``earliest`` and ``latest`` its snapshot ids,

- the range starts at ``earliest``; it ends (exclusive) at the smallest of
  ``latest - retain_min + 1``, the smallest consumer ``nextSnapshot`` of the branch,
  and ``earliest + max_deletes``;
- snapshots below ``latest - retain_max + 1`` expire regardless of age; from there
  on, the first snapshot not older than ``older_than`` stops the range;
- snapshots below a gap in the ids are left alone (Java assumes they are gone).

Which files go is where we differ from Java on purpose. Java decides from the expired
range and the tags of the same branch, so it deletes files that a branch created from
one of those snapshots still reads (apache/paimon issue 3787). Here a file is deleted
only when it is named by an expired snapshot and needed by nothing left: no retained
snapshot or tag of any branch, no pending branch operation (see ``references``).

Order, chosen so that every snapshot file still present reads at every moment (a
kill at any step leaves a readable table, and a rerun finishes):

1. ``journal``: ``<table>/.expire-op.json`` (create-if-absent) holds the snapshot
   ids and candidate files. It also keeps two expiries from running at once.
2. ``snapshots``: the expired snapshot files are deleted, oldest first, so the
   remaining ones always form a contiguous, fully readable range.
3. ``hint``: ``EARLIEST`` names the first remaining snapshot.
4. ``manifests``: what is still needed is computed again (re-check: commits, tags or
   branches made since planning are honoured); unneeded manifest lists, manifests,
   index and statistics files are deleted.
5. ``data``: unneeded data and changelog files are deleted; the journal is removed.

Java deletes data files first and the snapshot file last, which leaves an expired
snapshot whose files are gone readable-looking for a while; deleting the snapshot
file first never exposes one, and the journal is what lets a rerun find the files
those snapshots named.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .. import faults, fileops
from ..branch._common import latest_schema_options
from ..consumers import list_consumers
from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..snapshots import (
    TableLayout,
    earliest_snapshot_id,
    latest_snapshot_id,
    read_hint,
    read_snapshot,
    snapshot_ids,
)
from ..tag._common import resolve_branch
from .options import Retention, resolve_retention
from .references import FileSet, ManifestCache, needed_files, require_idle, snapshot_files, where

JOURNAL_NAME = ".expire-op.json"
STEPS = ("expire.journal", "expire.snapshots", "expire.hint", "expire.manifests", "expire.data")
METADATA_KINDS = ("manifest_list", "manifest", "index_manifest", "index", "statistics")


def journal_path(layout: TableLayout) -> str:
    return f"{layout.table_path}/{JOURNAL_NAME}"


def read_expire_journal(layout: TableLayout) -> dict[str, Any] | None:
    text = fileops.read_text(layout.file_io, journal_path(layout))
    return json.loads(text) if text else None


def expire_snapshots(
    table: Any,
    *,
    branch: str | None = None,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than: Any = None,
    max_deletes: int | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Expire snapshots of ``branch`` (default: the branch ``table`` was loaded on).

    Unset settings come from the branch's table options, then Paimon's defaults (see
    ``options``). ``older_than`` is a timezone-aware ``datetime``, a ``timedelta``
    (that long ago) or epoch milliseconds. Returns what was (or, with ``dry_run``,
    would be) expired and deleted, and why the rest was kept.
    """
    if not isinstance(dry_run, bool):
        raise InvalidArgumentError(f"dry_run must be True or False, got {dry_run!r}")
    layout = TableLayout.of(table)
    br = resolve_branch(layout, branch, table)
    settings = resolve_retention(
        latest_schema_options(layout, br),
        retain_max=retain_max,
        retain_min=retain_min,
        older_than=older_than,
        max_deletes=max_deletes,
    )
    require_idle(layout, br, "expire snapshots")
    return expire_planned(table, layout, br, settings, dry_run=dry_run)


def expire_planned(
    table: Any,
    layout: TableLayout,
    br: str | None,
    settings: Retention,
    *,
    dry_run: bool = False,
    deadline: float | None = None,
    finish_pending_run: bool = True,
    shared_cache: bool = False,
) -> dict[str, Any]:
    """Expire ``br`` with resolved ``settings`` (the caller checked the branch is idle).

    ``deadline`` (``time.monotonic()``) bounds the planning: past it,
    ``references.TimeBoundExceeded`` is raised before anything is changed. Once the
    journal is written the run always finishes (it deletes at most ``max_deletes``
    snapshots and what only they needed). ``shared_cache``: keep manifests read in the
    process-wide bounded cache (see ``references.ManifestCache``).
    """
    key = "main" if br is None else br
    cache = ManifestCache(table, layout, shared=shared_cache)
    resumed = None if dry_run or not finish_pending_run else finish_pending(layout, cache)
    expire_ids, stop = plan_range(layout, br, settings)
    result: dict[str, Any] = {
        "branch": key,
        "dry_run": dry_run,
        "settings": settings.to_dict(),
        "expired_snapshot_ids": expire_ids,
        "stopped_because": stop,
        "resumed": resumed,
    }
    if not expire_ids:
        if not dry_run:
            _fix_earliest_hint(layout, br)
        result.update(summarize({}, FileSet(), FileSet(), dry_run))
        return result
    candidates = FileSet()
    for sid in expire_ids:
        doc = read_snapshot(layout, br, sid)
        if doc is not None:
            snapshot_files(doc, cache, f"snapshot {sid} of {where(br)}", candidates, live_only=False)
    needed = needed_files(cache, exclude=(br, set(expire_ids)), only=set(candidates.kinds), deadline=deadline)
    if dry_run:
        doomed = {
            p: (k, candidates.sizes.get(p) or file_size(layout.file_io, p))
            for p, k in candidates.kinds.items()
            if p not in needed
        }
        result.update(summarize(doomed, candidates, needed, dry_run, layout))
        return result
    doc = {
        "op": "expire_snapshots",
        "branch": key,
        "snapshot_ids": expire_ids,
        "files": {p: k for p, k in candidates.kinds.items() if p not in needed},
        "sizes": {p: s for p, s in candidates.sizes.items() if p not in needed},
    }
    done = run_journal(layout, cache, doc)
    cache.forget(done)
    result.update(summarize(done, candidates, needed, dry_run, layout))
    return result


def run_journal(layout: TableLayout, cache: ManifestCache, doc: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """Write the journal (create-if-absent: one maintenance run at a time), then apply it."""
    if not fileops.create_new(layout.file_io, journal_path(layout), json.dumps(doc)):
        raise ConcurrentModificationError(
            f"another maintenance run is in progress on {layout.table_path} (found {JOURNAL_NAME}); "
            "if it was killed, run expire_snapshots again to finish it"
        )
    faults.check(f"{doc.get('prefix', 'expire')}.journal")
    return _finish(layout, cache, doc)


def finish_pending(layout: TableLayout, cache: ManifestCache) -> dict[str, Any] | None:
    """Finish a maintenance run a kill interrupted (``None`` when there is none)."""
    pending = read_expire_journal(layout)
    if pending is None:
        return None
    done = _finish(layout, cache, pending)
    return {"op": pending.get("op"), "snapshot_ids": pending["snapshot_ids"], "tags": pending.get("tags") or [],
            "deleted_file_count": len(done)}


def plan_range(layout: TableLayout, branch: str | None, s: Retention) -> tuple[list[int], str]:
    """Snapshot ids to expire and why the range ends where it does (Java's rule)."""
    latest = latest_snapshot_id(layout, branch)
    earliest = earliest_snapshot_id(layout, branch)
    if latest is None or earliest is None:
        return [], "no snapshots"
    present = set(snapshot_ids(layout, branch))
    low = max(latest - s.retain_max + 1, earliest)
    end, stop = latest - s.retain_min + 1, f"retain_min={s.retain_min}"
    consumers = _consumers(layout, branch)
    if consumers:
        cid, nxt = min(consumers.items(), key=lambda kv: kv[1])
        if nxt < end:
            end, stop = nxt, f"consumer {cid!r} still reads from snapshot {nxt}"
    if earliest + s.max_deletes < end:
        end, stop = earliest + s.max_deletes, f"max_deletes={s.max_deletes}"
    for sid in range(low, end):
        if sid in present:
            doc = read_snapshot(layout, branch, sid) or {}
            if s.older_than_ms <= int(doc.get("timeMillis", 0)):
                end, stop = sid, f"snapshot {sid} is newer than older_than"
                break
    begin = earliest
    for sid in range(end - 1, earliest - 1, -1):
        if sid not in present:
            begin = sid + 1
            break
    return [sid for sid in range(begin, end) if sid in present], stop


def _consumers(layout: TableLayout, branch: str | None) -> dict[str, int]:
    """Consumers of ``branch`` read from its own ``consumer/`` folder."""

    class _BranchTable:  # what consumers.consumer_manager needs of a table
        file_io = layout.file_io
        table_path = layout.table_path

        @staticmethod
        def current_branch() -> str:
            return "main" if branch is None else branch

    return list_consumers(_BranchTable())


def _fix_earliest_hint(layout: TableLayout, branch: str | None) -> None:
    ids = snapshot_ids(layout, branch)
    if ids and read_hint(layout, branch, "EARLIEST") != earliest_snapshot_id(layout, branch):
        fileops.write_atomic(layout.file_io, layout.hint_path(branch, "EARLIEST"), str(earliest_snapshot_id(layout, branch)))


def _finish(layout: TableLayout, cache: ManifestCache, doc: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """Steps 2-5 from the journal ``doc``; idempotent. Returns the deleted files.

    The same journal drives ``expire_tags`` and the destructive ``rollback``: ``tags``
    lists tag files to delete, ``descending`` deletes the newest snapshot first (so a
    rollback passes through older states only), ``latest`` is the ``LATEST`` hint to
    write, and fault points are named ``<prefix>.<step>``.
    """
    io = layout.file_io
    br = None if doc["branch"] == "main" else doc["branch"]
    prefix = doc.get("prefix", "expire")
    for sid in sorted(doc["snapshot_ids"], reverse=bool(doc.get("descending"))):
        fileops.delete_file(io, layout.snapshot_path(br, sid))
    for tag in doc.get("tags") or []:
        fileops.delete_file(io, layout.tag_path(br, tag))
    faults.check(f"{prefix}.snapshots")
    if doc.get("latest") is not None:
        fileops.write_atomic(io, layout.hint_path(br, "LATEST"), str(doc["latest"]))
    _fix_earliest_hint(layout, br)
    faults.check(f"{prefix}.hint")
    files: dict[str, str] = doc["files"]
    needed = needed_files(cache, only=set(files))  # re-check: whatever appeared since planning is kept
    deleted: dict[str, tuple[str, int]] = {}
    known = doc.get("sizes") or {}
    for phase, step in ((METADATA_KINDS, f"{prefix}.manifests"), (("data", "changelog"), f"{prefix}.data")):
        for path, kind in files.items():
            if kind in phase and path not in needed:
                size = known.get(path) or file_size(io, path)
                if fileops.delete_file(io, path):
                    deleted[path] = (kind, size)
        faults.check(step)
    fileops.delete_file(io, journal_path(layout))
    return deleted


def file_size(io: Any, path: str) -> int:
    """Bytes of ``path`` for the result (0 when it cannot be told: it is only reported)."""
    lp = fileops.local_path(path)
    try:
        return os.stat(lp).st_size if lp is not None else int(io.get_file_size(path))
    except Exception:  # noqa: BLE001 - a size is for the report only
        return 0


def summarize(
    deleted: dict[str, tuple[str, int]],
    candidates: FileSet,
    needed: FileSet,
    dry_run: bool,
    layout: TableLayout | None = None,
) -> dict[str, Any]:
    """The result fields: files deleted (would be, in a dry run), bytes, kept-because."""
    counts: dict[str, int] = {}
    total = 0
    for kind, size in deleted.values():
        counts[kind] = counts.get(kind, 0) + 1
        total += size
    kept: dict[str, int] = {}
    for path in candidates.kinds:
        if path in needed:
            owner = needed.owners[path]
            kept[owner] = kept.get(owner, 0) + 1
    root = (layout.table_path + "/") if layout else ""
    return {
        "deleted_files": sorted(
            p[len(root):] if root and p.startswith(root) else p for p in deleted
        ),
        "deleted_file_count": len(deleted),
        "deleted_bytes": total,
        "deleted_by_kind": counts,
        "kept_because": kept,
    }
