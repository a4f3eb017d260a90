"""Every capability on ``s3://``: one representative test each, on the loopback S3 server.

Tables are written by Spark (the ``paimon`` data source) or pypaimon and always read
back with plain pypaimon; object keys are checked with boto3, where "folders" do not
exist (branch moves must leave no prefix behind, orphan cleanup must see every file).
The local-disk tests of the same features (tests/spark, tests/paimon, tests/compaction,
tests/streaming, tests/capture) hold the detailed cases.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from pypaimon import Schema
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as branches
from airflow_provider_paimon.paimon import maintenance, tag
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def catalog_of(wh):
    return open_catalog(wh.uri, wh.options)


def make_table(wh, name="db.t", options=None):
    catalog = catalog_of(wh)
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA, options=options or {}), False)
    return load_table(catalog, name)


def append(table, ids, v="m"):
    commit_rows(table, [{"id": i, "v": f"{v}{i}"} for i in ids], SCHEMA)


def rows(wh, name="db.t", branch=None):
    """Rows read by plain pypaimon from a freshly opened catalog."""
    table = load_table(catalog_of(wh), name, branch)
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted((r["id"], r["v"]) for r in data.to_pylist())


def table_keys(wh, sub="", name="db.t"):
    db, t = name.split(".")
    return wh.object_keys(f"warehouse/{db}.db/{t}/{sub}")


def data_keys(wh, name="db.t"):
    return {k.rsplit("/", 1)[-1] for k in table_keys(wh, name=name) if "/bucket-" in k and k.endswith(".parquet")}


def live_files(wh, name="db.t"):
    table = load_table(catalog_of(wh), name)
    rb = table.new_read_builder()
    return {f.file_name for s in rb.new_scan().plan().splits() for f in s.files}


# -- Spark: batch read and write ---------------------------------------------------------


def test_spark_batch_write_overwrite_and_read(spark, s3_warehouse):
    opts = {"warehouse": s3_warehouse.uri, **s3_warehouse.options}
    df = spark.createDataFrame([(i, f"r{i}", "a" if i % 2 else "b") for i in range(40)], "id long, v string, p string")
    df.write.format("paimon").options(**opts).option("table", "db.s").option("create-table", "true") \
        .option("partition-keys", "p").mode("append").save()
    fix = spark.createDataFrame([(100, "new", "a")], "id long, v string, p string")
    fix.write.format("paimon").options(**opts).option("table", "db.s") \
        .option("overwrite-partition", "p=a").mode("overwrite").save()

    expected = sorted([(i, f"r{i}", "b") for i in range(0, 40, 2)] + [(100, "new", "a")])
    read = spark.read.format("paimon").options(**opts).option("table", "db.s").load()
    assert sorted(tuple(r) for r in read.collect()) == expected
    table = load_table(catalog_of(s3_warehouse), "db.s")
    rb = table.new_read_builder()
    plain = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert sorted((r["id"], r["v"], r["p"]) for r in plain) == expected
    assert table_keys(s3_warehouse, "snapshot/snapshot-2", "db.s")


# -- branches and tags ---------------------------------------------------------------------


def test_branch_and_tag_lifecycle_leaves_no_prefix_behind(s3_warehouse):
    t = make_table(s3_warehouse)
    append(t, [1])
    append(t, [2])
    tag.create_tag(t, "t1")
    branches.create_branch(t, "fix", tag="t1")
    append(load_table(catalog_of(s3_warehouse), "db.t", "fix"), [10], "b")
    append(t, [3])
    assert [i.name for i in tag.list_tags(t)] == ["t1"]
    listed = branches.list_branches(t)
    assert [(b.name, b.latest_snapshot_id) for b in listed] == [("fix", 3)]
    assert listed[0].create_time_millis is not None

    branches.rename_branch(t, "fix", "fix2")
    assert [b.name for b in branches.list_branches(t)] == ["fix2"]
    assert not table_keys(s3_warehouse, "branch/branch-fix/")  # no marker keeps "fix" listed
    branches.fast_forward(t, "fix2")
    assert rows(s3_warehouse) == [(1, "m1"), (2, "m2"), (10, "b10")]

    branches.create_branch(t, "other")
    append(load_table(catalog_of(s3_warehouse), "db.t", "other"), [7], "o")
    branches.replace_main(t, "other", backup_name="bk")
    assert rows(s3_warehouse) == [(7, "o7")]
    assert rows(s3_warehouse, branch="bk") == [(1, "m1"), (2, "m2"), (10, "b10")]
    branches.delete_branch(t, "fix2")
    tag.delete_tag(t, "t1")
    assert sorted(b.name for b in branches.list_branches(t)) == ["bk", "other"]
    assert tag.list_tags(t) == []
    hidden = [k for k in table_keys(s3_warehouse, "branch/") if "/branch/." in k or "branch-fix" in k]
    assert hidden == []  # staging, trash and moved folders are gone, markers included


KILL_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon import branch
    options = json.loads(os.environ["S3_TEST_CATALOG_OPTIONS"])
    table = load_table(open_catalog(sys.argv[1], options), "db.t")
    if sys.argv[2] == "replace_main":
        print(branch.replace_main(table, "fix", backup_name="bk"))
    else:
        print(branch.fast_forward(table, "fix"))
    """
)


@pytest.mark.parametrize(("op", "step"), [("replace_main", "replace_main.switch"), ("fast_forward", "fast_forward.ahead")])
def test_sigkill_in_replace_main_or_fast_forward_then_rerun(s3_warehouse, op, step):
    """As tests/paimon/test_branch_replace_main.py's kill test, on S3."""
    t = make_table(s3_warehouse)
    append(t, [1])
    append(t, [2])
    tag.create_tag(t, "t1")
    branches.create_branch(t, "fix", tag="t1")
    fix = load_table(catalog_of(s3_warehouse), "db.t", "fix")
    for i in range(3):
        append(fix, [100 + i], "b")
    append(t, [200])
    old, new = rows(s3_warehouse), rows(s3_warehouse, branch="fix")

    env = dict(os.environ, PAIMON_FAULT=step, PAIMON_FAULT_MODE="kill",
               S3_TEST_CATALOG_OPTIONS=json.dumps(s3_warehouse.options))
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, s3_warehouse.uri, op],
                          env=env, capture_output=True, timeout=180)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert rows(s3_warehouse) in (old, new)
    assert table_keys(s3_warehouse, ".branch-op.json")  # the journal a rerun finishes from

    t = load_table(catalog_of(s3_warehouse), "db.t")
    result = branches.replace_main(t, "fix", backup_name="bk") if op == "replace_main" else branches.fast_forward(t, "fix")
    assert result["resumed"] is True
    assert rows(s3_warehouse) == new
    if op == "replace_main":
        assert rows(s3_warehouse, branch="bk") == old
    assert not table_keys(s3_warehouse, ".branch-op.json")


# -- compaction and maintenance ------------------------------------------------------------


def test_spark_compaction_then_expiry_and_orphan_cleanup(spark, s3_warehouse):
    from airflow_provider_paimon.spark.jobs import compact as job

    t = make_table(s3_warehouse, options={"target-file-size": "32kb", "compaction.min.file-num": "3"})
    for start in range(0, 24, 4):
        append(t, range(start, start + 4))
    before = rows(s3_warehouse)
    files_before = data_keys(s3_warehouse)
    args = ["--warehouse", s3_warehouse.uri, "--table", "db.t"]
    for key, value in s3_warehouse.options.items():
        args += ["--catalog-option", f"{key}={value}"]
    result = job.run(job.build_parser().parse_args(args), spark)
    assert result["committed"] and result["files_before"] == 6 and result["files_after"] < 6
    assert rows(s3_warehouse) == before
    assert len(live_files(s3_warehouse)) == result["files_after"]

    t = load_table(catalog_of(s3_warehouse), "db.t")
    expired = maintenance.expire_snapshots(t, retain_max=1, retain_min=1, older_than=0, max_deletes=100)
    assert expired["expired_snapshot_ids"] == [1, 2, 3, 4, 5, 6]
    assert data_keys(s3_warehouse) == live_files(s3_warehouse)  # the compacted-away files went
    assert files_before.isdisjoint(data_keys(s3_warehouse))

    stray = "warehouse/db.db/t/bucket-0/data-stray-orphan.parquet"
    staging = "warehouse/db.db/t/branch/.tmp-killed-0123456789ab/schema/schema-0"  # a killed branch create
    client = s3_warehouse.server.client()
    client.put_object(Bucket=s3_warehouse.bucket, Key=stray, Body=b"not referenced")
    client.put_object(Bucket=s3_warehouse.bucket, Key=staging, Body=b"{}")
    live_before = live_files(s3_warehouse)
    dry = maintenance.remove_orphan_files(t, older_than=datetime.timedelta(0), dry_run=True)
    found = [f["path"] for f in dry["deleted_files"]]
    assert "bucket-0/data-stray-orphan.parquet" in found and "branch/.tmp-killed-0123456789ab" in found, found
    maintenance.remove_orphan_files(t, older_than=datetime.timedelta(0))
    assert stray not in s3_warehouse.object_keys("warehouse/db.db/t/bucket-0/")
    assert not s3_warehouse.object_keys("warehouse/db.db/t/branch/.tmp-killed")
    assert live_files(s3_warehouse) == live_before and rows(s3_warehouse) == before


# -- streaming: kill and restart -----------------------------------------------------------


def test_streaming_sigkill_and_restart_is_exactly_once(spark, s3_warehouse, tmp_path, monkeypatch):
    """tests/streaming/test_streaming_kill.py's three runs with both tables on S3.

    The killed runs get the S3 settings the way a submitted job does: the connection's
    options in ``PAIMON_CATALOG_OPTIONS_JSON`` and its warehouse in ``PAIMON_CONNECTION_WAREHOUSE``
    (the query names neither credentials nor endpoint). The checkpoint stays local:
    Spark writes it through Hadoop, which needs hadoop-aws for s3a:// (docs/storage.md).
    """
    from streaming.stream_job import drain
    from support.kill import run_stream_job

    from airflow_provider_paimon.job_contract import CATALOG_OPTIONS_ENV
    from airflow_provider_paimon.spark.options import (
            CONNECTION_WAREHOUSE_ENV,
    )

    src = make_table(s3_warehouse, "db.src")
    append(src, [1, 2])
    append(src, [3])
    append(src, [4, 5])
    make_table(s3_warehouse, "db.dst")
    checkpoint = str(tmp_path / "ck")
    monkeypatch.setenv(CATALOG_OPTIONS_ENV, json.dumps(s3_warehouse.options))
    monkeypatch.setenv(CONNECTION_WAREHOUSE_ENV, s3_warehouse.uri)

    run_stream_job(s3_warehouse.uri, checkpoint, "before-commit:1")
    assert [r[0] for r in rows(s3_warehouse, "db.dst")] == [1, 2]
    assert data_keys(s3_warehouse, "db.dst") - live_files(s3_warehouse, "db.dst")  # batch 1's orphans
    run_stream_job(s3_warehouse.uri, checkpoint, "after-commit:2")
    assert [r[0] for r in rows(s3_warehouse, "db.dst")] == [1, 2, 3, 4, 5]

    append(load_table(catalog_of(s3_warehouse), "db.src"), [6])
    drain(spark, s3_warehouse.uri, checkpoint, s3_warehouse.options)  # clean restart in this session
    dst = load_table(catalog_of(s3_warehouse), "db.dst")
    assert [r[0] for r in rows(s3_warehouse, "db.dst")] == [1, 2, 3, 4, 5, 6]
    assert [s.commit_identifier for s in dst.snapshot_manager().list_snapshots()] == [0, 1, 2, 3]
    assert data_keys(s3_warehouse, "db.dst") == live_files(s3_warehouse, "db.dst")


# -- lineage capture -----------------------------------------------------------------------


def test_lineage_capture_of_a_batch_job_on_s3(spark, s3_warehouse, tmp_path):
    import time

    from airflow_provider_paimon.lineage.store import LineageStore
    from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture

    append(make_table(s3_warehouse, "db.src"), range(5))
    make_table(s3_warehouse, "db.dst")
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    conf = {"spark.paimon.lineage.url": url, "spark.paimon.lineage.job": "etl.s3",
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"), "spark.paimon.lineage.pollIntervalMs": "100"}
    for key, value in conf.items():
        spark.conf.set(key, value)
    opts = {"warehouse": s3_warehouse.uri, **s3_warehouse.options}
    try:
        capture = enable_lineage_capture(spark, force=False)
        try:
            src = spark.read.format("paimon").options(**opts).option("table", "db.src").load()
            src.write.format("paimon").options(**opts).option("table", "db.dst").mode("append").save()
            deadline = time.monotonic() + 60
            while capture.recorder.delivered < 1 and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            capture.close()
    finally:
        for key in conf:
            spark.conf.unset(key)
    with LineageStore.from_url(url) as store:
        assert [(r.table, r.snapshot_id) for r in store.source_data_lineages(job="etl.s3")] == [("src", 1)]
        assert [(r.table, r.snapshot_id) for r in store.sink_data_lineages(job="etl.s3")] == [("dst", 1)]
    assert [r[0] for r in rows(s3_warehouse, "db.dst")] == list(range(5))
