"""``commit.atomicity`` fails closed: bad or unsafe settings are refused before any write."""

from __future__ import annotations

import logging
import pickle
import re

import pytest
from commit_race import create_table, open_table

from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.storage import CommitAtomicityError, CommitSafeFileIO, resolve
from airflow_provider_paimon.spark.options import parse_options
from airflow_provider_paimon.spark.tables import catalog_for


@pytest.mark.parametrize("value", ["atomic", "true", "conditional_put", "Lock please"])
def test_an_unknown_mode_is_refused_naming_the_option(s3_warehouse, warehouse, value):
    for uri, options in ((s3_warehouse.uri, s3_warehouse.options), (warehouse, {})):
        with pytest.raises(CommitAtomicityError) as err:
            open_catalog(uri, {**options, "commit.atomicity": value})
        message = str(err.value)
        assert "'commit.atomicity'" in message and "conditional-put" in message and "lock" in message
    assert s3_warehouse.object_keys() == []  # nothing written


def test_object_stores_without_a_safe_mode_are_refused():
    for uri in ("oss://bucket/warehouse", "gs://bucket/warehouse", "abfs://c@a.dfs.core.windows.net/w"):
        with pytest.raises(CommitAtomicityError) as err:
            open_catalog(uri, {})
        assert "'commit.lock.url'" in str(err.value) and "'commit.atomicity'" in str(err.value)
        with pytest.raises(CommitAtomicityError, match="s3://"):
            open_catalog(uri, {"commit.atomicity": "conditional-put"})
    # with a lock database configured, auto picks the lock there
    assert resolve("oss://bucket/w", {"commit.lock.url": "sqlite:////tmp/x.sqlite"}).mode == "lock"
    assert resolve("s3://bucket/w", {}).mode == "conditional-put"
    assert resolve("hdfs://nn/w", {}).mode == "rename"


def test_incomplete_or_malformed_settings_are_refused(s3_warehouse, warehouse):
    with pytest.raises(CommitAtomicityError, match=re.escape("needs option 'commit.lock.url'")):
        open_catalog(s3_warehouse.uri, {**s3_warehouse.options, "commit.atomicity": "lock"})
    with pytest.raises(CommitAtomicityError, match="s3://"):
        open_catalog(warehouse, {"commit.atomicity": "conditional-put"})
    with pytest.raises(CommitAtomicityError, match="renames atomically"):
        open_catalog(warehouse, {"commit.atomicity": "lock", "commit.lock.url": "sqlite://"})
    assert "sqlite" not in repr(resolve("s3://b/w", {"commit.atomicity": "lock", "commit.lock.url": "sqlite://"}))
    for key, bad in (
        ("commit.lock.lease-seconds", "0"),
        ("commit.lock.timeout-seconds", "soon"),
        ("commit.conditional-put.verify", "ture"),
    ):
        with pytest.raises(InvalidArgumentError, match=key):
            open_catalog(s3_warehouse.uri, {**s3_warehouse.options, "commit.lock.url": "sqlite://", key: bad})
    create_table(s3_warehouse.uri, {**s3_warehouse.options})
    table = open_table(
        s3_warehouse.uri, {**s3_warehouse.options, "commit.atomicity": "lock", "commit.lock.url": "nonsense"}
    )
    with pytest.raises(CommitAtomicityError, match="not a SQLAlchemy URL"):
        table.file_io.try_to_write_atomic(f"{s3_warehouse.uri}/db.db/t/tag/tag-x", "{}")
    assert not [k for k in s3_warehouse.object_keys() if "/tag/" in k]


def test_local_warehouses_keep_pypaimons_file_io(warehouse):
    catalog = open_catalog(warehouse, {})
    assert not isinstance(catalog.file_io, CommitSafeFileIO)
    assert type(catalog.file_io).__name__ == "LocalFileIO"


def test_rename_on_an_object_store_is_an_explicit_opt_out_with_a_warning(s3_warehouse, caplog):
    with caplog.at_level(logging.WARNING):
        catalog = open_catalog(s3_warehouse.uri, {**s3_warehouse.options, "commit.atomicity": "rename"})
    assert not isinstance(catalog.file_io, CommitSafeFileIO)
    assert "only one writer may commit" in caplog.text


def test_the_spark_data_source_path_loads_commit_safe_tables(s3_warehouse):
    """Driver commits (batch and streaming sinks) open tables through spark.tables."""
    create_table(s3_warehouse.uri, s3_warehouse.options)
    opts = parse_options({"warehouse": s3_warehouse.uri, "table": "db.t", **s3_warehouse.options})
    assert isinstance(catalog_for(opts).file_io, CommitSafeFileIO)
    bad = parse_options({"warehouse": s3_warehouse.uri, "table": "db.t", "commit.atomicity": "nope"})
    assert bad.catalog_options["commit.atomicity"] == "nope"  # a catalog option, not a table one
    with pytest.raises(CommitAtomicityError):
        catalog_for(bad)


def test_the_commit_safe_file_io_pickles_and_still_refuses_a_second_create(s3_warehouse):
    create_table(s3_warehouse.uri, s3_warehouse.options)
    file_io = pickle.loads(pickle.dumps(open_table(s3_warehouse.uri, s3_warehouse.options).file_io))
    assert isinstance(file_io, CommitSafeFileIO)
    path = f"{s3_warehouse.uri}/db.db/t/tag/tag-pickled"
    assert file_io.try_to_write_atomic(path, "first") is True
    assert file_io.try_to_write_atomic(path, "second") is False
    assert file_io.read_file_utf8(path) == "first"
