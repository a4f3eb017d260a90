"""Helpers for the maintenance tests: a table with branches, tags, a consumer and a
replace-main backup; reading every retained state with plain pypaimon; and Paimon
Java's ``ExpireSnapshotsImpl`` / ``SnapshotDeletion`` rules transcribed as a reference.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.consumers import save_next_snapshot
from airflow_provider_paimon.paimon.tag import create_tag
from support.branch_tables import load_table, make_table, table_dir, write

OPTIONS = {"compaction.min.file-num": "2"}


def read_rows(table: Any) -> list[tuple]:
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    cols = data.column_names
    return sorted(tuple(r[c] for c in cols) for r in data.to_pylist())


def meta_ids(tdir: str, branch: str | None, sub: str, prefix: str) -> list[str]:
    root = tdir if branch is None else os.path.join(tdir, "branch", f"branch-{branch}")
    d = os.path.join(root, sub)
    if not os.path.isdir(d):
        return []
    names = [n[len(prefix):] for n in os.listdir(d) if n.startswith(prefix)]
    # snapshot ids in numeric order (as strings "15" < "9"); tag names alphabetically
    return sorted(names, key=lambda n: (0, int(n), "") if n.isdigit() else (1, 0, n))


def branches(tdir: str) -> list[str | None]:
    d = os.path.join(tdir, "branch")
    names = sorted(n[7:] for n in os.listdir(d) if n.startswith("branch-")) if os.path.isdir(d) else []
    return [None, *names]


def states(catalog: Any, warehouse: str) -> dict[tuple, list[tuple]]:
    """Rows of every snapshot present and every tag, on main and every branch."""
    tdir = table_dir(warehouse)
    out = {}
    for br in branches(tdir):
        base = load_table(catalog, "db.t", br)
        for sid in meta_ids(tdir, br, "snapshot", "snapshot-"):
            out[(br or "main", "snapshot", int(sid))] = read_rows(base.copy({"scan.snapshot-id": sid}))
        for tag in meta_ids(tdir, br, "tag", "tag-"):
            out[(br or "main", "tag", tag)] = read_rows(base.copy({"scan.tag-name": tag}))
        out[(br or "main", "latest", None)] = read_rows(load_table(catalog, "db.t", br))
    return out


def data_files(warehouse: str) -> set[str]:
    """Data files under the table (bucket folders), relative to the table."""
    tdir = table_dir(warehouse)
    out = set()
    for root, _dirs, files in os.walk(tdir):
        rel = os.path.relpath(root, tdir)
        if rel.split(os.sep)[0].startswith("bucket-") or "=" in rel.split(os.sep)[0]:
            out.update(os.path.join(rel, f) for f in files)
    return out


def compact_main(table: Any) -> None:
    result = compact(table, CompactionOptions.from_table(table))
    assert result.to_dict()["snapshot_id"] is not None


def scenario(warehouse: str) -> tuple[Any, Any]:
    """Main with appends, a compaction, a tag, a branch from a plain snapshot, a branch
    from a tag with its own writes, a consumer on a branch, and a replace-main whose
    backup is a branch from a plain snapshot (the apache/paimon 3787 trap).

    main: 1-3 appends, tag t2 on 2, branch snapfork from snapshot 3, 4-5 appends,
    6 COMPACT, 7 append, replace-main by branch fix (from t2, plus its own write):
    backup branch bk = main@7, main 8 = fix; 9-10 appends, 11 COMPACT, 12 append.
    """
    catalog, t = make_table(warehouse, options=OPTIONS)
    for i in range(1, 4):
        write(t, [i * 10, i * 10 + 1])
    create_tag(t, "t2", snapshot_id=2)
    bops.create_branch(t, "snapfork", snapshot_id=3)
    write(t, [40])
    write(t, [50])
    compact_main(load_table(catalog, "db.t"))
    write(load_table(catalog, "db.t"), [70])
    bops.create_branch(t, "fix", tag="t2")
    fix = load_table(catalog, "db.t", "fix")
    write(fix, [900], "b")
    write(fix, [901], "b")
    save_next_snapshot(fix, "reader", 3)
    bops.replace_main(load_table(catalog, "db.t"), "fix", backup_name="bk")
    t = load_table(catalog, "db.t")
    write(t, [100])
    write(t, [110])
    compact_main(load_table(catalog, "db.t"))
    write(load_table(catalog, "db.t"), [120])
    return catalog, load_table(catalog, "db.t")


# --- Paimon Java's rules, transcribed (ExpireSnapshotsImpl.expire / expireUntil) -------

def _avro(path: str) -> list[dict]:
    import fastavro

    with open(path, "rb") as fh:
        return list(fastavro.reader(fh))


def _snap(tdir: str, sid: int) -> dict | None:
    p = os.path.join(tdir, "snapshot", f"snapshot-{sid}")
    return json.load(open(p)) if os.path.exists(p) else None


def _manifests(tdir: str, list_name: str) -> list[str]:
    return [r["_FILE_NAME"] for r in _avro(os.path.join(tdir, "manifest", list_name))]


def _entries(tdir: str, manifest: str) -> list[tuple[int, str, int]]:
    return [(r["_KIND"], r["_FILE"]["_FILE_NAME"], r["_BUCKET"]) for r in _avro(os.path.join(tdir, "manifest", manifest))]


def _live(tdir: str, doc: dict) -> set[str]:
    live: set[str] = set()
    for lst in (doc["baseManifestList"], doc["deltaManifestList"]):
        for m in _manifests(tdir, lst):
            for kind, name, _ in _entries(tdir, m):
                (live.add if kind == 0 else live.discard)(name)
    return live


def _manifest_set(tdir: str, doc: dict) -> set[str]:
    out = set()
    for lst in (doc["baseManifestList"], doc["deltaManifestList"]):
        out.add(lst)
        out.update(_manifests(tdir, lst))
    return out


def java_expire(tdir: str, retain_min: int, retain_max: int, older_than_ms: int, max_deletes: int,
                consumer_next: int | None = None) -> tuple[list[int], set[str]]:
    """Main-only expiry as Paimon Java computes it: expired ids and deleted files
    (relative paths). Tags are Java's ``taggedSnapshots`` (skip their data files and
    manifests); a tag-free, branch-free table is where Java's rule is the whole truth."""
    ids = sorted(int(n[9:]) for n in os.listdir(os.path.join(tdir, "snapshot")) if n.startswith("snapshot-"))
    latest, earliest = ids[-1], ids[0]
    low = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    if consumer_next is not None:
        end = min(end, consumer_next)
    end = min(end, earliest + max_deletes)
    for sid in range(low, end):
        doc = _snap(tdir, sid)
        if doc is not None and older_than_ms <= doc["timeMillis"]:
            end = sid
            break
    if end <= earliest:
        return [], set()
    begin = earliest
    for sid in range(end - 1, earliest - 1, -1):
        if _snap(tdir, sid) is None:
            begin = sid + 1
            break
    tag_dir = os.path.join(tdir, "tag")
    tagged = [json.loads(Path(os.path.join(tag_dir, n)).read_text()) for n in sorted(os.listdir(tag_dir))] if os.path.isdir(tag_dir) else []
    tag_data = set().union(*(_live(tdir, d) for d in tagged)) if tagged else set()
    deleted: set[str] = set()
    # data files: DELETE entries in the delta of (begin, end], unless a tag still holds them
    for sid in range(begin + 1, end + 1):
        doc = _snap(tdir, sid)
        for m in _manifests(tdir, doc["deltaManifestList"]):
            for kind, name, bucket in _entries(tdir, m):
                if kind == 1 and name not in tag_data:
                    deleted.add(f"bucket-{bucket}/{name}")
    # manifests: of [begin, end) unless the end snapshot or a tag in the range uses them
    skipping = _manifest_set(tdir, _snap(tdir, end))
    for d in tagged:
        if begin <= d["id"] < end:
            skipping |= _manifest_set(tdir, d)
    for sid in range(begin, end):
        for name in _manifest_set(tdir, _snap(tdir, sid)) - skipping:
            deleted.add(f"manifest/{name}")
    return list(range(begin, end)), deleted


# --- Paimon Java's OrphanFilesClean (LocalOrphanFilesClean.clean), transcribed --------

def _doc_file_names(tdir: str, doc: dict) -> set[str]:
    """File names one snapshot or tag names (Java's getUsedFiles: every manifest entry,
    ADD or DELETE, with its extra files; manifest lists, manifests, index, statistics)."""
    used: set[str] = set()
    for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
        lst = doc.get(key)
        if not lst:
            continue
        used.add(lst)
        for m in _manifests(tdir, lst):
            used.add(m)
            for r in _avro(os.path.join(tdir, "manifest", m)):
                used.add(r["_FILE"]["_FILE_NAME"])
                used.update(r["_FILE"].get("_EXTRA_FILES") or [])
    if doc.get("indexManifest"):
        used.add(doc["indexManifest"])
        used.update(r["_FILE_NAME"] for r in _avro(os.path.join(tdir, "manifest", doc["indexManifest"])))
    if doc.get("statistics"):
        used.add(doc["statistics"])
    return used


def java_orphans(tdir: str, older_than_ms: int) -> set[str]:
    """Relative paths Paimon Java's orphan cleanup deletes: in every branch's
    ``snapshot/`` the files that are not snapshots or hints (``cleanSnapshotDir``), and
    in the manifest, index, statistics and bucket folders the files older than the
    cut-off whose *name* no snapshot, changelog or tag of any branch uses."""
    roots = {"": tdir}
    bdir = os.path.join(tdir, "branch")
    if os.path.isdir(bdir):
        roots.update({f"branch/{n}/": os.path.join(bdir, n) for n in os.listdir(bdir) if n.startswith("branch-")})
    used: set[str] = set()
    out: set[str] = set()

    def old(path: str) -> bool:
        return int(os.stat(path).st_mtime * 1000) < older_than_ms

    for rel_root, root in roots.items():
        for sub in ("snapshot", "tag", "changelog"):
            d = os.path.join(root, sub)
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if name.startswith(f"{sub}-") and not name.endswith(".tmp"):
                    used |= _doc_file_names(tdir, json.loads(Path(os.path.join(d, name)).read_text()))
                elif sub == "snapshot" and name not in ("EARLIEST", "LATEST") and old(os.path.join(d, name)):
                    out.add(f"{rel_root}snapshot/{name}")
    for dirpath, _dirs, files in os.walk(tdir):
        rel = os.path.relpath(dirpath, tdir).replace(os.sep, "/")
        top = rel.split("/")[0]
        if top in ("manifest", "index", "statistics") or any(p.startswith("bucket-") for p in rel.split("/")):
            for name in files:
                if name not in used and old(os.path.join(dirpath, name)):
                    out.add(f"{rel}/{name}")
    return out
