"""The lineage proposal's catalog options on a real local Spark, in SQLite, MariaDB, PostgreSQL.

A batch job reads one Paimon table and writes another with ``table-lineage``,
``data-lineage``, ``lineage-meta=jdbc`` and ``jdbc.*`` given the ways users give
catalog options: as the ``paimon`` data source's options (no capture: the data source
records), and through ``write_table`` (the native path). The store is read back with
``LineageStore`` and the package's own lineage queries. The ``spark.paimon.catalog.*``
conf and the capture: tests/lineage/test_meta_options.py (no Spark needed there).
"""

from __future__ import annotations

import contextlib
import time

import pyarrow as pa
import pytest
import sqlalchemy as sa
from pypaimon import CatalogFactory, Schema
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.lineage.queries import downstream, upstream
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark import register

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@contextlib.contextmanager
def configured(spark, conf):
    """Set conf keys and re-register the source (it carries the job name); undo both."""
    for key, value in conf.items():
        spark.conf.set(key, value)
    register(spark)
    try:
        yield
    finally:
        for key in conf:
            spark.conf.unset(key)
        register(spark)


def make_tables(warehouse, rows=5):
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    for name in ("db.src", "db.dst"):
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
    commit_arrow(catalog.get_table("db.src"), pa.table({"id": list(range(rows)), "v": ["x"] * rows}, schema=SCHEMA))
    return catalog


def latest(catalog, name):
    snapshot = catalog.get_table(name).snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else snapshot.id


def read_ids(catalog, name):
    read_builder = catalog.get_table(name).new_read_builder()
    splits = read_builder.new_scan().plan().splits()
    return read_builder.new_read().to_arrow(splits).column("id").to_pylist()


def copy(spark, warehouse, options):
    src = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").options(**options).load()
    src.write.format("paimon").option("warehouse", warehouse).option("table", "db.dst").options(**options).mode(
        "append"
    ).save()


def lineage_rows(url, database, job):
    with LineageStore.from_url(url, database, create=False) as store:
        return {
            "source_tables": [(t.database, t.table) for t in store.source_table_lineages(job=job)],
            "sink_tables": [(t.database, t.table) for t in store.sink_table_lineages(job=job)],
            "source_data": [(d.table, d.barrier_id, d.snapshot_id) for d in store.source_data_lineages(job=job)],
            "sink_data": [(d.table, d.barrier_id, d.snapshot_id) for d in store.sink_data_lineages(job=job)],
            "up": [(n.table, n.snapshot_id, n.job) for n in upstream(store, "db", "dst", 1)],
            "down": [(n.table, n.snapshot_id) for n in downstream(store, "db", "src", 1)],
            "options": store.options(),
            "runs": [(r.barrier_id, r.spark_app_id) for r in store.barrier_runs(job)],
        }


SECRET = "n0t-in-logs"


def _backends():
    return ["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql),
            pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=_backends())
def store(request, tmp_path, unique_name):
    """(seed options naming the store, SQLAlchemy URL to read it, system database)."""
    if request.param == "sqlite":
        path = tmp_path / "lineage.db"
        yield {"jdbc.url": f"jdbc:sqlite:{path}"}, f"sqlite:///{path}", "paimon"
        return
    if request.param == "mariadb":
        server = request.getfixturevalue("mysql_server_url")
        seed = {"jdbc.url": "jdbc:mysql://127.0.0.1:3306/test?useSSL=false", "jdbc.username": "root",
                "jdbc.driver": "com.mysql.cj.jdbc.Driver", "jdbc.database": unique_name}
        yield seed, server, unique_name
        engine = sa.create_engine(server)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{unique_name}`")
        engine.dispose()
        return
    server = request.getfixturevalue("postgres_server_url")
    seed = {"jdbc.url": "jdbc:postgresql://127.0.0.1:5432/test", "jdbc.username": "postgres",
            "jdbc.driver": "org.postgresql.Driver", "jdbc.database": unique_name}
    yield seed, server, unique_name
    engine = sa.create_engine(server)
    with engine.begin() as conn:
        conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{unique_name}" CASCADE')
    engine.dispose()


def test_data_source_options_record_lineage(spark, warehouse, tmp_path, store, caplog):
    seed, url, database = store
    catalog = make_tables(warehouse)
    job = f"seed.{database}.{time.monotonic_ns()}"
    options = {"table-lineage": "true", "data-lineage": "true", "lineage-meta": "jdbc", **seed}
    with configured(spark, {"spark.paimon.lineage.job": job, "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}):
        copy(spark, warehouse, options)
    # the write happened (the lineage keys did not reach pypaimon) ...
    assert sorted(read_ids(catalog, "db.dst")) == list(range(5))  # plain pypaimon reads it back
    dst = latest(catalog, "db.dst")
    # ... and its lineage is in the store the options name, readable by our queries
    got = lineage_rows(url, database, job)
    assert got["source_tables"] == [("db", "src")] and got["sink_tables"] == [("db", "dst")]
    assert got["source_data"] == [("src", 1, 1)] and got["sink_data"] == [("dst", 1, dst)]
    assert got["up"] == [("src", 1, job)] and got["down"] == [("dst", dst)]
    # the barrier names the Spark application that committed, as the snapshot does
    assert got["runs"] == [(1, spark.sparkContext.applicationId)]
    assert got["options"]["table-lineage"] == "true" and "jdbc.password" not in got["options"]
    assert got["options"]["warehouse"] == warehouse and "table" not in got["options"]
    assert not (tmp_path / "spool" / job / "pending.jsonl").exists()  # nothing left undelivered


def test_table_lineage_only_from_options_and_native_write(spark, warehouse, tmp_path):
    from airflow_provider_paimon.spark import write_table

    catalog = make_tables(warehouse)
    path = tmp_path / "lineage.db"
    job = f"seed.native.{time.monotonic_ns()}"
    options = {"table-lineage": "true", "jdbc.url": f"jdbc:sqlite:{path}", "jdbc.password": SECRET,
               "jdbc.username": "nobody"}  # SQLite ignores credentials; they must not leak anyway
    with configured(spark, {"spark.paimon.lineage.job": job, "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}):
        df = spark.createDataFrame([(9, "y")], "id long, v string")
        result = write_table(df, "db.dst", warehouse=warehouse, options=options)
    assert result.snapshot_id == latest(catalog, "db.dst") == 1
    got = lineage_rows(f"sqlite:///{path}", "paimon", job)
    assert got["sink_tables"] == [("db", "dst")]
    assert got["sink_data"] == [] and got["source_data"] == []  # table lineage only
    assert "jdbc.password" not in got["options"] and SECRET not in str(got["options"])
    # a flag that is not a boolean fails the write before it starts (the driver plans it)
    with pytest.raises(InvalidArgumentError, match="option 'table-lineage' must be a boolean"):
        write_table(df, "db.dst", warehouse=warehouse, options={"table-lineage": "maybe"})
    assert latest(catalog, "db.dst") == 1


@pytest.mark.parametrize("flag", ["table-lineage", "data-lineage"])
def test_capture_records_each_flag_alone(spark, warehouse, tmp_path, flag):
    """The capture turned on by one ``spark.paimon.catalog.*`` flag records only its kind.

    table lineage alone: the job's source and sink tables, no snapshot links; data
    lineage alone: the snapshot links, no job tables (the lineage proposal's two switches).
    """
    from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture

    catalog = make_tables(warehouse)
    path = tmp_path / "lineage.db"
    job = f"seed.alone.{flag}.{time.monotonic_ns()}"
    conf = {
        f"spark.paimon.catalog.{flag}": "true",
        "spark.paimon.catalog.jdbc.url": f"jdbc:sqlite:{path}",
        "spark.paimon.lineage.job": job,
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.lineage.pollIntervalMs": "100",
    }
    with configured(spark, conf):
        capture = enable_lineage_capture(spark, force=False)
        assert capture is not None  # the flag alone turns the capture on
        try:
            copy(spark, warehouse, {})  # no lineage options on the read or the write
            deadline = time.monotonic() + 60
            while capture.recorder.delivered < 1 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert capture.recorder.delivered >= 1
        finally:
            capture.close()
    assert sorted(read_ids(catalog, "db.dst")) == list(range(5))
    dst = latest(catalog, "db.dst")
    got = lineage_rows(f"sqlite:///{path}", "paimon", job)
    if flag == "table-lineage":
        assert got["source_tables"] == [("db", "src")] and got["sink_tables"] == [("db", "dst")]
        assert got["source_data"] == [] and got["sink_data"] == []
        assert got["options"]["table-lineage"] == "true" and "data-lineage" not in got["options"]
    else:
        assert got["source_tables"] == [] and got["sink_tables"] == []
        assert got["source_data"] == [("src", 1, 1)] and got["sink_data"] == [("dst", 1, dst)]
        assert got["up"] == [("src", 1, job)] and got["down"] == [("dst", dst)]
        assert got["options"]["data-lineage"] == "true" and "table-lineage" not in got["options"]


def test_data_lineage_only_from_data_source_options(spark, warehouse, tmp_path):
    """No capture: the data source records a read and a write with ``data-lineage`` alone."""
    catalog = make_tables(warehouse)
    path = tmp_path / "lineage.db"
    job = f"seed.data-only.{time.monotonic_ns()}"
    with configured(spark, {"spark.paimon.lineage.job": job, "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}):
        copy(spark, warehouse, {"data-lineage": "true", "jdbc.url": f"jdbc:sqlite:{path}"})
    assert sorted(read_ids(catalog, "db.dst")) == list(range(5))
    got = lineage_rows(f"sqlite:///{path}", "paimon", job)
    assert got["source_tables"] == [] and got["sink_tables"] == []  # no job tables
    assert got["source_data"] == [("src", 1, 1)] and got["sink_data"] == [("dst", 1, latest(catalog, "db.dst"))]


def test_native_read_and_write_helpers_take_the_seed_options(spark, warehouse, tmp_path):
    """``read_table`` then ``write_table`` with the lineage proposal's options: one barrier, both kinds."""
    from airflow_provider_paimon.spark import read_table, write_table

    catalog = make_tables(warehouse)
    path = tmp_path / "lineage.db"
    job = f"seed.native-rw.{time.monotonic_ns()}"
    options = {"table-lineage": "true", "data-lineage": "true", "lineage-meta": "jdbc",
               "jdbc.url": f"jdbc:sqlite:{path}"}
    with configured(spark, {"spark.paimon.lineage.job": job, "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}):
        df = read_table(spark, "db.src", warehouse=warehouse, options=options)
        result = write_table(df, "db.dst", warehouse=warehouse, options=options)
    assert sorted(read_ids(catalog, "db.dst")) == list(range(5))
    got = lineage_rows(f"sqlite:///{path}", "paimon", job)
    assert got["source_tables"] == [("db", "src")] and got["sink_tables"] == [("db", "dst")]
    assert got["source_data"] == [("src", 1, 1)] and got["sink_data"] == [("dst", 1, result.snapshot_id)]
