"""Only Paimon's table options reach a table's schema (``paimon/table_options.py``).

The reference is pypaimon's own ``CoreOptions``: every key it knows is a table option
here. Catalog, connection and unknown options (REST headers, OAuth settings,
credentials) never are, whether they come from a write's options or from the
connection's private environment; a table option that looks like a credential refuses
the creation or the ``set_option`` and names the key, never the value. These run the
data source's driver-side write setup (``plan_write``) and ``alter_table`` without a
JVM; ``tests/spark/test_table_options_attack.py`` runs the whole attack in a Spark job.
"""

from __future__ import annotations

import json
import logging
import os
import random
from urllib.parse import quote

import pyarrow as pa
import pytest
from pypaimon import Schema
from pypaimon.common.options.config_option import ConfigOption
from pypaimon.common.options.core_options import CoreOptions
from pyspark.sql.types import LongType, StringType, StructField, StructType
from secret_fuzz import fuzz_password
from support.branch_tables import tree

from airflow_provider_paimon.job_contract import CATALOG_OPTIONS_ENV
from airflow_provider_paimon.paimon import secrets
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.schema import SchemaChangeError, alter_table
from airflow_provider_paimon.paimon.table_options import (
    JAVA_CORE_OPTION_KEYS,
    is_catalog_option,
    is_table_option,
    split_options,
)
from airflow_provider_paimon.spark.datasource.streaming_writer import create_stream_writer
from airflow_provider_paimon.spark.datasource.write_setup import plan_write
from airflow_provider_paimon.spark.options import (
    CONNECTION_WAREHOUSE_ENV,
    OWN_OPTIONS,
    parse_options,
)

pytestmark = pytest.mark.usefixtures("fresh_secrets")

SCHEMA = StructType([StructField("id", LongType(), False), StructField("name", StringType(), True)])
PYPAIMON_KEYS = sorted(v.key() for v in vars(CoreOptions).values() if isinstance(v, ConfigOption))


def _forms(secret: str) -> set[str]:
    """How a secret could sit in a file: as is, JSON-escaped, URL-encoded."""
    return {secret, json.dumps(secret)[1:-1], quote(secret, safe="")}


def _leaks(root: str, secret_list: list[str]) -> list[str]:
    """Files under ``root`` holding any form of any secret."""
    found = []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if any(form in text for s in secret_list for form in _forms(s)):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def _rest_connection(rng: random.Random) -> tuple[dict[str, str], list[str]]:
    """A REST connection's options, as the Airflow hook puts them in the private env."""
    bearer, passphrase, pwd, uri_pw = (fuzz_password(rng) for _ in range(4))
    options = {
        "header.Authorization": f"Bearer {bearer}",
        "oauth.passphrase": passphrase,
        "rest.client.pwd": pwd,
        "uri": f"http://svc:{uri_pw}@rest.example:8080/v1",
        "file.format": "orc",  # a table default the connection carries: a table option
    }
    return options, [bearer, passphrase, pwd, uri_pw]


def test_every_key_pypaimon_knows_is_a_table_option_and_reaches_the_table():
    assert len(PYPAIMON_KEYS) > 100
    for key in PYPAIMON_KEYS:
        assert is_table_option(key) and not is_catalog_option(key), key
        if key.lower() in OWN_OPTIONS:  # path, branch, scan.mode: the data source's own
            continue
        # Spark lower-cases option keys; the table gets pypaimon's spelling back
        opts = parse_options({"warehouse": "/wh", "table": "db.t", key.lower(): "1"})
        assert opts.table_options == {key: "1"}, key
        assert key not in opts.catalog_options and key.lower() not in opts.catalog_options


def test_paimon_java_options_and_documented_prefixes_are_table_options():
    # keys of Paimon Java's CoreOptions that pypaimon 2.1 lacks, a deprecated fallback
    # name, and the documented prefixes
    for key in ("changelog-producer.row-deduplicate", "lookup.cache-max-memory-size", "tag.automatic-creation",
                "partition.expiration-time", "sink.clustering.by-columns", "fields.default-aggregate-function",
                "fields.price.aggregate-function", "file-index.bloom-filter.columns",
                "commit.callback.0.param", "parquet.enable.dictionary", "metastore.partitioned-table",
                "spark.fast-append-write"):
        assert is_table_option(key), key
    assert set(PYPAIMON_KEYS) - JAVA_CORE_OPTION_KEYS  # pypaimon's own keys are read at runtime
    assert not {k for k in JAVA_CORE_OPTION_KEYS if is_catalog_option(k)}
    for key in ("warehouse", "metastore", "uri", "token", "token.provider", "header.Authorization",
                "dlf.access-key-secret", "fs.s3.accessKeySecret", "jdbc.password", "commit.atomicity"):
        assert is_catalog_option(key) and not is_table_option(key), key
    for key in ("oauth.passphrase", "rest.client.pwd", "owner", "fields.", "x-typo"):
        assert not is_table_option(key) and not is_catalog_option(key), key
    split = split_options({"BUCKET": "2", "uri": "u", "Variant.ShreddingSchema": "{}", "zzz": "1"})
    assert split.table == {"bucket": "2", "variant.shreddingSchema": "{}"}
    assert split.catalog == {"uri": "u"} and split.unknown == {"zzz": "1"}


def test_connection_secrets_go_to_the_catalog_are_registered_and_unknown_keys_are_named(monkeypatch, caplog):
    options, secret_list = _rest_connection(random.Random(30))
    monkeypatch.setenv(CATALOG_OPTIONS_ENV, json.dumps(options))
    monkeypatch.delenv(CONNECTION_WAREHOUSE_ENV, raising=False)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_paimon.spark.options"):
        opts = parse_options({"warehouse": "/wh/rest-case", "table": "db.t", "target-file-size": "64 mb",
                              "colour": "blue"})
    assert opts.table_options == {"file.format": "orc", "target-file-size": "64 mb"}
    assert {"header.authorization", "oauth.passphrase", "rest.client.pwd", "uri", "colour"} <= set(opts.catalog_options)
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "colour, oauth.passphrase, rest.client.pwd are not Paimon table options" in warning
    assert "blue" not in warning and not any(s in warning for s in secret_list)
    known = secrets.known_secrets()
    assert all(s in known for s in secret_list)  # registered where read, by whole value
    assert "orc" not in known  # a plain option is not a secret


def test_a_created_table_stores_only_table_options_and_a_secret_looking_one_is_refused(
    monkeypatch, warehouse
):
    options, secret_list = _rest_connection(random.Random(31))
    monkeypatch.setenv(CATALOG_OPTIONS_ENV, json.dumps(options))
    monkeypatch.setenv(CONNECTION_WAREHOUSE_ENV, warehouse)
    rng = random.Random(32)
    external = fuzz_password(rng)
    base = {"table": "db.t", "create-table": "true"}
    refusals = {
        "data-file.external-paths": f"s3://AKIDEXAMPLE:{external}@bucket/ext",  # URL user info
        "commit.user-prefix": secret_list[2],  # a value the connection's env made known
        "blob-descriptor.fs.oss.accessKeySecret": "plain-looking-value",  # a credential setting
    }
    for key, value in refusals.items():
        for make in (lambda o: plan_write(o, SCHEMA, overwrite=False),
                     lambda o: create_stream_writer(o, SCHEMA, False)):
            with pytest.raises(InvalidArgumentError) as err:
                make(parse_options({**base, key: value, "checkpointLocation": str(warehouse) + "-ck"}))
            message = str(err.value)
            assert repr(key.lower()) in message and "nothing written" in message
            assert not any(form in message for s in [value, external, *secret_list] for form in _forms(s))
            assert os.listdir(warehouse) == []  # not even the database folder

    plan_write(parse_options({**base, "snapshot.num-retained.min": "3", "x-typo": "1"}), SCHEMA, overwrite=False)
    table = load_table(open_catalog(warehouse), "db.t")
    assert table.table_schema.options == {"file.format": "orc", "snapshot.num-retained.min": "3"}
    assert _leaks(warehouse, [*secret_list, "Bearer"]) == []


def test_set_option_takes_only_table_options_and_never_a_credential(warehouse):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    # a table created before this check: a credential sits in its schema
    stored = {"bucket": "-1", "header.Authorization": "Bearer Stored,Cred(1)9z"}
    schema = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())]), options=stored)
    catalog.create_table("db.t", schema, False)
    table = load_table(catalog, "db.t")
    before = tree(warehouse)
    rng = random.Random(33)
    for _ in range(20):
        password = fuzz_password(rng)
        for change, named in (
            ({"op": "set_option", "key": "owner", "value": "ops"}, "'owner': not Paimon table option"),
            ({"op": "set_option", "key": "rest.client.pwd", "value": password}, "'rest.client.pwd': not Paimon"),
            ({"op": "set_option", "key": "data-file.external-paths", "value": f"oss://ak:{password}@b/x"},
             "option(s) 'data-file.external-paths' look like credentials"),
        ):
            with pytest.raises(SchemaChangeError, match="nothing written") as err:
                alter_table(table, [change])
            assert named in str(err.value) and password not in str(err.value)
            assert quote(password, safe="") not in str(err.value)
    secrets.register_secret("Known-Secret,(x)")
    with pytest.raises(SchemaChangeError, match=r"'commit\.user-prefix' look like credentials"):
        alter_table(table, [{"op": "set_option", "key": "commit.user-prefix", "value": "Known-Secret,(x)"}])
    assert tree(warehouse) == before
    # removing any option is allowed: it is how a stored credential is taken out
    result = alter_table(table, [{"op": "remove_option", "key": "header.Authorization"},
                                 {"op": "set_option", "key": "snapshot.num-retained.min", "value": "3"}])
    assert result["changed"] and result["new_schema_id"] == 1
    latest = load_table(open_catalog(warehouse), "db.t").table_schema.options
    assert latest == {"bucket": "-1", "snapshot.num-retained.min": "3"}


def test_the_package_own_options_are_table_options():
    """Options this package reads from a table (names.py's profile among them) are kept."""
    from airflow_provider_paimon.paimon.names import NAME_PROFILE_OPTION
    from airflow_provider_paimon.paimon.table_options import (
        PACKAGE_TABLE_OPTION_KEYS,
        is_table_option,
    )

    assert NAME_PROFILE_OPTION in PACKAGE_TABLE_OPTION_KEYS
    assert all(is_table_option(key) for key in PACKAGE_TABLE_OPTION_KEYS)
