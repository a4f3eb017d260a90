"""Snapshots written through Spark name the Airflow run and the Spark application.

The data source's commit runs in a Python worker Spark starts on the driver host,
which sees neither the driver's environment as it is now nor the SparkContext: the
properties are taken on the driver by ``register(spark)``. Each test sets (or clears)
``AIRFLOW_CTX_*`` and registers again, as a job's driver does at start.
"""

from __future__ import annotations

import json
import os

import pytest

from airflow_provider_paimon.spark import register

pytestmark = pytest.mark.spark

CONTEXT = {
    "AIRFLOW_CTX_DAG_ID": "orders_daily",
    "AIRFLOW_CTX_DAG_RUN_ID": "scheduled__2026-11-24T00:00:00+00:00",
    "AIRFLOW_CTX_TASK_ID": "load",
    "AIRFLOW_CTX_TRY_NUMBER": "2",
    "AIRFLOW_CTX_MAP_INDEX": "5",
}
EXPECTED = {
    "airflow.dag_id": "orders_daily",
    "airflow.run_id": "scheduled__2026-11-24T00:00:00+00:00",
    "airflow.task_id": "load",
    "airflow.try_number": "2",
    "airflow.map_index": "5",
}


@pytest.fixture
def in_task(spark, monkeypatch):
    """The driver runs inside an Airflow task try (mapped, index 5)."""
    for key, value in CONTEXT.items():
        monkeypatch.setenv(key, value)
    register(spark)
    yield
    monkeypatch.undo()
    _clear(monkeypatch)
    register(spark)


@pytest.fixture
def outside_airflow(spark, monkeypatch):
    _clear(monkeypatch)
    register(spark)


def _clear(monkeypatch):
    for key in [k for k in os.environ if k.startswith("AIRFLOW_CTX_")]:
        monkeypatch.delenv(key)


def _snapshot_file(warehouse: str, table: str, snapshot_id: int) -> dict:
    db, name = table.split(".")
    with open(os.path.join(warehouse, f"{db}.db", name, "snapshot", f"snapshot-{snapshot_id}")) as fh:
        return json.load(fh)


def _write(spark, warehouse, table, ids, mode="append"):
    (
        spark.createDataFrame([(i, f"n{i}") for i in ids], "id long, name string")
        .write.format("paimon").mode(mode)
        .option("warehouse", warehouse).option("table", table).option("create-table", "true")
        .save()
    )


def test_batch_write_and_overwrite_name_the_run_and_app(spark, warehouse, probe, in_task):
    _write(spark, warehouse, "db.orders", range(3))
    _write(spark, warehouse, "db.orders", range(2), mode="overwrite")

    app_id = spark.sparkContext.applicationId
    for snapshot_id, kind in ((1, "APPEND"), (2, "OVERWRITE")):
        snap = probe.table("db.orders").snapshot_manager().get_snapshot_by_id(snapshot_id)
        assert snap.commit_kind == kind
        assert snap.properties == {**EXPECTED, "spark.app.id": app_id}
        # the file itself, as Paimon Java and other readers see it
        assert _snapshot_file(warehouse, "db.orders", snapshot_id)["properties"]["airflow.run_id"] == (
            EXPECTED["airflow.run_id"]
        )
    assert probe.read_arrow("db.orders").num_rows == 2


def test_outside_airflow_only_the_app_id(spark, warehouse, probe, outside_airflow):
    _write(spark, warehouse, "db.plain", range(4))
    snap = probe.latest("db.plain")
    assert snap.properties == {"spark.app.id": spark.sparkContext.applicationId}
    assert probe.read_arrow("db.plain").num_rows == 4


def test_native_write_table_names_the_run(spark, warehouse, probe, in_task):
    from airflow_provider_paimon.spark import write_table

    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string")
    result = write_table(df, "db.native", warehouse=warehouse, options={"create-table": "true"})
    snap = probe.latest("db.native")
    assert snap.id == result.snapshot_id
    assert snap.properties == {**EXPECTED, "spark.app.id": spark.sparkContext.applicationId}


def test_streaming_micro_batches_name_the_run(spark, warehouse, probe, in_task, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string").write.parquet(str(source / "p1"))
    query = (
        spark.readStream.schema("id long, name string").parquet(str(source / "p1"))
        .writeStream.format("paimon")
        .option("warehouse", warehouse).option("table", "db.stream").option("create-table", "true")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    snap = probe.latest("db.stream")
    assert snap.commit_kind == "APPEND" and snap.commit_identifier == 0  # micro-batch 0
    assert snap.properties == {**EXPECTED, "spark.app.id": spark.sparkContext.applicationId}
    assert probe.read_arrow("db.stream").num_rows == 2


def test_foreach_batch_writer_names_the_run(spark, warehouse, probe, in_task, tmp_path):
    from airflow_provider_paimon.spark import foreach_batch_writer

    source = tmp_path / "in"
    spark.createDataFrame([(1, "a")], "id long, name string").write.parquet(str(source))
    sink = foreach_batch_writer(
        "db.fb", warehouse=warehouse, checkpoint_location=str(tmp_path / "ckpt"),
        options={"create-table": "true"},
    )
    query = (
        spark.readStream.schema("id long, name string").parquet(str(source))
        .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    snap = probe.latest("db.fb")
    assert snap.commit_identifier == 0
    assert snap.properties == {**EXPECTED, "spark.app.id": spark.sparkContext.applicationId}
