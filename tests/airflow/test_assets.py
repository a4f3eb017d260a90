"""Paimon tables as Airflow Assets: URIs, sanitising, the OpenLineage converter, and one
data-aware schedule run through real Airflow (``dag.test()`` on the temp SQLite DB)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.dag_files import load_dag_file

from airflow_provider_paimon.assets import (
    asset_for,
    asset_uri,
    convert_asset_to_openlineage,
    create_asset,
    parse_asset_uri,
    sanitize_uri,
)
from airflow_provider_paimon.lineage.openlineage import paimon_dataset

pytestmark = pytest.mark.airflow


@pytest.mark.parametrize(
    ("warehouse", "table", "branch", "uri"),
    [
        ("/data/wh", "sales.orders", None, "paimon:///data/wh/sales/orders"),
        ("file:///data/wh/", "sales.orders", "main", "paimon:///data/wh/sales/orders"),
        ("file:/data/./x/../wh", "sales.orders", "fix", "paimon:///data/wh/sales/orders?branch=fix"),
        ("s3://bucket/wh", "sales.orders", None, "paimon://bucket/wh/sales/orders?fs=s3"),
        ("hdfs://nn:8020/warehouse", "db.t", None, "paimon://nn:8020/warehouse/db/t?fs=hdfs"),
        ("oss://bucket", "db.t", None, "paimon://bucket/db/t?fs=oss"),
    ],
)
def test_asset_uri_and_round_trip(warehouse, table, branch, uri):
    assert asset_uri(warehouse, table, branch) == uri
    ref = parse_asset_uri(uri)
    expected = paimon_dataset(warehouse, *table.split("."), branch=branch)
    # the asset names the same dataset as the OpenLineage events
    assert (ref.warehouse, ref.openlineage_name) == (expected.namespace, expected.name)
    assert ref.uri == uri
    assert "secret" not in uri


@pytest.mark.parametrize("warehouse", ["s3://AKIA:se,cr(et)@bucket/wh/", "file://u:pw/x@host/share/wh"])
def test_a_warehouse_with_credentials_makes_no_asset(warehouse):
    """Asset URIs are stored in the serialized DAG and shown to every viewer: a warehouse
    with a password is refused (the message does not echo it), not silently stripped."""
    with pytest.raises(ValueError, match="carries credentials") as err:
        asset_uri(warehouse, "sales.orders")
    assert "se,cr" not in str(err.value) and "pw/x" not in str(err.value)
    assert asset_uri("s3://AKIA@bucket/wh", "sales.orders") == "paimon://bucket/wh/sales/orders?fs=s3"


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("paimon:///data/wh/./x/../db/t?branch=main", "paimon:///data/wh/db/t"),
        ("PAIMON:///data//wh/db/t/", "paimon:///data/wh/db/t"),
        ("paimon:///data/wh/db/t?fs=file", "paimon:///data/wh/db/t"),
        ("paimon://user:pw@bucket/wh/db/t?fs=S3&branch=b1", "paimon://bucket/wh/db/t?branch=b1&fs=s3"),
    ],
)
def test_equivalent_spellings_are_one_asset(spelling, canonical):
    from airflow.sdk import Asset

    assert sanitize_uri(urlsplit(spelling)).geturl() == canonical
    # through Airflow itself: the provider's handler is registered for the scheme
    with pytest.warns(UserWarning, match="should not contain a password") if "pw@" in spelling else _no_warning():
        asset = Asset(spelling)
    assert asset.uri == canonical
    assert asset.normalized_uri == canonical


class _no_warning:  # noqa: N801 - context manager used like pytest.warns
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("paimon://bucket/wh/db/t", "needs ?fs=SCHEME"),
        ("paimon:///t", "must end with /<db>/<table>"),
        ("paimon:///wh/db/t?snapshot=3", "unknown query parameter 'snapshot'"),
        ("paimon:///wh/db/t?branch=a%2Fb", "path separators"),
        ("paimon:///wh/db/t?branch=", "branch must not be blank"),
        ("paimon:///wh/db/t$branch_fix", "a branch goes in ?branch=NAME"),
        ("paimon:///wh/db.x/t", "without dots"),
        ("paimon:///wh/db/t?fs=paimon", "not a file system scheme"),
        ("paimon:///wh/db/t?branch=a&branch=b", "given twice"),
    ],
)
def test_bad_uris_are_clear_errors(uri, message):
    from airflow.sdk import Asset

    with pytest.raises(ValueError, match="invalid Paimon asset URI") as err:
        parse_asset_uri(uri)
    assert message in str(err.value)
    if uri.endswith("branch="):
        return  # Airflow drops blank query values before our handler sees them: main
    with pytest.raises(ValueError, match=message.replace("?", r"\?").replace("$", r"\$")):
        Asset(uri)


def test_bad_table_or_branch_in_asset_for():
    with pytest.raises(ValueError, match=re.escape("database.table")):
        asset_for("/data/wh", "orders")
    with pytest.raises(ValueError, match="branch"):
        asset_for("/data/wh", "db.t", "123")


def test_converter_matches_the_spark_side_dataset():
    asset = asset_for("s3://bucket/wh", "sales.orders", "fix")
    dataset = convert_asset_to_openlineage(asset, None)
    expected = paimon_dataset("s3://bucket/wh", "sales", "orders", branch="fix")
    assert (dataset.namespace, dataset.name) == ("s3://bucket/wh", "sales.orders$branch_fix")
    assert (dataset.namespace, dataset.name) == (expected.namespace, expected.name)
    assert dataset.facets["symlinks"] == expected.facets["symlinks"]
    assert dataset.facets["catalog"].framework == "paimon"
    assert "version" not in dataset.facets


def test_openlineage_provider_translates_paimon_assets():
    """Airflow's OpenLineage provider finds our converter through the providers manager."""
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset

    dataset = translate_airflow_asset(asset_for("/data/wh", "sales.orders"), None)
    assert dataset is not None
    assert (dataset.namespace, dataset.name) == ("file:///data/wh", "sales.orders")


def test_provider_registers_the_scheme():
    from airflow.providers_manager import ProvidersManager

    from airflow_provider_paimon import assets
    from airflow_provider_paimon.get_provider_info import get_provider_info

    [entry] = get_provider_info()["asset-uris"]
    assert entry["schemes"] == ["paimon"]
    manager = ProvidersManager()
    manager.initialize_providers_asset_uri_resources()
    assert manager.asset_uri_handlers["paimon"] is assets.sanitize_uri
    assert manager.asset_to_openlineage_converters["paimon"] is assets.convert_asset_to_openlineage
    assert manager.asset_factories["paimon"] is assets.create_asset
    assert create_asset(warehouse="/data/wh", table="db.t").uri == "paimon:///data/wh/db/t"


def test_docs_sample_runs():
    """The Python sample of docs/assets.md runs as written (its asserts included)."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "assets.md").read_text()
    (sample,) = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    namespace: dict = {}
    exec(compile(sample, "docs/assets.md", "exec"), namespace)
    assert list(namespace["report"].timetable.asset_condition.objects) == [namespace["ORDERS"]]
    [compact] = namespace["upkeep"].tasks
    assert compact.outlets == [namespace["ORDERS"]]
    assert compact.add_paimon_outlets.__self__ is compact  # the mixin is there


SCHEDULE_DAGS = '''
from airflow.sdk import DAG, task

from airflow_provider_paimon.assets import asset_for

WAREHOUSE = {warehouse!r}
ORDERS = asset_for(WAREHOUSE, "db.events")

# a paused DAG is not queued
with DAG("paimon_asset_consumer", schedule=[ORDERS], is_paused_upon_creation=False) as consumer:
    @task
    def react():
        return "ran"

    react()

with DAG("paimon_asset_producer", schedule=None) as producer:
    @task(outlets=[ORDERS])
    def write_orders():
        return "written"

    write_orders()
'''


def test_data_aware_schedule_on_a_paimon_table(warehouse, airflow_db):
    """A producer task with the table's asset as outlet queues the DAG scheduled on it."""

    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    module = load_dag_file("paimon_asset_dags", SCHEDULE_DAGS.format(warehouse=warehouse))
    uri = asset_uri(warehouse, "db.events")
    run = module.producer.test()
    assert run.state == "success"
    with create_session() as session:
        asset = session.scalar(select(AssetModel).where(AssetModel.uri == uri))
        assert asset is not None, "the consumer's schedule should have registered the asset"
        events = session.scalars(select(AssetEvent).where(AssetEvent.asset_id == asset.id)).all()
        assert [(e.source_dag_id, e.source_task_id) for e in events] == [
            ("paimon_asset_producer", "write_orders")
        ]
        queued = session.scalars(
            select(AssetDagRunQueue.target_dag_id).where(AssetDagRunQueue.asset_id == asset.id)
        ).all()
        assert queued == ["paimon_asset_consumer"]


REST = {"metastore": "rest", "uri": "https://Rest-Server:8080/api"}


def test_rest_catalog_asset_and_dataset_agree():
    """A REST catalog's warehouse is a catalog name: the asset and the dataset name the server + catalog."""
    from airflow.sdk import Asset

    uri = asset_uri("my_catalog", "sales.orders", "fix", REST)
    assert uri == "paimon://rest-server:8080/api/my_catalog/sales/orders?branch=fix&catalog=rest"
    ref = parse_asset_uri(uri)
    expected = paimon_dataset("my_catalog", "sales", "orders", branch="fix", catalog_options=REST)
    assert expected.namespace == "paimon+rest://rest-server:8080/api/my_catalog"
    assert (ref.warehouse, ref.openlineage_name) == (expected.namespace, expected.name)
    assert ref.uri == uri
    assert asset_for("my_catalog", "sales.orders", "fix", catalog_options=REST).uri == uri
    assert Asset("paimon://REST-SERVER:8080/api/my_catalog/sales/orders?catalog=REST&branch=fix").uri == uri
    dataset = convert_asset_to_openlineage(Asset(uri), None)
    assert (dataset.namespace, dataset.name) == (expected.namespace, expected.name)
    assert dataset.facets["catalog"] == expected.facets["catalog"]
    assert "symlinks" not in dataset.facets


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("paimon://srv/cat/db/t?catalog=jdbc", "the only catalog named in a URI is 'rest'"),
        ("paimon://srv/cat/db/t?catalog=rest&fs=s3", "has no fs"),
        ("paimon:///cat/db/t?catalog=rest", "paimon://<server>[/path]/<catalog>/<db>/<table>"),
        ("paimon://srv/db/t?catalog=rest", "paimon://<server>[/path]/<catalog>/<db>/<table>"),
        ("paimon://srv/cat/db/t?fs=paimon%2Brest", "not a file system scheme"),
    ],
)
def test_bad_rest_catalog_uris(uri, message):
    with pytest.raises(ValueError, match="invalid Paimon asset URI") as err:
        parse_asset_uri(uri)
    assert message in str(err.value)


def test_operators_name_a_rest_catalog_table_by_server_and_catalog(monkeypatch):
    """An operator on a REST-catalog connection: its OpenLineage datasets and its outlet
    asset use the REST namespace, not a path under the current directory."""
    import json

    from airflow_provider_paimon.operators.compaction import CompactionOperator

    # port 9 (discard): nothing listens, so any metadata call fails fast and is skipped
    options = {"metastore": "rest", "uri": "http://127.0.0.1:9"}
    conn = {"conn_type": "paimon", "host": "my_catalog", "password": "tok3n", "extra": options}
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_REST", json.dumps(conn))
    op = CompactionOperator(task_id="compact", table="sales.orders", paimon_conn_id="paimon_rest")
    namespace = "paimon+rest://127.0.0.1:9/my_catalog"
    dataset = op._ol_dataset("output", "sales.orders", None, None, schema=False)
    assert (dataset.namespace, dataset.name) == (namespace, "sales.orders")
    assert dataset.facets["catalog"].type == "rest"
    (asset,) = op.paimon_assets()
    assert asset.uri == "paimon://127.0.0.1:9/my_catalog/sales/orders?catalog=rest"
    assert parse_asset_uri(asset.uri).warehouse == namespace
    assert "tok3n" not in asset.uri + repr(dataset)
