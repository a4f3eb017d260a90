"""A table's snapshot history as lanes (main and every branch), one bounded page at a time.

What the "Paimon table history" page draws, read straight from the table's files (no
Spark, no Airflow, nothing written):

* **lanes**: main, then every branch by name; per lane its snapshot count, first and
  latest id, tags, and where it started (its *branch point*: a branch's first snapshot
  is a copy of the snapshot, or tagged snapshot, of main or another branch it was made
  from — same id, same ``uuid``/manifest lists);
* **rows**: every snapshot of every lane, newest first (by id, then lane), cut into
  pages of at most ``MAX_PAGE_SIZE``: only the page's snapshot files are read, so a
  table with 10,000 or 1,000,000 snapshots costs one directory listing per lane plus
  one page of reads. A row gives the commit kind (APPEND, COMPACT, OVERWRITE...),
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

from .commit_properties import run_of
from .errors import InvalidArgumentError
from .snapshots import TableLayout, branch_names, read_snapshot, read_tag, snapshot_ids, tag_names

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

    def doc(self, lane: str, sid: int) -> dict[str, Any] | None:
        key = (lane, sid)
        if key not in self._docs:
            try:
                self._docs[key] = read_snapshot(self.layout, None if lane == MAIN else lane, sid)
            except ValueError:  # not JSON: shown as an unreadable row, never a failed page
                self._docs[key] = None
        return self._docs[key]

    def same(self, lane_a: str, lane_b: str, sid: int) -> bool:
        a = _identity(self.doc(lane_a, sid))
        return a is not None and a == _identity(self.doc(lane_b, sid))


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


def _branch_point(reader: _Reader, lane: str, ids: list[int], lanes: list[str], tags: list[dict]) -> dict | None:
    """Where ``lane`` started: the lane (main first) holding a copy of its first snapshot."""
    if not ids:
        return {"lane": None, "snapshot_id": None, "tag": None, "empty": True}
    first = ids[0]
    tag = next((t["name"] for t in tags if t["snapshot_id"] == first), None)
    for other in [MAIN, *[x for x in lanes if x not in (MAIN, lane)]]:
        if reader.same(other, lane, first):
            return {"lane": other, "snapshot_id": first, "tag": tag, "empty": False}
    return None  # made from a snapshot that has since expired, or first written empty


def _fast_forward(reader: _Reader, lane: str, ids: list[int], main_ids: set[int]) -> int | None:
    """The highest main snapshot above the branch point that is a copy of ``lane``'s (bisection)."""
    shared = [i for i in ids[1:] if i in main_ids]
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
    ids = {lane: snapshot_ids(layout, None if lane == MAIN else lane) for lane in names}
    tags: dict[str, list[dict]] = {}
    for lane in names:
        tags[lane], cut = _tags(layout, lane)
        if cut:
            reasons.append(f"lane {lane!r} has more than {MAX_TAGS} tags: the first {MAX_TAGS} by name are shown")
    main_ids = set(ids[MAIN])
    lanes = []
    for index, lane in enumerate(names):
        lane_ids = ids[lane]
        info: dict[str, Any] = {
            "name": lane, "index": index, "snapshot_count": len(lane_ids),
            "earliest": lane_ids[0] if lane_ids else None, "latest": lane_ids[-1] if lane_ids else None,
            "tags": tags[lane], "branch_point": None, "fast_forwarded_at": None,
            "backup": lane.startswith(BACKUP_PREFIX),
        }
        if lane != MAIN:
            info["branch_point"] = _branch_point(reader, lane, lane_ids, names, tags[lane])
            info["fast_forwarded_at"] = _fast_forward(reader, lane, lane_ids, main_ids)
        lanes.append(info)
    by_name = {lane["name"]: lane for lane in lanes}

    # newest first; for one id, branches above main (a branch's first row sits on its fork)
    order = sorted(((sid, i) for i, lane in enumerate(names) for sid in ids[lane]), reverse=True)
    total = len(order)
    pages = max(1, -(-total // page_size))
    if page >= pages:
        raise InvalidArgumentError(f"page {page} does not exist: the history has {pages} page(s) of {page_size}")
    rows = []
    deltas: list[tuple[str, Any] | None] = []
    kinds: dict[str, int] = {}
    for sid, index in order[page * page_size:(page + 1) * page_size]:
        lane = names[index]
        doc = reader.doc(lane, sid)
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
            "snapshots": {lane: len(ids[lane]) for lane in names},
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
