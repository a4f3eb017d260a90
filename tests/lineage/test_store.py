"""The store on SQLite, MariaDB and PostgreSQL: the lineage proposal's API, idempotence, bad input."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import sqlalchemy as sa

from airflow_provider_paimon.lineage import (
    LATEST_VERSION,
    BarrierRun,
    DataLineage,
    InvalidLineageArgumentError,
    LineageFilter,
    LineageStore,
    SchemaVersionError,
    SnapshotRef,
    TableLineage,
)
from airflow_provider_paimon.lineage import schema as lineage_schema

from .helpers import snapshot_count

ALL_TABLES = ("source_job_lineage", "sink_job_lineage", "source_snapshot_lineage", "sink_snapshot_lineage")


def counts(store) -> dict[str, int]:
    return {t: snapshot_count(store, t) for t in ALL_TABLES}


def test_creates_seed_tables_with_seed_columns_and_keys(store):
    inspector = sa.inspect(store.engine)
    for name in ("source_job_lineage", "sink_job_lineage"):
        cols = [c["name"] for c in inspector.get_columns(name)]
        assert cols[:4] == ["job", "database", "table", "create_time"]
        assert inspector.get_pk_constraint(name)["constrained_columns"] == ["job", "database", "table"]
    for name in ("source_snapshot_lineage", "sink_snapshot_lineage"):
        cols = [c["name"] for c in inspector.get_columns(name)]
        assert cols[:6] == ["job", "barrier_id", "database", "table", "snapshot_id", "create_time"]
        assert inspector.get_pk_constraint(name)["constrained_columns"] == ["job", "barrier_id", "database", "table"]
        assert "branch" in cols
    assert "options" in inspector.get_table_names()
    assert store.schema_version == LATEST_VERSION


def test_store_and_read_all_four_kinds(store):
    store.store_source_table_lineage(TableLineage("job", "db", "src"))
    store.store_sink_table_lineage(TableLineage("job", "db", "dst", branch="fix"))
    store.store_source_data_lineage(DataLineage("job", "db", "src", 0, 3))
    store.store_sink_data_lineage(DataLineage("job", "db", "dst", 0, 8, branch="fix"))
    assert [(e.job, e.database, e.table, e.branch) for e in store.source_table_lineages()] == [("job", "db", "src", "main")]
    assert [(e.table, e.branch) for e in store.sink_table_lineages()] == [("dst", "fix")]
    (src,) = store.source_data_lineages()
    assert (src.barrier_id, src.snapshot_id, src.branch) == (0, 3, "main")
    assert src.create_time.tzinfo is not None
    (snk,) = store.sink_data_lineages(job="job")
    assert (snk.table, snk.snapshot_id, snk.branch) == ("dst", 8, "fix")


def test_same_key_twice_is_idempotent_latest_snapshot_wins_first_time_kept(store):
    first = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    store.store_sink_data_lineage(DataLineage("j", "db", "t", 7, 70, create_time=first))
    store.store_sink_data_lineage(DataLineage("j", "db", "t", 7, 70))
    store.store_sink_data_lineage(DataLineage("j", "db", "t", 7, 71))
    store.store_source_table_lineage(TableLineage("j", "db", "t"))
    store.store_source_table_lineage(TableLineage("j", "db", "t"))
    (row,) = store.sink_data_lineages()
    assert row.snapshot_id == 71
    assert row.create_time == first
    assert counts(store)["source_job_lineage"] == 1


def test_record_batch_writes_data_and_table_lineage_together(store):
    n = store.record_batch("etl", 4, [SnapshotRef("db", "a", 10), SnapshotRef("db", "b", 2)], [SnapshotRef("db", "c", 5)])
    assert n == 6
    assert counts(store) == {"source_job_lineage": 2, "sink_job_lineage": 1,
                             "source_snapshot_lineage": 2, "sink_snapshot_lineage": 1}


def test_filters_on_names_barriers_and_snapshot_ranges(store):
    for barrier in range(5):
        store.record_batch("j1", barrier, [SnapshotRef("db", "a", barrier + 1)], [SnapshotRef("db", "b", barrier + 10)])
    store.record_batch("j2", 0, [SnapshotRef("db", "b", 10)], [SnapshotRef("other", "c", 1)])
    assert [e.barrier_id for e in store.source_data_lineages(job="j1", min_barrier_id=1, max_barrier_id=3)] == [1, 2, 3]
    assert [e.snapshot_id for e in store.sink_data_lineages(LineageFilter(database="db", min_snapshot_id=12))] == [12, 13, 14]
    assert [e.job for e in store.source_data_lineages(table="b")] == ["j2"]
    assert [e.table for e in store.sink_table_lineages(database="other")] == ["c"]
    assert len(store.source_data_lineages(job="j1", limit=2)) == 2
    assert store.sink_data_lineages(job="j1", barrier_id=4, snapshot_id=14)[0].table == "b"


EVIL = ["x' OR '1'='1", "j1'; DROP TABLE source_snapshot_lineage; --", "%", "_", "j1\\",
        '"; DELETE FROM options; --', "j1` OR 1=1 #"]


def test_sql_metacharacters_in_filters_and_deletes_are_plain_text(store):
    store.record_batch("j1", 1, [SnapshotRef("db", "a", 1)], [SnapshotRef("db", "b", 2)])
    before = counts(store)
    for evil in EVIL:
        assert store.source_data_lineages(job=evil) == []
        assert store.sink_table_lineages(database=evil, table=evil) == []
        assert store.delete_data_lineage(evil) == 0
        assert store.delete_table_lineage(evil) == 0
    assert counts(store) == before
    # and such names are stored and found as what they are
    for evil in EVIL:
        store.store_source_table_lineage(TableLineage(evil, "db", "a"))
        assert [e.job for e in store.source_table_lineages(job=evil)] == [evil]


def test_delete_actions_report_counts_and_unknown_job_is_zero(store):
    store.record_batch("j1", 1, [SnapshotRef("db", "a", 1)], [SnapshotRef("db", "b", 2)])
    store.record_batch("j1", 2, [SnapshotRef("db", "a", 2)], [SnapshotRef("db", "b", 3)])
    store.record_batch("j2", 1, [SnapshotRef("db", "b", 2)], [SnapshotRef("db", "c", 1)])
    assert store.delete_data_lineage("nobody") == 0
    assert store.delete_table_lineage("nobody") == 0
    assert store.delete_data_lineage("j1") == 4
    assert store.delete_source_table_lineage("j1") == 1
    assert store.delete_sink_table_lineage("j1") == 1
    assert counts(store) == {"source_job_lineage": 1, "sink_job_lineage": 1,
                             "source_snapshot_lineage": 1, "sink_snapshot_lineage": 1}


@pytest.mark.parametrize("make", [
    lambda: DataLineage("j", "db", "t", -1, 5),
    lambda: DataLineage("j", "db", "t", 1, 0),
    lambda: DataLineage("j", "db", "t", None, 5),
    lambda: DataLineage("j", "db", "t", 1, "5"),
    lambda: DataLineage("j", "db", "t", True, 5),
    lambda: DataLineage("", "db", "t", 1, 5),
    lambda: DataLineage(" j", "db", "t", 1, 5),
    lambda: DataLineage("j", "db", "t", 1, 2**63),
    lambda: TableLineage("j", "db", "x" * 256),
    lambda: TableLineage("j", "db", "t", branch="a/b"),
    lambda: TableLineage("j", None, "t"),
])
def test_bad_records_are_refused_before_anything_is_written(make):
    with pytest.raises(InvalidLineageArgumentError):
        make()


def test_bad_input_changes_nothing(store):
    store.record_batch("j1", 1, [SnapshotRef("db", "a", 1)], [SnapshotRef("db", "b", 2)])
    before = counts(store)
    good = DataLineage("j9", "db", "a", 1, 1)
    with pytest.raises(InvalidLineageArgumentError, match="DataLineage"):
        store.store_lineage(source_data=[good, ("j9", "db", "a", 2, 2)])
    with pytest.raises(InvalidLineageArgumentError, match="job"):
        store.delete_data_lineage("")
    with pytest.raises(InvalidLineageArgumentError, match="snapshot_id"):
        store.record_batch("j9", 1, [SnapshotRef("db", "a", 1)], [SnapshotRef("db", "b", -3)])
    with pytest.raises(InvalidLineageArgumentError, match="barrier_id"):
        store.record_batch("j9", -1, [SnapshotRef("db", "a", 1)])
    with pytest.raises(InvalidLineageArgumentError, match="data lineage only"):
        store.source_table_lineages(snapshot_id=3)
    with pytest.raises(InvalidLineageArgumentError, match="unknown lineage filter"):
        store.source_data_lineages(jobb="x")
    with pytest.raises(InvalidLineageArgumentError, match="greater"):
        store.source_data_lineages(min_snapshot_id=5, max_snapshot_id=4)
    assert counts(store) == before


def test_options_table_keeps_catalog_options_but_not_secrets(store):
    stored = store.set_options({"warehouse": "s3://b/w", "jdbc.password": "hunter2", "table-lineage": "true"})
    assert stored == ["table-lineage", "warehouse"]
    assert store.options() == {"warehouse": "s3://b/w", "table-lineage": "true"}


def test_newer_schema_version_is_refused_and_left_alone(target):
    LineageStore.from_url(target.url, target.database).close()
    with LineageStore.from_url(target.url, target.database) as store, store.engine.begin() as conn:
        conn.execute(lineage_schema.schema_version.insert().values(
            version=LATEST_VERSION + 1, description="from the future",
            applied_at=datetime(2030, 1, 1)))
    with pytest.raises(SchemaVersionError, match=rf"version {LATEST_VERSION + 1}.*upgrade airflow-provider-paimon"):
        LineageStore.from_url(target.url, target.database)


def test_bare_seed_schema_is_upgraded_keeping_rows(target):
    """A store holding only the lineage proposal's tables (no version table) is migrated in place."""
    url = sa.engine.make_url(target.url)
    if target.backend == "mysql":
        boot = sa.create_engine(url)
        with boot.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE `{target.database}`")
        boot.dispose()
        engine = sa.create_engine(url.set(database=target.database))
    elif target.backend == "postgresql":
        engine = sa.create_engine(url, connect_args={"options": f"-c search_path={target.database}"})
        with engine.connect() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{target.database}"')
            conn.commit()
    else:
        engine = sa.create_engine(url)
    lineage_schema.proposal_metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO sink_snapshot_lineage (job, barrier_id, " + ("`database`, `table`" if target.backend == "mysql" else '"database", "table"')
            + ", snapshot_id, create_time) VALUES ('old', 1, 'db', 't', 5, :ts)"), {"ts": datetime(2023, 6, 5, 13, 29, 1)})
    engine.dispose()
    with LineageStore.from_url(target.url, target.database) as store:
        assert store.schema_version == LATEST_VERSION
        (row,) = store.sink_data_lineages()
        assert (row.job, row.snapshot_id, row.branch) == ("old", 5, "main")
        names = {i["name"] for i in sa.inspect(store.engine).get_indexes("sink_snapshot_lineage")}
        assert "ix_sink_snapshot_lineage_lookup" in names


def test_create_false_refuses_to_create(target):
    from airflow_provider_paimon.lineage import LineageError

    with pytest.raises(LineageError, match="paimon-lineage init"):
        LineageStore.from_url(target.url, target.database, create=False)


def test_next_barrier_id_counts_per_job_and_starts_above_recorded_barriers(store):
    assert [store.next_barrier_id("batch") for _ in range(3)] == [1, 2, 3]
    store.record_batch("was-streaming", 41, [SnapshotRef("db", "a", 1)])
    assert store.next_barrier_id("was-streaming") == 42
    store.delete_data_lineage("batch")
    assert store.next_barrier_id("batch") == 4  # never handed out twice
    with pytest.raises(InvalidLineageArgumentError):
        store.next_barrier_id(" ")


@pytest.mark.postgres
def test_postgres_schema_name_keeps_its_case(postgres_server_url, unique_name):
    from .helpers import StoreTarget, drop_target

    target = StoreTarget("postgresql", postgres_server_url, "Mixed_" + unique_name)
    try:
        with LineageStore.from_url(target.url, target.database) as store:
            store.record_batch("j", 1, [SnapshotRef("db", "a", 1)])
        with LineageStore.from_url(target.url, target.database) as store:
            assert len(store.source_data_lineages()) == 1
    finally:
        drop_target(target)


def test_mysql_url_naming_a_missing_database_creates_it(mysql_server_url, unique_name):
    """``mysql+pymysql://host/paimon`` works on first use although ``paimon`` is missing."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    from airflow_provider_paimon.lineage import LineageStore, SnapshotRef

    url = make_url(mysql_server_url).set(database=unique_name)
    try:
        with LineageStore.from_url(url.render_as_string(hide_password=False), database=unique_name) as store:
            store.record_batch("j", 1, [SnapshotRef("a", "b", 1)], [SnapshotRef("c", "d", 2)])
            assert [r.snapshot_id for r in store.sink_data_lineages(job="j")] == [2]
    finally:
        engine = sa.create_engine(mysql_server_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{unique_name}`")
        engine.dispose()


def test_barrier_runs_are_kept_with_the_lineage_replaced_on_replay_and_deleted_with_it(store):
    props = {"airflow.dag_id": "orders", "airflow.run_id": "manual__1", "airflow.task_id": "enrich",
             "airflow.try_number": "2", "spark.app.id": "local-1"}
    run = BarrierRun.from_properties("job", 7, props)
    assert (run.dag_id, run.run_id, run.task_id, run.try_number, run.map_index, run.spark_app_id) == (
        "orders", "manual__1", "enrich", 2, None, "local-1")
    store.store_lineage(sink_data=[DataLineage("job", "db", "dst", 7, 3)], runs=[run])
    store.store_barrier_runs([BarrierRun("job", 8, spark_app_id="local-2")])  # outside Airflow
    got = store.barrier_runs(job="job")
    assert [(r.barrier_id, r.dag_id, r.try_number, r.spark_app_id) for r in got] == [
        (7, "orders", 2, "local-1"), (8, None, None, "local-2")]
    assert got[0].create_time.tzinfo is not None
    # a replayed barrier (the next try) names the latest run
    store.store_barrier_runs([BarrierRun.from_properties("job", 7, {**props, "airflow.try_number": "3"})])
    assert [r.try_number for r in store.barrier_runs("job", 7)] == [3]
    assert store.barrier_runs("other") == []
    with pytest.raises(InvalidLineageArgumentError, match="try_number"):
        BarrierRun("job", 1, try_number="2")
    assert store.delete_data_lineage("job") == 3  # the data row and both runs
    assert store.barrier_runs() == []


def test_version_3_store_gets_barrier_run_keeping_its_rows(target):
    """A store of the previous version (no barrier_run) is upgraded when opened."""
    with LineageStore.from_url(target.url, target.database) as store:
        store.store_sink_data_lineage(DataLineage("old", "db", "t", 1, 5))
        with store.engine.begin() as conn:  # back to version 3
            lineage_schema.barrier_run.drop(conn)
            conn.execute(sa.delete(lineage_schema.schema_version).where(lineage_schema.schema_version.c.version > 3))
    with LineageStore.from_url(target.url, target.database) as store:
        assert store.schema_version == LATEST_VERSION == 5
        assert "barrier_run" in sa.inspect(store.engine).get_table_names()
        assert [(r.job, r.snapshot_id) for r in store.sink_data_lineages()] == [("old", 5)]
        store.store_barrier_runs([BarrierRun("old", 1, dag_id="d", task_id="t")])
        assert [(r.dag_id, r.task_id) for r in store.barrier_runs("old", 1)] == [("d", "t")]
