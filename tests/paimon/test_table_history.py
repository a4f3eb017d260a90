"""The table history (paimon/history.py) on real tables made with pypaimon and our branch ops."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, table_dir, write

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.history import MAX_PAGE_SIZE, table_history
from airflow_provider_paimon.paimon.tag import create_tag

RUN_ENV = {
    "AIRFLOW_CTX_DAG_ID": "nightly", "AIRFLOW_CTX_DAG_RUN_ID": "scheduled__2026-01-01",
    "AIRFLOW_CTX_TASK_ID": "load", "AIRFLOW_CTX_TRY_NUMBER": "2",
}


def history_scenario(warehouse: str):
    """main 1,2 | tag t1 on 2 | fix from t1: 3,4 | main 3,4 | replace main with fix -> 5
    (backup branch bk) | ff from main@5: 6,7 | fast-forward main to ff."""
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    fix = load_table(catalog, "db.t", "fix")
    write(fix, [100], "b")
    write(fix, [101], "b")
    write(t, [3])
    write(t, [4])
    ops.replace_main(t, "fix", backup_name="bk", snapshot_properties={
        "airflow.dag_id": "nightly", "airflow.run_id": "r1", "airflow.task_id": "publish"})
    ops.create_branch(t, "ff", snapshot_id=5)
    ff = load_table(catalog, "db.t", "ff")
    write(ff, [300], "f")
    write(ff, [301], "f")
    ops.fast_forward(t, "ff")
    return catalog, t


def _rows(h):
    return {(r["lane"], r["snapshot_id"]): r for r in h["rows"]}


def test_lanes_branch_points_replace_main_and_fast_forward(tmp_path):
    _catalog, t = history_scenario(str(tmp_path))
    h = table_history(t)
    lanes = {lane["name"]: lane for lane in h["lanes"]}
    assert list(lanes) == ["main", "bk", "ff", "fix"]
    assert h["summary"]["snapshots"] == {"main": 7, "bk": 1, "ff": 3, "fix": 3}
    assert h["total_rows"] == 14 and h["pages"] == 1 and not h["truncated"]
    assert lanes["fix"]["branch_point"] == {"lane": "main", "snapshot_id": 2, "tag": "t1", "empty": False}
    assert lanes["bk"]["branch_point"]["lane"] == "main" and lanes["bk"]["branch_point"]["snapshot_id"] == 4
    assert lanes["bk"]["backup"] is True and lanes["fix"]["backup"] is False
    assert lanes["ff"]["fast_forwarded_at"] == 7 and lanes["fix"]["fast_forwarded_at"] is None
    assert {"name": "t1", "snapshot_id": 2} in lanes["main"]["tags"]

    rows = _rows(h)
    # newest first; for one id the branch rows come before main's
    order = [(r["lane"], r["snapshot_id"]) for r in h["rows"]]
    assert order[:3] == [("ff", 7), ("main", 7), ("ff", 6)]
    assert order.index(("fix", 2)) < order.index(("main", 2))
    replaced = rows[("main", 5)]
    assert replaced["kind"] == "OVERWRITE"
    assert replaced["events"] == [{
        "type": "replace_main", "branch": "fix", "branch_snapshot_id": 4, "previous_snapshot_id": 4,
        "backup": {"kind": "branch", "name": "bk"}}]
    assert replaced["run"]["dag_id"] == "nightly" and replaced["run"]["task_id"] == "publish"
    assert {"type": "fast_forward", "branch": "ff"} in rows[("main", 7)]["events"]
    # ff's first snapshot is a copy of main's replace-main snapshot: its branch point, not a replace
    assert rows[("ff", 5)]["events"] == [{"type": "branch_point", "from_lane": "main", "tag": None}]
    assert rows[("ff", 6)]["copy_of"] == "main" and rows[("fix", 3)]["copy_of"] is None
    assert rows[("fix", 2)]["events"] == [{"type": "branch_point", "from_lane": "main", "tag": "t1"}]
    assert rows[("main", 2)]["tags"] == ["t1"] and rows[("fix", 2)]["tags"] == ["t1"]
    assert rows[("main", 1)]["kind"] == "APPEND"
    # records and files: each write above is one commit of one row in one new data file
    assert rows[("main", 1)]["total_records"] == 1 and rows[("main", 1)]["delta_records"] == 1
    assert rows[("main", 1)]["files"] == {"added": 1, "deleted": 0}
    assert rows[("main", 5)]["files"] == {"added": 0, "deleted": 0}  # replace-main: empty delta


def test_run_properties_and_paging(tmp_path, monkeypatch):
    _catalog, t = make_table(str(tmp_path))
    for key, value in RUN_ENV.items():
        monkeypatch.setenv(key, value)
    for i in range(5):
        write(t, [i])
    d = table_dir(str(tmp_path))
    doc = json.loads(Path(f"{d}/snapshot/snapshot-5").read_text())
    doc["properties"] = {"airflow.dag_id": "nightly", "airflow.run_id": "r9", "airflow.task_id": "load",
                         "airflow.try_number": "2", "spark.app.id": "local-123"}
    with open(f"{d}/snapshot/snapshot-5", "w") as fh:
        json.dump(doc, fh)
    first = table_history(t, page_size=2)
    assert first["pages"] == 3 and [r["snapshot_id"] for r in first["rows"]] == [5, 4]
    assert first["rows"][0]["run"] == {"dag_id": "nightly", "run_id": "r9", "task_id": "load",
                                       "try_number": 2, "map_index": None, "spark_app_id": "local-123"}
    assert first["rows"][1]["run"] is None
    last = table_history(t, page=2, page_size=2)
    assert [r["snapshot_id"] for r in last["rows"]] == [1]
    with pytest.raises(InvalidArgumentError, match="page 3 does not exist"):
        table_history(t, page=3, page_size=2)
    for bad in (0, MAX_PAGE_SIZE + 1):
        with pytest.raises(InvalidArgumentError, match="page_size"):
            table_history(t, page_size=bad)
    with pytest.raises(InvalidArgumentError, match="page must be"):
        table_history(t, page=-1)


def make_many_snapshots(table, warehouse: str, count: int) -> None:
    """``count`` snapshots on main, cheaply: copies of one real commit's file under new ids."""
    write(table, [1])
    d = table_dir(warehouse)
    doc = json.loads(Path(f"{d}/snapshot/snapshot-1").read_text())
    for sid in range(2, count + 1):
        doc.update(id=sid, commitKind="COMPACT" if sid % 10 == 0 else "APPEND", uuid=f"u-{sid}")
        with open(f"{d}/snapshot/snapshot-{sid}", "w") as fh:
            fh.write(json.dumps(doc))
    with open(f"{d}/snapshot/LATEST", "w") as fh:
        fh.write(str(count))


def test_ten_thousand_snapshots_one_bounded_page(tmp_path):
    _catalog, t = make_table(str(tmp_path))
    make_many_snapshots(t, str(tmp_path), 10_000)
    create_tag(t, "t9000", snapshot_id=9000)
    ops.create_branch(t, "late", tag="t9000")
    started = time.monotonic()
    h = table_history(t)
    took = time.monotonic() - started
    print(f"10,000-snapshot history page: {took:.2f} s")
    assert h["total_rows"] == 10_001 and h["pages"] == 51 and len(h["rows"]) == 200
    assert h["rows"][0]["snapshot_id"] == 10_000 and h["summary"]["kinds_on_page"] == {"APPEND": 180, "COMPACT": 20}
    page = table_history(t, page=5)
    late = _rows(page)[("late", 9000)]
    assert late["events"][0]["type"] == "branch_point" and late["tags"] == ["t9000"]
    assert took < 10, took
    assert len(json.dumps(h)) < 300_000


def test_hostile_and_broken_files_do_not_fail_the_page(tmp_path):
    _catalog, t = make_table(str(tmp_path))
    write(t, [1])
    write(t, [2])
    d = table_dir(str(tmp_path))
    with open(f"{d}/snapshot/snapshot-2", "w") as fh:
        fh.write("{not json")
    hostile = "<img src=x onerror=alert(1)>"
    os.makedirs(f"{d}/branch/branch-{hostile}/snapshot")
    rows = _rows(table_history(t))
    assert rows[("main", 2)]["readable"] is False and rows[("main", 1)]["readable"] is True
    assert hostile in [lane["name"] for lane in table_history(t)["lanes"]]


def _reference_order(warehouse: str, lanes: list[str]) -> list[tuple[str, int]]:
    """The rows' order as the listing of every snapshot directory gives it (the old way)."""
    d = table_dir(warehouse)
    out = []
    for index, lane in enumerate(lanes):
        folder = f"{d}/snapshot" if lane == "main" else f"{d}/branch/branch-{lane}/snapshot"
        out += [(int(n.split("-")[1]), index, lane) for n in os.listdir(folder) if n.startswith("snapshot-")]
    return [(lane, sid) for sid, _i, lane in sorted(out, reverse=True)]


def test_pages_are_computed_without_listing_snapshot_directories(tmp_path, monkeypatch):
    from airflow_provider_paimon.paimon import fileops

    wh = str(tmp_path)
    _catalog, t = history_scenario(wh)
    lanes = [lane["name"] for lane in table_history(t)["lanes"]]
    expected = _reference_order(wh, lanes)
    listed = []
    real = fileops.list_names
    monkeypatch.setattr(fileops, "list_names", lambda io, path: listed.append(path) or real(io, path))
    got = []
    for page in range(5):
        got += [(r["lane"], r["snapshot_id"]) for r in table_history(t, page=page, page_size=3)["rows"]]
    assert got == expected
    # a lane is listed only when it has no LATEST hint (a branch made from a tag and never
    # written, as Paimon Java makes it too): here the backup branch, one file
    listed_lanes = {p for p in listed if p.endswith("/snapshot")}
    assert listed_lanes == {f"{table_dir(wh)}/branch/branch-bk/snapshot"}, listed_lanes


def test_expired_snapshots_stale_hints_and_gaps(tmp_path):
    wh = str(tmp_path)
    _catalog, t = make_table(wh)
    make_many_snapshots(t, wh, 300)
    d = table_dir(wh)
    # expiry removed 1..99 (Paimon deletes from the oldest up) and left EARLIEST at 50
    for sid in range(1, 100):
        os.remove(f"{d}/snapshot/snapshot-{sid}")
    Path(f"{d}/snapshot/EARLIEST").write_text("50")
    # two commits landed after the LATEST hint was written
    doc = json.loads(Path(f"{d}/snapshot/snapshot-300").read_text())
    for sid in (301, 302):
        Path(f"{d}/snapshot/snapshot-{sid}").write_text(json.dumps(dict(doc, id=sid, uuid=f"u-{sid}")))
    h = table_history(t, page_size=100)
    main = h["lanes"][0]
    assert (main["earliest"], main["latest"], main["snapshot_count"]) == (100, 302, 203)
    assert h["total_rows"] == 203 and h["pages"] == 3 and h["rows"][0]["snapshot_id"] == 302
    assert [r["snapshot_id"] for r in table_history(t, page=2, page_size=100)["rows"]] == [102, 101, 100]
    # no EARLIEST hint at all: found by bisection
    os.remove(f"{d}/snapshot/EARLIEST")
    assert table_history(t, page_size=100)["lanes"][0]["earliest"] == 100
    # a gap (or an expiry running while the page is read): left out, and said
    os.remove(f"{d}/snapshot/snapshot-250")
    page = table_history(t, page_size=100)
    assert 250 not in [r["snapshot_id"] for r in page["rows"]] and len(page["rows"]) == 99
    assert "1 snapshot(s) of this page were gone" in page["truncated_reason"]
