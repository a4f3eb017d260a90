"""Dataset identity: one warehouse, however spelled, is one namespace."""

from __future__ import annotations

import pytest
from fuzz_passwords import passwords

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


def test_user_info_never_stays_in_a_namespace_whatever_the_password_holds():
    """``file://u:pw@host/share/wh`` kept its user info; a ``/``, ``?`` or ``#`` in a
    password cut urllib's authority short and left the rest of it in the path."""
    for password in passwords(3035, 200):
        for uri, expected in ((f"file://u:{password}@host/share/wh", "file://host/share/wh"),
                              (f"s3://AKIDEXAMPLE:{password}@bucket/wh/", "s3://bucket/wh"),
                              (f"hdfs://etl:{password}@nn:8020/user/wh", "hdfs://nn:8020/user/wh")):
            assert warehouse_namespace(uri) == expected, uri
        rest = warehouse_namespace("cat", {"metastore": "rest", "uri": f"https://u:{password}@Rest:8443/api"})
        assert rest == "paimon+rest://rest:8443/api/cat"
    assert warehouse_namespace("file://svc@fileserver/share/wh") == "file://fileserver/share/wh"


def test_empty_warehouse_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        warehouse_namespace("  ")


def test_dataset_names_follow_paimon():
    assert dataset_name("sales", "orders") == "sales.orders"
    assert dataset_name("sales", "orders", "main") == "sales.orders"
    assert dataset_name("sales", "orders", "") == "sales.orders"
    assert dataset_name("sales", "orders", "fix") == "sales.orders$branch_fix"
    with pytest.raises(ValueError, match="database and table must both be non-empty"):
        dataset_name("", "orders")


def test_table_location_and_its_identifier():
    assert table_location("/data/wh/", "db", "t") == "file:///data/wh/db.db/t"
    assert location_identifier("file:///data/wh/db.db/t") == ("file", "/data/wh/db.db/t")
    assert location_identifier("/data/wh/db.db/t") == ("file", "/data/wh/db.db/t")
    assert location_identifier("s3://bucket/wh/db.db/t") == ("s3://bucket", "wh/db.db/t")
    assert location_identifier("hdfs://nn:8020/wh/db.db/t") == ("hdfs://nn:8020", "/wh/db.db/t")


# -- REST and JDBC catalogs ---------------------------------------------------------------

REST = {"metastore": "rest", "uri": "http://rest-server:8080"}


@pytest.mark.parametrize(
    ("warehouse", "options", "expected"),
    [
        ("my_catalog", REST, "paimon+rest://rest-server:8080/my_catalog"),
        # one catalog, however the client spells the server: scheme, case, slash, credentials
        ("my_catalog", {"metastore": "REST", "uri": "https://user:tok@Rest-Server:8080/"},
         "paimon+rest://rest-server:8080/my_catalog"),
        ("my_catalog/", {"metastore": "rest", "uri": "rest-server:8080"}, "paimon+rest://rest-server:8080/my_catalog"),
        # a server behind a path prefix keeps it; two catalogs on one server differ
        ("c2", {"metastore": "rest", "uri": "https://gw.example.com/api/paimon/?x=1"},
         "paimon+rest://gw.example.com/api/paimon/c2"),
        # already a namespace: unchanged, with or without the options
        ("paimon+rest://rest-server:8080/my_catalog", REST, "paimon+rest://rest-server:8080/my_catalog"),
        ("paimon+rest://REST-server:8080/my_catalog/", None, "paimon+rest://rest-server:8080/my_catalog"),
        # a JDBC catalog's warehouse is its tables' folder: the warehouse URI, as for filesystem
        ("s3://bucket/wh", {"metastore": "jdbc", "uri": "jdbc:mysql://db:3306/paimon"}, "s3://bucket/wh"),
        ("/data/wh", {"metastore": "filesystem"}, "file:///data/wh"),
    ],
)
def test_catalog_namespaces(warehouse, options, expected):
    assert warehouse_namespace(warehouse, options) == expected
    assert warehouse_namespace(expected) == expected  # idempotent


def test_rest_catalog_name_is_never_a_cwd_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in warehouse_namespace("my_catalog", REST)
    assert warehouse_namespace("my_catalog") == f"file://{tmp_path}/my_catalog"  # no options: a path


@pytest.mark.parametrize(
    ("warehouse", "options", "message"),
    [
        ("my_catalog", {"metastore": "rest"}, "needs its 'uri'"),
        ("a/b", REST, "one path segment"),
        ("my_catalog", {"metastore": "rest", "uri": "http://"}, "names no server"),
    ],
)
def test_rest_namespace_errors(warehouse, options, message):
    with pytest.raises(ValueError, match=message):
        warehouse_namespace(warehouse, options)


def test_rest_dataset_agrees_with_its_facets():
    from airflow_provider_paimon.lineage.openlineage import (
        PaimonTableRef,
        paimon_dataset,
        table_location,
    )

    ds = paimon_dataset("my_catalog", "sales", "orders", branch="fix", catalog_options=REST)
    assert (ds.namespace, ds.name) == ("paimon+rest://rest-server:8080/my_catalog", "sales.orders$branch_fix")
    catalog = ds.facets["catalog"]
    assert (catalog.type, catalog.name, catalog.warehouseUri) == ("rest", "my_catalog", None)
    assert "symlinks" not in ds.facets  # the server places the files; no guessed location
    with pytest.raises(ValueError, match="no warehouse layout"):
        table_location(ds.namespace, "sales", "orders")
    given = paimon_dataset("my_catalog", "sales", "orders", catalog_options=REST, table_path="s3://b/x/orders")
    assert given.facets["symlinks"].identifiers[0].namespace == "s3://b"
    # the batch facet entry joins to the dataset; a token in the options stays out of repr
    ref = PaimonTableRef("my_catalog", "sales", "orders", "fix", snapshot_id=3,
                         catalog_options={**REST, "token": "s3cr3t"})
    assert (ref.snapshot().namespace, ref.snapshot().name) == (ds.namespace, ds.name)
    assert ref.dataset("output").namespace == ds.namespace
    assert "s3cr3t" not in repr(ref)
    jdbc = paimon_dataset("/data/wh", "sales", "orders", catalog_options={"metastore": "jdbc", "uri": "jdbc:x"})
    assert (jdbc.namespace, jdbc.facets["catalog"].type) == ("file:///data/wh", "jdbc")
