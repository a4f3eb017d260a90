"""Expire tags whose retention has passed (Paimon's ``expire_tags``).

A tag written with a retention carries Paimon Java's ``tagCreateTime`` (a
``LocalDateTime`` as a ``[y, mo, d, h, mi, s, ns]`` array) and ``tagTimeRetained``
(a ``Duration`` in decimal seconds); pypaimon's ``Tag`` reads and writes the same
shape. A tag expires when ``tagCreateTime + tagTimeRetained`` lies in the past (local
time, as Java compares ``LocalDateTime.now()``). Tags without a retention never
expire. A tag a branch was created from is kept (``tag.delete`` refuses it too).

Deleting a tag frees the files only it needed: its tag file goes, then, with what
the table still needs computed again, its unneeded manifests and data files, through
the same journal and steps as snapshot expiry (fault points ``expire_tags.<step>``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import InvalidArgumentError
from ..snapshots import TableLayout, read_tag, tag_names
from ..tag._common import resolve_branch
from ..tag.delete import branches_created_from
from .expire import file_size, finish_pending, run_journal, summarize
from .references import FileSet, ManifestCache, needed_files, require_idle, snapshot_files


def tag_expiry(doc: dict[str, Any]) -> datetime | None:
    """When the tag expires (local time), ``None`` for a tag without retention."""
    created, retained = doc.get("tagCreateTime"), doc.get("tagTimeRetained")
    if created is None or retained is None:
        return None
    from pypaimon.common.time_utils import json_array_to_local_datetime, json_seconds_to_duration

    return json_array_to_local_datetime(created) + json_seconds_to_duration(retained)


def expire_tags(table: Any, *, branch: str | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Delete the tags of ``branch`` (default: the table's branch) whose retention passed."""
    if not isinstance(dry_run, bool):
        raise InvalidArgumentError(f"dry_run must be True or False, got {dry_run!r}")
    layout = TableLayout.of(table)
    br = resolve_branch(layout, branch, table)
    key = "main" if br is None else br
    require_idle(layout, br)
    cache = ManifestCache(table, layout)
    resumed = None if dry_run else finish_pending(layout, cache)
    now = datetime.now()
    expired, kept_tags = [], {}
    for name in tag_names(layout, br):
        doc = read_tag(layout, br, name)
        if doc is None:
            continue
        until = tag_expiry(doc)
        if until is None:
            kept_tags[name] = "no time_retained"
        elif until > now:
            kept_tags[name] = f"retained until {until.isoformat(timespec='seconds')}"
        elif users := branches_created_from(layout, br, name, doc):
            kept_tags[name] = "branch " + ", ".join(repr(u) for u in users) + " was created from it"
        else:
            expired.append(name)
    candidates = FileSet()
    for name in expired:
        snapshot_files(read_tag(layout, br, name) or {}, cache, f"tag {name!r}", candidates, live_only=False)
    needed = needed_files(cache, exclude=(br, set()), exclude_tags=set(expired))
    doomed = {p: k for p, k in candidates.kinds.items() if p not in needed}
    result: dict[str, Any] = {
        "branch": key,
        "dry_run": dry_run,
        "expired_tags": expired,
        "kept_tags": kept_tags,
        "resumed": resumed,
    }
    if dry_run or not expired:
        sized = {p: (k, candidates.sizes.get(p) or file_size(layout.file_io, p)) for p, k in doomed.items()}
        result.update(summarize(sized if dry_run else {}, candidates, needed, dry_run, layout))
        return result
    doc = {
        "op": "expire_tags",
        "prefix": "expire_tags",
        "branch": key,
        "snapshot_ids": [],
        "tags": expired,
        "files": doomed,
        "sizes": {p: s for p, s in candidates.sizes.items() if p in doomed},
    }
    done = run_journal(layout, cache, doc)
    result.update(summarize(done, candidates, needed, dry_run, layout))
    return result
