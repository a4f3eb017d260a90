"""Roll main or a branch back to a snapshot or tag (Paimon's ``rollback_to`` and
``rollback_to_as_latest``).

``as_latest=False`` (Paimon's ``rollback_to``, destructive): the snapshots after the
target and the tags on them go, ``LATEST`` names the target, and the files only they
needed are deleted (what every other snapshot, tag and branch needs stays). It runs
through the maintenance journal (``.expire-op.json``) with the newest snapshot
deleted first, so a reader at any moment sees some snapshot between the target and
the old latest, and a killed run is finished by the next maintenance call. A tag a
branch was created from blocks the rollback (naming the branch) rather than going.
When the target is a tag whose snapshot has expired, the snapshot is first written
back from the tag (a tag file is the snapshot's document).

``as_latest=True`` (Paimon's ``rollback_to_as_latest``): nothing is deleted; one new
``OVERWRITE`` snapshot ``latest + 1`` reads exactly as the target (its base manifest
list is the target's full file list, its delta list is empty), so time travel,
streaming readers and consumer positions keep working. The new snapshot is created
only if absent: a concurrent commit makes it fail cleanly. When the newest snapshot
already is such a rollback to the same target (a run killed after its commit, then
retried), nothing is committed again: the result says ``already_rolled_back``.

Consumer positions are left as they are (as Paimon does); after a destructive
rollback a consumer past the target resumes at its saved id.

The result names the commits involved (``paimon.snapshot_identity``), so lineage can
record the event (``lineage.history_events.record_rollback``): ``started_millis``,
``target_identity``, ``removed_snapshots`` (id and identity of each snapshot the
destructive rollback deleted, read before deleting) and, as latest, ``new_identity``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from .. import faults, fileops
from ..branch._common import snapshot_not_found, tag_not_found
from ..commit_properties import RUN_KEYS, airflow_properties
from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..names import name_profile, validate_tag_name
from ..snapshot_identity import SnapshotIdentity
from ..snapshots import (
    TableLayout,
    latest_snapshot_id,
    read_snapshot,
    read_tag,
    snapshot_ids,
    tag_names,
    to_json,
)
from ..tag._common import resolve_branch
from ..tag.delete import TagInUseError, branches_created_from
from .expire import file_size, finish_pending, run_journal, summarize
from .references import FileSet, ManifestCache, needed_files, require_idle, snapshot_files, where

TAG_ONLY_FIELDS = ("tagCreateTime", "tagTimeRetained")


def rollback(
    table: Any,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
    as_latest: bool = False,
) -> dict[str, Any]:
    """Make ``branch`` (default: the table's branch) read as ``snapshot_id`` or ``tag``."""
    if (snapshot_id is None) == (tag is None):
        raise InvalidArgumentError("give exactly one of snapshot_id or tag to roll back to")
    if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id < 1):
        raise InvalidArgumentError(f"snapshot_id must be a positive integer, got {snapshot_id!r}")
    if not isinstance(as_latest, bool):
        raise InvalidArgumentError(f"as_latest must be True or False, got {as_latest!r}")
    started = int(time.time() * 1000)
    layout = TableLayout.of(table)
    br = resolve_branch(layout, branch, table)
    key = "main" if br is None else br
    require_idle(layout, br)
    if tag is not None:
        validate_tag_name(tag, name_profile(table))
        tag_doc = read_tag(layout, br, tag)
        if tag_doc is None:
            raise tag_not_found(layout, br, tag)
        target_id = int(tag_doc["id"])
        target = read_snapshot(layout, br, target_id) or {k: v for k, v in tag_doc.items() if k not in TAG_ONLY_FIELDS}
    else:
        assert snapshot_id is not None  # exactly one of snapshot_id and tag (checked above)
        target_id = snapshot_id
        found = read_snapshot(layout, br, target_id)
        if found is None:
            raise snapshot_not_found(layout, br, target_id)
        target = found
    cache = ManifestCache(table, layout)
    resumed = finish_pending(layout, cache)
    if as_latest:
        out = _as_latest(table, layout, br, target, tag)
    else:
        out = _destructive(layout, cache, br, target_id, target)
    out.update({"branch": key, "target_snapshot_id": target_id, "tag": tag, "as_latest": as_latest,
                "resumed": resumed, "started_millis": started, "target_identity": _identity(target)})
    if as_latest:
        out["new_identity"] = _identity(read_snapshot(layout, br, int(out["snapshot_id"])))
    return out


def _identity(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    found = SnapshotIdentity.of(doc)
    return None if found is None else found.to_dict()


def _destructive(
    layout: TableLayout, cache: ManifestCache, br: str | None, target_id: int, target: dict[str, Any]
) -> dict[str, Any]:
    later = [sid for sid in snapshot_ids(layout, br) if sid > target_id]
    later_tags = []
    for name in tag_names(layout, br):
        doc = read_tag(layout, br, name)
        if doc is not None and int(doc["id"]) > target_id:
            users = branches_created_from(layout, br, name, doc)
            if users:
                raise TagInUseError(
                    f"cannot roll {where(br)} back to snapshot {target_id}: tag {name!r} would go, and "
                    f"branch {', '.join(repr(u) for u in users)} was created from it; delete that branch first"
                )
            later_tags.append(name)
    if read_snapshot(layout, br, target_id) is None:  # rolled back to a tag of an expired snapshot
        fileops.write_atomic(layout.file_io, layout.snapshot_path(br, target_id), to_json(target))
    faults.check("rollback.restore")
    candidates = FileSet()
    removed = []
    for sid in later:
        doc = read_snapshot(layout, br, sid)
        if doc is not None:
            snapshot_files(doc, cache, f"snapshot {sid}", candidates, live_only=False)
            removed.append({"snapshot_id": sid, **(_identity(doc) or {})})
    for name in later_tags:
        snapshot_files(read_tag(layout, br, name) or {}, cache, f"tag {name!r}", candidates, live_only=False)
    needed = needed_files(cache, exclude=(br, set(later)), exclude_tags=set(later_tags))
    doomed = {p: k for p, k in candidates.kinds.items() if p not in needed}
    done: dict[str, tuple[str, int]] = {}
    if later or later_tags or latest_snapshot_id(layout, br) != target_id:
        doc = {
            "op": "rollback",
            "prefix": "rollback",
            "branch": "main" if br is None else br,
            "snapshot_ids": later,
            "descending": True,
            "tags": later_tags,
            "latest": target_id,
            "files": doomed,
            "sizes": {p: s for p, s in candidates.sizes.items() if p in doomed},
        }
        done = run_journal(layout, cache, doc)
    out = {"removed_snapshot_ids": later, "removed_tags": later_tags, "snapshot_id": target_id,
           "removed_snapshots": removed}
    out.update(summarize(done, candidates, needed, False, layout))
    return out


def _as_latest(table: Any, layout: TableLayout, br: str | None, target: dict[str, Any], tag: str | None) -> dict[str, Any]:
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    latest = latest_snapshot_id(layout, br)
    n = (latest or 0) + 1
    ids = snapshot_ids(layout, br)
    if ids and ids[-1] >= n:
        n = ids[-1] + 1
    if ids and _rolls_back_to(read_snapshot(layout, br, ids[-1]), target):
        # The newest snapshot already is a rollback to this target (a run killed after
        # its commit, then retried): finish its switch instead of committing it again.
        fileops.write_atomic(layout.file_io, layout.hint_path(br, "LATEST"), str(ids[-1]))
        return {"snapshot_id": ids[-1], "already_rolled_back": True, **_nothing_deleted(), "bytes_written": 0}
    latest_doc = read_snapshot(layout, br, latest) if latest is not None else None
    op_id = uuid.uuid4().hex
    base_name, delta_name = f"manifest-list-{op_id}-0", f"manifest-list-{op_id}-1"
    manager = ManifestListManager(table)
    manager.manifest_path = f"{layout.table_path}/manifest"  # shared root, also for a branch table
    metas = manager.read(target["baseManifestList"], target.get("baseManifestListSize"))
    metas += manager.read(target["deltaManifestList"], target.get("deltaManifestListSize"))
    base_size = manager.write(base_name, metas)
    delta_size = manager.write(delta_name, [])
    faults.check("rollback.manifests")
    total = int(target.get("totalRecordCount") or 0)
    doc = {k: v for k, v in target.items() if k not in TAG_ONLY_FIELDS}
    for k in ("changelogManifestList", "changelogManifestListSize", "changelogRecordCount"):
        doc.pop(k, None)
    # the run that rolled back (AIRFLOW_CTX_*), not the one that wrote the target snapshot
    props = {k: v for k, v in (doc.get("properties") or {}).items() if k not in RUN_KEYS}
    props.update(airflow_properties())
    props["rollback.snapshot-id"] = str(target["id"])
    if tag is not None:
        props["rollback.tag"] = tag
    doc.update(
        {
            "id": n,
            "baseManifestList": base_name,
            "baseManifestListSize": int(base_size),
            "deltaManifestList": delta_name,
            "deltaManifestListSize": int(delta_size),
            "commitKind": "OVERWRITE",
            "timeMillis": int(time.time() * 1000),
            "totalRecordCount": total,
            "deltaRecordCount": total - int((latest_doc or {}).get("totalRecordCount") or 0),
            "uuid": str(uuid.uuid4()),
            "properties": props,
        }
    )
    if not fileops.create_new(layout.file_io, layout.snapshot_path(br, n), to_json(doc)):
        for name in (base_name, delta_name):
            fileops.delete_file(layout.file_io, f"{layout.table_path}/manifest/{name}")
        raise ConcurrentModificationError(
            f"a commit to {where(br)} took snapshot {n} during the rollback; nothing was rolled back, run it again"
        )
    faults.check("rollback.switch")
    fileops.write_atomic(layout.file_io, layout.hint_path(br, "LATEST"), str(n))
    return {"snapshot_id": n, "already_rolled_back": False, **_nothing_deleted(),
            "bytes_written": int(file_size(layout.file_io, layout.snapshot_path(br, n)))}


def _nothing_deleted() -> dict[str, Any]:
    return {"removed_snapshot_ids": [], "removed_snapshots": [], "removed_tags": [], "deleted_files": [],
            "deleted_file_count": 0,
            "deleted_bytes": 0, "deleted_by_kind": {}, "kept_because": {}}


def _rolls_back_to(doc: dict[str, Any] | None, target: dict[str, Any]) -> bool:
    """Whether snapshot ``doc`` is an ``as_latest`` rollback that reads as ``target``."""
    props = (doc or {}).get("properties") or {}
    return doc is not None and doc.get("commitKind") == "OVERWRITE" and props.get("rollback.snapshot-id") == str(
        target["id"]
    )
