"""PaimonPartitionSensor, PaimonPartitionTrigger and MarkPartitionDoneOperator on real tables."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time

import pyarrow as pa
import pytest
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout, TaskDeferred
from pypaimon import Schema
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.operators.partition import MarkPartitionDoneOperator
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.sensors.partition import PaimonPartitionSensor
from airflow_provider_paimon.triggers.partition import PaimonPartitionTrigger

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])



@pytest.fixture
def table(warehouse):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    return load_table(catalog, "db.t")


def write(table, dt: str) -> None:
    commit_rows(table, [{"id": 1, "dt": dt}], SCHEMA)


def sensor(warehouse, **kwargs):
    args = dict(task_id="wait", table="db.t", partition={"dt": "2026-11-03"}, warehouse=warehouse,
                poke_interval=0.05, timeout=5)
    args.update(kwargs)
    return PaimonPartitionSensor(**args)


def test_poke_has_data_and_done(warehouse, table):
    has_data, done = sensor(warehouse), sensor(warehouse, wait_for="done")
    assert has_data.poke({}) is False and done.poke({}) is False
    write(table, "2026-11-04")  # another partition
    assert has_data.poke({}) is False
    write(table, "2026-11-03")
    result = has_data.poke({})
    assert isinstance(result, PokeReturnValue) and result.is_done
    assert result.xcom_value["row_count"] == 1 and result.xcom_value["path"] == "dt=2026-11-03"
    assert done.poke({}) is False  # data is not "done"

    out = MarkPartitionDoneOperator(task_id="mark", table="db.t", partition={"dt": "2026-11-03"},
                                    warehouse=warehouse).execute({})
    assert out["path"] == "dt=2026-11-03" and out["creationTime"] == out["modificationTime"]
    with open(os.path.join(warehouse, "db.db", "t", "dt=2026-11-03", "_SUCCESS")) as fh:
        assert json.load(fh) == {"creationTime": out["creationTime"], "modificationTime": out["modificationTime"]}
    finished = done.poke({})
    assert finished.is_done and finished.xcom_value["success_file"]["creationTime"] == out["creationTime"]
    assert sensor(warehouse, wait_for="done").execute({})["done"] is True  # poke mode end to end


def test_bad_arguments_fail_at_init_or_at_once(warehouse, table):
    for wait_for in ("has-data", "DONE", "", None, "poke"):
        with pytest.raises(ValueError, match="wait_for must be one of 'has_data', 'done'"):
            sensor(warehouse, wait_for=wait_for)
    for partition in ({}, None, "dt=2026-11-03", {"": "x"}):
        with pytest.raises(ValueError, match="partition"):
            sensor(warehouse, partition=partition)
    with pytest.raises(ValueError, match="partition"):
        MarkPartitionDoneOperator(task_id="m", table="db.t", partition={}, warehouse=warehouse)
    # a rendered bad value: the task fails (no retries), nothing is written
    s = sensor(warehouse)
    s.wait_for = "sometimes"
    with pytest.raises(AirflowFailException, match="wait_for must be one of"):
        s.execute({})
    before = sorted(os.walk(warehouse))
    with pytest.raises(AirflowFailException, match=r"day.*partition columns: dt"):
        sensor(warehouse, partition={"day": "x"}).poke({})
    with pytest.raises(AirflowFailException, match=r"day.*partition columns: dt"):
        MarkPartitionDoneOperator(task_id="m", table="db.t", partition={"day": "x"}, warehouse=warehouse).execute({})
    with pytest.raises(AirflowFailException, match="ghost"):
        MarkPartitionDoneOperator(task_id="m", table="db.t", partition={"dt": "x"}, branch="ghost",
                                  warehouse=warehouse).execute({})
    assert sorted(os.walk(warehouse)) == before
    with pytest.raises(AirflowSensorTimeout):
        sensor(warehouse, timeout=0.2).execute({})


def test_deferrable_defers_with_no_secrets_and_completes(warehouse, table):
    with pytest.raises(TaskDeferred) as deferred:
        sensor(warehouse, deferrable=True).execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, PaimonPartitionTrigger)
    path, kwargs = trigger.serialize()
    assert path == "airflow_provider_paimon.triggers.partition.PaimonPartitionTrigger"
    assert kwargs["check"] == {"table": "db.t", "partition": {"dt": "2026-11-03"}, "wait_for": "has_data",
                               "branch": None, "warehouse": warehouse, "warehouse_options": None,
                               "paimon_conn_id": None}
    PaimonPartitionTrigger(**kwargs)  # round trip
    # secrets are refused: written into the DAG at once, from a Variable before deferring;
    # a connection id is what travels
    with pytest.raises(ValueError, match=re.escape("fs.s3.accessKeySecret")) as refused:
        sensor(warehouse, deferrable=True, warehouse_options={"fs.s3.accessKeySecret": "s3cr3t"})
    assert "s3cr3t" not in str(refused.value)
    leaky = sensor(warehouse, deferrable=True,
                   warehouse_options={"fs.s3.accessKeyId": "AKIA", "fs.s3.accessKeySecret": "{{ var.value.sk }}"})
    leaky.render_template_fields({"var": {"value": {"sk": "s3cr3t"}}})
    with pytest.raises(AirflowFailException, match=re.escape("fs.s3.accessKeySecret")) as refused:
        leaky.execute({})
    assert "s3cr3t" not in str(refused.value)
    with pytest.raises(ValueError, match="cannot defer") as refused:
        PaimonPartitionTrigger(check={"table": "db.t", "partition": {"dt": "x"},
                                      "warehouse_options": {"fs.s3.accessKeySecret": "s3cr3t"}})
    assert "s3cr3t" not in str(refused.value)
    with pytest.raises(ValueError, match="wait_for"):
        PaimonPartitionTrigger(check={"table": "db.t", "partition": {"dt": "x"}, "wait_for": "soon"})
    for status, error in (("timeout", AirflowSensorTimeout), ("error", AirflowFailException)):
        with pytest.raises(error, match="boom"):
            sensor(warehouse).execute_complete({}, {"status": status, "message": "boom"})
    assert sensor(warehouse).execute_complete({}, {"status": "success", "result": {"x": 1}}) == {"x": 1}


async def _first_event(trigger):
    async for event in trigger.run():
        return event.payload


def test_trigger_fires_when_data_lands_from_another_thread(warehouse, table):
    trigger = PaimonPartitionTrigger(
        check={"table": "db.t", "partition": {"dt": "2026-11-03"}, "warehouse": warehouse},
        poll_interval=0.1, deadline=time.time() + 60,
    )
    polled = threading.Event()
    not_yet: list[str] = []

    def writer():  # its own catalog and table object, as another writer would have
        if polled.wait(30):
            write(load_table(open_catalog(warehouse), "db.t"), "2026-11-03")

    thread = threading.Thread(target=writer)
    thread.start()
    original = trigger.log.info

    def log_info(*args):  # the first "not yet" poll lets the writer go
        not_yet.append(args[0] % args[1:])
        polled.set()
        original(*args)

    trigger.log.info = log_info  # type: ignore[method-assign]
    try:
        payload = asyncio.run(_first_event(trigger))
    finally:
        polled.set()
        thread.join()
    assert not_yet and "not holding data yet" in not_yet[0]  # it waited before the write
    assert payload["status"] == "success"
    assert payload["result"]["has_data"] and payload["result"]["row_count"] == 1


def test_trigger_done_error_and_timeout(warehouse, table):
    check = {"table": "db.t", "partition": {"dt": "2026-11-03"}, "warehouse": warehouse, "wait_for": "done"}
    timed_out = asyncio.run(_first_event(PaimonPartitionTrigger(check=check, poll_interval=0.05,
                                                                deadline=time.time() + 0.2)))
    assert timed_out["status"] == "timeout" and "not done" in timed_out["message"]
    MarkPartitionDoneOperator(task_id="m", table="db.t", partition={"dt": "2026-11-03"}, warehouse=warehouse).execute({})
    done = asyncio.run(_first_event(PaimonPartitionTrigger(check=check, poll_interval=0.05)))
    assert done["status"] == "success" and done["result"]["done"]
    bad = asyncio.run(_first_event(PaimonPartitionTrigger(check={**check, "partition": {"hour": "1"}})))
    assert bad["status"] == "error" and "hour" in bad["message"]
    gone = asyncio.run(_first_event(PaimonPartitionTrigger(check={**check, "table": "db.nope"})))
    assert gone["status"] == "error" and "db.nope" in gone["message"]


def test_on_a_branch(warehouse, table):
    from airflow_provider_paimon.paimon import branch as branch_ops

    branch_ops.create_branch(table, "fix")
    write(load_table(open_catalog(warehouse), "db.t", "fix"), "2026-11-03")
    assert sensor(warehouse, branch="fix").poke({}).is_done
    assert sensor(warehouse).poke({}) is False
    assert sensor(warehouse, branch="").poke({}) is False  # a blank template means main


def test_docs_sample_builds_the_tasks():
    """The ``py`` sample of docs/sensor.md (its ``python`` block belongs to the catch-up test)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "sensor.md").read_text()
    section = text[text.index("# PaimonPartitionSensor and MarkPartitionDoneOperator"):]
    (block,) = re.findall(r"```py\n(.*?)```", section, flags=re.S)
    ns: dict = {}
    exec(compile(block, "sensor.md:partition", "exec"), ns)
    assert ns["landed"].wait_for == "has_data" and ns["landed"].deferrable
    assert ns["landed"].partition == {"dt": "{{ ds }}"} and "partition" in ns["landed"].template_fields
    assert ns["mark"].partition == {"dt": "{{ ds }}"} and "partition" in ns["mark"].template_fields


def test_partition_template_renders_then_poke_reads_that_day(warehouse, table):
    write(table, "2026-11-03")
    s = sensor(warehouse, partition={"dt": "{{ ds }}"})
    s.render_template_fields({"ds": "2026-11-03"})
    assert s.partition == {"dt": "2026-11-03"}
    assert s.poke({}).xcom_value["path"] == "dt=2026-11-03"
