"""SnapshotCatchUpSensor and SnapshotCatchUpTrigger against a real warehouse and SQLite store."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from airflow.sdk import PokeReturnValue
from airflow.sdk.exceptions import (
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)

from airflow_provider_paimon.lineage.entities import SnapshotRef
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor
from airflow_provider_paimon.triggers.catchup import SnapshotCatchUpTrigger

JOB = "correction.run_fixed"


@pytest.fixture
def setup(tables, tmp_path):
    """src (main, 3 snapshots), src2 branch 'fix' (3 snapshots), sink branch 'fix'; job lineage."""
    tables.create("db.src")
    tables.create("db.src2")
    tables.create("db.sink")
    for _ in range(3):
        tables.append("db.src")
    for _ in range(2):
        tables.append("db.src2")
    tables.branch("db.src2", "fix", "t2")
    tables.append("db.src2", branch="fix")  # src2$branch_fix latest = 3
    tables.append("db.sink")
    tables.branch("db.sink", "fix", "t1")
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    store = LineageStore.from_url(url)
    record(store, 0, src=2, src2=2)
    yield tables, store, url
    store.close()


def record(store, barrier, src, src2, sink=None):
    store.record_batch(
        JOB,
        barrier,
        sources=[SnapshotRef("db", "src", src), SnapshotRef("db", "src2", src2, "fix")],
        sinks=[SnapshotRef("db", "sink", sink or barrier + 2, "fix")],
    )


def sensor(tables, url, **kwargs):
    args = dict(
        task_id="wait",
        table="db.sink",
        branch="fix",
        job=JOB,
        warehouse=tables.warehouse,
        lineage_url=url,
        poke_interval=0.05,
        timeout=5,
    )
    args.update(kwargs)
    return SnapshotCatchUpSensor(**args)


def test_poke_waits_then_reports_progress(setup):
    tables, store, url = setup
    s = sensor(tables, url)
    assert s.poke({}) is False
    record(store, 1, src=3, src2=3)
    done = s.poke({})
    assert isinstance(done, PokeReturnValue) and done.is_done
    by_source = {p["source"]: p for p in done.xcom_value["sources"]}
    assert by_source["db.src"]["consumed_snapshot_id"] == 3
    assert by_source["db.src"]["latest_snapshot_id"] == 3
    assert by_source["db.src2$branch_fix"]["latest_snapshot_id"] == 3
    # a new source snapshot puts the job behind again; max_lag tolerates it
    tables.append("db.src")
    assert s.poke({}) is False
    assert sensor(tables, url, max_lag_snapshots=1).poke({})


def test_explicit_sources_and_clear_failures(setup):
    tables, store, url = setup
    record(store, 1, src=3, src2=2)
    assert sensor(tables, url, sources=["db.src"]).poke({})  # src2 is behind but not asked
    cases = [
        (dict(job="no.such.job"), "no table lineage"),
        (dict(sources=["db.sink"]), "never read db.sink"),
        (dict(sources=["db.src2"]), r"never read db.src2 "),  # main, while the job reads branch fix
        (dict(table="db.nope"), "db.nope"),
        (dict(branch="ghost"), "'ghost'"),
        (dict(lineage_url="sqlite:///" + tables.warehouse + "/never-created.sqlite"), "LineageStoreMissingError.*does not exist"),
    ]
    for kwargs, message in cases:
        with pytest.raises(AirflowFailException, match=message):
            sensor(tables, url, **kwargs).poke({})


def test_unreachable_store_is_retried_next_poke(setup):
    tables, _store, _url = setup
    s = sensor(tables, "mysql+pymysql://root@127.0.0.1:1/paimon")  # nothing listens on port 1
    assert s.poke({}) is False


def test_execute_poke_mode_success_timeout_soft_fail(setup):
    tables, store, url = setup
    with pytest.raises(AirflowSensorTimeout):
        sensor(tables, url, timeout=0.3).execute({})
    with pytest.raises(AirflowSkipException):
        sensor(tables, url, timeout=0.3, soft_fail=True).execute({})
    record(store, 1, src=3, src2=3)
    result = sensor(tables, url).execute({})
    assert result["caught_up"] is True and len(result["sources"]) == 2


def test_consumer_mode(tables, fresh_secrets):
    # fresh_secrets: its messages name a consumer 'other'; a word an earlier test in the
    # same worker registered as a secret would be masked in them (the registry is global)
    tables.create("db.src")
    tables.create("db.sink")
    tables.append("db.src")
    tables.append("db.src")
    tables.set_consumer("db.src", "fixer", next_snapshot=3)
    s = SnapshotCatchUpSensor(
        task_id="wait", table="db.sink", consumer_id="fixer", sources=["db.src"],
        warehouse=tables.warehouse, poke_interval=0.05, timeout=2,
    )
    assert s.execute({})["sources"][0]["consumed_snapshot_id"] == 2
    with pytest.raises(AirflowFailException, match="consumer 'other'"):
        SnapshotCatchUpSensor(
            task_id="w2", table="db.sink", consumer_id="other", sources=["db.src"],
            warehouse=tables.warehouse, timeout=1,
        ).execute({})


def test_constructor_rejects_bad_arguments(tables):
    with pytest.raises(ValueError, match="exactly one"):
        SnapshotCatchUpSensor(task_id="a", table="db.t", warehouse="/w")
    with pytest.raises(ValueError, match="needs sources"):
        SnapshotCatchUpSensor(task_id="b", table="db.t", consumer_id="c", warehouse="/w")
    with pytest.raises(ValueError, match="lineage store"):
        SnapshotCatchUpSensor(task_id="c", table="db.t", job="j", warehouse="/w")


# -- deferrable ---------------------------------------------------------------------


def _defer(s) -> SnapshotCatchUpTrigger:
    with pytest.raises(TaskDeferred) as info:
        s.execute({})
    assert info.value.method_name == "execute_complete"
    return info.value.trigger


async def _first_event(trigger, timeout=20):
    async def first():
        async for event in trigger.run():
            return event

    return await asyncio.wait_for(first(), timeout)


def test_trigger_serialization_round_trip(setup):
    tables, _store, url = setup
    trigger = _defer(sensor(tables, url, deferrable=True, sources=["db.src"]))
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_provider_paimon.triggers.catchup.SnapshotCatchUpTrigger"
    import importlib
    import json

    json.dumps(kwargs)  # plain JSON values only
    module, _, name = classpath.rpartition(".")
    again = getattr(importlib.import_module(module), name)(**kwargs)
    assert again.serialize() == (classpath, kwargs)
    assert kwargs["check"]["job"] == JOB and kwargs["deadline"] > time.time()


def test_trigger_success_after_progress(setup):
    tables, store, url = setup
    trigger = _defer(sensor(tables, url, deferrable=True))

    async def scenario():
        task = asyncio.ensure_future(_first_event(trigger))
        await asyncio.sleep(0.3)  # a few polls see "behind"
        assert not task.done()
        await asyncio.to_thread(record, store, 1, 3, 3)
        return await task

    event = asyncio.run(scenario())
    assert event.payload["status"] == "success"
    s = sensor(tables, url, deferrable=True)
    result = s.execute_complete({}, event.payload)
    assert result["caught_up"] and {p["consumed_snapshot_id"] for p in result["sources"]} == {3}


def test_trigger_error_and_timeout_events(setup):
    tables, _store, url = setup
    # A permanent problem is found by the check made before deferring: no trigger at all.
    with pytest.raises(AirflowFailException, match="no table lineage"):
        sensor(tables, url, deferrable=True, job="nobody").execute({})
    # The same problem appearing while deferred (the trigger's own check) is an error event.
    check = sensor(tables, url, job="nobody").check_kwargs()
    error = asyncio.run(_first_event(SnapshotCatchUpTrigger(check=check, poll_interval=0.05)))
    assert error.payload["status"] == "error" and "no table lineage" in error.payload["message"]
    timeout = asyncio.run(_first_event(_defer(sensor(tables, url, deferrable=True, timeout=0.3))))
    assert timeout.payload["status"] == "timeout"
    assert timeout.payload["result"]["caught_up"] is False
    assert "db.src: consumed 2 of 3" in timeout.payload["message"]

    s = sensor(tables, url, deferrable=True)
    with pytest.raises(AirflowFailException, match="no table lineage"):
        s.execute_complete({}, error.payload)
    with pytest.raises(AirflowSensorTimeout):
        s.execute_complete({}, timeout.payload)
    soft = sensor(tables, url, deferrable=True, soft_fail=True)
    with pytest.raises(AirflowSkipException):
        soft.execute_complete({}, timeout.payload)
    with pytest.raises(AirflowSkipException):
        soft.execute_complete({}, error.payload)


def test_deferrable_sensor_already_caught_up_returns_without_deferring(setup):
    tables, store, url = setup
    record(store, 1, src=3, src2=3)
    result = sensor(tables, url, deferrable=True).execute({})
    assert result["caught_up"] is True
    assert {s["source"]: s["consumed_snapshot_id"] for s in result["sources"]} == {
        "db.src": 3,
        "db.src2$branch_fix": 3,
    }


def test_wait_for_job_start_waits_for_an_unknown_job_instead_of_failing(setup):
    """A job launched in parallel with the sensor is not in the store yet: wait, do not fail."""
    tables, _store, url = setup
    waiting = sensor(tables, url, job="not_started_yet", wait_for_job_start=True)
    assert waiting.poke({}) is False
    trigger = _defer(sensor(tables, url, job="not_started_yet", wait_for_job_start=True,
                            deferrable=True, timeout=0.3))
    assert trigger.check["wait_for_job_start"] is True
    event = asyncio.run(_first_event(trigger))
    assert event.payload["status"] == "timeout"
    assert "recorded no lineage yet" in event.payload["message"]
    assert event.payload["result"]["pending"].startswith("job 'not_started_yet'")
    # Without the flag the same name is a permanent error (a typo should not wait for ever).
    with pytest.raises(AirflowFailException, match="no table lineage"):
        sensor(tables, url, job="not_started_yet").poke({})


def test_wait_for_job_start_also_waits_for_the_store_to_exist(setup, tmp_path):
    """The job creates the store with its first batch; until then the sensor waits."""
    tables, _store, _url = setup
    missing = f"sqlite:///{tmp_path / 'not-yet' / 'lineage.sqlite'}"
    assert sensor(tables, missing, wait_for_job_start=True).poke({}) is False
    assert not (tmp_path / "not-yet").exists()  # looking never creates it
    with pytest.raises(AirflowFailException, match="does not exist"):
        sensor(tables, missing).poke({})
    with pytest.raises(AirflowFailException, match=re.escape("table db.nope does not exist")):
        sensor(tables, missing, wait_for_job_start=True, table="db.nope").poke({})


def test_templated_lag_and_blank_fields(setup):
    tables, store, url = setup
    record(store, 1, src=2, src2=2)
    lagging = sensor(tables, url, max_lag_snapshots="1", lineage_database="  ", consumer_id="")
    result = lagging.poke({})
    assert result.is_done and result.xcom_value["max_lag_snapshots"] == 1
    with pytest.raises(AirflowFailException, match="max_lag_snapshots must be an integer >= 0, got 'x'"):
        sensor(tables, url, max_lag_snapshots="x").poke({})
    with pytest.raises(AirflowFailException, match="got '-1'"):
        sensor(tables, url, max_lag_snapshots="-1").poke({})
    assert {"lineage_url", "max_lag_snapshots", "warehouse", "paimon_conn_id"} <= set(
        SnapshotCatchUpSensor.template_fields
    )


def test_trigger_retries_transient_store_outage(setup):
    tables, _store, _url = setup
    trigger = SnapshotCatchUpTrigger(
        check=dict(table="db.sink", branch="fix", job=JOB, warehouse=tables.warehouse,
                   lineage_url="mysql+pymysql://root@127.0.0.1:1/paimon"),
        poll_interval=0.05,
        deadline=time.time() + 1.0,
    )
    event = asyncio.run(_first_event(trigger))
    assert event.payload["status"] == "timeout" and event.payload["result"] is None


def test_connections_resolved_where_the_check_runs(setup, monkeypatch):
    """Only connection ids travel in the trigger; the check looks them up (no secrets serialized)."""
    import json

    tables, store, url = setup
    record(store, 1, src=2, src2=2)  # not caught up: the sensor defers
    monkeypatch.setenv("AIRFLOW_CONN_WH_TEST", json.dumps({"conn_type": "paimon", "host": tables.warehouse}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINEAGE_TEST", json.dumps({"conn_type": "paimon_lineage", "extra": {"url": url}})
    )
    s = SnapshotCatchUpSensor(
        task_id="wait", table="db.sink", branch="fix", job=JOB, paimon_conn_id="wh_test",
        lineage_conn_id="lineage_test", poke_interval=0.05, timeout=5, deferrable=True,
    )
    trigger = _defer(s)
    kwargs = trigger.serialize()[1]
    assert url not in json.dumps(kwargs) and tables.warehouse not in json.dumps(kwargs)
    record(store, 2, src=3, src2=3)
    event = asyncio.run(_first_event(trigger))
    assert event.payload["status"] == "success"


SECRET_URL = "postgresql+psycopg2://paimon:S3cret,Lineage(Pw)@127.0.0.1:5432/lineage"
PW = "S3cret,Lineage(Pw)"


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        (dict(lineage_url=SECRET_URL), "lineage_url carries credentials"),
        (dict(lineage_url=f"postgresql+psycopg2://paimon@127.0.0.1/l?password={PW}"), "lineage_url carries credentials"),
        (dict(warehouse_options={"s3.secret-key": PW, "s3.endpoint": "http://x"}),
         "warehouse_options holds a credential written into the DAG (key s3.secret-key)"),
        (dict(warehouse_options={"header.Authorization": f"Bearer {PW}"}),
         "warehouse_options holds a credential written into the DAG (key header.Authorization)"),
        (dict(warehouse=f"s3://AKIA:{PW}@bucket/wh"), "warehouse carries credentials"),
    ],
)
def test_literal_secrets_are_refused_when_the_dag_is_parsed(setup, kwargs, named):
    """A secret written into the DAG would be stored in the serialized DAG (and, deferred,
    the trigger row): refused at once, naming the argument, never the value."""
    tables, _store, url = setup
    for deferrable in (True, False):
        with pytest.raises(ValueError, match=re.escape(named)) as err:
            sensor(tables, url, deferrable=deferrable, **kwargs)
        assert named in str(err.value) and PW not in str(err.value) and "S3cret" not in str(err.value)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("lineage_url", SECRET_URL, "lineage_url carries credentials"),
        ("warehouse", f"s3://AKIA:{PW}@bucket/wh", "warehouse carries credentials"),
    ],
)
def test_secret_urls_from_variables_fail_the_task_when_rendered(setup, field, value, named):
    """From a Variable (comma and parentheses in the password): refused once rendered,
    before the rendered fields are stored or a trigger is built; masked by then."""
    from airflow.sdk.log import redact

    tables, _store, url = setup
    s = sensor(tables, url, deferrable=True, **{field: "{{ var.value.loc }}"})
    with pytest.raises(AirflowFailException, match=named) as err:
        s.render_template_fields({"var": {"value": {"loc": value}}})
    assert PW not in str(err.value) and PW not in str(redact(f"x {value} y"))


@pytest.mark.parametrize("options", [{"s3.secret-key": PW, "s3.endpoint": "http://x"},
                                     {"header.Authorization": f"Bearer {PW}"}])
def test_deferrable_sensor_refuses_secret_options_in_its_trigger(setup, options):
    """Secret options from Variables are fine on a worker, but Airflow stores trigger
    arguments in clear: a deferrable sensor refuses them, and so does the trigger."""
    tables, _store, url = setup
    templated = {k: "{{ var.value.opt }}" if PW in v else v for k, v in options.items()}
    s = sensor(tables, url, deferrable=True, warehouse_options=templated)
    s.render_template_fields({"var": {"value": {"opt": next(v for v in options.values() if PW in v)}}})
    with pytest.raises(AirflowFailException) as err:
        s.execute({})
    message = str(err.value)
    assert "warehouse_options holds secrets" in message and "deferrable=False" in message
    assert PW not in message
    with pytest.raises(ValueError, match="cannot defer") as err:
        SnapshotCatchUpTrigger(check=s.check_kwargs())
    assert PW not in str(err.value)
    for check in ({"table": "db.sink", "job": JOB, "lineage_url": SECRET_URL},
                  {"table": "db.sink", "job": JOB, "warehouse": f"s3://AKIA:{PW}@bucket/wh"}):
        with pytest.raises(ValueError, match="cannot defer") as err:
            SnapshotCatchUpTrigger(check=check)
        assert PW not in str(err.value)


def test_non_secret_arguments_still_defer(setup):
    tables, _store, url = setup
    trigger = _defer(sensor(tables, url, deferrable=True,
                            warehouse_options={"s3.endpoint": "http://127.0.0.1:9000", "metastore": "filesystem"}))
    assert trigger.check["warehouse_options"]["s3.endpoint"] == "http://127.0.0.1:9000"
    assert trigger.check["lineage_url"] == url  # a SQLite file: nothing secret in it


def test_rendering_masks_secrets_of_templated_fields(setup):
    """Masks are registered when fields are rendered, before Airflow stores them."""
    from airflow.sdk._shared.secrets_masker import redact

    tables, _store, url = setup
    s = sensor(tables, url, warehouse_options={"fs.oss.accessKeySecret": "{{ var.value.key }}"})
    assert "OssSecret,Value(77)" in str(redact("OssSecret,Value(77)"))  # not known before rendering
    s.render_template_fields({"var": {"value": {"key": "OssSecret,Value(77)"}}})
    assert s.warehouse_options == {"fs.oss.accessKeySecret": "OssSecret,Value(77)"}  # the task sees it
    assert "OssSecret,Value(77)" not in str(redact({"opts": s.warehouse_options}))
    assert "OssSecret,Value(77)" not in str(redact("log: OssSecret,Value(77)"))
