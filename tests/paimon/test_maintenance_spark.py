"""Expiry and orphan cleanup on a partitioned table written by the Spark ``paimon``
source (appends and an overwrite), with a tag and a branch from a plain snapshot."""

from __future__ import annotations

import os
from datetime import timedelta

import pyarrow as pa
from pypaimon import Schema
from support.branch_tables import load_table, open_catalog, table_dir
from support.maintenance import read_rows

from airflow_provider_paimon.paimon import branch as bops
from airflow_provider_paimon.paimon.maintenance import expire_snapshots, remove_orphan_files
from airflow_provider_paimon.paimon.tag import create_tag

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _partition_files(tdir: str) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(tdir):
        rel = os.path.relpath(root, tdir)
        if rel.startswith("p="):
            out.update(os.path.join(rel, f) for f in files)
    return out


def _spark_write(spark, warehouse: str, rows: list[tuple], mode: str = "append") -> None:
    df = spark.createDataFrame(rows, "id long, p string")
    df.write.format("paimon").mode(mode).option("warehouse", warehouse).option("table", "db.s").save()


def test_spark_written_table(spark, warehouse):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.s", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"]), False)
    _spark_write(spark, warehouse, [(1, "a"), (2, "b")])
    _spark_write(spark, warehouse, [(3, "a")])
    t = load_table(catalog, "db.s")
    create_tag(t, "first", snapshot_id=1)
    bops.create_branch(t, "at2", snapshot_id=2)
    _spark_write(spark, warehouse, [(4, "b")])
    _spark_write(spark, warehouse, [(9, "a"), (8, "c")], mode="overwrite")
    _spark_write(spark, warehouse, [(10, "c")])
    tdir = table_dir(warehouse, "db.s")
    files_before = _partition_files(tdir)

    def views():
        base = load_table(catalog, "db.s")
        return {
            "latest": read_rows(base),
            "tag": read_rows(base.copy({"scan.tag-name": "first"})),
            "branch": read_rows(load_table(catalog, "db.s", "at2")),
        }

    before = views()
    assert before["latest"] == [(8, "c"), (9, "a"), (10, "c")]
    result = expire_snapshots(t, retain_min=1, older_than=timedelta(0), max_deletes=100)
    assert result["expired_snapshot_ids"] == [1, 2, 3, 4]
    assert views() == before
    # snapshot 3's file (id 4) was overwritten and is needed by nothing retained: gone;
    # the files of snapshots 1 and 2 stay for the tag and the branch
    gone = files_before - _partition_files(tdir)
    assert len(gone) == 1 and gone.pop().startswith("p=b/bucket-")
    spark_rows = (
        spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.s").load().collect()
    )
    assert sorted((r.id, r.p) for r in spark_rows) == before["latest"]
    # orphan cleanup with the shortest safety age finds nothing to delete
    cleaned = remove_orphan_files(t, older_than=timedelta(0))
    assert [d for d in cleaned["deleted_files"] if d["kind"] != "temp"] == []
    assert views() == before
