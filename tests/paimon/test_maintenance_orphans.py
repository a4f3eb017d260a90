"""Orphan-file cleanup: leftovers of failed writes, commits and operations go once they
are older than the safety age; nothing a snapshot, tag, branch or journal needs does."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from support.branch_tables import SCHEMA, load_table, table_dir, tree
from support.maintenance import java_orphans, scenario, states

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.maintenance import expire_snapshots, remove_orphan_files

TWO_DAYS = 2 * 86400


def _age_everything(tdir: str, seconds: int = TWO_DAYS) -> None:
    past = time.time() - seconds
    for root, dirs, files in os.walk(tdir):
        for name in files + dirs:
            os.utime(os.path.join(root, name), (past, past))


def _uncommitted_write(table) -> None:
    """A writer that wrote its files and died before committing."""
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(pa.Table.from_pylist([{"id": 999, "v": "lost"}], schema=SCHEMA))
    writer.prepare_commit()
    writer.close()


def _leftovers(catalog, warehouse: str) -> dict[str, str]:
    """Leave one orphan of each kind; returns relative path -> expected kind."""
    tdir = table_dir(warehouse)
    before = set(_files(tdir))
    _uncommitted_write(load_table(catalog, "db.t"))
    # a commit that lost its race leaves its manifest and manifest lists behind
    import shutil
    import uuid

    mdir = os.path.join(tdir, "manifest")
    some_manifest = next(n for n in sorted(os.listdir(mdir)) if not n.startswith("manifest-list-"))
    some_list = next(n for n in sorted(os.listdir(mdir)) if n.startswith("manifest-list-"))
    lost = uuid.uuid4()
    shutil.copyfile(os.path.join(mdir, some_manifest), os.path.join(mdir, f"manifest-{lost}-0"))
    shutil.copyfile(os.path.join(mdir, some_list), os.path.join(mdir, f"manifest-list-{lost}-0"))
    new = set(_files(tdir)) - before
    kinds = {}
    for rel in new:
        name = rel.rsplit("/", 1)[-1]
        kinds[rel] = "manifest_list" if name.startswith("manifest-list-") else (
            "manifest" if rel.startswith("manifest/") else "data")
    for rel in ("snapshot/.snapshot-99.0a1b.tmp", "tag/.tag-x.77.tmp", "manifest/.manifest-zz.tmp"):
        with open(os.path.join(tdir, rel), "w") as fh:
            fh.write("partial")
        kinds[rel] = "temp"
    os.makedirs(os.path.join(tdir, "branch", ".tmp-half-0123456789ab", "snapshot"))
    kinds["branch/.tmp-half-0123456789ab"] = "staging"
    return kinds


def _files(tdir: str) -> list[str]:
    out = []
    for root, _dirs, files in os.walk(tdir):
        out += [os.path.relpath(os.path.join(root, f), tdir) for f in files]
    return out


def test_leftovers_removed_after_safety_age_and_tables_still_read(warehouse):
    catalog, t = scenario(warehouse)
    before = states(catalog, warehouse)
    tdir = table_dir(warehouse)
    kinds = _leftovers(catalog, warehouse)
    assert {k for k in kinds.values()} >= {"data", "manifest", "manifest_list", "temp", "staging"}
    # too young: nothing goes (default safety age 1 day)
    snap = tree(warehouse)
    young = remove_orphan_files(t)
    assert young["deleted_file_count"] == 0 and young["kept_because"]["newer than older_than"] >= len(kinds)
    assert tree(warehouse) == snap
    _age_everything(tdir)
    dry = remove_orphan_files(t, dry_run=True)
    assert tree(warehouse) == snap
    listed = {d["path"]: d["kind"] for d in dry["deleted_files"]}
    assert listed == kinds
    assert all(d["bytes"] > 0 for d in dry["deleted_files"] if d["kind"] != "staging")
    assert dry["deleted_bytes"] == sum(d["bytes"] for d in dry["deleted_files"])
    real = remove_orphan_files(t)
    assert {d["path"] for d in real["deleted_files"]} == set(kinds)
    for rel in kinds:
        assert not os.path.exists(os.path.join(tdir, rel)), rel
    assert states(catalog, warehouse) == before
    again = remove_orphan_files(t)
    assert again["deleted_file_count"] == 0


def test_nothing_referenced_is_removed(warehouse):
    """Every file of a table with branches, tags, a consumer and a backup, all aged:
    the cleanup finds no orphan and every state still reads."""
    catalog, t = scenario(warehouse)
    before = states(catalog, warehouse)
    _age_everything(table_dir(warehouse))
    snap = tree(warehouse)
    result = remove_orphan_files(t)
    assert result["deleted_files"] == []
    assert tree(warehouse) == snap
    assert states(catalog, warehouse) == before
    # a file of another tool outside Paimon's folders is not Paimon's to delete
    with open(os.path.join(table_dir(warehouse), "README.txt"), "w") as fh:
        fh.write("notes")
    _age_everything(table_dir(warehouse))
    result = remove_orphan_files(t)
    assert result["deleted_files"] == []
    assert result["kept_because"]["not in a Paimon data, manifest, index or statistics folder"] == 1


def test_after_expiry_nothing_unreferenced_remains(warehouse):
    catalog, t = scenario(warehouse)
    expire_snapshots(t, retain_min=1, older_than=timedelta(0), max_deletes=100)
    before = states(catalog, warehouse)
    _age_everything(table_dir(warehouse))
    assert remove_orphan_files(t)["deleted_files"] == []
    assert states(catalog, warehouse) == before


def test_pending_and_stale_journals(warehouse):
    catalog, t = scenario(warehouse)
    tdir = table_dir(warehouse)
    write_fix = load_table(catalog, "db.t", "snapfork")
    from support.branch_tables import write

    write(write_fix, [5])
    # replace-main killed after writing its manifest lists: pending, its lists are needed
    faults.set_fault("replace_main.manifests")
    try:
        with pytest.raises(faults.InjectedFault):
            bops.replace_main(load_table(catalog, "db.t"), "snapfork", backup_name="bk2")
    finally:
        faults.clear()
    _age_everything(tdir)
    result = remove_orphan_files(t)
    assert result["deleted_files"] == []
    assert result["kept_because"]["pending branch operation (rerun it to finish)"] == 1
    # the rerun finishes; killed again after its last step, the journal is stale
    faults.set_fault("replace_main.hint")
    try:
        with pytest.raises(faults.InjectedFault):
            bops.replace_main(load_table(catalog, "db.t"), "snapfork", backup_name="bk2")
    finally:
        faults.clear()
    before = states(catalog, warehouse)
    _age_everything(tdir)
    result = remove_orphan_files(t)
    assert [d["path"] for d in result["deleted_files"]] == [".branch-op.json"]
    assert states(catalog, warehouse) == before
    assert bops.pending_operation(t) is None


def test_pending_expiry_journal_is_kept(warehouse):
    _catalog, t = scenario(warehouse)
    faults.set_fault("expire.manifests")
    try:
        with pytest.raises(faults.InjectedFault):
            expire_snapshots(t, retain_min=1, older_than=timedelta(0), max_deletes=100)
    finally:
        faults.clear()
    _age_everything(table_dir(warehouse))
    result = remove_orphan_files(t, dry_run=True)
    assert result["kept_because"]["pending snapshot expiry (rerun expire_snapshots to finish)"] == 1
    assert ".expire-op.json" not in {d["path"] for d in result["deleted_files"]}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"older_than": datetime.now(timezone.utc) + timedelta(hours=1)}, "in the future"),
        ({"older_than": timedelta(days=-1)}, "must not be negative"),
        ({"older_than": -3}, "epoch milliseconds >= 0"),
        ({"older_than": "1d"}, "older_than must be"),
        ({"dry_run": 1}, "dry_run must be True or False"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(warehouse, kwargs, match):
    catalog, t = scenario(warehouse)
    _leftovers(catalog, warehouse)
    _age_everything(table_dir(warehouse))
    snap = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match=match):
        remove_orphan_files(t, **kwargs)
    assert tree(warehouse) == snap


def test_same_orphans_as_paimon_java(warehouse):
    """Against Paimon Java's rule (support.maintenance.java_orphans): after expiry
    (files only DELETE entries still name) with leftovers of every kind, some aged
    past the cut-off and some not, the same files go; ours also removes what Java's
    leaves behind (temp files outside ``snapshot/``, a half-made branch folder)."""
    catalog, t = scenario(warehouse)
    tdir = table_dir(warehouse)
    expire_snapshots(t, retain_min=2, older_than=timedelta(0), max_deletes=5)
    kinds = _leftovers(catalog, warehouse)
    _age_everything(tdir)
    _uncommitted_write(load_table(catalog, "db.t"))  # young: kept by both
    cutoff = int((time.time() - 3600) * 1000)
    java = java_orphans(tdir, cutoff)
    ours = {d["path"]: d["kind"] for d in remove_orphan_files(t, older_than=cutoff, dry_run=True)["deleted_files"]}
    # Java cleans temp files of snapshot/ only; tag/ temp files and staging folders are ours
    extra = {p for p, k in ours.items() if k == "staging" or (k == "temp" and p.startswith("tag/"))}
    assert extra == {"tag/.tag-x.77.tmp", "branch/.tmp-half-0123456789ab"}
    assert set(ours) - extra == java, sorted((set(ours) - extra) ^ java)
    assert set(ours) == set(kinds)
