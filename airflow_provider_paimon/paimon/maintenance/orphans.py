"""Remove files that nothing references any more (Paimon's ``remove_orphan_files``).

Failed or killed writes, compactions and commits leave files that no snapshot names:
data files written before a commit failed, manifests and manifest lists of a commit
that lost its race, temporary files of atomic writes, staging folders of a branch
creation, a journal left behind by an operation that had in fact finished. Paimon
Java's ``OrphanFilesClean`` finds them by listing the table and keeping every file
*name* that any snapshot, tag or changelog of any branch mentions; we do the same,
with the journals of this provider added:

- used: every manifest list, manifest, data/changelog file (any entry, ADD or
  DELETE: conservative, as Java), index manifest, index and statistics file named by
  a snapshot or tag of main or any branch, and the manifest lists a pending
  replace-main has written;
- candidates: files under the table that are not used and whose modification time
  is older than ``older_than`` (default: 1 day ago, as Paimon). The safety age is what
  protects a write in progress: its files are new and no snapshot names them yet;
- the metadata folders (``snapshot/``, ``schema/``, ``tag/``, ``consumer/`` of main
  and every branch) are never candidates, except hidden ``*.tmp`` files in them;
- ``.branch-op.json`` is kept while its operation is unfinished (rerun that operation
  to finish it); a replace-main's or fast-forward's whose result is complete on disk
  (killed just before removing it) is a stale journal, deleted once older than the
  safety age; ``.expire-op.json`` is kept (rerun ``expire_snapshots``).

Just before deleting, the used set is computed again, so a commit that landed during
the listing keeps its files.
"""

from __future__ import annotations

import os
from typing import Any

from .. import fileops
from ..branch.journal import read_journal
from ..errors import InvalidArgumentError
from ..object_dirs import list_files
from ..snapshots import (
    BRANCH_PREFIX,
    TableLayout,
    earliest_snapshot_id,
    read_hint,
    read_snapshot,
    read_tag,
)
from .expire import JOURNAL_NAME as EXPIRE_JOURNAL
from .options import DEFAULT_ORPHAN_AGE_MS, cutoff_ms
from .references import ManifestCache, needed_files

METADATA_DIRS = ("snapshot", "schema", "tag", "consumer", "changelog")
BRANCH_JOURNAL = ".branch-op.json"


def remove_orphan_files(table: Any, *, older_than: Any = None, dry_run: bool = False) -> dict[str, Any]:
    """Delete (or with ``dry_run`` list) unreferenced files older than ``older_than``.

    ``older_than``: a timezone-aware ``datetime``, a ``timedelta`` (that long ago) or
    epoch milliseconds; default 1 day ago. Works on the whole table (all branches).
    """
    if not isinstance(dry_run, bool):
        raise InvalidArgumentError(f"dry_run must be True or False, got {dry_run!r}")
    cutoff = cutoff_ms(older_than, "older_than", DEFAULT_ORPHAN_AGE_MS)
    layout = TableLayout.of(table)
    cache = ManifestCache(table, layout)
    used = needed_files(cache, live_only=False).names()
    found, kept = _candidates(layout, used, cutoff)
    if not dry_run and found:
        used = needed_files(cache, live_only=False).names()  # re-check just before deleting
    deleted: list[dict[str, Any]] = []
    for path, kind, size in found:
        if path.rsplit("/", 1)[-1] in used and kind not in ("temp", "staging"):
            kept["referenced by a new commit"] = kept.get("referenced by a new commit", 0) + 1
            continue
        if not dry_run:
            if kind == "staging":
                fileops.delete_tree(layout.file_io, path)
            elif not fileops.delete_file(layout.file_io, path):
                continue
        deleted.append({"path": _rel(layout, path), "kind": kind, "bytes": size})
    counts: dict[str, int] = {}
    for d in deleted:
        counts[d["kind"]] = counts.get(d["kind"], 0) + 1
    return {
        "dry_run": dry_run,
        "older_than_millis": cutoff,
        "deleted_files": sorted(deleted, key=lambda d: d["path"]),
        "deleted_file_count": len(deleted),
        "deleted_bytes": sum(d["bytes"] for d in deleted),
        "deleted_by_kind": counts,
        "kept_because": kept,
    }


def _rel(layout: TableLayout, path: str) -> str:
    root = layout.table_path + "/"
    return path[len(root):] if path.startswith(root) else path


def _is_temp(name: str) -> bool:
    return name.endswith(".tmp")


def _kind(rel_dir: str, name: str) -> str:
    top = rel_dir.split("/", 1)[0] if rel_dir else ""
    if _is_temp(name):
        return "temp"
    if top == "manifest":
        if name.startswith("manifest-list-"):
            return "manifest_list"
        if name.startswith("index-manifest-"):
            return "index_manifest"
        return "manifest"
    if top in ("index", "statistics"):
        return top
    if name.startswith("changelog-"):
        return "changelog"
    return "data"


def _candidates(layout: TableLayout, used: set[str], cutoff: int) -> tuple[list[tuple[str, str, int]], dict[str, int]]:
    """(path, kind, bytes) of unreferenced files older than ``cutoff``; kept counts."""
    kept: dict[str, int] = {}
    out: list[tuple[str, str, int]] = []

    def keep(reason: str) -> None:
        kept[reason] = kept.get(reason, 0) + 1

    for rel_dir, name, path, mtime, size, is_dir in _walk(layout):
        top = rel_dir.split("/", 1)[0] if rel_dir else ""
        if is_dir:  # only branch staging folders are reported as directories
            if mtime is not None and mtime < cutoff:
                out.append((path, "staging", size))
            else:
                keep("newer than older_than")
            continue
        if rel_dir == "" and name == BRANCH_JOURNAL:
            if _finished_branch_op(layout):
                if mtime is not None and mtime < cutoff:
                    out.append((path, "journal", size))
                else:
                    keep("newer than older_than")
            else:
                keep("pending branch operation (rerun it to finish)")
            continue
        if rel_dir == "" and name == EXPIRE_JOURNAL:
            keep("pending snapshot expiry (rerun expire_snapshots to finish)")
            continue
        in_metadata = top in METADATA_DIRS or top == "branch"
        if in_metadata and not _is_temp(name):
            continue
        if not _is_temp(name) and name in used:
            continue
        if name.startswith(".") and not _is_temp(name):
            keep("hidden file of another tool")
            continue
        kind = _kind(rel_dir, name)
        if kind in ("data", "changelog") and not any(p.startswith("bucket-") for p in rel_dir.split("/")):
            keep("not in a Paimon data, manifest, index or statistics folder")
            continue
        if mtime is None or mtime >= cutoff:
            keep("newer than older_than")
            continue
        out.append((path, kind, size))
    return out, kept


def _walk(layout: TableLayout):
    """(rel_dir, name, path, mtime_ms, bytes, is_dir) of every file under the table.

    Local tables are walked with ``os.walk``; other file systems with pypaimon's
    ``list_status`` recursively. Branch staging folders (``branch/.tmp-*``) are
    reported as one directory entry and not entered.
    """
    root = layout.table_path
    lp = fileops.local_path(root)
    if lp is not None:
        for dirpath, dirnames, filenames in os.walk(lp):
            rel_dir = os.path.relpath(dirpath, lp)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
            if rel_dir == "branch":
                for d in list(dirnames):
                    if not d.startswith(BRANCH_PREFIX):
                        dirnames.remove(d)
                        full = os.path.join(dirpath, d)
                        yield rel_dir, d, f"{root}/branch/{d}", int(os.stat(full).st_mtime * 1000), 0, True
            for name in filenames:
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                path = f"{root}/{rel_dir}/{name}" if rel_dir else f"{root}/{name}"
                yield rel_dir, name, path, int(st.st_mtime * 1000), st.st_size, False
        return
    yield from _walk_remote(layout, root, "")


def _walk_remote(layout: TableLayout, directory: str, rel_dir: str):
    io = layout.file_io
    for status in io.list_status(directory):
        path = str(status.path).rstrip("/")
        name = path.rsplit("/", 1)[-1]
        full = f"{directory}/{name}"
        is_dir = bool(getattr(status, "is_dir", False) or getattr(status, "type", None) == 3)
        mtime = _listed_mtime(status)
        if mtime is None:
            mtime = fileops.mtime_millis(io, full)
        if is_dir:
            if rel_dir == "branch" and not name.startswith(BRANCH_PREFIX):
                if mtime is None:  # an object store's "folder": the age of its newest object
                    mtime = _newest_object_millis(io, full)
                yield rel_dir, name, full, mtime, 0, True
                continue
            yield from _walk_remote(layout, full, f"{rel_dir}/{name}" if rel_dir else name)
        else:
            yield rel_dir, name, full, mtime, int(getattr(status, "size", 0) or 0), False


def _listed_mtime(status) -> int | None:
    """The modification time a listing already returned (saves a request per file on S3)."""
    mtime = getattr(status, "mtime", None)
    if mtime is None:
        return None
    return int(mtime.timestamp() * 1000) if hasattr(mtime, "timestamp") else int(mtime)


def _newest_object_millis(io, directory: str) -> int | None:
    try:
        times = [_listed_mtime(info) for _, info in list_files(io, directory)]
    except OSError:
        return None
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _finished_branch_op(layout: TableLayout) -> bool:
    """True when ``.branch-op.json`` names an operation a rerun would have nothing left to do for.

    Only then is the journal stale (its operation was killed just before removing it);
    anything else is an unfinished operation that its own rerun must complete.
    """
    doc = read_journal(layout)
    if not doc:
        return False
    if doc.get("op") == "replace_main":
        return _finished_replace_main(layout, doc)
    if doc.get("op") == "fast_forward":
        return _finished_fast_forward(layout, doc)
    return False


def _finished_replace_main(layout: TableLayout, doc: dict[str, Any]) -> bool:
    """Replace-main is done when its switch and hint are (its last steps)."""
    plan = doc.get("plan") or {}
    n = plan.get("N")
    if n is None:
        return False
    snap = read_snapshot(layout, None, int(n))
    if snap is None or snap.get("uuid") != plan.get("snapshot_uuid"):
        return False
    backup = plan.get("backup")
    if backup and backup.get("kind") == "branch" and not layout.branch_exists(backup["name"]):
        return False
    return read_hint(layout, None, "LATEST") == int(n)


def _uuid(doc: dict[str, Any] | None) -> Any:
    return None if doc is None else doc.get("uuid")


def _finished_fast_forward(layout: TableLayout, doc: dict[str, Any]) -> bool:
    """Fast-forward is done when main holds its result (see ``branch.fast_forward``).

    Checked against the plan, allowing for what may legitimately have happened since
    (a pending journal blocks expiry and rollback of main and the branch, but not new
    commits to main):

    - every snapshot the plan copies is on main, the same snapshot (uuid) as the branch's;
    - every snapshot the plan deletes is gone, or is a newer commit (made after the
      operation started) that reuses the id;
    - the tags it deletes are gone and the ones it copies are main's;
    - the ``EARLIEST`` hint is right (the hints step is the last).
    """
    plan = doc.get("plan") or {}
    branch = doc.get("branch")
    if not branch or "copy_snapshots" not in plan:
        return False
    for sid in plan["copy_snapshots"]:
        theirs = read_snapshot(layout, str(branch), int(sid))
        if theirs is None or _uuid(read_snapshot(layout, None, int(sid))) != _uuid(theirs):
            return False
    started = int(doc.get("started") or 0)
    for sid in plan.get("delete_snapshots") or []:
        snap = read_snapshot(layout, None, int(sid))
        if snap is not None and int(snap.get("timeMillis", 0)) < started:
            return False
    copied = set(plan.get("copy_tags") or [])
    for name in plan.get("delete_tags") or []:
        if name not in copied and read_tag(layout, None, name) is not None:
            return False
    for name in copied:
        theirs = read_tag(layout, str(branch), name)
        if theirs is not None and _uuid(read_tag(layout, None, name)) != _uuid(theirs):
            return False
    return read_hint(layout, None, "EARLIEST") == earliest_snapshot_id(layout, None)
