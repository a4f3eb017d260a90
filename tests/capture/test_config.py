"""Capture settings from Spark conf keys and the environment."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from fuzz_passwords import passwords, shown

from airflow_provider_paimon.paimon import secrets
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.lineage.config import capture_config


def test_off_unless_configured():
    assert not capture_config({}, "app", environ={}).enabled
    assert capture_config({}, "app", environ={}, force=True).enabled
    cfg = capture_config({"spark.paimon.lineage.url": "sqlite:////tmp/x.db"}, "app", environ={})
    assert cfg.enabled and cfg.job == "app" and cfg.on_store_failure == "buffer"
    off = capture_config(
        {"spark.paimon.lineage.url": "sqlite:////tmp/x.db", "spark.paimon.lineage.enabled": "false"},
        "app", environ={},
    )
    assert not off.enabled


def test_job_database_policy_and_spool():
    cfg = capture_config(
        {
            "spark.paimon.lineage.enabled": "true",
            "spark.paimon.lineage.job": "dag.task",
            "spark.paimon.lineage.database": "lineage",
            "spark.paimon.lineage.onStoreFailure": "FAIL",
            "spark.paimon.lineage.spoolDir": "/tmp/spool",
            "spark.paimon.lineage.pollIntervalMs": "50",
        },
        "app",
        environ={"PAIMON_LINEAGE_URL": "sqlite:////tmp/env.db"},
    )
    assert (cfg.job, cfg.database, cfg.on_store_failure) == ("dag.task", "lineage", "fail")
    assert cfg.url == "sqlite:////tmp/env.db" and cfg.spool_dir == "/tmp/spool"
    assert cfg.poll_interval == 0.05


def test_password_from_environment_is_never_shown():
    cfg = capture_config(
        {"spark.paimon.lineage.url": "mysql+pymysql://lineage@db:3306/paimon"},
        "app",
        environ={"PAIMON_LINEAGE_PASSWORD": "s3cr3t!"},
    )
    assert "s3cr3t" in cfg.url  # filled in for the driver...
    assert "s3cr3t" not in repr(cfg) and "s3cr3t" not in cfg.describe()  # ...never shown
    assert "***" in cfg.describe()


def test_store_passwords_are_known_as_secrets_where_the_capture_reads_them(fresh_secrets):
    """The URL's password (as SQLAlchemy parses it), ``$PAIMON_LINEAGE_PASSWORD`` and the
    proposal's ``jdbc.password`` from the connection's private env are registered whole:
    a driver's message quoting any of them is masked, whatever they hold."""
    url_pw, env_pw, jdbc_pw = passwords(3037, 3)
    capture_config({"spark.paimon.lineage.url": f"mysql+pymysql://lineage:{quote(url_pw, safe='')}@db/paimon"},
                   "app", environ={"PAIMON_LINEAGE_PASSWORD": env_pw})
    capture_config({}, "app", environ={"PAIMON_CATALOG_OPTIONS_JSON": json.dumps({
        "table-lineage": "true", "jdbc.url": "jdbc:mysql://db:3306/x", "jdbc.username": "u",
        "jdbc.password": jdbc_pw})})
    assert {url_pw, env_pw, jdbc_pw} <= secrets.known_secrets()
    text = f"driver: access denied for {url_pw!r}; {env_pw} / {jdbc_pw}"
    assert shown(secrets.scrub(text), [url_pw, env_pw, jdbc_pw]) == []


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"spark.paimon.lineage.onStoreFailure": "drop"}, "onStoreFailure"),
        ({"spark.paimon.lineage.enabled": "maybe"}, "enabled"),
        ({"spark.paimon.lineage.pollIntervalMs": "-1"}, "pollIntervalMs"),
        ({"spark.paimon.lineage.urll": "x"}, "unknown lineage setting"),
        ({"spark.paimon.lineage.url": "not a url"}, "not a SQLAlchemy URL"),
    ],
)
def test_bad_values_name_the_key(conf, message):
    with pytest.raises(InvalidArgumentError, match=message):
        capture_config({"spark.paimon.lineage.enabled": "true", **conf}, "app", environ={})


def test_job_name_required_when_enabled():
    with pytest.raises(InvalidArgumentError, match="no job name"):
        capture_config({}, "", environ={}, force=True)


def test_openlineage_alone_turns_capture_on_without_a_store(tmp_path):
    ol = {"spark.paimon.openlineage.transport.type": "console"}
    cfg = capture_config(ol, "app", environ={})
    assert cfg.enabled and not cfg.store and "store=none" in cfg.describe()
    injected = {"spark.openlineage.transport.type": "http", "spark.openlineage.transport.url": "http://m:5000"}
    assert not capture_config(injected, "app", environ={}).store
    assert capture_config(injected, "app", environ={}).enabled
    # a store configured too: the usual capture, with the store
    both = capture_config({**ol, "spark.paimon.lineage.url": "sqlite:////tmp/x.db"}, "app", environ={})
    assert both.enabled and both.store
    # spark.paimon.lineage.enabled=false turns the store off, not OpenLineage
    assert not capture_config({**ol, "spark.paimon.lineage.enabled": "false"}, "app", environ={}).store
    # OpenLineage turned off, or only the parent keys Airflow injects: no capture
    assert not capture_config({**ol, "spark.paimon.openlineage.enabled": "false"}, "app", environ={}).enabled
    parent = {"spark.openlineage.parentJobName": "dag.task", "spark.openlineage.parentRunId": "x"}
    assert not capture_config(parent, "app", environ={}).enabled
    # openlineage-python's own configuration starts a capture only when asked for
    env = {"OPENLINEAGE_URL": "http://m:5000"}
    assert not capture_config({}, "app", environ=env).enabled
    asked = capture_config({"spark.paimon.openlineage.enabled": "true"}, "app", environ=env)
    assert asked.enabled and not asked.store
    # an invalid OpenLineage transport starts nothing (the emitter would be off)
    assert not capture_config({"spark.paimon.openlineage.transport.type": "carrier-pigeon"}, "app", environ={}).enabled
