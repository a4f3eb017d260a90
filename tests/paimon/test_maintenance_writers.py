"""Writers expire as Paimon's do: the Spark ``paimon`` batch writer applies the table's
snapshot retention after each commit, exactly as Paimon Java's rule (transcribed in
``support.maintenance.java_expire``) on a twin table written with
``write-only=true``; tags, branches and consumers keep what they need; bad values are
refused before anything is written."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, table_dir, write
from support.maintenance import java_expire, meta_ids, read_rows

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.consumers import save_next_snapshot
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.maintenance.after_commit import expire_after_commit
from airflow_provider_paimon.paimon.maintenance.options import (
    now_ms,
    writer_retention,
    writer_time_bound_ms,
)
from airflow_provider_paimon.paimon.tag import create_tag

# at most 3 snapshots (the rest are younger than time-retained's 1 h) ...
RETAIN = {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 h"}
# ... or, with a tiny time-retained, only the newest num-retained.min
RETAIN_TIME = {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"}


def _spark_write(spark, warehouse: str, name: str, ids: list[int], mode: str = "append", **options) -> None:
    df = spark.createDataFrame([(i, f"v{i}") for i in ids], "id long, v string")
    w = df.write.format("paimon").mode(mode).option("warehouse", warehouse).option("table", name)
    for k, v in options.items():
        w = w.option(k.replace("_", "-"), v)
    w.save()


def _snap_ids(tdir: str, branch: str | None = None) -> list[int]:
    return sorted(int(s) for s in meta_ids(tdir, branch, "snapshot", "snapshot-"))


def _files(tdir: str, sub: str) -> list[str]:
    out = []
    for root, _dirs, files in os.walk(tdir):
        rel = os.path.relpath(root, tdir)
        if rel.split(os.sep)[0].startswith(sub):
            out.extend(f for f in files if not f.startswith("."))
    return sorted(out)


def _apply_java(tdir: str) -> list[int]:
    """Expire ``tdir`` (a write-only table) with Paimon Java's rule, as a Java writer would."""
    ids, deleted = java_expire(tdir, 1, 3, now_ms() - 3_600_000, 10)
    for sid in ids:
        os.remove(os.path.join(tdir, "snapshot", f"snapshot-{sid}"))
    for rel in deleted:
        os.remove(os.path.join(tdir, rel))
    if ids:
        with open(os.path.join(tdir, "snapshot", "EARLIEST"), "w") as fh:
            fh.write(str(ids[-1] + 1))
    return ids


def test_batch_writer_keeps_what_paimon_keeps(spark, warehouse):
    catalog, _ = make_table(warehouse, "db.a", options=RETAIN)
    make_table(warehouse, "db.b", options=RETAIN)
    ta, tb = table_dir(warehouse, "db.a"), table_dir(warehouse, "db.b")
    plan = [([1, 2], "append"), ([3], "append"), ([4], "append"), ([5, 6], "overwrite"),
            ([7], "append"), ([9], "overwrite"), ([10], "append")]
    rows_at: dict[int, list[tuple]] = {}
    for n, (ids, mode) in enumerate(plan, start=1):
        _spark_write(spark, warehouse, "db.a", ids, mode)
        _spark_write(spark, warehouse, "db.b", ids, mode, write_only="true")
        assert _snap_ids(tb) == list(range(_snap_ids(tb)[0], n + 1))  # write-only: nothing expired
        rows_at[n] = read_rows(load_table(catalog, "db.a").copy({"scan.snapshot-id": str(n)}))
        _apply_java(tb)
        # same retained snapshots, hint and number of files of each kind as Paimon's rule
        assert _snap_ids(ta) == _snap_ids(tb) == list(range(max(1, n - 2), n + 1))
        if n > 3:
            assert Path(os.path.join(ta, "snapshot", "EARLIEST")).read_text().strip() == str(_snap_ids(ta)[0])
        assert len(_files(ta, "bucket-")) == len(_files(tb, "bucket-"))
        assert len(_files(ta, "manifest")) == len(_files(tb, "manifest"))
        # plain pypaimon reads every retained snapshot as it read when committed
        base = load_table(catalog, "db.a")
        for sid in _snap_ids(ta):
            assert read_rows(base.copy({"scan.snapshot-id": str(sid)})) == rows_at[sid]
    assert [r[0] for r in read_rows(load_table(catalog, "db.a"))] == [9, 10]


def test_native_write_table_keeps_what_paimon_keeps(spark, warehouse):
    """``write_table`` (Spark's own Parquet writer) expires after its commit as the data
    source does: the same snapshots and files as Paimon's rule on a write-only twin."""
    from airflow_provider_paimon.spark import write_table

    catalog, _ = make_table(warehouse, "db.a", options=RETAIN)
    make_table(warehouse, "db.b", options=RETAIN)
    ta, tb = table_dir(warehouse, "db.a"), table_dir(warehouse, "db.b")
    plan = [([1, 2], "append"), ([3], "append"), ([4], "append"), ([5, 6], "overwrite"), ([7], "append")]
    for n, (ids, mode) in enumerate(plan, start=1):
        df = spark.createDataFrame([(i, f"v{i}") for i in ids], "id long, v string")
        write_table(df, "db.a", warehouse=warehouse, mode=mode)
        write_table(df, "db.b", warehouse=warehouse, mode=mode, options={"write-only": "true"})
        assert _snap_ids(tb) == list(range(_snap_ids(tb)[0], n + 1))  # write-only: nothing expired
        _apply_java(tb)
        assert _snap_ids(ta) == _snap_ids(tb) == list(range(max(1, n - 2), n + 1))
        assert len(_files(ta, "bucket-")) == len(_files(tb, "bucket-"))
        assert len(_files(ta, "manifest")) == len(_files(tb, "manifest"))
    assert [r[0] for r in read_rows(load_table(catalog, "db.a"))] == [5, 6, 7]


def test_tags_branches_and_consumers_keep_what_they_need(spark, warehouse):
    catalog, _t = make_table(warehouse, options=RETAIN_TIME)
    tdir = table_dir(warehouse)
    _spark_write(spark, warehouse, "db.t", [1])
    _spark_write(spark, warehouse, "db.t", [2], "overwrite")
    create_tag(load_table(catalog, "db.t"), "first", snapshot_id=1)
    bops.create_branch(load_table(catalog, "db.t"), "fork", snapshot_id=2)  # the apache/paimon 3787 case
    save_next_snapshot(load_table(catalog, "db.t"), "reader", 4)
    views = {
        "first": read_rows(load_table(catalog, "db.t").copy({"scan.tag-name": "first"})),
        "fork": read_rows(load_table(catalog, "db.t", "fork")),
    }
    for i in range(3, 8):
        _spark_write(spark, warehouse, "db.t", [i * 10], "overwrite" if i == 5 else "append")
    # the consumer holds snapshot 4 and later; without it only 6 and 7 would be left
    assert _snap_ids(tdir) == [4, 5, 6, 7]
    assert read_rows(load_table(catalog, "db.t").copy({"scan.tag-name": "first"})) == views["first"]
    assert read_rows(load_table(catalog, "db.t", "fork")) == views["fork"]
    # a write on the branch expires the branch's own snapshots (its options came from main)
    for i in (100, 101, 102):
        _spark_write(spark, warehouse, "db.t", [i], branch="fork")
    assert _snap_ids(tdir, "fork") == [4, 5]
    assert [r[0] for r in read_rows(load_table(catalog, "db.t", "fork"))] == [2, 100, 101, 102]
    assert _snap_ids(tdir) == [4, 5, 6, 7]
    assert read_rows(load_table(catalog, "db.t").copy({"scan.tag-name": "first"})) == views["first"]


def test_write_only_table_option_keeps_every_snapshot(spark, warehouse):
    make_table(warehouse, options=dict(RETAIN, **{"write-only": "true"}))
    for i in range(5):
        _spark_write(spark, warehouse, "db.t", [i])
    assert _snap_ids(table_dir(warehouse)) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("table_options", "write_options", "named"),
    [
        ({}, {"write_only": "yes please"}, "write-only"),
        ({"write-only": "yes please"}, {}, "write-only"),
        ({"snapshot.time-retained": "soon"}, {}, "snapshot.time-retained"),
        ({}, {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"}, "retain_min"),
        ({}, {"snapshot.expire.execution-time-bound": "5"}, "execution-time-bound"),
    ],
)
def test_bad_value_is_refused_before_anything_is_written(spark, warehouse, table_options, write_options, named):
    make_table(warehouse, options=table_options)
    tdir = table_dir(warehouse)
    _spark_write(spark, warehouse, "db.t", [1], write_only="true")
    before = (_snap_ids(tdir), _files(tdir, "bucket-"), _files(tdir, "manifest"))
    with pytest.raises(Exception, match=named) as err:
        _spark_write(spark, warehouse, "db.t", [2], **write_options)
    assert "InvalidArgumentError" in str(err.value) or isinstance(err.value, InvalidArgumentError)
    assert (_snap_ids(tdir), _files(tdir, "bucket-"), _files(tdir, "manifest")) == before


def test_bad_value_with_create_table_creates_nothing(spark, warehouse):
    with pytest.raises(Exception, match="write-only"):
        _spark_write(spark, warehouse, "db.new", [1], create_table="true", write_only="yes please")
    assert not os.path.exists(table_dir(warehouse, "db.new"))


def _state(tdir: str) -> tuple:
    return _snap_ids(tdir), _files(tdir, "bucket-"), _files(tdir, "manifest")


def test_after_commit_logs_one_line_per_expiry(warehouse, caplog):
    catalog, t = make_table(warehouse, options=RETAIN)
    tdir = table_dir(warehouse)
    for i in range(3):
        write(t, [i])
    caplog.set_level(logging.INFO, logger="airflow_provider_paimon.paimon.maintenance.after_commit")
    assert expire_after_commit(load_table(catalog, "db.t")) is None  # 3 retained, all young: nothing to do
    write(t, [3])
    write(t, [4])
    result = expire_after_commit(load_table(catalog, "db.t"))
    assert result["expired_snapshot_ids"] == [1, 2] and _snap_ids(tdir) == [3, 4, 5]
    lines = [r.getMessage() for r in caplog.records if r.name == "airflow_provider_paimon.paimon.maintenance.after_commit"]
    assert len(lines) == 1 and "expired snapshots 1-2 of db.t (branch main)" in lines[0], lines


def test_after_commit_skips_while_another_expiry_or_branch_op_is_pending(warehouse, caplog):
    catalog, t = make_table(warehouse, options=RETAIN)
    tdir = table_dir(warehouse)
    for i in range(5):
        write(t, [i])
    before = _state(tdir)
    caplog.set_level(logging.INFO)
    for journal in (".expire-op.json", ".branch-op.json"):
        doc = {"op": "replace_main", "branch": "x", "plan": {}} if journal == ".branch-op.json" else {}
        with open(os.path.join(tdir, journal), "w") as fh:
            json.dump(doc, fh)
        assert expire_after_commit(load_table(catalog, "db.t")) is None
        assert _state(tdir) == before
        os.remove(os.path.join(tdir, journal))
    skipped = [r.getMessage() for r in caplog.records if "not expiring" in r.getMessage()]
    assert len(skipped) == 2 and all(r.levelno == logging.INFO for r in caplog.records if "not expiring" in r.getMessage())
    assert expire_after_commit(load_table(catalog, "db.t"))["expired_snapshot_ids"] == [1, 2]


def test_after_commit_gives_up_past_its_time_bound_and_never_raises(warehouse, caplog):
    catalog, t = make_table(warehouse, options=RETAIN)
    tdir = table_dir(warehouse)
    for i in range(5):
        write(t, [i])
    before = _state(tdir)
    caplog.set_level(logging.WARNING)
    assert expire_after_commit(load_table(catalog, "db.t"), time_bound_s=-1) is None
    assert _state(tdir) == before and "write-only=true" in caplog.records[-1].getMessage()
    # a manifest list a retained snapshot needs is gone: warn (naming the table and the fix), change nothing
    snap = json.loads(Path(os.path.join(tdir, "snapshot", "snapshot-5")).read_text())
    os.rename(os.path.join(tdir, "manifest", snap["baseManifestList"]), os.path.join(tdir, "moved"))
    assert expire_after_commit(load_table(catalog, "db.t")) is None
    msg = caplog.records[-1].getMessage()
    assert "db.t" in msg and "expire_snapshots" in msg and _snap_ids(tdir) == before[0]


def test_write_options_override_table_options(warehouse):
    catalog, t = make_table(warehouse, options=RETAIN)
    for i in range(5):
        write(t, [i])
    assert expire_after_commit(load_table(catalog, "db.t"), options={"write-only": "on"}) is None
    result = expire_after_commit(load_table(catalog, "db.t"), options={"snapshot.num-retained.max": "4"})
    assert result["expired_snapshot_ids"] == [1]
    result = expire_after_commit(load_table(catalog, "db.t"), options={"snapshot.time-retained": "1 ms"})
    assert result["expired_snapshot_ids"] == [2, 3, 4]


TIME_BOUND = "snapshot.expire.execution-time-bound"


def test_time_bound_is_a_table_option_overridable_per_write(warehouse, caplog):
    catalog, t = make_table(warehouse, options=dict(RETAIN, **{TIME_BOUND: "1 ms"}))
    tdir = table_dir(warehouse)
    for i in range(30):
        write(t, [i])
    before = _state(tdir)
    caplog.set_level(logging.WARNING)
    # planning 10 snapshots' manifests against 20 retained takes longer than 1 ms: skipped, unchanged
    assert expire_after_commit(load_table(catalog, "db.t")) is None
    msg = caplog.records[-1].getMessage()
    assert _state(tdir) == before and TIME_BOUND in msg and "write-only=true" in msg, msg
    # the write's own option wins over the table's (Paimon's dynamic options)
    result = expire_after_commit(load_table(catalog, "db.t"), options={TIME_BOUND: "1 min"})
    assert result["expired_snapshot_ids"] == list(range(1, 11))


@pytest.mark.parametrize(
    ("value", "expected_ms"),
    [(None, 5000), ("", 5000), ("5 s", 5000), ("500 ms", 500), ("2min", 120_000), (" 1 h ", 3_600_000)],
)
def test_time_bound_values(value, expected_ms):
    assert writer_time_bound_ms({} if value is None else {TIME_BOUND: value}) == expected_ms


@pytest.mark.parametrize("value", ["5", "0 s", "0 ms", "fast", "-1 s", "5 weeks", "1.5 s", 5])
def test_bad_time_bound_is_refused_naming_the_option(value):
    with pytest.raises(InvalidArgumentError, match=TIME_BOUND):
        writer_time_bound_ms({TIME_BOUND: value})
    # checked with the retention before a writer writes anything; not while write-only is on
    with pytest.raises(InvalidArgumentError, match=TIME_BOUND):
        writer_retention({TIME_BOUND: value})
    assert writer_retention({TIME_BOUND: value, "write-only": "true"}) is None
