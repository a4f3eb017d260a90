"""PaimonSnapshotTrigger on real tables, driven through Airflow's own shared-stream manager.

The trigger runs as the triggerer runs it in ack mode: ``SharedStreamManager.subscribe``
-> ``filter_shared_stream``; each event it yields is bound (``bind_pending_event``) and
confirmed persisted (``confirm_persisted``) as the triggerer does after storing it. The
consumer file (the position) is checked against those confirmations, and a "restart"
(a new manager and trigger) against what was confirmed before. Tables are written by
plain pypaimon, COMPACT snapshots by the project's compaction. The real triggerer is in
test_snapshot_trigger_real_airflow.py.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from airflow.triggers.base import TriggerEvent
from airflow.triggers.shared_stream import SharedStreamManager
from snapshot_tables import commit, compact, make_table, reference, table
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon.consumers import (
    list_consumers,
    read_next_snapshot,
    save_next_snapshot,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.snapshot_feed import SnapshotGapError, snapshots_after
from airflow_provider_paimon.paimon.snapshots import TableLayout
from airflow_provider_paimon.triggers.snapshot import PaimonSnapshotTrigger

TABLE = "db.events"
FAST = 0.05  # poll interval of the tests, seconds


def trigger(wh: str, **kwargs: Any) -> PaimonSnapshotTrigger:
    args = {"table": TABLE, "consumer_id": "airflow-test", "warehouse": wh, "poll_interval": FAST}
    args.update(kwargs)
    return PaimonSnapshotTrigger(**args)


class Triggerer:
    """One trigger under a real SharedStreamManager, with the triggerer's bind/confirm steps."""

    def __init__(self, trig: PaimonSnapshotTrigger, trigger_id: int = 1) -> None:
        self.trigger = trig
        self.trigger_id = trigger_id
        self.manager = SharedStreamManager(ack_timeout=30)
        self.key = trig.shared_stream_key()
        self.events: list[TriggerEvent] = []
        self.unconfirmed: list[int] = []
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        stream = self.manager.subscribe(trigger_id=self.trigger_id, trigger=self.trigger, key=self.key)

        async def consume() -> None:
            async for event in self.trigger.filter_shared_stream(stream):
                seq = self.manager.bind_pending_event(trigger_id=self.trigger_id, key=self.key)
                assert seq is not None  # ack mode: every event is bound to its snapshot
                self.events.append(event)
                self.unconfirmed.append(seq)

        self.task = asyncio.create_task(consume())

    def confirm(self) -> None:
        """What the triggerer does once the events are stored in the metadata DB."""
        seqs, self.unconfirmed = self.unconfirmed, []
        self.manager.confirm_persisted(seqs)

    async def stop(self) -> None:
        """A triggerer going away: the trigger is cancelled, the group stops."""
        assert self.task is not None
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task
        await self.manager.stop_all()

    def ids(self) -> list[int]:
        return [e.payload["snapshot_id"] for e in self.events]


async def until(check, timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(FAST)


def position(warehouse: str, branch: str | None = None, consumer: str = "airflow-test") -> int | None:
    return read_next_snapshot(table(warehouse, branch), consumer)


# ---------------------------------------------------------------------------------------


def test_events_for_appends_and_overwrites_not_compactions_position_after_persist(warehouse):
    tbl = make_table(warehouse)
    commit(tbl, [1, 2])  # before the watcher: not an event

    async def scenario() -> dict[str, Any]:
        t = Triggerer(trigger(warehouse))
        await t.start()
        # the first start pins its position after the latest snapshot, at once
        await until(lambda: position(warehouse) == 2, what="pinned start")
        s2 = await asyncio.to_thread(commit, tbl, [3, 4, 5], False)
        s3 = await asyncio.to_thread(commit, tbl, [6])
        s4 = await asyncio.to_thread(compact, table(warehouse))
        s5 = await asyncio.to_thread(commit, tbl, [7, 8], True)  # OVERWRITE
        await until(lambda: len(t.events) == 3, what="three events")
        await asyncio.sleep(10 * FAST)
        # nothing persisted yet: the position has not moved
        assert position(warehouse) == 2
        t.confirm()
        await until(lambda: position(warehouse) == s5 + 1, what="position after the overwrite")
        await t.stop()
        return {"events": t.events, "ids": (s2, s3, s4, s5)}

    out = asyncio.run(scenario())
    s2, s3, _s4, s5 = out["ids"]
    events = out["events"]
    assert [e.payload["snapshot_id"] for e in events] == [s2, s3, s5]  # COMPACT s4 skipped
    assert [e.payload["commit_kind"] for e in events] == ["APPEND", "APPEND", "OVERWRITE"]
    fresh = table(warehouse)
    for event in events:
        payload = event.payload
        assert {k: payload[k] for k in reference(fresh, payload["snapshot_id"])} == reference(
            fresh, payload["snapshot_id"]
        )
        assert payload["table"] == TABLE and payload["branch"] == "main"
        json.dumps(payload)  # plain JSON, as Airflow stores it
    # Paimon's delta count is the net change: the overwrite removed 6 rows and added 2
    assert [e.payload["delta_record_count"] for e in events] == [3, 1, 2 - 6]
    assert events[-1].payload["total_record_count"] == 2  # the overwrite left two rows


def test_restart_redelivers_what_was_not_persisted_and_nothing_else(warehouse):
    tbl = make_table(warehouse)

    async def scenario() -> tuple[list[int], list[int], list[int]]:
        first = Triggerer(trigger(warehouse))
        await first.start()
        await until(lambda: position(warehouse) == 1, what="pinned start")
        a = await asyncio.to_thread(commit, tbl, [1])
        await until(lambda: len(first.events) == 1)
        first.confirm()
        await until(lambda: position(warehouse) == a + 1, what="first persisted")
        b = await asyncio.to_thread(commit, tbl, [2])
        await until(lambda: len(first.events) == 2)
        # the triggerer dies before the event of b is confirmed stored
        await first.stop()
        c = await asyncio.to_thread(commit, tbl, [3])  # committed while no triggerer runs
        assert position(warehouse) == b
        second = Triggerer(trigger(warehouse), trigger_id=2)
        await second.start()
        await until(lambda: len(second.events) == 2, what="redelivery")
        second.confirm()
        await until(lambda: position(warehouse) == c + 1, what="position after restart")
        await second.stop()
        return first.ids(), second.ids(), [a, b, c]

    first, second, (a, b, c) = asyncio.run(scenario())
    assert first == [a, b]
    assert second == [b, c]  # b again (never stored), c not missed, a not repeated


def test_two_watchers_of_one_consumer_share_one_poll_with_their_own_kinds(warehouse):
    tbl = make_table(warehouse)

    async def scenario():
        data = trigger(warehouse)
        compactions = trigger(warehouse, commit_kinds=["compact"])
        assert data.shared_stream_key() == compactions.shared_stream_key()
        manager = SharedStreamManager(ack_timeout=30)
        got: dict[str, list[int]] = {"data": [], "compact": []}
        seqs: list[int] = []
        tasks = []
        for trigger_id, (name, trig) in enumerate({"data": data, "compact": compactions}.items()):
            stream = manager.subscribe(trigger_id=trigger_id, trigger=trig, key=trig.shared_stream_key())

            async def consume(name=name, trig=trig, stream=stream, trigger_id=trigger_id):
                async for event in trig.filter_shared_stream(stream):
                    seqs.append(manager.bind_pending_event(trigger_id=trigger_id, key=trig.shared_stream_key()))
                    got[name].append(event.payload["snapshot_id"])

            tasks.append(asyncio.create_task(consume()))
        await until(lambda: position(warehouse) == 1)
        a = await asyncio.to_thread(commit, tbl, [1])
        b = await asyncio.to_thread(commit, tbl, [2])
        c = await asyncio.to_thread(compact, table(warehouse))
        await until(lambda: len(got["data"]) == 2 and len(got["compact"]) == 1)
        manager.confirm_persisted(seqs)
        await until(lambda: position(warehouse) == c + 1)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await manager.stop_all()
        return got, (a, b, c)

    got, (a, b, c) = asyncio.run(scenario())
    assert got == {"data": [a, b], "compact": [c]}


def test_branch_watcher_sees_branch_commits_only_and_keeps_its_position_there(warehouse):
    tbl = make_table(warehouse)
    commit(tbl, [1])
    tbl.create_tag("t1", 1)
    tbl.branch_manager().create_branch("fix", "t1")

    async def scenario():
        t = Triggerer(trigger(warehouse, branch="fix"))
        await t.start()
        await until(lambda: position(warehouse, "fix") == 2)
        await asyncio.to_thread(commit, tbl, [2])  # main: not watched
        fix = await asyncio.to_thread(commit, table(warehouse, "fix"), [10, 11])
        await until(lambda: len(t.events) == 1)
        t.confirm()
        await until(lambda: position(warehouse, "fix") == fix + 1)
        await t.stop()
        return t.events

    events = asyncio.run(scenario())
    assert [(e.payload["branch"], e.payload["snapshot_id"], e.payload["delta_record_count"]) for e in events] == [
        ("fix", 2, 2)
    ]
    assert list_consumers(table(warehouse)) == {}  # main's consumer folder untouched
    assert list_consumers(table(warehouse, "fix")) == {"airflow-test": 3}


def test_partition_keys_list_the_partitions_each_snapshot_changed(warehouse):
    """partition_keys=True: the payload names the partitions the commit wrote (the test's
    own rows are the reference), for a watcher sharing its poll with one that did not ask;
    the run() fallback adds them too."""
    import pyarrow as pa
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("region", pa.string())])
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(schema, partition_keys=["dt", "region"]), False)
    tbl = load_table(catalog, TABLE)

    def write(partitions: list[tuple[str, str]]) -> int:
        return commit_rows(tbl, [{"id": i, "dt": d, "region": r} for i, (d, r) in enumerate(partitions)], schema)

    writes = [[("2026-11-03", "eu"), ("2026-11-03", "us"), ("2026-11-03", "eu")], [("2026-11-04", "eu")]]

    async def scenario():
        keyed = trigger(warehouse, partition_keys=True)
        plain = trigger(warehouse)
        manager = SharedStreamManager(ack_timeout=30)
        got: dict[str, list[dict]] = {"keyed": [], "plain": []}
        tasks = []
        for trigger_id, (name, trig) in enumerate({"keyed": keyed, "plain": plain}.items()):
            stream = manager.subscribe(trigger_id=trigger_id, trigger=trig, key=trig.shared_stream_key())

            async def consume(name=name, trig=trig, stream=stream, trigger_id=trigger_id):
                async for event in trig.filter_shared_stream(stream):
                    manager.confirm_persisted([manager.bind_pending_event(trigger_id=trigger_id,
                                                                          key=trig.shared_stream_key())])
                    got[name].append(event.payload)

            tasks.append(asyncio.create_task(consume()))
        await until(lambda: position(warehouse) == 1)
        ids = [await asyncio.to_thread(write, partitions) for partitions in writes]
        await until(lambda: len(got["keyed"]) == 2 and len(got["plain"]) == 2)
        for task in tasks:
            task.cancel()
        await manager.stop_all()
        fallback = trigger(warehouse, partition_keys=True, consumer_id="fallback", start_snapshot=ids[1]).run()
        last = await asyncio.wait_for(fallback.__anext__(), 15)
        await fallback.aclose()
        return got, ids, last.payload

    got, ids, last = asyncio.run(scenario())
    expected = [list(dict.fromkeys(f"dt={d}/region={r}" for d, r in partitions)) for partitions in writes]
    assert [(p["snapshot_id"], p["partition_keys"]) for p in got["keyed"]] == list(zip(ids, expected, strict=True))
    assert [p["snapshot_id"] for p in got["plain"]] == ids
    assert all("partition_keys" not in p for p in got["plain"])  # only the watcher that asked
    assert (last["snapshot_id"], last["partition_keys"]) == (ids[1], expected[1])
    json.dumps(got)


def test_run_without_shared_stream_saves_position_after_each_event(warehouse):
    """The fallback path (Airflow without shared streams) with the same events."""
    tbl = make_table(warehouse)
    commit(tbl, [1])

    async def scenario():
        trig = trigger(warehouse, start_snapshot=1)
        gen = trig.run()
        first = await asyncio.wait_for(gen.__anext__(), 15)
        assert position(warehouse) == 1  # not yet handed over
        s2 = await asyncio.to_thread(commit, tbl, [2])
        second = await asyncio.wait_for(gen.__anext__(), 15)
        assert position(warehouse) == 2  # the first is saved once the runner took it
        await gen.aclose()
        return [first.payload["snapshot_id"], second.payload["snapshot_id"]], s2

    ids, s2 = asyncio.run(scenario())
    assert ids == [1, s2]


def test_expired_snapshots_are_reported_not_skipped(warehouse):
    tbl = make_table(warehouse)
    for i in range(4):
        commit(tbl, [i])
    layout = TableLayout.of(tbl)
    for sid in (1, 2):  # expiry that did not honour a consumer at 1
        os.remove(os.path.join(warehouse, "db.db", "events", "snapshot", f"snapshot-{sid}"))
    with pytest.raises(SnapshotGapError, match=r"snapshots 1\.\.2 of db\.events expired"):
        snapshots_after(layout, TABLE, None, 1)
    page = snapshots_after(layout, TABLE, None, 3)
    assert [e.snapshot_id for e in page.events] == [3, 4] and page.next_snapshot == 5
    assert snapshots_after(layout, TABLE, None, 5).events == ()  # up to date
    # ids went back below the position (a rollback to 4 after the watcher saw 5 and 6)
    with pytest.raises(SnapshotGapError, match=r"position \(next snapshot 7\) of db\.events is past its latest snapshot 4"):
        snapshots_after(layout, TABLE, None, 7)

    async def scenario():
        t = Triggerer(trigger(warehouse, start_snapshot=1))
        await t.start()
        await until(lambda: position(warehouse) == 1)
        await asyncio.sleep(20 * FAST)
        stuck = (list(t.events), position(warehouse))
        # the fix the error names: save the consumer at the earliest snapshot
        await asyncio.to_thread(save_next_snapshot, table(warehouse), "airflow-test", 3)
        await until(lambda: len(t.events) == 2, what="events after the fix")
        await t.stop()
        return stuck, t.ids()

    stuck, after = asyncio.run(scenario())
    assert stuck == ([], 1)  # waits at the gap (logged), position kept
    assert after == [3, 4]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": "events"}, "database.table"),
        ({"consumer_id": ""}, "consumer_id is required"),
        ({"consumer_id": "../x"}, "consumer-id"),
        ({"branch": "a/b"}, "path separators"),
        ({"commit_kinds": ["APPEND", "MERGE"]}, "unknown commit kind 'MERGE'"),
        ({"commit_kinds": []}, "at least one"),
        ({"poll_interval": 0}, "poll_interval"),
        ({"poll_interval": float("nan")}, "poll_interval"),
        ({"poll_interval": "soon"}, "poll_interval"),
        ({"start_snapshot": 0}, "start_snapshot"),
        ({"warehouse_options": {"s3.secret-key": "hunter2-secret"}}, "s3.secret-key"),
        ({"warehouse": "s3://AKIAX:hunter2-secret@bucket/wh"}, "credentials"),
    ],
)
def test_bad_arguments_fail_at_construction(warehouse, kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message) as err:
        trigger(warehouse, **kwargs)
    assert "hunter2" not in str(err.value)
    assert not os.listdir(warehouse)  # nothing written


def test_serialize_round_trip_and_defaults(warehouse):
    trig = trigger(warehouse, commit_kinds=("overwrite", "APPEND"), branch="main", paimon_conn_id="lake")
    classpath, kwargs = trig.serialize()
    assert classpath == "airflow_provider_paimon.triggers.snapshot.PaimonSnapshotTrigger"
    json.dumps(kwargs)
    assert kwargs["commit_kinds"] == ["APPEND", "OVERWRITE"] and kwargs["branch"] is None
    again = PaimonSnapshotTrigger(**kwargs)
    assert again.serialize() == (classpath, kwargs)
    default = PaimonSnapshotTrigger(table=TABLE, consumer_id="c")
    assert default.commit_kinds == ("APPEND", "OVERWRITE") and default.poll_interval > 0


def test_watcher_on_our_asset_and_listed_by_the_provider(warehouse):
    from airflow.sdk import Asset, AssetWatcher

    from airflow_provider_paimon.assets import asset_for
    from airflow_provider_paimon.get_provider_info import get_provider_info

    asset = asset_for(warehouse, TABLE, watchers=[AssetWatcher(name="events", trigger=trigger(warehouse))])
    assert asset.uri == Asset(f"paimon://{warehouse}/db/events").uri
    assert isinstance(asset.watchers[0].trigger, PaimonSnapshotTrigger)
    modules = [m for t in get_provider_info()["triggers"] for m in t["python-modules"]]
    assert "airflow_provider_paimon.triggers.snapshot" in modules


def test_docs_sample_builds_a_watched_paimon_asset():
    """The watched-asset ``py`` sample of docs/assets.md (the page's ``python`` block is
    test_assets.py's; its partition excerpt is dags/partition_assets_dag.py, run by
    test_partition_assets_real_airflow.py)."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "assets.md").read_text()
    (sample,) = [s for s in re.findall(r"```py\n(.*?)```", doc, flags=re.S) if '"orders_report"' in s]
    namespace: dict = {}
    exec(compile(sample, "docs/assets.md", "exec"), namespace)
    orders = namespace["ORDERS"]
    assert orders.uri == "paimon://lake/wh/sales/orders?fs=s3"
    [watcher] = orders.watchers
    assert watcher.trigger.serialize()[1]["paimon_conn_id"] == "paimon_default"
    assert list(namespace["report"].timetable.asset_condition.objects) == [orders]


@pytest.mark.spark
def test_commits_of_our_spark_data_source_fire_like_pypaimon_ones(spark, warehouse):
    """Any writer: the feed reads snapshot files, so a Spark job's commit is an event too."""
    make_table(warehouse)

    def spark_append(ids: list[int]) -> None:
        frame = spark.createDataFrame([(i, f"v{i}") for i in ids], "id BIGINT, v STRING")
        frame.write.format("paimon").option("warehouse", warehouse).option("table", TABLE).mode("append").save()

    async def scenario():
        t = Triggerer(trigger(warehouse))
        await t.start()
        await until(lambda: position(warehouse) == 1)
        await asyncio.to_thread(spark_append, [1, 2, 3])
        await until(lambda: len(t.events) == 1, timeout=120)
        t.confirm()
        await until(lambda: position(warehouse) == 2)
        await t.stop()
        return t.events

    [event] = asyncio.run(scenario())
    want = reference(table(warehouse), 1)
    assert {k: event.payload[k] for k in want} == want
    assert (event.payload["commit_kind"], event.payload["delta_record_count"]) == ("APPEND", 3)


def test_snapshot_one_sharing_watcher_never_stored_is_redelivered_not_passed(warehouse):
    """Ack timeout of one subscriber: the position stays, the stream rewinds to the snapshot."""
    from airflow.triggers.shared_stream import AckTimeout

    tbl = make_table(warehouse)

    async def scenario():
        manager = SharedStreamManager(ack_timeout=1.0)
        healthy, stuck = trigger(warehouse), trigger(warehouse)
        key = healthy.shared_stream_key()
        seen: dict[int, list[int]] = {0: [], 1: []}
        errors: list[BaseException] = []

        async def consume(trigger_id: int, trig: PaimonSnapshotTrigger) -> None:
            stream = manager.subscribe(trigger_id=trigger_id, trigger=trig, key=key)
            try:
                async for event in trig.filter_shared_stream(stream):
                    seq = manager.bind_pending_event(trigger_id=trigger_id, key=key)
                    seen[trigger_id].append(event.payload["snapshot_id"])
                    if trigger_id == 0:  # stored at once; trigger 1's never is
                        manager.confirm_persisted([seq])
            except AckTimeout as err:
                errors.append(err)
            finally:
                await manager.unsubscribe(trigger_id, key)

        tasks = [asyncio.create_task(consume(0, healthy)), asyncio.create_task(consume(1, stuck))]
        await until(lambda: position(warehouse) == 1)
        a = await asyncio.to_thread(commit, tbl, [1])
        await until(lambda: errors, what="ack timeout of the stuck watcher")
        await until(lambda: position(warehouse) == a + 1, what="position after redelivery")
        tasks[0].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await manager.stop_all()
        return seen, a

    seen, a = asyncio.run(scenario())
    assert seen == {0: [a, a], 1: [a]}  # redelivered to the healthy one; never passed unstored


def test_expiry_keeps_the_snapshots_the_watcher_has_not_delivered(warehouse):
    """The position is a consumer: our expiry keeps every snapshot from it on."""
    from datetime import timedelta

    from airflow_provider_paimon.paimon.maintenance.expire import expire_snapshots
    from airflow_provider_paimon.paimon.snapshots import snapshot_ids

    tbl = make_table(warehouse)

    async def first_run() -> int:
        t = Triggerer(trigger(warehouse))
        await t.start()
        await until(lambda: position(warehouse) == 1)
        a = await asyncio.to_thread(commit, tbl, [1])
        await until(lambda: len(t.events) == 1)
        t.confirm()
        await until(lambda: position(warehouse) == a + 1)
        await t.stop()
        return a

    a = asyncio.run(first_run())
    later = [commit(tbl, [i]) for i in (2, 3, 4)]  # while no triggerer runs
    expire_snapshots(table(warehouse), retain_max=1, retain_min=1, older_than=timedelta(0))
    assert snapshot_ids(TableLayout.of(table(warehouse))) == later  # a expired, the rest kept

    async def second_run() -> list[int]:
        t = Triggerer(trigger(warehouse), trigger_id=2)
        await t.start()
        await until(lambda: len(t.events) == 3)
        await t.stop()
        return t.ids()

    assert asyncio.run(second_run()) == later
    assert a not in later
