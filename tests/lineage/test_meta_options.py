"""The lineage proposal's catalog options (``table-lineage``, ``lineage-meta``, ``jdbc.*``).

Pure parsing and the capture's settings (no Spark); the recorder tests write to a
real SQLite store and read it back with ``LineageStore``.
"""

from __future__ import annotations

import json
import logging

import pytest

from airflow_provider_paimon.lineage.errors import (
    InvalidLineageArgumentError,
    UnsupportedBackendError,
)
from airflow_provider_paimon.lineage.meta_options import (
    has_lineage_proposal_options,
    lineage_meta_options,
    sqlalchemy_url,
)
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.lineage.config import capture_config
from airflow_provider_paimon.spark.lineage.recorder import BatchRecord, LineageRecorder, TableAt

PW = "Pa55:w@rd/x"  # URL-hostile on purpose


def text(url):
    return url.render_as_string(hide_password=False)


@pytest.mark.parametrize(
    ("jdbc", "expected"),
    [
        ("jdbc:mysql://db.example:3306/x", "mysql+pymysql://db.example:3306/x"),
        ("jdbc:mysql://db.example/x?useSSL=false&serverTimezone=UTC", "mysql+pymysql://db.example/x"),
        ("jdbc:mariadb://db:3307/x", "mariadb+pymysql://db:3307/x"),
        ("jdbc:postgresql://pg:5432/meta", "postgresql+psycopg2://pg:5432/meta"),
        ("jdbc:postgresql://pg/meta?sslmode=require", "postgresql+psycopg2://pg/meta?sslmode=require"),
        ("jdbc:postgresql:meta", "postgresql+psycopg2:///meta"),
        ("jdbc:sqlite:/var/lib/lineage.db", "sqlite+pysqlite:////var/lib/lineage.db"),
        ("jdbc:sqlite:file:/var/lib/lineage.db", "sqlite+pysqlite:////var/lib/lineage.db"),
        ("sqlite:////tmp/plain.db", "sqlite+pysqlite:////tmp/plain.db"),  # SQLAlchemy form too
    ],
)
def test_jdbc_urls_map_to_the_installed_python_driver(jdbc, expected):
    assert text(sqlalchemy_url(jdbc)) == expected


def test_sqlite_memory_url():
    url = sqlalchemy_url("jdbc:sqlite::memory:")
    assert (url.drivername, url.database) == ("sqlite+pysqlite", ":memory:")


def test_relative_sqlite_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert sqlalchemy_url("jdbc:sqlite:rel.db").database == str(tmp_path / "rel.db")


def test_credentials_go_into_the_url_object_only(caplog):
    opts = {
        "table-lineage": "true", "jdbc.url": "jdbc:mysql://db:3306/x",
        "jdbc.username": "lineage", "jdbc.password": PW, "jdbc.driver": "com.mysql.cj.jdbc.Driver",
    }
    settings = lineage_meta_options(opts)
    assert settings.url.username == "lineage" and settings.url.password == PW
    assert settings.url.drivername == "mysql+pymysql"
    shown = repr(settings) + settings.describe() + str(settings.url) + repr(settings.url)
    assert PW not in shown and "***" in settings.describe()
    # credentials inside the JDBC URL's query string count as given
    inline = sqlalchemy_url(f"jdbc:mysql://db/x?user=u&password={PW.replace('/', '%2F')}")
    assert (inline.username, inline.password) == ("u", PW)


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"table-lineage": "maybe"}, "table-lineage.*must be a boolean"),
        ({"data-lineage": "ture"}, "data-lineage.*must be a boolean"),
        ({"table-lineage": "true", "lineage-meta": "hbase"}, "installed: jdbc, memory"),
        ({"lineage-meta": "jdbc"}, "neither 'table-lineage' nor 'data-lineage'"),
        ({"table-lineage": "true", "jdbc.database": "1bad"}, "jdbc.database"),
        ({"table-lineage": "true", "jdbc.username": "u"}, "without 'jdbc.url'"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:h2:mem:x"}, "not a supported JDBC URL"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:mysql://a:1,b:2/x"}, "several hosts"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:mysql://a/x?foo=1"}, "does not take: foo"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:mysql://a/x", "jdbc.driver": "org.postgresql.Driver"},
         "does not fit a jdbc:mysql URL"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:mysql://u@a/x", "jdbc.username": "v"}, "give the user in one place"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:mysql://a/x?user=u&password=other",
          "jdbc.password": PW}, "give the password in one place"),
        ({"table-lineage": "true", "jdbc.url": "jdbc:mysql://a/x", "jdbc.password": PW}, "no user"),
    ],
)
def test_bad_options_fail_closed_naming_the_option(opts, message):
    with pytest.raises(InvalidLineageArgumentError, match=message) as info:
        lineage_meta_options(opts)
    assert PW not in str(info.value)


def test_a_driver_that_is_not_installed_is_named():
    with pytest.raises(UnsupportedBackendError, match="'pg8000', which is not installed"):
        sqlalchemy_url("jdbc:postgresql://h/db", driver="pg8000")


def test_flags_each_on_their_own_and_defaults():
    assert lineage_meta_options({"jdbc.url": "jdbc:mysql://a/x"}) is None  # a JDBC catalog's options
    assert not has_lineage_proposal_options({"jdbc.url": "x"}) and has_lineage_proposal_options({"Table-Lineage": "true"})
    only_tables = lineage_meta_options({"table-lineage": "true"})
    assert (only_tables.table_lineage, only_tables.data_lineage, only_tables.meta) == (True, False, "jdbc")
    assert only_tables.database == "paimon" and only_tables.url is None
    only_data = lineage_meta_options({"data-lineage": "on", "lineage-meta": "MEMORY"})
    assert (only_data.table_lineage, only_data.data_lineage, only_data.meta) == (False, True, "memory")
    off = lineage_meta_options({"table-lineage": "false", "data-lineage": "false"})
    assert off is not None and not off.enabled


# -- the capture's settings: conf, connection, our own keys --------------------------


def test_spark_conf_catalog_keys_configure_the_capture():
    cfg = capture_config(
        {
            "spark.paimon.catalog.table-lineage": "true",
            "spark.paimon.catalog.lineage-meta": "jdbc",
            "spark.paimon.catalog.jdbc.url": "jdbc:postgresql://pg:5432/meta",
            "spark.paimon.catalog.jdbc.username": "lineage",
            "spark.paimon.catalog.jdbc.password": PW,
            "spark.paimon.catalog.jdbc.database": "cat1",
        },
        "app", environ={},
    )
    assert cfg.enabled and cfg.table_lineage and not cfg.data_lineage
    assert cfg.database == "cat1" and cfg.meta == "jdbc"
    assert cfg.url.startswith("postgresql+psycopg2://lineage:") and "pg:5432/meta" in cfg.url
    assert PW not in repr(cfg) and PW not in cfg.describe()
    assert "lineage=table" in cfg.describe()


def test_connection_extra_reaches_the_capture_through_the_environment():
    env = {"PAIMON_CATALOG_OPTIONS_JSON": json.dumps({
        "data-lineage": "true", "jdbc.url": "jdbc:mysql://db/x", "jdbc.username": "u",
        "jdbc.password": PW, "fs.s3.endpoint": "http://s3",
    })}
    cfg = capture_config({}, "app", environ=env)
    assert cfg.enabled and cfg.data_lineage and not cfg.table_lineage
    assert cfg.meta_options["fs.s3.endpoint"] == "http://s3"  # all catalog options, for the options table
    # the conf wins over the connection
    cfg2 = capture_config({"spark.paimon.catalog.table-lineage": "true"}, "app", environ=env)
    assert cfg2.table_lineage and cfg2.data_lineage


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"spark.paimon.lineage.enabled": "false", "spark.paimon.catalog.table-lineage": "true"},
         "contradicts the catalog options"),
        ({"spark.paimon.lineage.url": "mysql+pymysql://u@other:3306/x",
          "spark.paimon.catalog.table-lineage": "true", "spark.paimon.catalog.jdbc.url": "jdbc:mysql://db:3306/x",
          "spark.paimon.catalog.jdbc.username": "u", "spark.paimon.catalog.jdbc.password": PW},
         "name different lineage stores"),
        ({"spark.paimon.lineage.url": "mysql+pymysql://u:other@db:3306/x",
          "spark.paimon.catalog.table-lineage": "true", "spark.paimon.catalog.jdbc.url": "jdbc:mysql://db:3306/x",
          "spark.paimon.catalog.jdbc.username": "u", "spark.paimon.catalog.jdbc.password": PW},
         "different passwords"),
        ({"spark.paimon.lineage.database": "a", "spark.paimon.catalog.table-lineage": "true",
          "spark.paimon.catalog.jdbc.database": "b"}, "jdbc.database='b'"),
        ({"spark.paimon.catalog.table-lineage": "perhaps"}, "table-lineage"),
    ],
)
def test_our_keys_and_the_proposals_must_agree(conf, message):
    with pytest.raises(InvalidArgumentError, match=message) as info:
        capture_config(conf, "app", environ={})
    assert PW not in str(info.value)


def test_agreeing_keys_are_fine_and_the_password_is_filled_in():
    cfg = capture_config(
        {"spark.paimon.lineage.url": "mysql+pymysql://u@db:3306/x", "spark.paimon.lineage.database": "cat",
         "spark.paimon.catalog.table-lineage": "true", "spark.paimon.catalog.jdbc.url": "jdbc:mariadb://db:3306/x",
         "spark.paimon.catalog.jdbc.username": "u", "spark.paimon.catalog.jdbc.password": PW,
         "spark.paimon.catalog.jdbc.database": "cat"},
        "app", environ={},
    )
    from sqlalchemy.engine import make_url

    assert make_url(cfg.url).password == PW and cfg.database == "cat"


# -- what the recorder writes for each flag -------------------------------------------


def _record(tmp_path, flags, caplog):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    conf = {f"spark.paimon.catalog.{k}": v for k, v in flags.items()}
    conf.update({
        "spark.paimon.catalog.jdbc.url": f"jdbc:sqlite:{tmp_path / 'l.sqlite'}",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.catalog.warehouse.note": "kept",
    })
    rec = LineageRecorder(capture_config(conf, "job.x", environ={}))
    rec.open()
    src, sink = TableAt("/wh", "db", "src", "main", 3), TableAt("/wh", "db", "sink", "main", 7)
    assert rec.record(BatchRecord("job.x", None, [src], [sink], streaming=False))
    assert rec.record_tables("job.x", [TableAt("/wh", "db", "other")])
    rec.close()
    with LineageStore.from_url(url) as store:
        return (
            [(t.database, t.table) for t in store.source_table_lineages(job="job.x")],
            [(t.database, t.table) for t in store.sink_table_lineages(job="job.x")],
            [(d.barrier_id, d.snapshot_id) for d in store.source_data_lineages(job="job.x")],
            [(d.barrier_id, d.snapshot_id) for d in store.sink_data_lineages(job="job.x")],
            store.options(),
        )


def test_table_lineage_alone_records_only_job_tables(tmp_path, caplog):
    src_t, sink_t, src_d, sink_d, options = _record(tmp_path, {"table-lineage": "true"}, caplog)
    assert src_t == [("db", "other"), ("db", "src")] and sink_t == [("db", "sink")]
    assert src_d == [] and sink_d == []
    # the options table holds the catalog options
    assert options["table-lineage"] == "true" and options["warehouse.note"] == "kept"


def test_data_lineage_alone_records_only_snapshot_links(tmp_path, caplog):
    src_t, sink_t, src_d, sink_d, _ = _record(tmp_path, {"data-lineage": "true"}, caplog)
    assert src_t == [] and sink_t == []
    assert src_d == [(1, 3)] and sink_d == [(1, 7)]


def test_both_flags_record_both(tmp_path, caplog):
    _src_t, sink_t, src_d, sink_d, _ = _record(
        tmp_path, {"table-lineage": "true", "data-lineage": "true"}, caplog
    )
    assert sink_t == [("db", "sink")] and src_d == [(1, 3)] and sink_d == [(1, 7)]


def test_password_never_logged_when_the_store_is_down(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    conf = {
        "spark.paimon.catalog.table-lineage": "true",
        "spark.paimon.catalog.jdbc.url": "jdbc:mysql://127.0.0.1:1/x",  # nothing listens on port 1
        "spark.paimon.catalog.jdbc.username": "u",
        "spark.paimon.catalog.jdbc.password": PW,
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
    }
    cfg = capture_config(conf, "job.y", environ={})
    rec = LineageRecorder(cfg, retry_interval=0)
    rec.open()
    assert not rec.record(BatchRecord("job.y", None, [], [TableAt("/wh", "db", "t", "main", 1)]))
    rec.close()
    assert rec.pending() == 1
    assert PW not in caplog.text and PW not in (rec.last_error or "")
    spooled = (tmp_path / "spool" / "job.y" / "pending.jsonl").read_text()
    assert PW not in spooled


# -- the paimon data source's options -------------------------------------------------


def test_data_source_options_keep_lineage_keys_away_from_pypaimon():
    from airflow_provider_paimon.spark.options import parse_options

    opts = parse_options({
        "warehouse": "/wh", "table": "db.t", "table-lineage": "true", "lineage-meta": "jdbc",
        "jdbc.url": "jdbc:mysql://db/x", "jdbc.username": "u", "jdbc.password": PW,
        "jdbc.driver": "org.mariadb.jdbc.Driver", "jdbc.database": "cat", "bucket": "2",
    })
    assert opts.lineage.table_lineage and opts.lineage.database == "cat"
    for key in ("table-lineage", "lineage-meta", "jdbc.url", "jdbc.driver", "jdbc.database"):
        assert key not in opts.catalog_options and key not in opts.table_options
    assert opts.table_options == {"bucket": "2"}
    assert PW not in repr(opts)
    plain = parse_options({"warehouse": "/wh", "table": "db.t", "jdbc.url": "jdbc:mysql://db/x"})
    assert plain.lineage is None and plain.catalog_options["jdbc.url"] == "jdbc:mysql://db/x"


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"table-lineage": "maybe"}, "option 'table-lineage' must be a boolean"),
     ({"data-lineage": "true", "lineage-meta": "nope"}, "installed: jdbc, memory")],
)
def test_data_source_refuses_bad_lineage_options(extra, message):
    from airflow_provider_paimon.spark.options import parse_options

    with pytest.raises(InvalidArgumentError, match=message):
        parse_options({"warehouse": "/wh", "table": "db.t", **extra})


def test_options_that_contradict_the_sessions_capture_are_refused():
    from airflow_provider_paimon.spark.lineage.direct import (
        SESSION_ENV,
        check_session,
        session_descriptor,
    )
    from airflow_provider_paimon.spark.options import parse_options

    cfg = capture_config({"spark.paimon.catalog.table-lineage": "true",
                          "spark.paimon.catalog.jdbc.url": "jdbc:sqlite:/tmp/a.db"}, "app", environ={})
    env = {SESSION_ENV: session_descriptor(cfg)}
    same = parse_options({"warehouse": "/wh", "table": "db.t", "table-lineage": "true",
                          "jdbc.url": "jdbc:sqlite:/tmp/a.db"})
    check_session(same, env)  # agrees: fine
    check_session(parse_options({"warehouse": "/wh", "table": "db.t"}), env)  # says nothing: fine
    other = parse_options({"warehouse": "/wh", "table": "db.t", "table-lineage": "true",
                           "data-lineage": "true", "jdbc.url": "jdbc:sqlite:/tmp/b.db"})
    with pytest.raises(InvalidArgumentError, match="disagree") as info:
        check_session(other, env)
    assert "data-lineage=true" in str(info.value) and "/tmp/b.db" in str(info.value)


def test_a_capture_without_a_store_leaves_option_lineage_to_the_data_source():
    """An OpenLineage-only capture records nothing: a read/write asking for lineage records it."""
    from airflow_provider_paimon.spark.commit_events import EVENT_LOG_ENV
    from airflow_provider_paimon.spark.lineage.direct import (
        SESSION_ENV,
        check_session,
        direct,
        session_descriptor,
    )
    from airflow_provider_paimon.spark.options import parse_options

    cfg = capture_config({"spark.paimon.openlineage.transport.type": "console"}, "app", environ={})
    assert cfg.enabled and not cfg.store
    env = {SESSION_ENV: session_descriptor(cfg), EVENT_LOG_ENV: "/tmp/events.jsonl"}
    asks = parse_options({"warehouse": "/wh", "table": "db.t", "table-lineage": "true",
                          "jdbc.url": "jdbc:sqlite:/tmp/a.db"})
    check_session(asks, env)  # no store of the capture's to disagree with
    assert direct(asks, env)
    assert not direct(parse_options({"warehouse": "/wh", "table": "db.t"}), env)
    stored = capture_config({"spark.paimon.lineage.url": "sqlite:////tmp/a.db"}, "app", environ={})
    assert not direct(asks, {SESSION_ENV: session_descriptor(stored), EVENT_LOG_ENV: "/tmp/e.jsonl"})


@pytest.mark.postgres
def test_lineage_keys_do_not_reach_a_jdbc_catalogs_driver(postgres_server_url, warehouse, unique_name):
    """pypaimon's JDBC catalog hands every jdbc.* option to its driver: jdbc.url would break it.

    Whoever merges options before opening a catalog drops the proposal's keys
    (``pypaimon_catalog_options``); ``open_catalog`` itself knows nothing of lineage.
    """
    import sqlalchemy as sa

    from airflow_provider_paimon.lineage.meta_options import pypaimon_catalog_options
    from airflow_provider_paimon.paimon.catalog import open_catalog

    server = sa.create_engine(postgres_server_url, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{unique_name}"')
    try:
        catalog = open_catalog(warehouse, pypaimon_catalog_options({
            "metastore": "jdbc", "uri": f"jdbc:postgresql://127.0.0.1:5432/{unique_name}",
            "jdbc.user": "postgres", "table-lineage": "true", "lineage-meta": "jdbc",
            "jdbc.url": "jdbc:postgresql://127.0.0.1:5432/test", "jdbc.driver": "org.postgresql.Driver",
            "jdbc.database": "lineage",
        }))
        catalog.create_database("db", True)
        assert "db" in catalog.list_databases()
        for attr in ("connection", "_connection", "conn"):  # release it before the DROP
            conn = getattr(catalog, attr, None)
            if hasattr(conn, "close"):
                conn.close()
    finally:
        with server.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{unique_name}" WITH (FORCE)')
        server.dispose()


def test_our_own_url_settings_take_a_jdbc_url_too():
    from airflow_provider_paimon.lineage.url import parse_url

    assert parse_url("jdbc:postgresql://pg:5432/meta").drivername == "postgresql+psycopg2"
    cfg = capture_config({"spark.paimon.lineage.url": "jdbc:mysql://lineage@db:3306/x"}, "app",
                         environ={"PAIMON_LINEAGE_PASSWORD": PW})
    from sqlalchemy.engine import make_url

    url = make_url(cfg.url)
    assert (url.drivername, url.username, url.password) == ("mysql+pymysql", "lineage", PW)


def test_capture_from_catalog_conf_records_data_lineage_only_and_tells_the_workers(tmp_path):
    """The capture a ``spark.paimon.catalog.*`` conf turns on: its events -> the store it names."""
    from types import SimpleNamespace

    from airflow_provider_paimon.spark.lineage.capture import LineageCapture
    from airflow_provider_paimon.spark.lineage.direct import check_session
    from airflow_provider_paimon.spark.options import parse_options

    path = tmp_path / "lineage.db"
    conf = {
        "spark.paimon.catalog.data-lineage": "true",
        "spark.paimon.catalog.lineage-meta": "jdbc",
        "spark.paimon.catalog.jdbc.url": f"jdbc:sqlite:{path}",
        "spark.paimon.catalog.jdbc.database": "cat1",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
    }
    config = capture_config(conf, "etl.seed", environ={})
    spark_conf = SimpleNamespace(getAll=lambda: list(conf.items()))
    spark = SimpleNamespace(sparkContext=SimpleNamespace(getConf=lambda: spark_conf),
                            conf=SimpleNamespace(getAll={}), version="4")
    capture = LineageCapture(spark, config, recorder=LineageRecorder(config))
    capture.recorder.open()
    table = {"warehouse": "/wh", "database": "db", "branch": "main"}
    capture._on_event({"kind": "scan", **table, "table": "src", "snapshot_id": 4})
    capture._on_event({"kind": "commit", **table, "table": "dst", "snapshot_id": 2, "commit_kind": "APPEND"})
    capture.recorder.close()
    with LineageStore.from_url(f"sqlite:///{path}", "cat1") as store:
        assert store.source_table_lineages() == [] and store.sink_table_lineages() == []
        assert [(d.table, d.barrier_id, d.snapshot_id) for d in store.source_data_lineages()] == [("src", 1, 4)]
        assert [(d.table, d.barrier_id, d.snapshot_id) for d in store.sink_data_lineages()] == [("dst", 1, 2)]
        assert store.options()["jdbc.database"] == "cat1"
    # what the data source's workers get: a read/write whose options say otherwise fails
    env = capture.routing.worker_env()
    check_session(parse_options({"warehouse": "/wh", "table": "db.t", "data-lineage": "true",
                                 "jdbc.url": f"jdbc:sqlite:{path}"}), env)
    with pytest.raises(InvalidArgumentError, match="table-lineage=true"):
        check_session(parse_options({"warehouse": "/wh", "table": "db.t", "table-lineage": "true"}), env)
