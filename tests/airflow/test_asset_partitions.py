"""Paimon partitions as Airflow asset partitions, below the real scheduler.

Through ``dag.test()`` (Airflow's own task runner and metadata DB): mark-done and the
partition sensor emit one partitioned event per partition, which queues the
partition-aware DAG (``AssetPartitionDagRun`` per key) and not the plain one. Without a
spark-submit: the commits of one task try found by their properties and their
partitions, the relay's choices, bad arguments. The real scheduler and triggerer, the
watcher and a real spark-submit are in ``test_partition_assets_real_airflow.py``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from airflow.sdk import Asset
from airflow.sdk.exceptions import AirflowFailException
from airflow.sdk.execution_time.context import OutletEventAccessors, TriggeringAssetEventsAccessor
from pypaimon import Schema
from support.dag_files import load_dag_file
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.assets import asset_for, asset_uri
from airflow_provider_paimon.common.asset_partitions import (
    check_asset_partitions,
    emit_partition_events,
)
from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.asset_partitions import outlet_tables
from airflow_provider_paimon.operators.partition import MarkPartitionDoneOperator
from airflow_provider_paimon.operators.partition_relay import PaimonPartitionRelayOperator
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.commit_properties import airflow_env, airflow_properties
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partition_keys import changed_partition_keys
from airflow_provider_paimon.sensors.partition import PaimonPartitionSensor
from airflow_provider_paimon.triggers.snapshot import PaimonSnapshotTrigger

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("order_id", pa.int64()), ("dt", pa.string()), ("region", pa.string())])
TABLE = "db.orders"


def make_orders(warehouse: str):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt", "region"]), False)
    return load_table(catalog, TABLE)


def commit(table, partitions: list[tuple[str, str]], properties: dict[str, str] | None = None) -> int:
    rows = [{"order_id": i, "dt": d, "region": r} for i, (d, r) in enumerate(partitions)]
    return commit_rows(table, rows, SCHEMA, snapshot_properties=properties)


# a DAG file's head: the table's asset and a partition-aware consumer named {consumer!r}
CONSUMER_DAG = '''
from datetime import datetime

from airflow.sdk import DAG, PartitionedAssetTimetable, task

from airflow_provider_paimon.assets import asset_for
from airflow_provider_paimon.operators.branch import ReplaceMainBranchOperator
from airflow_provider_paimon.operators.partition import MarkPartitionDoneOperator
from airflow_provider_paimon.sensors.partition import PaimonPartitionSensor

WAREHOUSE = {warehouse!r}
ORDERS = asset_for(WAREHOUSE, "db.orders")

with DAG({consumer!r}, schedule=PartitionedAssetTimetable(assets=ORDERS),
         is_paused_upon_creation=False, start_date=datetime(2026, 1, 1)):
    @task
    def per_partition():
        return "ran"

    per_partition()
'''

DAGS = CONSUMER_DAG + '''
with DAG("pa_plain_consumer", schedule=[ORDERS], is_paused_upon_creation=False):
    @task
    def any_change():
        return "ran"

    any_change()

with DAG("pa_producer", schedule=None) as producer:
    mark = MarkPartitionDoneOperator(task_id="mark_done", table="db.orders", warehouse=WAREHOUSE,
                                     partition={{"dt": "2026-11-03", "region": "eu"}}, asset_partitions=True)
    wait = PaimonPartitionSensor(task_id="wait_us", table="db.orders", warehouse=WAREHOUSE,
                                 partition={{"dt": "2026-11-03", "region": "us"}}, asset_partitions=True,
                                 poke_interval=0.1, timeout=30)
    mark >> wait
'''


def test_mark_done_and_sensor_events_queue_one_run_per_partition_of_the_partition_aware_dag(
    warehouse, airflow_db
):
    from airflow.models.asset import (
        AssetDagRunQueue,
        AssetEvent,
        AssetModel,
        AssetPartitionDagRun,
    )
    from airflow.utils.session import create_session
    from sqlalchemy import select

    table = make_orders(warehouse)
    commit(table, [("2026-11-03", "eu"), ("2026-11-03", "us")])
    module = load_dag_file("paimon_partition_asset_dags", DAGS.format(warehouse=warehouse, consumer="pa_partition_consumer"))
    run = module.producer.test()
    assert run.state == "success"
    uri = asset_uri(warehouse, TABLE)
    with create_session() as session:
        asset = session.scalar(select(AssetModel).where(AssetModel.uri == uri))
        events = session.scalars(select(AssetEvent).where(AssetEvent.asset_id == asset.id)).all()
        got = {(e.source_task_id, e.partition_key): e.extra for e in events}
        pending = session.scalars(
            select(AssetPartitionDagRun.partition_key).where(
                AssetPartitionDagRun.target_dag_id == "pa_partition_consumer",
                AssetPartitionDagRun.created_dag_run_id.is_(None),
            )
        ).all()
        plain = session.scalars(
            select(AssetDagRunQueue.target_dag_id).where(AssetDagRunQueue.asset_id == asset.id)
        ).all()
    # one event per partition, keyed by Paimon's folder name, from the task that saw it
    assert set(got) == {("mark_done", "dt=2026-11-03/region=eu"), ("wait_us", "dt=2026-11-03/region=us")}
    done = got[("mark_done", "dt=2026-11-03/region=eu")]["paimon"]
    assert done["event"] == "partition_done" and done["partition"] == {"dt": "2026-11-03", "region": "eu"}
    assert (Path(warehouse) / "db.db" / "orders" / "dt=2026-11-03" / "region=eu" / "_SUCCESS").exists()
    assert got[("wait_us", "dt=2026-11-03/region=us")]["paimon"]["event"] == "partition_has_data"
    # the partition-aware DAG: one pending run per key; the plain DAG is not woken
    assert sorted(pending) == ["dt=2026-11-03/region=eu", "dt=2026-11-03/region=us"]
    assert plain == []


REPLACE_DAGS = CONSUMER_DAG + '''
with DAG("pa_replace", schedule=None) as producer:
    ReplaceMainBranchOperator(task_id="replace_main", table="db.orders", branch="fix",
                              warehouse=WAREHOUSE, run_in="worker", backup=False,
                              asset_partitions=True)
'''


def _rows_by_partition(table) -> dict[str, list[int]]:
    read = table.new_read_builder()
    frame = read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist()
    out: dict[str, list[int]] = {}
    for row in frame:
        out.setdefault(f"dt={row['dt']}/region={row['region']}", []).append(row["order_id"])
    return {k: sorted(v) for k, v in out.items()}


def test_replace_main_emits_the_partitions_where_main_now_differs(warehouse, airflow_db):
    """A correction published with ReplaceMainBranchOperator(asset_partitions=True): the
    consumer re-runs for the partitions the branch corrected or added and the one main had
    gained meanwhile (now gone), and not for the others. Reference: main's rows per
    partition before and after, read by plain pypaimon."""
    from airflow.models.asset import AssetEvent, AssetModel, AssetPartitionDagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_paimon.paimon.branch.create import create_branch

    table = make_orders(warehouse)
    commit(table, [("2026-11-03", "eu"), ("2026-11-03", "us"), ("2026-11-04", "eu")])
    create_branch(table, "fix", snapshot_id=1)
    fix = load_table(open_catalog(warehouse), TABLE, "fix")
    commit_rows(fix, [{"order_id": 70, "dt": "2026-11-03", "region": "eu"}], SCHEMA,
                overwrite={"dt": "2026-11-03", "region": "eu"})
    commit(fix, [("2026-11-05", "eu")])
    commit(table, [("2026-11-04", "us")])  # main moved on meanwhile: replaced away
    before = _rows_by_partition(load_table(open_catalog(warehouse), TABLE))

    module = load_dag_file("paimon_partition_replace_dags", REPLACE_DAGS.format(warehouse=warehouse, consumer="pa_replace_consumer"))
    assert module.producer.test().state == "success"
    after = _rows_by_partition(load_table(open_catalog(warehouse), TABLE))
    assert after == _rows_by_partition(fix)  # main reads as the branch did
    expected = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert expected == ["dt=2026-11-03/region=eu", "dt=2026-11-04/region=us", "dt=2026-11-05/region=eu"]
    with create_session() as session:
        asset = session.scalar(select(AssetModel).where(AssetModel.uri == asset_uri(warehouse, TABLE)))
        events = session.scalars(select(AssetEvent).where(
            AssetEvent.asset_id == asset.id, AssetEvent.source_dag_id == "pa_replace")).all()
        pending = session.scalars(select(AssetPartitionDagRun.partition_key).where(
            AssetPartitionDagRun.target_dag_id == "pa_replace_consumer")).all()
    assert sorted(e.partition_key for e in events) == expected
    assert sorted(pending) == expected
    assert {e.extra["paimon"]["branch"] for e in events} == {"main"}


def test_the_partitions_of_one_task_try_are_read_from_its_own_commits(warehouse):
    """What PaimonSparkSubmitOperator(asset_partitions=True) does after its job, minus the
    spark-submit: the try's snapshots are found by their properties (another writer's
    commit in between is not theirs), their partitions from their delta manifests."""
    table = make_orders(warehouse)
    commit(table, [("2026-11-01", "eu")])  # before the task
    hook = PaimonHook.for_task(warehouse)
    orders = asset_for(warehouse, TABLE)
    [target] = outlet_tables(hook, [orders, asset_for(warehouse + "/other", TABLE)])  # other warehouse: none
    assert (target.table, target.branch, target.start_snapshot) == (TABLE, None, 1)

    op = PaimonSparkSubmitOperator(task_id="load", application="app.py", outlets=[orders], asset_partitions=True)
    try_env = {**airflow_env("orders_daily", "manual__1", "load", 1), "PAIMON_ASSET_PARTITIONS": "reported"}
    mine = airflow_properties(try_env)
    assert mine["airflow.asset_partitions"] == "reported"  # the relay skips these commits
    a = commit(table, [("2026-11-03", "eu"), ("2026-11-03", "us")], mine)
    other = commit(table, [("2026-11-04", "eu")])  # another writer, meanwhile
    b = commit(table, [("2026-11-03", "eu"), ("2026-11-05", "apac")], mine)
    earlier_try = airflow_properties({**try_env, "AIRFLOW_CTX_TRY_NUMBER": "2"})
    commit(table, [("2026-11-06", "eu")], earlier_try)  # not this try

    keys, snapshot_ids = target.partitions_committed(mine)
    assert snapshot_ids == [a, b] and other not in snapshot_ids
    assert keys == changed_partition_keys(table, [a, b]) == [
        "dt=2026-11-03/region=eu", "dt=2026-11-03/region=us", "dt=2026-11-05/region=apac"
    ]
    # handed to Airflow: the asset joins the outlets once, one partitioned event per key
    events = OutletEventAccessors()
    emitted = emit_partition_events(op, {"outlet_events": events}, orders, [*keys, keys[0], "x" * 251],
                                    {"paimon": {"snapshot_ids": snapshot_ids}})
    assert emitted == keys  # duplicates dropped, a key Airflow cannot store logged and left out
    assert events[orders].partition_keys == set(keys)
    assert events[orders].extra == {"paimon": {"snapshot_ids": [a, b]}}
    assert [o.uri for o in op.outlets] == [orders.uri]
    assert emit_partition_events(op, {"outlet_events": events}, orders, []) == []


def _event(asset: Asset, payload: dict | None):
    from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult

    return AssetEventDagRunReferenceResult(
        asset={"name": asset.name, "uri": asset.uri, "extra": {}},
        extra={} if payload is None else {"from_trigger": True, "payload": payload},
        source_task_id=None, source_dag_id=None, source_run_id=None, source_map_index=None,
        source_aliases=[], timestamp=dt.datetime.now(dt.timezone.utc),
    )


def test_relay_emits_the_watchers_partitions_and_skips_commits_their_task_reported(warehouse):
    orders = asset_for(warehouse, TABLE)
    relay = PaimonPartitionRelayOperator(task_id="relay", source=orders)
    reported = {"airflow.dag_id": "load", "airflow.asset_partitions": "reported"}
    triggering = TriggeringAssetEventsAccessor.build([
        _event(orders, {"snapshot_id": 4, "partition_keys": ["dt=2026-11-03/region=eu", "dt=2026-11-03/region=us"]}),
        _event(orders, None),  # an operator's plain event: no snapshot
        _event(orders, {"snapshot_id": 5, "partition_keys": ["dt=2026-11-05/region=eu"], "properties": reported}),
        _event(orders, {"snapshot_id": 6, "partition_keys": ["dt=2026-11-03/region=eu"]}),
        _event(orders, {"snapshot_id": 7, "partition_keys": []}),  # e.g. an unpartitioned commit
    ])
    events = OutletEventAccessors()
    out = relay.execute({"triggering_asset_events": triggering, "outlet_events": events})
    assert out == {"partition_keys": ["dt=2026-11-03/region=eu", "dt=2026-11-03/region=us"],
                   "snapshot_ids": [4, 6, 7], "skipped_snapshot_ids": [5]}
    assert events[orders].partition_keys == set(out["partition_keys"])
    assert [o.uri for o in relay.outlets] == [orders.uri]  # added at run time only
    # nothing to relay: no outlet, so no plain event that would wake the relay itself
    idle = PaimonPartitionRelayOperator(task_id="idle", source=orders)
    assert idle.execute({"triggering_asset_events": TriggeringAssetEventsAccessor.build([]),
                         "outlet_events": OutletEventAccessors()})["partition_keys"] == []
    assert idle.outlets == []
    # a watcher without partition_keys=True: a clear failure, not a silent skip
    bare = TriggeringAssetEventsAccessor.build([_event(orders, {"snapshot_id": 8})])
    with pytest.raises(AirflowFailException, match=r"snapshot 8 .* partition_keys=True"):
        relay.execute({"triggering_asset_events": bare, "outlet_events": OutletEventAccessors()})


def test_airflows_own_mappers_read_paimon_keys():
    """The scheduler's (not the SDK's) mappers, as docs/assets.md shows them."""
    from airflow.partition_mappers.identity import IdentityMapper
    from airflow.partition_mappers.product import ProductMapper
    from airflow.partition_mappers.temporal import StartOfDayMapper

    assert StartOfDayMapper(input_format="dt=%Y-%m-%d").to_downstream("dt=2026-11-03") == "2026-11-03"
    product = ProductMapper(StartOfDayMapper(input_format="dt=%Y-%m-%d"), IdentityMapper(), delimiter="/")
    assert product.to_downstream("dt=2026-11-03/region=eu") == "2026-11-03/region=eu"
    assert IdentityMapper().to_downstream("dt=2026-11-03/region=us%2Fwest") == "dt=2026-11-03/region=us%2Fwest"


def test_bad_arguments_fail_where_the_dag_is_parsed(warehouse):
    from airflow_provider_paimon.operators.branch import (
        BranchDeleteOperator,
        ReplaceMainBranchOperator,
    )
    from airflow_provider_paimon.operators.compaction import CompactionOperator
    from airflow_provider_paimon.operators.tag import TagCreateOperator

    orders = asset_for(warehouse, TABLE)
    for cls, kwargs in ((CompactionOperator, {}), (TagCreateOperator, {"tag": "t"}),
                        (BranchDeleteOperator, {"branch": "b"})):
        with pytest.raises(ValueError, match="changes no rows a reader sees"):
            cls(task_id="x", table=TABLE, asset_partitions=True, **kwargs)
    with pytest.raises(ValueError, match="r: asset_partitions must be a boolean"):
        ReplaceMainBranchOperator(task_id="r", table=TABLE, branch="fix", asset_partitions="enabled")
    assert ReplaceMainBranchOperator(task_id="r", table=TABLE, branch="fix").asset_partitions is False
    assert check_asset_partitions(" Yes ", "t") is True and check_asset_partitions("off", "t") is False
    for bad in ("ture", 2, None):
        with pytest.raises(ValueError, match=r"t: asset_partitions (must be a boolean|is required)"):
            check_asset_partitions(bad, "t")
        with pytest.raises(ValueError, match="m: asset_partitions"):
            MarkPartitionDoneOperator(task_id="m", table=TABLE, partition={"dt": "x"}, asset_partitions=bad)
        with pytest.raises(ValueError, match="w: asset_partitions"):
            PaimonPartitionSensor(task_id="w", table=TABLE, partition={"dt": "x"}, asset_partitions=bad)
    with pytest.raises(ValueError, match="needs the paimon:// asset of each table"):
        PaimonSparkSubmitOperator(task_id="s", application="a.py", asset_partitions=True,
                                  outlets=[Asset("s3://bucket/not-paimon")])
    with pytest.raises(ValueError, match="source must be an Asset"):
        PaimonPartitionRelayOperator(task_id="r", source="db.orders")
    with pytest.raises(InvalidArgumentError, match="partition_keys must be a boolean"):
        PaimonSnapshotTrigger(table=TABLE, consumer_id="c", warehouse=warehouse, partition_keys="ture")
    # off: the watcher's serialized form (its identity in Airflow) is what it was before
    assert "partition_keys" not in PaimonSnapshotTrigger(table=TABLE, consumer_id="c").serialize()[1]
    assert PaimonSnapshotTrigger(table=TABLE, consumer_id="c", partition_keys=True).serialize()[1][
        "partition_keys"
    ] is True
    assert PaimonSparkSubmitOperator(task_id="ok", application="a.py", outlets=[orders],
                                     asset_partitions=True).asset_partitions is True
