"""PaimonHook against a real warehouse written by pypaimon, connections from AIRFLOW_CONN_*."""

from __future__ import annotations

import pytest
from support.airflow_connections import SECRET, set_connection

from airflow_provider_paimon.hooks.paimon import PaimonHook, config_from_connection
from airflow_provider_paimon.paimon.errors import BranchNotFoundError, TableNotFoundError
from airflow_provider_paimon.paimon.secrets import is_secret


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
    # the password, and an extra that is no known setting (fail closed), are secret
    assert config.secret_options == {"jdbc.password": "pw", "jdbc.useSSL": "False"}
    assert config.public_options == {"metastore": "jdbc", "uri": "jdbc:mysql://db/paimon", "jdbc.user": "alice"}

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
    assert is_secret(key) is secret


PUNCT_PASSWORD = "Pw,(x)'y@z/%+ \u00a7\u2014q9"


def test_connection_secrets_are_registered_by_origin_whole():
    """What the connection says is secret is masked whole, whatever punctuation it holds;
    an unknown extra is secret (fail closed), a known setting is not."""
    from airflow.sdk.log import redact

    from airflow_provider_paimon.paimon.secrets import known_secrets, scrub

    custom = "custom-Opt-Value-7e1"
    config = config_from_connection(
        "s3://bucket/wh", "AKIDLOGIN7788", PUNCT_PASSWORD,
        {"endpoint": "http://127.0.0.1:9000", "my.vendor.option": custom, "file.format": "parquet",
         "uri": "http://rest-user:Uri,Pw(1)@rest:8080/v1", "cache-enabled": True},
    )
    assert config.options["fs.s3.accessKeySecret"] == PUNCT_PASSWORD
    assert set(config.secret_options) == {"fs.s3.accessKeyId", "fs.s3.accessKeySecret", "my.vendor.option", "uri"}
    assert {"fs.s3.endpoint", "file.format", "cache-enabled"} <= set(config.public_options)
    for secret in (PUNCT_PASSWORD, "AKIDLOGIN7788", custom, "Uri,Pw(1)"):
        assert secret in known_secrets()
        assert secret not in scrub(f"job said: {secret}!") and secret not in str(redact(f"log {secret} line"))
    # settings are no secrets: they stay readable in logs
    assert "parquet" not in known_secrets() and "http://127.0.0.1:9000" not in known_secrets()
    assert scrub("file.format parquet") == "file.format parquet"


@pytest.mark.parametrize("host", ["s3://AKID:AW,WATCH(1)@bucket/wh", "file://u:pw,x@host/share/wh"])
def test_a_warehouse_with_credentials_is_refused_without_echoing_them(host):
    from airflow_provider_paimon.common.connection_secrets import CredentialsInLocationError

    with pytest.raises(CredentialsInLocationError, match="Login/Password") as err:
        config_from_connection(host, None, None, {})
    assert "AW,WATCH" not in str(err.value) and "pw,x" not in str(err.value)


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
