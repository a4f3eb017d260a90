"""Dataset identity: one warehouse, however spelled, is one namespace."""

from __future__ import annotations

import pytest

from airflow_provider_paimon.lineage.openlineage import (
    dataset_name,
    location_identifier,
    table_location,
    warehouse_namespace,
)


@pytest.mark.parametrize(
    "uri",
    ["/data/wh", "/data/wh/", "file:/data/wh", "file:///data/wh", "file:///data/wh/",
     "file://localhost/data/wh", "/data//wh/./", "/data/x/../wh"],
)
def test_local_spellings_are_one_namespace(uri):
    assert warehouse_namespace(uri) == "file:///data/wh"


def test_relative_and_home_paths_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert warehouse_namespace("wh") == f"file://{tmp_path}/wh"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert warehouse_namespace("~/wh2") == f"file://{tmp_path}/wh2"
    assert warehouse_namespace("/") == "file:///"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bucket/warehouse/", "s3://bucket/warehouse"),
        ("S3://bucket/warehouse", "s3://bucket/warehouse"),
        ("s3://bucket", "s3://bucket"),
        ("s3://bucket/", "s3://bucket"),
        ("hdfs://nn:8020/user/wh", "hdfs://nn:8020/user/wh"),
        ("oss://AKID:SECRET@bucket/wh", "oss://bucket/wh"),  # credentials never in lineage
        ("s3a://b/wh?x=1#frag", "s3a://b/wh"),
        ("file://fileserver/share/wh/", "file://fileserver/share/wh"),
    ],
)
def test_remote_uris(uri, expected):
    assert warehouse_namespace(uri) == expected


def test_empty_warehouse_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        warehouse_namespace("  ")


def test_dataset_names_follow_paimon():
    assert dataset_name("sales", "orders") == "sales.orders"
    assert dataset_name("sales", "orders", "main") == "sales.orders"
    assert dataset_name("sales", "orders", "") == "sales.orders"
    assert dataset_name("sales", "orders", "fix") == "sales.orders$branch_fix"
    with pytest.raises(ValueError):
        dataset_name("", "orders")


def test_table_location_and_its_identifier():
    assert table_location("/data/wh/", "db", "t") == "file:///data/wh/db.db/t"
    assert location_identifier("file:///data/wh/db.db/t") == ("file", "/data/wh/db.db/t")
    assert location_identifier("/data/wh/db.db/t") == ("file", "/data/wh/db.db/t")
    assert location_identifier("s3://bucket/wh/db.db/t") == ("s3://bucket", "wh/db.db/t")
    assert location_identifier("hdfs://nn:8020/wh/db.db/t") == ("hdfs://nn:8020", "/wh/db.db/t")
