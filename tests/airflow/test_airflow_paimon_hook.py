"""PaimonHook against a real warehouse written by pypaimon, connections from AIRFLOW_CONN_*."""

from __future__ import annotations

import pytest
from conftest import SECRET, set_connection

from airflow_provider_paimon.hooks.paimon import (
    PaimonHook,
    config_from_connection,
    is_secret_option,
)
from airflow_provider_paimon.paimon.errors import BranchNotFoundError, TableNotFoundError


def test_connection_fields_map_to_catalog_options():
    config = config_from_connection(
        "/data/wh",
        "alice",
        "pw",
        {"metastore": "jdbc", "extra__paimon__uri": "jdbc:mysql://db/paimon", "jdbc.useSSL": False},
    )
    assert config.warehouse == "/data/wh"
    assert config.options == {
        "metastore": "jdbc",
        "uri": "jdbc:mysql://db/paimon",
        "jdbc.useSSL": "False",
        "jdbc.user": "alice",
        "jdbc.password": "pw",
    }
    assert config.secret_options == {"jdbc.password": "pw"}
    assert "jdbc.password" not in config.public_options

    rest = config_from_connection(None, None, "tok", {"metastore": "rest", "warehouse": "s3://b/wh"})
    assert rest.warehouse == "s3://b/wh"
    assert rest.secret_options == {"token": "tok"}
    assert "warehouse" not in rest.options


@pytest.mark.parametrize(
    ("key", "secret"),
    [("jdbc.password", True), ("s3.secret-key", True), ("token", True), ("fs.oss.accessKeyId", True),
     ("metastore", False), ("uri", False), ("jdbc.useSSL", False)],
)
def test_secret_option_detection(key, secret):
    assert is_secret_option(key) is secret


def test_metadata_answers(wh):
    hook = PaimonHook()
    assert hook.warehouse == wh.path
    assert hook.list_databases() == ["db"]
    assert hook.list_tables("db") == ["events", "users"]
    assert hook.table_exists("db.events") and not hook.table_exists("db.nope")

    schema = hook.get_schema("db.events")
    assert [f["name"] for f in schema["fields"]] == ["id", "dt", "v"]
    assert schema["partition_keys"] == ["dt"] and schema["primary_keys"] == []
    assert hook.is_primary_key_table("db.users") and not hook.is_primary_key_table("db.events")

    latest = hook.get_latest_snapshot("db.events")
    assert latest["id"] == 3 and latest["commit_kind"] == "APPEND"
    assert [s["id"] for s in hook.list_snapshots("db.events")] == [1, 2, 3]
    assert hook.get_latest_snapshot_id("db.events", branch="fix") == 2
    assert hook.get_latest_snapshot_id("db.users") is None
    assert hook.get_snapshot("db.events", 2)["id"] == 2 and hook.get_snapshot("db.events", 99) is None

    assert hook.list_tags("db.events") == ["t1"]
    assert hook.tag_exists("db.events", "t1") and not hook.tag_exists("db.events", "t9")
    assert hook.get_tag("db.events", "t1")["id"] == 1
    assert hook.list_branches("db.events") == ["fix"]
    assert hook.branch_exists("db.events", "fix") and hook.branch_exists("db.events", "main")
    assert not hook.branch_exists("db.events", "other")
    assert hook.list_consumers("db.events") == {"reader": 2}
    assert hook.list_consumers("db.events", branch="fix") == {}


def test_unknown_table_and_branch_are_clear_errors(wh):
    hook = PaimonHook()
    with pytest.raises(TableNotFoundError, match="tables in db: events, users"):
        hook.get_table("db.nope")
    with pytest.raises(BranchNotFoundError, match="branches: fix"):
        hook.get_latest_snapshot("db.events", branch="other")


def test_test_connection(wh, monkeypatch):
    ok, message = PaimonHook().test_connection()
    assert ok and wh.path in message and "1 databases" in message

    set_connection(monkeypatch, "paimon_bad", {"conn_type": "paimon", "host": wh.path, "extra": {"metastore": "nosuch"}})
    ok, message = PaimonHook("paimon_bad").test_connection()
    assert not ok and "cannot open the Paimon catalog" in message


def test_missing_warehouse_is_a_clear_error(monkeypatch):
    set_connection(monkeypatch, "paimon_empty", {"conn_type": "paimon"})
    with pytest.raises(ValueError, match="names no warehouse"):
        PaimonHook("paimon_empty").catalog_config  # noqa: B018


def test_secret_option_values_are_masked(wh):
    from airflow.sdk.log import redact

    config = PaimonHook().catalog_config
    assert config.secret_options == {"s3.secret-key": SECRET}
    assert SECRET not in str(redact(f"opening catalog with {SECRET}"))
