"""What a table still needs: the files each snapshot, tag, branch and journal names.

Data files and manifests are shared under the table root by main and every branch
(a branch created from a tag or snapshot copies the snapshot *document*, never the
files), so no maintenance step may decide alone from one branch's history. This module
answers, for the whole table, "which files does anything still reference":

- every snapshot file present on main and on each ``branch/branch-NAME/`` (expiry
  removes the ones it expires from this set before deciding);
- every tag of main and of each branch (a tag file is a snapshot document, so it keeps
  its snapshot's files even after the snapshot itself has expired);
- consumers: a consumer's ``nextSnapshot`` keeps that snapshot and all later ones from
  expiring (see ``expire``), so they stay in the snapshot set above;
- a pending fast-forward / replace-main journal (``.branch-op.json``): the manifest
  lists replace-main writes before its switch are named by no snapshot yet.

Manifest files are read with ``fastavro`` directly, keeping only the fields that name
files (kind, partition, bucket, level, file name, extra files, external path): it does
not depend on which branch's schemas the table object was loaded with, and it is far
cheaper than building pypaimon's ``DataFileMeta`` with statistics. Manifest files
never change once written, so one :class:`ManifestCache` reads each file once.
"""

from __future__ import annotations

import io
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from .. import fileops
from ..branch.journal import describe, read_journal
from ..errors import ConcurrentModificationError
from ..manifest_reader import KIND_ADD
from ..snapshots import TableLayout, branch_names, read_snapshot, read_tag, snapshot_ids, tag_names

MANIFEST_DIR = "manifest"
INDEX_DIR = "index"
STATISTICS_DIR = "statistics"
_PROBE = "__paimon_file__"


class MissingMetadataError(FileNotFoundError):
    """A manifest list or manifest that a snapshot names is not there."""


class TimeBoundExceeded(TimeoutError):  # noqa: N818 - a public name
    """Working out what is still needed took longer than the caller allowed.

    Raised only while planning (before anything is deleted), so the caller can give up
    with the table unchanged: a writer's after-commit expiry must not hold a commit.
    """


@dataclass(frozen=True)
class Entry:
    """One manifest entry reduced to what identifies and locates its files."""

    kind: int
    ident: tuple  # Paimon's FileEntry.Identifier (partition bytes instead of values)
    paths: tuple[str, ...]  # the data file and its extra files
    size: int


@dataclass
class FileSet:
    """Files by full path, each with the first thing found that names it."""

    kinds: dict[str, str] = field(default_factory=dict)  # path -> kind
    owners: dict[str, str] = field(default_factory=dict)  # path -> "snapshot 7 of main", ...
    sizes: dict[str, int] = field(default_factory=dict)  # path -> bytes when the manifest says
    expanded: set[str] = field(default_factory=set)  # manifests whose every entry is in

    def add(self, path: str, kind: str, owner: str, size: int | None = None) -> None:
        if path not in self.kinds:
            self.kinds[path] = kind
            self.owners[path] = owner
        if size is not None:
            self.sizes.setdefault(path, int(size))

    def __contains__(self, path: object) -> bool:
        return path in self.kinds

    def names(self) -> set[str]:
        return {p.rsplit("/", 1)[-1] for p in self.kinds}


class BoundedCache:
    """A least-recently-used map bounded by total weight (entries held), thread-safe.

    Manifest lists and manifests are immutable and uniquely named, so what was read
    from one stays right for as long as it is kept; bounding by weight keeps the
    memory of a long-running writer flat however many commits it makes.
    """

    def __init__(self, max_weight: int) -> None:
        self.max_weight = max_weight
        self.weight = 0
        self._data: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: Any, value: Any, weight: int) -> None:
        weight = max(1, weight)
        if weight > self.max_weight:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self._data[key] = (value, weight)
            self.weight += weight
            while self.weight > self.max_weight:
                _, (_, w) = self._data.popitem(last=False)
                self.weight -= w

    def __len__(self) -> int:
        return len(self._data)

    def discard(self, key: Any) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.weight -= old[1]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.weight = 0


#: Shared by the writers' after-commit expiry (``ManifestCache(shared=True)``): a
#: writer committing again and again re-reads only the manifests its new commits wrote.
#: The bound (manifest-list and manifest entries held) keeps it to a few tens of MiB.
SHARED_MANIFESTS = BoundedCache(max_weight=50_000)


class ManifestCache:
    """Reads manifest lists, manifests and index manifests once per file name.

    ``shared=True`` also keeps them in :data:`SHARED_MANIFESTS` across instances
    (keyed by the file's full path), for callers that run again and again in one
    process, such as a writer expiring after each commit.
    """

    def __init__(self, table: Any, layout: TableLayout, *, shared: bool = False) -> None:
        self.table = table
        self.layout = layout
        self.manifest_dir = f"{layout.table_path}/{MANIFEST_DIR}"
        self.shared = SHARED_MANIFESTS if shared else None
        self._lists: dict[str, list[tuple[str, int]]] = {}
        self._manifests: dict[str, list[Entry]] = {}
        self._index: dict[str, list[tuple[str, int]]] = {}
        self._partitions: dict[bytes, tuple] = {}
        self._buckets: dict[tuple[bytes, int], str] = {}  # -> bucket folder path with "/"

    def _read_bytes(self, path: str) -> bytes:
        lp = fileops.local_path(path)
        try:
            if lp is not None:
                with open(lp, "rb") as fh:
                    return fh.read()
            if not self.layout.file_io.exists(path):
                raise FileNotFoundError(path)
            with self.layout.file_io.new_input_stream(path) as stream:
                return stream.read()
        except FileNotFoundError:
            raise MissingMetadataError(path) from None

    def _avro(self, path: str) -> list[dict[str, Any]]:
        import fastavro

        # fastavro types an item as any Avro value; a Paimon manifest's schema is a
        # record, so every item is a dict
        return cast(list[dict[str, Any]], list(fastavro.reader(io.BytesIO(self._read_bytes(path)))))

    def forget(self, paths: Any) -> None:
        """Drop deleted files from the shared cache (their names never come back)."""
        if self.shared is not None:
            for path in paths:
                self.shared.discard(("list", path))
                self.shared.discard(("manifest", path))

    def manifest_list(self, name: str) -> list[tuple[str, int]]:
        """(manifest file name, size) of every manifest in the list ``name``."""
        if name not in self._lists:
            key = ("list", f"{self.manifest_dir}/{name}")
            hit = self.shared.get(key) if self.shared is not None else None
            if hit is None:
                recs = self._avro(f"{self.manifest_dir}/{name}")
                hit = [(r["_FILE_NAME"], int(r.get("_FILE_SIZE") or 0)) for r in recs]
                if self.shared is not None:
                    self.shared.put(key, hit, len(hit))
            self._lists[name] = hit
        return self._lists[name]

    def manifest(self, name: str) -> list[Entry]:
        """The entries of manifest ``name`` (ADD and DELETE, in order)."""
        if name not in self._manifests:
            key = ("manifest", f"{self.manifest_dir}/{name}")
            hit = self.shared.get(key) if self.shared is not None else None
            if hit is not None:
                self._manifests[name] = hit
                return hit
            out = []
            for r in self._avro(f"{self.manifest_dir}/{name}"):
                f = r["_FILE"]
                extra = tuple(f.get("_EXTRA_FILES") or ())
                ident = (
                    bytes(r["_PARTITION"]),
                    r["_BUCKET"],
                    f.get("_LEVEL"),
                    f["_FILE_NAME"],
                    extra,
                    f.get("_EMBEDDED_FILE_INDEX"),
                    f.get("_EXTERNAL_PATH"),
                )
                path = self._data_path(r["_PARTITION"], r["_BUCKET"], f["_FILE_NAME"], f.get("_EXTERNAL_PATH"))
                parent = path.rsplit("/", 1)[0]
                paths = (path, *(f"{parent}/{x}" for x in extra))
                out.append(Entry(int(r["_KIND"]), ident, paths, int(f.get("_FILE_SIZE") or 0)))
            self._manifests[name] = out
            if self.shared is not None:
                self.shared.put(key, out, len(out))
        return self._manifests[name]

    def index_files(self, name: str) -> list[tuple[str, int]]:
        """(path, size) of the index files an index manifest names (ADD entries)."""
        if name not in self._index:
            from pypaimon.manifest.index_manifest_file import IndexManifestFile

            path = f"{self.manifest_dir}/{name}"
            if not fileops.exists(self.layout.file_io, path):
                raise MissingMetadataError(path)
            out = []
            for e in IndexManifestFile(self.table).read(name):
                meta = e.index_file
                ext = getattr(meta, "external_path", None)
                p = _io_path(ext) if ext else f"{self.layout.table_path}/{INDEX_DIR}/{meta.file_name}"
                out.append((p, int(getattr(meta, "file_size", 0) or 0)))
            self._index[name] = out
        return self._index[name]

    def _data_path(self, partition: bytes, bucket: int, name: str, external: str | None) -> str:
        if external:
            return _io_path(external)
        key = (bytes(partition), bucket)
        if key not in self._buckets:
            from pypaimon.utils.file_store_path_factory import canonical_data_file_path

            probe = canonical_data_file_path(self.table, self._partition_values(partition), bucket, _PROBE)
            self._buckets[key] = probe[: -len(_PROBE)]
        return self._buckets[key] + name

    def _partition_values(self, raw: bytes) -> tuple:
        key = bytes(raw)
        if key not in self._partitions:
            fields = self.table.partition_keys_fields
            if not fields:
                self._partitions[key] = ()
            else:
                from pypaimon.table.row.generic_row import GenericRowDeserializer

                self._partitions[key] = tuple(GenericRowDeserializer.from_bytes(key, fields).values)
        return self._partitions[key]


def _io_path(path: str) -> str:
    from pypaimon.utils.path import to_file_io_path

    return to_file_io_path(str(path))


def snapshot_files(
    doc: dict[str, Any],
    cache: ManifestCache,
    owner: str,
    out: FileSet,
    *,
    live_only: bool,
    entries_of: Callable[[str], list[Entry]] | None = None,
) -> None:
    """Add every file snapshot document ``doc`` needs to ``out``.

    ``live_only``: data files only if they are alive in the snapshot (ADD entries not
    cancelled by a DELETE of the same file in its base or delta manifests), which is
    what a reader of the snapshot opens. Otherwise every data file any of its manifests
    names (what orphan cleanup keeps, as Paimon Java's does). ``entries_of`` replaces
    ``cache.manifest`` to look at fewer entries (see ``needed_files``'s ``only``).
    """
    entries_of = entries_of or cache.manifest
    mdir = cache.manifest_dir
    lists = [doc.get("baseManifestList"), doc.get("deltaManifestList")]
    manifests: list[str] = []
    for name in lists:
        if name:
            out.add(f"{mdir}/{name}", "manifest_list", owner)
            for mname, size in cache.manifest_list(name):
                out.add(f"{mdir}/{mname}", "manifest", owner, size)
                manifests.append(mname)
    if live_only:
        live: dict[tuple, Entry] = {}
        for mname in manifests:
            for e in entries_of(mname):
                if e.kind == KIND_ADD:
                    live[e.ident] = e
                else:
                    live.pop(e.ident, None)
        entries: list[Entry] = list(live.values())
    else:
        # every entry of a manifest names the same files whoever reads it: expand once
        entries = [e for mname in manifests if mname not in out.expanded for e in entries_of(mname)]
        out.expanded.update(manifests)
    for e in entries:
        for i, p in enumerate(e.paths):
            out.add(p, "data", owner, e.size if i == 0 else None)
    changelog = doc.get("changelogManifestList")
    if changelog:
        out.add(f"{mdir}/{changelog}", "manifest_list", owner)
        for mname, size in cache.manifest_list(changelog):
            out.add(f"{mdir}/{mname}", "manifest", owner, size)
            if mname in out.expanded:
                continue
            out.expanded.add(mname)
            for e in entries_of(mname):
                for i, p in enumerate(e.paths):
                    out.add(p, "changelog", owner, e.size if i == 0 else None)
    index = doc.get("indexManifest")
    if index:
        out.add(f"{mdir}/{index}", "index_manifest", owner)
        for p, size in cache.index_files(index):
            out.add(p, "index", owner, size)
    stats = doc.get("statistics")
    if stats:
        out.add(f"{cache.layout.table_path}/{STATISTICS_DIR}/{stats}", "statistics", owner)


def where(branch: str | None) -> str:
    return "main" if branch in (None, "", "main") else f"branch {branch!r}"


def needed_files(
    cache: ManifestCache,
    *,
    exclude: tuple[str | None, set[int]] | None = None,
    exclude_tags: set[str] | None = None,
    live_only: bool = True,
    only: set[str] | None = None,
    deadline: float | None = None,
) -> FileSet:
    """Every file that a snapshot, tag or pending journal of any branch still needs.

    ``exclude`` = (branch, snapshot ids) leaves those snapshots out (the ones being
    expired), ``exclude_tags`` those tags of the same branch. A manifest that cannot be read makes this raise: without knowing what a
    retained snapshot needs, nothing may be deleted.

    ``only``: the caller asks about these data/changelog file paths only (expiry's
    candidates), so each manifest's entries are filtered to them once and every
    retained snapshot merges just those: the answer for those paths is the same
    (a file's liveness depends only on the entries naming it), at a fraction of the
    cost when many snapshots are retained. ``deadline`` (``time.monotonic()``)
    raises :class:`TimeBoundExceeded` once passed.
    """
    layout = cache.layout
    out = FileSet()
    entries_of = None if only is None else _filtered_entries(cache, only)

    skip_branch, skip_ids = exclude if exclude is not None else (None, set())
    skip_key = "main" if skip_branch in (None, "", "main") else skip_branch
    for br in [None, *branch_names(layout)]:
        key = "main" if br is None else br
        for sid in snapshot_ids(layout, br):
            if key == skip_key and sid in skip_ids:
                continue
            if deadline is not None and time.monotonic() > deadline:
                raise TimeBoundExceeded(f"still reading snapshots of {where(br)} at snapshot {sid}")
            doc = read_snapshot(layout, br, sid)
            if doc is not None:
                snapshot_files(doc, cache, f"snapshot {sid} of {where(br)}", out, live_only=live_only,
                               entries_of=entries_of)
        for tag in tag_names(layout, br):
            if key == skip_key and tag in (exclude_tags or ()):
                continue
            doc = read_tag(layout, br, tag)
            if doc is not None:
                snapshot_files(doc, cache, f"tag {tag!r} of {where(br)}", out, live_only=live_only,
                               entries_of=entries_of)
    journal_files(cache, out)
    return out


def _filtered_entries(cache: ManifestCache, only: set[str]) -> Callable[[str], list[Entry]]:
    """``cache.manifest`` restricted to entries naming a path in ``only`` (each manifest filtered once)."""
    filtered: dict[str, list[Entry]] = {}

    def entries_of(name: str) -> list[Entry]:
        if name not in filtered:
            filtered[name] = [e for e in cache.manifest(name) if any(p in only for p in e.paths)]
        return filtered[name]

    return entries_of


def journal_files(cache: ManifestCache, out: FileSet) -> None:
    """Files a pending replace-main has written but no snapshot names yet."""
    doc = read_journal(cache.layout)
    if not doc:
        return
    plan = doc.get("plan") or {}
    owner = f"pending {doc.get('op')} of branch {doc.get('branch')!r}"
    for key in ("base_list", "delta_list"):
        name = plan.get(key)
        if name:
            out.add(f"{cache.manifest_dir}/{name}", "manifest_list", owner)
            try:
                for mname, size in cache.manifest_list(name):
                    out.add(f"{cache.manifest_dir}/{mname}", "manifest", owner, size)
            except MissingMetadataError:
                pass  # not written yet: nothing of it to keep


def branches_in_use(layout: TableLayout) -> dict[str, str]:
    """Branches (``main`` included) a pending branch operation is changing -> why."""
    doc = read_journal(layout)
    if not doc:
        return {}
    why = f"pending {describe(doc)}"
    out = {"main": why}
    if doc.get("branch"):
        out[str(doc["branch"])] = why
    backup = doc.get("backup") or {}
    if backup.get("kind") == "branch" and backup.get("name"):
        out[str(backup["name"])] = why
    return out


def require_idle(layout: TableLayout, branch: str | None, then: str = "") -> None:
    """Refuse to touch ``branch`` while a pending branch operation changes it (rerun that first)."""
    busy = branches_in_use(layout)
    key = "main" if branch is None else branch
    if key in busy:
        raise ConcurrentModificationError(
            f"{where(branch)} is being changed by a {busy[key]}; rerun that operation to finish it"
            + (f", then {then}" if then else " first")
        )
