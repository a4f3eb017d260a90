"""Create a tag of a snapshot (the latest, or a given one) on main or a branch.

The tag file is the snapshot's JSON document, as Paimon Java writes a tag without a
retention, so Java and pypaimon read it; it is created only if absent, in one step.

With ``time_retained`` the document also carries Paimon Java's ``tagCreateTime``
(``LocalDateTime.now()`` as Jackson writes it: ``[y, mo, d, h, mi(, s(, ns))]``) and
``tagTimeRetained`` (a ``Duration`` as decimal seconds), as ``TagManager.createOrReplaceTag``
does through ``Tag.fromSnapshotAndTagTtl``; ``maintenance.expire_tags`` (and Java's
``TagTimeExpire``) delete the tag once ``tagCreateTime + tagTimeRetained`` has passed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import fileops
from ..branch._common import snapshot_not_found
from ..durations import duration_text, parse_duration
from ..errors import AlreadyExistsError, InvalidArgumentError, SnapshotNotFoundError
from ..names import name_profile, refuse_lookalike, validate_tag_name
from ..snapshots import TableLayout, latest_snapshot_id, read_snapshot, read_tag, tag_names, to_json
from ._common import resolve_branch


def create_tag(
    table: Any,
    tag: str,
    *,
    branch: str | None = None,
    snapshot_id: int | None = None,
    time_retained: Any = None,
) -> dict[str, Any]:
    """Tag ``snapshot_id`` (default: latest) of ``branch`` (default: main) as ``tag``.

    ``time_retained`` (a ``timedelta``, seconds, or ``"7 d"``): the tag expires that
    long after now (see ``maintenance.expire_tags``); ``None``: it never expires.
    """
    layout = TableLayout.of(table)
    validate_tag_name(tag, name_profile(table))
    retained = None if time_retained is None else parse_duration(time_retained, "time_retained", allow_zero=False)
    br = resolve_branch(layout, branch, table)
    where = "main" if br is None else f"branch {br!r}"
    if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id <= 0):
        raise InvalidArgumentError(f"snapshot id must be a positive integer, got {snapshot_id!r}")
    if read_tag(layout, br, tag) is not None:
        raise AlreadyExistsError(f"tag {tag!r} already exists on {where}")
    refuse_lookalike("tag", tag, tag_names(layout, br))
    if snapshot_id is None:
        snapshot_id = latest_snapshot_id(layout, br)
        if snapshot_id is None:
            raise SnapshotNotFoundError(f"{where} has no snapshot to tag yet; write to it first")
    doc = read_snapshot(layout, br, snapshot_id)
    if doc is None:
        raise snapshot_not_found(layout, br, snapshot_id)
    if retained is not None:
        doc = with_retention(doc, retained, datetime.now())
    if not fileops.create_new(layout.file_io, layout.tag_path(br, tag), to_json(doc)):
        raise AlreadyExistsError(f"tag {tag!r} already exists on {where}")
    out: dict[str, Any] = {"tag": tag, "branch": br or "main", "snapshot_id": snapshot_id}
    if retained is not None:
        out["time_retained"] = duration_text(retained)
        out["time_retained_seconds"] = retained.total_seconds()
    return out


def with_retention(doc: dict[str, Any], retained: Any, created: datetime) -> dict[str, Any]:
    """The snapshot document as a Java ``Tag`` with a TTL (``created`` is local time, as Java's)."""
    from pypaimon.common.time_utils import duration_to_json_seconds, local_datetime_to_json_array

    out = {k: v for k, v in doc.items() if k not in ("tagCreateTime", "tagTimeRetained")}
    out["tagCreateTime"] = local_datetime_to_json_array(created)
    out["tagTimeRetained"] = duration_to_json_seconds(retained)
    return out
