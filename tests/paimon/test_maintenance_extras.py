"""Changelog, index and statistics files: expiry and orphan cleanup keep and delete them
as Paimon's rules say.

pypaimon's append tables never write them, so the table state is built by hand in
Paimon's own formats: a changelog manifest list (Avro ``ManifestFileMeta``) naming a
manifest (Avro ``ManifestEntry``) of ``changelog-*`` files in the bucket folder; an
index manifest (Avro ``IndexManifestEntry``, pypaimon's schema, which is Java's)
naming files under ``index/``; a statistics file under ``statistics/``. Snapshots
carry them in ``changelogManifestList`` / ``indexManifest`` / ``statistics``, and a
later snapshot carries an unchanged index manifest and statistics file over, as
Paimon's commits do.

The reference is Paimon Java's ``ExpireSnapshotsImpl.expireUntil`` (changelog
decoupling off): files *added* in the changelog manifests of the expired snapshots
go with their changelog manifests and lists; index manifests, index files and
statistics files of the expired snapshots go unless the first retained snapshot
(``end``) or a tag in the range names them (``manifestSkippingSet``). One deliberate
difference: Java deletes a tagged snapshot's changelog files too; a tag document
still names them here, and nothing a snapshot or tag names is deleted.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import uuid
from datetime import timedelta

import fastavro
from pypaimon.manifest.index_manifest_file import INDEX_MANIFEST_ENTRY_SCHEMA
from support.branch_tables import load_table, make_table, table_dir, write
from support.maintenance import read_rows

from airflow_provider_paimon.paimon.maintenance import expire_snapshots, remove_orphan_files
from airflow_provider_paimon.paimon.tag import create_tag


def _avro(path: str) -> tuple[dict, list[dict]]:
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        return reader.writer_schema, list(reader)


def _write_avro(path: str, schema: dict, records: list[dict]) -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records)
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())


class Table:
    """Paths and hand-written metadata of the test table ``db.t``."""

    def __init__(self, warehouse: str) -> None:
        self.catalog, self.t = make_table(warehouse)
        self.dir = table_dir(warehouse)
        self.mdir = os.path.join(self.dir, "manifest")

    def snap_path(self, sid: int) -> str:
        return os.path.join(self.dir, "snapshot", f"snapshot-{sid}")

    def snap(self, sid: int) -> dict:
        with open(self.snap_path(sid)) as fh:
            return json.load(fh)

    def set_snap(self, sid: int, **fields) -> None:
        doc = dict(self.snap(sid), **fields)
        with open(self.snap_path(sid), "w") as fh:
            json.dump(doc, fh)

    def changelog(self, sid: int) -> tuple[str, str, str]:
        """A changelog manifest list -> manifest -> ``changelog-*`` file, shaped on the
        snapshot's delta manifest (same partition and bucket). Returns (list, manifest,
        file path relative to the table)."""
        dlist = self.snap(sid)["deltaManifestList"]
        lschema, lrecs = _avro(os.path.join(self.mdir, dlist))
        mschema, mrecs = _avro(os.path.join(self.mdir, lrecs[0]["_FILE_NAME"]))
        rec = dict(mrecs[0])
        data_name = rec["_FILE"]["_FILE_NAME"]
        cl_name = f"changelog-{uuid.uuid4()}-0.parquet"
        rec["_FILE"] = dict(rec["_FILE"], _FILE_NAME=cl_name)
        bucket = f"bucket-{rec['_BUCKET']}"
        shutil.copy(os.path.join(self.dir, bucket, data_name), os.path.join(self.dir, bucket, cl_name))
        man = f"manifest-{uuid.uuid4()}-0"
        _write_avro(os.path.join(self.mdir, man), mschema, [rec])
        lst = f"manifest-list-{uuid.uuid4()}-0"
        _write_avro(os.path.join(self.mdir, lst), lschema, [dict(lrecs[0], _FILE_NAME=man)])
        return lst, man, f"{bucket}/{cl_name}"

    def index(self, names: list[str]) -> str:
        """An index manifest naming ``names`` (hash index files, created under ``index/``)."""
        os.makedirs(os.path.join(self.dir, "index"), exist_ok=True)
        records = []
        for name in names:
            path = os.path.join(self.dir, "index", name)
            if not os.path.exists(path):
                with open(path, "wb") as fh:
                    fh.write(b"\0" * 16)
            records.append({
                "_VERSION": 1, "_KIND": 0, "_PARTITION": b"", "_BUCKET": 0, "_INDEX_TYPE": "HASH",
                "_FILE_NAME": name, "_FILE_SIZE": 16, "_ROW_COUNT": 4,
                "_DELETIONS_VECTORS_RANGES": None, "_EXTERNAL_PATH": None, "_GLOBAL_INDEX": None,
            })
        man = f"index-manifest-{uuid.uuid4()}-0"
        _write_avro(os.path.join(self.mdir, man), INDEX_MANIFEST_ENTRY_SCHEMA, records)
        return man

    def statistics(self) -> str:
        os.makedirs(os.path.join(self.dir, "statistics"), exist_ok=True)
        name = f"stat-{uuid.uuid4()}-0"
        with open(os.path.join(self.dir, "statistics", name), "w") as fh:
            json.dump({"snapshotId": 0, "schemaId": 0, "mergedRecordCount": 1, "colStats": {}}, fh)
        return name

    def exists(self, rel: str) -> bool:
        return os.path.exists(os.path.join(self.dir, rel))


def build(warehouse: str) -> tuple[Table, dict[str, str]]:
    """Snapshots 1-4; 1 and 2 with changelogs, index manifest IM1 (files i1, iold) carried
    from 1 to 2 with statistics S1; 3 and 4 with IM3 (i1, i3) and S3. Returns names."""
    tb = Table(warehouse)
    for i in range(4):
        write(tb.t, [i])
    n: dict[str, str] = {}
    n["cl1"], n["cm1"], n["cf1"] = tb.changelog(1)
    n["cl2"], n["cm2"], n["cf2"] = tb.changelog(2)
    n["cl3"], n["cm3"], n["cf3"] = tb.changelog(3)
    n["i1"], n["iold"], n["i3"] = (f"index-{uuid.uuid4()}-{k}" for k in range(3))
    n["im1"], n["im3"] = tb.index([n["i1"], n["iold"]]), tb.index([n["i1"], n["i3"]])
    n["s1"], n["s3"] = tb.statistics(), tb.statistics()
    for sid in (1, 2):
        tb.set_snap(sid, changelogManifestList=n[f"cl{sid}"], indexManifest=n["im1"], statistics=n["s1"])
    tb.set_snap(3, changelogManifestList=n["cl3"], indexManifest=n["im3"], statistics=n["s3"])
    tb.set_snap(4, indexManifest=n["im3"], statistics=n["s3"])
    return tb, n


def java_extras(tb: Table, begin: int, end: int, tagged: list[dict]) -> set[str]:
    """Paimon Java's changelog / index / statistics deletions for expiring [begin, end)."""
    out: set[str] = set()
    skipping: set[str] = set()
    for doc in [tb.snap(end), *[d for d in tagged if begin <= d["id"] < end]]:
        if doc.get("indexManifest"):
            skipping.add(doc["indexManifest"])
            skipping.update(r["_FILE_NAME"] for r in _avro(os.path.join(tb.mdir, doc["indexManifest"]))[1])
        if doc.get("statistics"):
            skipping.add(doc["statistics"])
    for sid in range(begin, end):
        doc = tb.snap(sid)
        if doc.get("changelogManifestList"):
            lst = doc["changelogManifestList"]
            out.add(f"manifest/{lst}")
            for m in _avro(os.path.join(tb.mdir, lst))[1]:
                out.add(f"manifest/{m['_FILE_NAME']}")
                for e in _avro(os.path.join(tb.mdir, m["_FILE_NAME"]))[1]:
                    if e["_KIND"] == 0:
                        out.add(f"bucket-{e['_BUCKET']}/{e['_FILE']['_FILE_NAME']}")
        im = doc.get("indexManifest")
        if im:
            for r in _avro(os.path.join(tb.mdir, im))[1]:
                if r["_FILE_NAME"] not in skipping:
                    out.add(f"index/{r['_FILE_NAME']}")
            if im not in skipping:
                out.add(f"manifest/{im}")
        if doc.get("statistics") and doc["statistics"] not in skipping:
            out.add(f"statistics/{doc['statistics']}")
    return out


def built_paths(n: dict[str, str]) -> set[str]:
    """Every file ``build`` wrote by hand, relative to the table."""
    out = set()
    for key, name in n.items():
        if key.startswith(("cl", "cm", "im")):
            out.add(f"manifest/{name}")
        elif key.startswith("cf"):
            out.add(name)
        elif key.startswith("i"):
            out.add(f"index/{name}")
        else:
            out.add(f"statistics/{name}")
    return out


def _extras_deleted(result: dict, n: dict[str, str]) -> set[str]:
    return set(result["deleted_files"]) & built_paths(n)


def test_expiry_deletes_changelog_index_and_statistics_as_paimon(warehouse):
    tb, n = build(warehouse)
    expected = java_extras(tb, 1, 3, tagged=[])
    before = read_rows(load_table(tb.catalog, "db.t").copy({"scan.snapshot-id": "3"}))
    dry = expire_snapshots(tb.t, retain_min=2, older_than=timedelta(0), dry_run=True)
    result = expire_snapshots(tb.t, retain_min=2, older_than=timedelta(0))
    assert result["expired_snapshot_ids"] == [1, 2]
    assert _extras_deleted(result, n) == expected == _extras_deleted(dry, n)
    # by name: changelogs of 1 and 2 gone, IM1 gone with iold; i1 (in IM3), S3, IM3, changelog 3 kept
    for gone in ("cf1", "cf2"):
        assert not tb.exists(n[gone])
    assert not tb.exists(f"manifest/{n['im1']}") and not tb.exists(f"index/{n['iold']}")
    assert not tb.exists(f"statistics/{n['s1']}")
    for kept in (f"index/{n['i1']}", f"index/{n['i3']}", f"manifest/{n['im3']}", f"statistics/{n['s3']}",
                 n["cf3"], f"manifest/{n['cl3']}", f"manifest/{n['cm3']}"):
        assert tb.exists(kept), kept
    assert result["deleted_by_kind"]["changelog"] == 2
    assert result["deleted_by_kind"]["index"] == 1 and result["deleted_by_kind"]["statistics"] == 1
    assert read_rows(load_table(tb.catalog, "db.t").copy({"scan.snapshot-id": "3"})) == before
    # nothing is left that the remaining snapshots do not name
    assert remove_orphan_files(tb.t, older_than=timedelta(0), dry_run=True)["deleted_files"] == []


def test_a_tag_keeps_its_index_statistics_and_changelog(warehouse):
    tb, n = build(warehouse)
    create_tag(tb.t, "one", snapshot_id=1)
    with open(os.path.join(tb.dir, "tag", "tag-one")) as fh:
        tag_doc = json.load(fh)
    expected_java = java_extras(tb, 1, 3, tagged=[tag_doc])
    result = expire_snapshots(tb.t, retain_min=2, older_than=timedelta(0))
    assert result["expired_snapshot_ids"] == [1, 2]
    deleted = _extras_deleted(result, n)
    # Java keeps the tag's index manifest, index files and statistics: so do we
    for kept in (f"manifest/{n['im1']}", f"index/{n['iold']}", f"statistics/{n['s1']}"):
        assert kept not in expected_java and kept not in deleted and tb.exists(kept)
    # Java would delete the tagged snapshot's changelog; the tag names it, so it stays
    assert n["cf1"] in expected_java and n["cf1"] not in deleted and tb.exists(n["cf1"])
    assert deleted == expected_java - {n["cf1"], f"manifest/{n['cl1']}", f"manifest/{n['cm1']}"}
    assert remove_orphan_files(tb.t, older_than=timedelta(0), dry_run=True)["deleted_files"] == []


def test_orphan_cleanup_removes_unreferenced_changelog_index_and_statistics(warehouse):
    tb, n = build(warehouse)
    # orphans of each kind: a changelog file, an index manifest with its index file, a
    # statistics file that no snapshot names (a failed commit's)
    _cl, _cm, orphan_cf = tb.changelog(4)
    orphan_i = f"index-{uuid.uuid4()}-9"
    orphan_im = tb.index([orphan_i])
    orphan_s = tb.statistics()
    past = time.time() - 2 * 86400
    for root, dirs, files in os.walk(tb.dir):
        for name in files + dirs:
            os.utime(os.path.join(root, name), (past, past))
    result = remove_orphan_files(tb.t)
    by_path = {d["path"]: d["kind"] for d in result["deleted_files"]}
    assert by_path == {
        orphan_cf: "changelog",
        f"manifest/{_cl}": "manifest_list",
        f"manifest/{_cm}": "manifest",
        f"index/{orphan_i}": "index",
        f"manifest/{orphan_im}": "index_manifest",
        f"statistics/{orphan_s}": "statistics",
    }
    # everything a snapshot names stays, including the carried-over IM1 / S1
    for kept in (n["cf1"], n["cf2"], n["cf3"], f"manifest/{n['im1']}", f"index/{n['iold']}",
                 f"index/{n['i1']}", f"statistics/{n['s1']}", f"statistics/{n['s3']}"):
        assert tb.exists(kept), kept
