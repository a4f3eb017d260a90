"""S3 settings from the ``paimon`` connection and the data source's environment defaults."""

from __future__ import annotations

import json

import pytest

from airflow_provider_paimon.hooks.paimon import config_from_connection
from airflow_provider_paimon.job_contract import CATALOG_OPTIONS_ENV
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.options import (
    CONNECTION_WAREHOUSE_ENV,
    connection_catalog_options,
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
    env = {CATALOG_OPTIONS_ENV: json.dumps({"fs.s3.accessKeySecret": "S", "fs.s3.endpoint": "http://e"}),
           CONNECTION_WAREHOUSE_ENV: "s3://lake/wh/"}
    assert connection_defaults("s3://lake/wh", env) == {"fs.s3.accesskeysecret": "S", "fs.s3.endpoint": "http://e"}
    assert connection_defaults("s3://other/wh", env) == {}  # another warehouse gets no credentials
    assert connection_defaults("s3://x", {}) == {}
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        connection_defaults("s3://lake/wh", {CATALOG_OPTIONS_ENV: "{nope"})


def test_a_job_opening_its_own_catalog_with_the_connection_options_reaches_the_s3_table(s3_warehouse):
    """What a job like dags/jobs/enrich_orders.py does with the environment a submit gives it:
    the connection's S3 options, under pypaimon's case-sensitive names, open the table
    (lower-cased ones were ignored by pypaimon: access denied from the loopback server)."""
    import pyarrow as pa
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    catalog = open_catalog(s3_warehouse.uri, s3_warehouse.options)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)
    config = config_from_connection(s3_warehouse.uri, s3_warehouse.options["fs.s3.accessKeyId"],
                                    s3_warehouse.options["fs.s3.accessKeySecret"],
                                    {"endpoint": s3_warehouse.server.endpoint, "path-style-access": "true",
                                     "region": s3_warehouse.options["fs.s3.region"]})
    env = {CATALOG_OPTIONS_ENV: json.dumps(config.options), CONNECTION_WAREHOUSE_ENV: config.warehouse}
    options = connection_catalog_options(s3_warehouse.uri, env)
    assert options == config.options  # the connection's own names, not lower-cased
    assert load_table(open_catalog(s3_warehouse.uri, options), "db.t").table_path.endswith("db.db/t")


def test_options_keep_pypaimons_mixed_case_names_and_explicit_ones_win(monkeypatch):
    monkeypatch.setenv(CATALOG_OPTIONS_ENV, json.dumps({"fs.s3.accessKeyId": "ENV", "fs.s3.region": "r1"}))
    monkeypatch.setenv(CONNECTION_WAREHOUSE_ENV, "s3://lake/wh")
    # Spark hands the data source lower-cased keys
    opts = parse_options({"table": "db.t", "fs.s3.accesskeyid": "GIVEN", "bucket": "2"})
    assert opts.warehouse == "s3://lake/wh"  # the connection's, when the option is absent
    assert opts.catalog_options == {"fs.s3.accessKeyId": "GIVEN", "fs.s3.region": "r1"}
    assert opts.table_options == {"bucket": "2"}
