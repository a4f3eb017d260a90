"""A table's snapshot history as lanes (main and every branch), one bounded page at a time.

What the "Paimon table history" page draws, read straight from the table's files (no
Spark, no Airflow, nothing written):

* **lanes**: main, then every branch by name; per lane its snapshot count, first and
  latest id, tags, and where it started (its *branch point*: a branch's first snapshot
  is a copy of the snapshot, or tagged snapshot, of main or another branch it was made
  from — same id, same ``uuid``/manifest lists);
* **rows**: every snapshot of every lane, newest first (by id, then lane), cut into
  pages of at most ``MAX_PAGE_SIZE``. No snapshot directory is listed: Paimon numbers
  snapshots ``1, 2, 3...`` and expiry removes them from the oldest up, so a lane's
  snapshots are the ids from its earliest to its latest (``_lane_range``: the
  ``LATEST``/``EARLIEST`` hints, checked and corrected with a few existence checks by
  galloping and bisection), and a page's ids follow by arithmetic. Only the page's
  snapshot files are read, so a page of a table with 100 or 1,000,000 snapshots costs
  the same. A snapshot inside the range that is gone when the page reads it (expired
  meanwhile, or a gap another tool left) is left out of the page, which says so;
  counts are then upper bounds. A lane without a ``LATEST`` hint (not written by
  Paimon, pypaimon or this package) is listed once. A row gives the commit kind (APPEND, COMPACT, OVERWRITE...),
  time, schema, record counts, file counts (this commit's added/deleted data files, read
  from its delta manifest list within a time budget), the tags on it, and the Airflow
  run and Spark application that wrote it (``commit_properties``);
* **events**: a ``replace_main`` row (the ``replace-main.*`` properties
  ``branch.replace_main`` writes, with its backup branch or tag), and *fast-forwards*:
  ``branch.fast_forward`` copies the branch's snapshots onto main, so main's snapshots
  above the branch point that are the branch's own files mark the fast-forward (found
  by bisection: the copied ids are a contiguous range from the branch point).

Everything is returned as plain JSON-able dicts; values are the files' own (the page
escapes them). Lanes are capped at ``MAX_LANES`` and tags at ``MAX_TAGS`` per lane; a cut
answer says so in ``truncated_reason``.
"""

from __future__ import annotations

import time
from typing import Any

from . import fileops
from .commit_properties import run_of
from .errors import InvalidArgumentError
from .snapshots import (
    TableLayout,
    branch_names,
    read_hint,
    read_snapshot,
    read_tag,
    snapshot_ids,
    tag_names,
)

DEFAULT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 500
MAX_LANES = 100
MAX_TAGS = 200
#: seconds spent reading manifest lists for file counts per page (rows after it: null)
FILE_COUNT_BUDGET_S = 5.0
MAIN = "main"
BACKUP_PREFIX = "backup_main_"  # replace_main.default_backup_name()


def _identity(doc: dict[str, Any] | None) -> tuple | None:
    """What makes two snapshot files the same commit (a copy made by a branch op)."""
    if not doc:
        return None
    return (doc.get("uuid"), doc.get("baseManifestList"), doc.get("deltaManifestList"), doc.get("timeMillis"))


class _Reader:
    """Snapshot documents of one table, each read at most once per request."""

    def __init__(self, layout: TableLayout) -> None:
        self.layout = layout
        self._docs: dict[tuple[str, int], dict[str, Any] | None] = {}
        self.missing: set[tuple[str, int]] = set()

    def doc(self, lane: str, sid: int) -> dict[str, Any] | None:
        key = (lane, sid)
        if key not in self._docs:
            try:
                self._docs[key] = read_snapshot(self.layout, None if lane == MAIN else lane, sid)
                if self._docs[key] is None:
                    self.missing.add(key)
            except ValueError:  # not JSON: shown as an unreadable row, never a failed page
                self._docs[key] = None
        return self._docs[key]

    def same(self, lane_a: str, lane_b: str, sid: int) -> bool:
        a = _identity(self.doc(lane_a, sid))
        return a is not None and a == _identity(self.doc(lane_b, sid))

    def exists(self, lane: str, sid: int) -> bool:
        return sid > 0 and fileops.exists(self.layout.file_io, self.layout.snapshot_path(_branch(lane), sid))


def _branch(lane: str) -> str | None:
    return None if lane == MAIN else lane


#: (earliest, latest) snapshot id of a lane; None: no snapshot
Range = tuple[int, int] | None


def _gallop(exists: Any, known: int, step: int) -> int:
    """From ``known`` (exists) towards ``step``'s sign: the last id that exists before the
    first that does not (ids present form one contiguous run)."""
    good, probe, jump = known, known + step, step
    while probe > 0 and exists(probe):
        good, jump = probe, jump * 2
        probe = good + jump
    bad = probe  # does not exist (or is 0); the edge lies between good and bad
    while abs(bad - good) > 1:
        mid = (good + bad) // 2
        if exists(mid):
            good = mid
        else:
            bad = mid
    return good


def _lane_range(reader: _Reader, lane: str) -> Range:
    """A lane's (earliest, latest) snapshot id without listing its directory.

    Latest: the ``LATEST`` hint, moved up past ids written after it (Paimon writes the
    hint after the snapshot; a crash in between leaves it behind). Earliest: the
    ``EARLIEST`` hint (or 1 when there is none, as pypaimon reads it), moved to the
    first id that exists (expiry deletes from the oldest up and rewrites the hint last).
    Without a ``LATEST`` hint, or when the hinted snapshot is gone, the directory is
    listed once (what Paimon Java does too).
    """
    layout, br = reader.layout, _branch(lane)
    hint = read_hint(layout, br, "LATEST")
    if hint is None or hint < 1 or not reader.exists(lane, hint):
        ids = snapshot_ids(layout, br)
        return (ids[0], ids[-1]) if ids else None
    latest = _gallop(lambda i: reader.exists(lane, i), hint, 1)
    low = read_hint(layout, br, "EARLIEST")
    low = 1 if low is None or low < 1 or low > latest else low
    if reader.exists(lane, low):
        return _gallop(lambda i: reader.exists(lane, i), low, -1), latest
    lo, hi = low, latest  # lo does not exist, hi does: bisect for the first that does
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reader.exists(lane, mid):
            hi = mid
        else:
            lo = mid
    return hi, latest


def _count(rng: Range, at_least: int = 1) -> int:
    """Ids of ``rng`` that are ``>= at_least``."""
    if rng is None or rng[1] < at_least:
        return 0
    return rng[1] - max(rng[0], at_least) + 1


def _page_order(ranges: list[Range], start: int, size: int) -> list[tuple[int, int]]:
    """Rows ``start .. start+size-1`` of the history as (snapshot id, lane index), newest
    first and, for one id, the higher lane index first: by arithmetic on the ranges."""
    present = [r for r in ranges if r is not None]
    if not present:
        return []
    lo, hi = min(r[0] for r in present), max(r[1] for r in present)
    # the largest id whose rows reach past row ``start``: sum(count(>= id)) > start
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(_count(r, mid) for r in ranges) > start:
            lo = mid
        else:
            hi = mid - 1
    sid, skip = lo, start - sum(_count(r, lo + 1) for r in ranges)
    out: list[tuple[int, int]] = []
    while len(out) < size and sid > 0:
        lanes = [i for i in reversed(range(len(ranges))) if (r := ranges[i]) is not None and r[0] <= sid <= r[1]]
        for index in lanes[skip:]:
            out.append((sid, index))
            if len(out) == size:
                break
        skip = 0
        below = [min(r[1], sid - 1) for r in ranges if r is not None and r[0] <= sid - 1]
        sid = max(below) if below else 0
    return out


def _check_page(page: Any, page_size: Any) -> tuple[int, int]:
    for name, value in (("page", page), ("page_size", page_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if page < 0:
        raise InvalidArgumentError(f"page must be 0 or more, got {page}")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidArgumentError(f"page_size must be 1..{MAX_PAGE_SIZE}, got {page_size}")
    return page, page_size


def _tags(layout: TableLayout, lane: str) -> tuple[list[dict[str, Any]], bool]:
    names = tag_names(layout, None if lane == MAIN else lane)
    out = []
    for name in names[:MAX_TAGS]:
        try:
            doc = read_tag(layout, None if lane == MAIN else lane, name)
            out.append({"name": name, "snapshot_id": int(doc["id"])} if doc else None)
        except (ValueError, KeyError, TypeError):
            continue
    return [t for t in out if t], len(names) > MAX_TAGS


def _branch_point(reader: _Reader, lane: str, rng: Range, lanes: list[str], tags: list[dict]) -> dict | None:
    """Where ``lane`` started: the lane (main first) holding a copy of its first snapshot."""
    if rng is None:
        return {"lane": None, "snapshot_id": None, "tag": None, "empty": True}
    first = rng[0]
    tag = next((t["name"] for t in tags if t["snapshot_id"] == first), None)
    for other in [MAIN, *[x for x in lanes if x not in (MAIN, lane)]]:
        if reader.same(other, lane, first):
            return {"lane": other, "snapshot_id": first, "tag": tag, "empty": False}
    return None  # made from a snapshot that has since expired, or first written empty


def _fast_forward(reader: _Reader, lane: str, rng: Range, main: Range) -> int | None:
    """The highest main snapshot above the branch point that is a copy of ``lane``'s (bisection)."""
    if rng is None or main is None:
        return None
    shared = range(max(rng[0] + 1, main[0]), min(rng[1], main[1]) + 1)
    lo, hi, found = 0, len(shared) - 1, None
    while lo <= hi:  # copies form a prefix of the shared ids: same, same, ..., different, ...
        mid = (lo + hi) // 2
        if reader.same(MAIN, lane, shared[mid]):
            found, lo = shared[mid], mid + 1
        else:
            hi = mid - 1
    return found


def _file_counts(name: str, size: Any, manager: Any) -> dict[str, int]:
    """Data files this commit added and deleted (its delta manifest list)."""
    metas = manager.read(name, int(size) if isinstance(size, int) else None)
    return {
        "added": sum(int(m.num_added_files) for m in metas),
        "deleted": sum(int(m.num_deleted_files) for m in metas),
    }


def _row(lane: str, sid: int, doc: dict[str, Any] | None, lane_tags: list[dict]) -> dict[str, Any]:
    tags = [t["name"] for t in lane_tags if t["snapshot_id"] == sid]
    if doc is None:
        return {"lane": lane, "snapshot_id": sid, "readable": False, "tags": tags, "events": []}
    props = raw if isinstance(raw := doc.get("properties"), dict) else {}
    run = run_of(props)
    return {
        "lane": lane,
        "snapshot_id": sid,
        "readable": True,
        "kind": str(doc.get("commitKind", "")),
        "time_millis": doc.get("timeMillis"),
        "schema_id": doc.get("schemaId"),
        "total_records": doc.get("totalRecordCount"),
        "delta_records": doc.get("deltaRecordCount"),
        "files": None,
        "tags": tags,
        "run": None if run is None else {
            "dag_id": run.dag_id, "run_id": run.run_id, "task_id": run.task_id,
            "try_number": run.try_number, "map_index": run.map_index, "spark_app_id": run.spark_app_id,
        },
        "spark_app_id": run.spark_app_id if run else (str(props["spark.app.id"]) if props.get("spark.app.id") else None),
        "copy_of": None,
        "events": _events(props) if lane == MAIN else [],  # a branch's copy did not replace main
    }


def _events(props: dict[str, Any]) -> list[dict[str, Any]]:
    if "replace-main.branch" not in props:
        return []
    event: dict[str, Any] = {
        "type": "replace_main",
        "branch": str(props.get("replace-main.branch")),
        "branch_snapshot_id": _int(props.get("replace-main.branch-snapshot-id")),
        "previous_snapshot_id": _int(props.get("replace-main.previous-snapshot-id")),
        "backup": None,
    }
    if props.get("replace-main.backup-name"):
        event["backup"] = {"kind": str(props.get("replace-main.backup-kind") or "branch"),
                           "name": str(props["replace-main.backup-name"])}
    return [event]


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def table_history(
    table: Any, *, page: int = 0, page_size: int = DEFAULT_PAGE_SIZE, file_counts: bool = True
) -> dict[str, Any]:
    """Page ``page`` (0 = newest) of the snapshot history of ``table`` (a pypaimon table, any branch).

    Returns ``{"lanes", "rows", "page", "page_size", "pages", "total_rows", "summary",
    "truncated", "truncated_reason"}``; see the module doc. A page past the end is an
    ``InvalidArgumentError`` naming the pages there are.
    """
    page, page_size = _check_page(page, page_size)
    layout = TableLayout.of(table)
    reader = _Reader(layout)
    reasons = []
    branches = branch_names(layout)
    if len(branches) > MAX_LANES - 1:
        reasons.append(f"{len(branches)} branches: only the first {MAX_LANES - 1} by name are drawn")
        branches = branches[: MAX_LANES - 1]
    names = [MAIN, *branches]
    ranges = {lane: _lane_range(reader, lane) for lane in names}
    tags: dict[str, list[dict]] = {}
    for lane in names:
        tags[lane], cut = _tags(layout, lane)
        if cut:
            reasons.append(f"lane {lane!r} has more than {MAX_TAGS} tags: the first {MAX_TAGS} by name are shown")
    lanes = []
    for index, lane in enumerate(names):
        rng = ranges[lane]
        info: dict[str, Any] = {
            "name": lane, "index": index, "snapshot_count": _count(rng),
            "earliest": rng[0] if rng else None, "latest": rng[1] if rng else None,
            "tags": tags[lane], "branch_point": None, "fast_forwarded_at": None,
            "backup": lane.startswith(BACKUP_PREFIX),
        }
        if lane != MAIN:
            info["branch_point"] = _branch_point(reader, lane, rng, names, tags[lane])
            info["fast_forwarded_at"] = _fast_forward(reader, lane, rng, ranges[MAIN])
        lanes.append(info)
    by_name = {lane["name"]: lane for lane in lanes}

    # newest first; for one id, branches above main (a branch's first row sits on its fork)
    total = sum(_count(ranges[lane]) for lane in names)
    pages = max(1, -(-total // page_size))
    if page >= pages:
        raise InvalidArgumentError(f"page {page} does not exist: the history has {pages} page(s) of {page_size}")
    rows = []
    deltas: list[tuple[str, Any] | None] = []
    kinds: dict[str, int] = {}
    gone = 0
    for sid, index in _page_order([ranges[lane] for lane in names], page * page_size, page_size):
        lane = names[index]
        doc = reader.doc(lane, sid)
        if (lane, sid) in reader.missing:
            gone += 1
            continue
        row = _row(lane, sid, doc, tags[lane])
        info = by_name[lane]
        if lane != MAIN:
            bp = info["branch_point"]
            if bp and bp["snapshot_id"] == sid:
                row["events"].append({"type": "branch_point", "from_lane": bp["lane"], "tag": bp["tag"]})
            ff = info["fast_forwarded_at"]
            if bp and bp["lane"] == MAIN and ff is not None and bp["snapshot_id"] <= sid <= ff:
                row["copy_of"] = MAIN
        else:
            for other in lanes[1:]:
                if other["fast_forwarded_at"] == sid:
                    row["events"].append({"type": "fast_forward", "branch": other["name"]})
            for event in row["events"]:
                backup = event.get("backup")
                if backup and backup["kind"] == "branch" and backup["name"] in by_name:
                    by_name[backup["name"]]["backup"] = True
        if row.get("kind"):
            kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
        rows.append(row)
        meta = doc or {}
        delta = meta.get("deltaManifestList")
        deltas.append((str(delta), meta.get("deltaManifestListSize")) if delta else None)
    if gone:
        reasons.append(f"{gone} snapshot(s) of this page were gone when it was read (expired meanwhile, or a "
                       "gap in the ids): not shown; counts are upper bounds")
    files_cut = _add_file_counts(table, rows, deltas) if file_counts else False
    if files_cut:
        reasons.append(f"file counts stopped after {FILE_COUNT_BUDGET_S:g} s: later rows show none")
    return {
        "lanes": lanes,
        "rows": rows,
        "page": page,
        "page_size": page_size,
        "pages": pages,
        "total_rows": total,
        "summary": {
            "snapshots": {lane: _count(ranges[lane]) for lane in names},
            "branches": len(names) - 1,
            "tags": sum(len(t) for t in tags.values()),
            "kinds_on_page": kinds,
        },
        "truncated": bool(reasons),
        "truncated_reason": "; ".join(reasons) or None,
    }


def _add_file_counts(table: Any, rows: list[dict[str, Any]], deltas: list[tuple[str, Any] | None]) -> bool:
    """Fill ``files`` of the rows within the time budget; True when the budget ran out.

    ``deltas[i]`` is row i's (delta manifest list, size), None for an unreadable row.
    """
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    manager = ManifestListManager(table)
    deadline = time.monotonic() + FILE_COUNT_BUDGET_S
    seen: dict[str, dict[str, int] | None] = {}
    for row, delta in zip(rows, deltas, strict=True):
        if delta is None:
            continue
        if time.monotonic() > deadline:
            return True
        name, size = delta
        if name not in seen:
            try:
                seen[name] = _file_counts(name, size, manager)
            except Exception:  # noqa: BLE001 - a missing/unreadable manifest list: no counts, not a failed page
                seen[name] = None
        row["files"] = seen[name]
    return False
