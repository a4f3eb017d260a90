"""S3 settings from the ``paimon`` connection and the data source's environment defaults."""

from __future__ import annotations

import json

import pytest

from airflow_provider_paimon.hooks.paimon import config_from_connection
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.options import (
    CONNECTION_OPTIONS_ENV,
    CONNECTION_WAREHOUSE_ENV,
    connection_defaults,
    parse_options,
)


def test_login_password_and_extra_shortcuts_become_pypaimon_s3_options():
    config = config_from_connection(
        "s3://lake/wh", "AKID", "SECRET",
        {"endpoint": "http://127.0.0.1:9000", "region": "eu-west-1", "path-style-access": True},
    )
    assert config.warehouse == "s3://lake/wh"
    assert config.public_options == {
        "fs.s3.endpoint": "http://127.0.0.1:9000", "fs.s3.region": "eu-west-1", "fs.s3.path-style-access": "true",
    }
    assert config.secret_options == {"fs.s3.accessKeyId": "AKID", "fs.s3.accessKeySecret": "SECRET"}
    # full names win over shortcuts; a local warehouse keeps Login/Password unmapped
    full = config_from_connection("s3a://lake/wh", None, None, {"endpoint": "a", "fs.s3.endpoint": "b"})
    assert full.options == {"fs.s3.endpoint": "b"}
    assert config_from_connection("/data/wh", "u", "p", {}).options == {}


@pytest.mark.parametrize(
    ("login", "password", "extra", "message"),
    [
        ("AKID", None, {}, "access key id .* but not its secret key"),
        (None, "SECRET", {}, "secret key .* but not its access key id"),
        (None, None, {"path-style-access": "ture"}, "path-style-access must be a boolean"),
    ],
)
def test_half_credentials_and_bad_flags_are_refused(login, password, extra, message):
    with pytest.raises((ValueError, InvalidArgumentError), match=message):
        config_from_connection("s3://lake/wh", login, password, extra)


def test_environment_defaults_apply_to_the_connection_warehouse_only():
    env = {CONNECTION_OPTIONS_ENV: json.dumps({"fs.s3.accessKeySecret": "S", "fs.s3.endpoint": "http://e"}),
           CONNECTION_WAREHOUSE_ENV: "s3://lake/wh/"}
    assert connection_defaults("s3://lake/wh", env) == {"fs.s3.accesskeysecret": "S", "fs.s3.endpoint": "http://e"}
    assert connection_defaults("s3://other/wh", env) == {}  # another warehouse gets no credentials
    assert connection_defaults("s3://x", {}) == {}
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        connection_defaults("s3://lake/wh", {CONNECTION_OPTIONS_ENV: "{nope"})


def test_options_keep_pypaimons_mixed_case_names_and_explicit_ones_win(monkeypatch):
    monkeypatch.setenv(CONNECTION_OPTIONS_ENV, json.dumps({"fs.s3.accessKeyId": "ENV", "fs.s3.region": "r1"}))
    monkeypatch.setenv(CONNECTION_WAREHOUSE_ENV, "s3://lake/wh")
    # Spark hands the data source lower-cased keys
    opts = parse_options({"table": "db.t", "fs.s3.accesskeyid": "GIVEN", "bucket": "2"})
    assert opts.warehouse == "s3://lake/wh"  # the connection's, when the option is absent
    assert opts.catalog_options == {"fs.s3.accessKeyId": "GIVEN", "fs.s3.region": "r1"}
    assert opts.table_options == {"bucket": "2"}
