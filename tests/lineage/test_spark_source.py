"""The read-only ``paimon-lineage`` Spark data source, on the shared local session."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from airflow_provider_paimon.lineage import BarrierRun, DataLineage, LineageStore, SnapshotRef
from airflow_provider_paimon.spark.lineage.source import PaimonLineageDataSource

pytestmark = pytest.mark.spark


@pytest.fixture
def lineage_url(tmp_path, spark):
    spark.dataSource.register(PaimonLineageDataSource)
    url = f"sqlite:///{tmp_path}/spark.sqlite"
    with LineageStore.from_url(url) as store:
        store.record_batch("clean", 1, [SnapshotRef("ods", "raw", 1)], [SnapshotRef("dwd", "orders", 11)])
        store.record_batch("clean", 2, [SnapshotRef("ods", "raw", 2)], [SnapshotRef("dwd", "orders", 12, "fix")])
        store.store_sink_data_lineage(DataLineage("agg", "dws", "daily", 1, 21,
                                                  create_time=datetime(2023, 6, 5, 13, 29, 1, tzinfo=timezone.utc)))
        store.set_options({"warehouse": "/w"})
        store.store_barrier_runs([
            BarrierRun("clean", 2, dag_id="fix_orders", run_id="manual__1", task_id="load", try_number=2,
                       map_index=-1, spark_app_id="local-17"),
            BarrierRun("agg", 1, spark_app_id="local-18"),  # outside Airflow: only the app
        ])
    return url


def test_reads_each_table_and_runs_the_seed_query_in_spark_sql(spark, lineage_url):
    reader = spark.read.format("paimon-lineage").option("url", lineage_url)
    for name in ("source_snapshot_lineage", "sink_snapshot_lineage", "source_job_lineage", "sink_job_lineage"):
        reader.option("table", name).load().createOrReplaceTempView(name)
    rows = spark.sql(
        "SELECT S.database, S.table, S.snapshot_id FROM source_snapshot_lineage S "
        "JOIN sink_snapshot_lineage T ON S.job=T.job AND S.barrier_id=T.barrier_id "
        "WHERE T.`database`='dwd' AND T.`table`='orders' AND T.snapshot_id=12"
    ).collect()
    assert [tuple(r) for r in rows] == [("ods", "raw", 2)]
    sinks = spark.table("sink_snapshot_lineage").orderBy("job", "barrier_id").selectExpr(
        "job", "barrier_id", "snapshot_id", "branch", "date_format(create_time, 'yyyy-MM-dd HH:mm:ss') AS t"
    ).collect()
    assert [tuple(r)[:4] for r in sinks] == [("agg", 1, 21, "main"), ("clean", 1, 11, "main"), ("clean", 2, 12, "fix")]
    assert sinks[0].t == "2023-06-05 13:29:01"  # stored UTC, read as UTC (session time zone)
    opts = reader.option("table", "options").load().collect()
    assert [(r.key, r.value) for r in opts] == [("warehouse", "/w")]


def test_barrier_run_joins_a_snapshot_to_the_run_that_wrote_it(spark, lineage_url):
    reader = spark.read.format("paimon-lineage").option("url", lineage_url)
    for name in ("sink_snapshot_lineage", "barrier_run"):
        reader.option("table", name).load().createOrReplaceTempView(name)
    assert [(f.name, f.dataType.simpleString()) for f in spark.table("barrier_run").schema.fields] == [
        ("job", "string"), ("barrier_id", "bigint"), ("dag_id", "string"), ("run_id", "string"),
        ("task_id", "string"), ("try_number", "int"), ("map_index", "int"), ("spark_app_id", "string"),
        ("create_time", "timestamp")]
    rows = spark.sql(
        "SELECT T.snapshot_id, R.dag_id, R.run_id, R.task_id, R.try_number, R.map_index, R.spark_app_id "
        "FROM sink_snapshot_lineage T LEFT JOIN barrier_run R ON T.job=R.job AND T.barrier_id=R.barrier_id "
        "ORDER BY T.snapshot_id"
    ).collect()
    assert [tuple(r) for r in rows] == [
        (11, None, None, None, None, None, None),
        (12, "fix_orders", "manual__1", "load", 2, -1, "local-17"),
        (21, None, None, None, None, None, "local-18"),
    ]


def test_writes_are_refused_and_change_nothing(spark, lineage_url):
    df = spark.read.format("paimon-lineage").option("url", lineage_url).option("table", "sink_snapshot_lineage").load()
    with pytest.raises(Exception, match="read-only"):
        df.write.format("paimon-lineage").option("url", lineage_url).option("table", "sink_snapshot_lineage").mode("append").save()
    with LineageStore.from_url(lineage_url) as store:
        assert len(store.sink_data_lineages()) == 3


def test_bad_options_name_the_fix(spark, lineage_url):
    with pytest.raises(Exception, match="choose one of source_job_lineage"):
        spark.read.format("paimon-lineage").option("url", lineage_url).option("table", "users").load()
    with pytest.raises(Exception, match="option 'table' is missing"):
        spark.read.format("paimon-lineage").option("url", lineage_url).load()
