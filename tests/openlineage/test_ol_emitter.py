"""The emitter end to end against a real HTTP receiver on 127.0.0.1, and its config."""

from __future__ import annotations

import json
import logging
import os
import time

import pytest
from fuzz_passwords import passwords, shown
from olspec import LineageReceiver, validate_event

from airflow_provider_paimon.lineage.openlineage import (
    KEY_API_KEY,
    KEY_ASYNC,
    KEY_ENABLED,
    KEY_ENDPOINT,
    KEY_LOCATION,
    KEY_NAMESPACE,
    KEY_TIMEOUT,
    KEY_TYPE,
    KEY_URL,
    PAIMON_BATCH_FACET_KEY,
    PaimonLineageEmitter,
    PaimonTableRef,
    resolve_settings,
)

API_KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LOG"
PARENT = {
    "spark.openlineage.parentJobNamespace": "airflow",
    "spark.openlineage.parentJobName": "dag.task",
    "spark.openlineage.parentRunId": "01890f5e-4c3b-7f3a-9b1e-1234567890ab",
    "spark.openlineage.rootParentJobNamespace": "airflow",
    "spark.openlineage.rootParentJobName": "dag",
    "spark.openlineage.rootParentRunId": "01890f5e-4c3b-7f3a-9b1e-000000000001",
}


@pytest.fixture(autouse=True)
def clean_openlineage_env(monkeypatch, tmp_path):
    """No ambient openlineage config: env vars removed, cwd and HOME without yml.

    openlineage-python itself adds ``OPENLINEAGE__TRANSPORT__TRANSPORTS__DEFAULT_HTTP__*``
    to ``os.environ`` when it sees ``OPENLINEAGE_URL``; those are removed afterwards so
    that no later test (ours or another suite's) finds lineage switched on.
    """
    for key in list(os.environ):
        if key.startswith("OPENLINEAGE"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    yield
    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        os.environ.pop(key, None)  # monkeypatch then restores what was there before


def http_conf(url: str, **extra: str) -> dict[str, str]:
    return {KEY_TYPE: "http", KEY_URL: url, KEY_NAMESPACE: "spark-test", **extra}


def refs(wh: str, snapshot: int) -> tuple[list[PaimonTableRef], list[PaimonTableRef]]:
    """([source], [sink]) of one batch: sources consumed ``snapshot``, the sink got +100."""
    return ([PaimonTableRef(wh, "db", "src", snapshot_id=snapshot)],
            [PaimonTableRef(wh, "db", "dst", branch="fix", snapshot_id=snapshot + 100)])


def test_http_end_to_end_streaming_run(tmp_path):
    wh = str(tmp_path / "wh")
    with LineageReceiver(api_key=API_KEY) as receiver:
        emitter = PaimonLineageEmitter.from_conf(http_conf(receiver.url, **{KEY_API_KEY: API_KEY}))
        assert emitter.enabled and emitter.asynchronous
        run = emitter.new_run("dag.task", streaming=True, parent_conf=PARENT)
        sources, sinks = refs(wh, 1)
        assert emitter.emit(run.start(inputs=sources, outputs=sinks))
        for batch in range(3):
            assert emitter.emit(run.batch(batch, *refs(wh, batch + 1)))
        assert emitter.emit(run.complete())
        assert emitter.close(10)
        events = receiver.wait_for(5)
        assert emitter.sent == 5 and emitter.failed == 0 and emitter.dropped == 0
        requests = receiver.requests

    assert [e["eventType"] for e in events] == ["START", "RUNNING", "RUNNING", "RUNNING",
                                                "COMPLETE"]
    for event in events:
        validate_event(event)
        assert event["job"]["namespace"] == "spark-test" and event["job"]["name"] == "dag.task"
        assert event["run"]["runId"] == run.run_id
        assert event["run"]["facets"]["parent"]["root"]["job"]["name"] == "dag"
    assert [e["run"]["facets"][PAIMON_BATCH_FACET_KEY]["batchId"] for e in events[1:4]] == [0, 1, 2]
    assert [e["inputs"][0]["facets"]["version"]["datasetVersion"] for e in events[1:4]] == [
        "1", "2", "3"]
    assert events[3]["outputs"][0]["name"] == "db.dst$branch_fix"
    # Marquez's API, with the key as a bearer token
    assert {r.path for r in requests} == {"/api/v1/lineage"}
    assert all(r.status == 201 for r in requests)
    assert all(r.headers["Authorization"] == f"Bearer {API_KEY}" for r in requests)
    assert all(r.headers["Content-Type"] == "application/json" for r in requests)


def test_synchronous_mode_and_custom_endpoint():
    with LineageReceiver() as receiver:
        emitter = PaimonLineageEmitter.from_conf(
            http_conf(receiver.url, **{KEY_ASYNC: "false", KEY_ENDPOINT: "api/v1/lineage"})
        )
        assert not emitter.asynchronous
        run = emitter.new_run("job", streaming=False)
        assert emitter.emit(run.start())
        assert len(receiver.events) == 1  # already there: sent in the caller's thread
        assert emitter.emit(run.complete())
        emitter.close()
        assert [e["eventType"] for e in receiver.events] == ["START", "COMPLETE"]
        for event in receiver.events:
            validate_event(event)


def test_receiver_down_never_raises_and_never_leaks_the_key(caplog, capfd):
    caplog.set_level(logging.DEBUG)
    receiver = LineageReceiver().start()
    url = receiver.url
    receiver.stop()  # nothing listens on that port now

    for asynchronous in ("true", "false"):
        emitter = PaimonLineageEmitter.from_conf(
            http_conf(url, **{KEY_API_KEY: API_KEY, KEY_ASYNC: asynchronous, KEY_TIMEOUT: "0.5"})
        )
        run = emitter.new_run("job", streaming=True)
        started = time.monotonic()
        emitter.emit(run.start())
        emitter.emit(run.batch(0, *refs("/wh", 1)))
        emitter.close(15)
        assert time.monotonic() - started < 15
        assert emitter.failed == 2 and emitter.sent == 0
        assert emitter.last_error and "Connection" in emitter.last_error
        for text in (repr(emitter), emitter.last_error):
            assert API_KEY not in text
    assert "could not be sent" in caplog.text
    out, err = capfd.readouterr()
    assert API_KEY not in caplog.text + out + err


def test_a_transport_url_with_a_punctuation_full_password_is_never_logged(caplog, capfd):
    """"OpenLineage event could not be sent to http http://ol:pw,x@..." showed the user info
    of the transport URL; a password holding '/', '?' or '#' was also cut by the HTTP
    client's parser and quoted in its error."""
    caplog.set_level(logging.DEBUG)
    down = LineageReceiver().start()
    closed_port = down.port
    down.stop()
    with LineageReceiver() as receiver:
        for password in passwords(3036, 8):
            for port in (receiver.port, closed_port):
                url = f"http://ol:{password}@127.0.0.1:{port}"
                emitter = PaimonLineageEmitter.from_conf(
                    http_conf(url, **{KEY_ASYNC: "false", KEY_TIMEOUT: "0.5"}))
                emitter.emit(emitter.new_run("job", streaming=False).start())
                emitter.close(5)
                # sent, failed, or off: a URL the client cannot parse creates no transport
                assert emitter.sent + emitter.failed == 1 or "transport could not be created" in caplog.text
                texts = [caplog.text, repr(emitter), emitter.last_error or ""]
                assert shown(" ".join(texts), [password]) == [], texts
        assert shown(json.dumps(receiver.events), passwords(3036, 8)) == []
    assert f"could not be sent to http http://127.0.0.1:{closed_port}/api/v1/lineage" in caplog.text
    out, err = capfd.readouterr()
    assert shown(out + err, passwords(3036, 8)) == []


def test_server_errors_and_rejections_are_counted_not_raised(caplog):
    with LineageReceiver(status=503) as receiver:
        emitter = PaimonLineageEmitter.from_conf(http_conf(receiver.url, **{KEY_ASYNC: "false"}))
        assert emitter.emit(emitter.new_run("job", streaming=False).start()) is False
        assert emitter.failed == 1
        # the transport retries a 503 a bounded number of times
        assert 1 < len(receiver.requests) <= 4
        receiver.status = 201
        assert emitter.emit(emitter.new_run("job", streaming=False).start()) is True
        emitter.close()
    with LineageReceiver(api_key="right") as receiver:
        emitter = PaimonLineageEmitter.from_conf(
            http_conf(receiver.url, **{KEY_API_KEY: "wrong", KEY_ASYNC: "false"}))
        assert emitter.emit(emitter.new_run("job", streaming=False).start()) is False
        assert "401" in emitter.last_error and receiver.events == []
        emitter.close()


def test_slow_receiver_does_not_stall_the_caller():
    with LineageReceiver(delay=0.5) as receiver:
        emitter = PaimonLineageEmitter.from_conf(http_conf(receiver.url))
        run = emitter.new_run("job", streaming=True)
        started = time.monotonic()
        for batch in range(4):
            emitter.emit(run.batch(batch, *refs("/wh", batch + 1)))
        assert time.monotonic() - started < 0.3  # four events queued, none waited for
        assert emitter.flush(10)
        assert [e["run"]["facets"][PAIMON_BATCH_FACET_KEY]["batchId"]
                for e in receiver.events] == [0, 1, 2, 3]  # order kept
        emitter.close()


def test_full_queue_drops_and_counts():
    with LineageReceiver(delay=0.3) as receiver:
        emitter = PaimonLineageEmitter.from_conf(http_conf(receiver.url))
        emitter._queue.maxsize = 2  # a tiny queue, to fill it quickly
        run = emitter.new_run("job", streaming=True)
        taken = [emitter.emit(run.batch(i)) for i in range(8)]
        assert taken.count(False) == emitter.dropped >= 1
        emitter.close(10)
        assert emitter.sent + emitter.dropped == 8
        assert len(receiver.events) == emitter.sent


def test_file_and_console_transports(tmp_path, caplog):
    path = tmp_path / "events.jsonl"
    emitter = PaimonLineageEmitter.from_conf({KEY_TYPE: "file", KEY_LOCATION: str(path)})
    run = emitter.new_run("job", streaming=False)
    emitter.emit(run.start())
    emitter.emit(run.complete())
    emitter.close()
    lines = path.read_text().splitlines()
    assert [validate_event(json.loads(line))["eventType"] for line in lines] == ["START",
                                                                                  "COMPLETE"]
    caplog.set_level(logging.INFO)
    emitter = PaimonLineageEmitter.from_conf({KEY_TYPE: "console", KEY_ASYNC: "false"})
    emitter.emit(emitter.new_run("job", streaming=False).start())
    emitter.close()
    # The record's own message, not caplog.text: once Airflow is imported in the same
    # process its JSON log formatter escapes the quotes in the rendered text.
    logged = [json.loads(r.getMessage()) for r in caplog.records if '"eventType"' in r.getMessage()]
    assert emitter.sent == 1 and [validate_event(e)["eventType"] for e in logged] == ["START"]


def test_off_unless_configured(monkeypatch, tmp_path):
    emitter = PaimonLineageEmitter.from_conf({})
    assert not emitter.enabled
    assert emitter.emit(emitter.new_run("job", streaming=True).start()) is False
    assert emitter.close() and emitter.flush()
    assert resolve_settings({"spark.app.name": "x"}, environ={}).enabled is False


def test_openlineage_usual_config_env_url(monkeypatch):
    with LineageReceiver(api_key=API_KEY) as receiver:
        monkeypatch.setenv("OPENLINEAGE_URL", receiver.url)
        monkeypatch.setenv("OPENLINEAGE_API_KEY", API_KEY)
        emitter = PaimonLineageEmitter.from_conf({})
        assert emitter.enabled
        emitter.emit(emitter.new_run("job", streaming=False).start())
        emitter.close(10)
        (event,) = receiver.wait_for(1)
        validate_event(event)
        assert API_KEY not in repr(emitter)


def test_openlineage_usual_config_yml_and_env_transport(monkeypatch, tmp_path):
    with LineageReceiver() as receiver:
        (tmp_path / "openlineage.yml").write_text(
            f"transport:\n  type: http\n  url: {receiver.url}\n  timeout: 2\n")
        settings = resolve_settings({})
        assert settings.enabled and settings.source == "openlineage-config"
        emitter = PaimonLineageEmitter.from_conf({})
        emitter.emit(emitter.new_run("job", streaming=False).start())
        emitter.close(10)
        assert len(receiver.wait_for(1)) == 1
    (tmp_path / "openlineage.yml").unlink()
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "console")
    assert resolve_settings({}).source == "openlineage-config"


def test_airflow_injected_transport_keys_are_used():
    """``[openlineage] spark_inject_transport_info`` puts these into spark-submit."""
    with LineageReceiver(api_key=API_KEY) as receiver:
        conf = {
            "spark.openlineage.transport.type": "http",
            "spark.openlineage.transport.url": receiver.url,
            "spark.openlineage.transport.endpoint": "/api/v1/lineage",
            "spark.openlineage.transport.timeoutInMillis": "3000",
            "spark.openlineage.transport.auth.type": "api_key",
            "spark.openlineage.transport.auth.apiKey": API_KEY,
            "spark.openlineage.namespace": "from-spark-conf",
            **PARENT,
        }
        settings = resolve_settings(conf)
        assert settings.source == "spark-openlineage-conf"
        assert settings.transport["timeout"] == 3.0
        assert API_KEY not in repr(settings)
        emitter = PaimonLineageEmitter.from_conf(conf)
        run = emitter.new_run("job", streaming=False, parent_conf=conf)
        emitter.emit(run.start())
        emitter.close(10)
        (event,) = receiver.wait_for(1)
        assert event["job"]["namespace"] == "from-spark-conf"
        assert event["run"]["facets"]["parent"]["run"]["runId"] == PARENT[
            "spark.openlineage.parentRunId"]


def test_precedence_and_switches(monkeypatch):
    ours = http_conf("http://127.0.0.1:9", **{"spark.openlineage.transport.type": "console"})
    assert resolve_settings(ours, environ={}).source == "paimon-conf"
    assert resolve_settings({**ours, KEY_ENABLED: "false"}, environ={}).enabled is False
    assert resolve_settings(ours, environ={"OPENLINEAGE_DISABLED": "true"}).enabled is False
    assert resolve_settings({}, environ={"OPENLINEAGE_URL": "http://x"}).enabled is True
    assert resolve_settings({}, environ={"OPENLINEAGE_NAMESPACE": "ns"}).job_namespace == "ns"
    assert resolve_settings({KEY_NAMESPACE: "a", "spark.openlineage.namespace": "b"},
                            environ={}).job_namespace == "a"


@pytest.mark.parametrize(
    "conf",
    [
        {KEY_TYPE: "kafka"},
        {KEY_TYPE: "http"},  # no url
        {KEY_TYPE: "file"},  # no location
        {KEY_TYPE: "http", KEY_URL: "not a url", KEY_API_KEY: API_KEY},
        {KEY_TYPE: "http", KEY_URL: "http://h", KEY_ASYNC: "maybe"},
    ],
)
def test_bad_config_disables_with_warning_or_raises_when_strict(conf, caplog):
    emitter = PaimonLineageEmitter.from_conf(conf)
    assert not emitter.enabled
    assert "OpenLineage is off" in caplog.text
    with pytest.raises(ValueError) as info:  # noqa: PT011 - the test is about what it hides
        PaimonLineageEmitter.from_conf(conf, strict=True)
    assert API_KEY not in str(info.value) + caplog.text


def test_airflow_injected_composite_transport_reaches_every_receiver():
    """Airflow injects ``transports.NAME.*`` keys when its own transport is composite."""
    with LineageReceiver() as first, LineageReceiver(api_key=API_KEY) as second:
        conf = {
            "spark.openlineage.transport.type": "composite",
            "spark.openlineage.transport.continueOnFailure": "True",
            "spark.openlineage.transport.transports.marquez.type": "http",
            "spark.openlineage.transport.transports.marquez.url": first.url,
            "spark.openlineage.transport.transports.marquez.endpoint": "api/v1/lineage",
            "spark.openlineage.transport.transports.marquez.timeoutInMillis": "2000",
            "spark.openlineage.transport.transports.other.type": "http",
            "spark.openlineage.transport.transports.other.url": second.url,
            "spark.openlineage.transport.transports.other.auth.type": "api_key",
            "spark.openlineage.transport.transports.other.auth.apiKey": API_KEY,
        }
        emitter = PaimonLineageEmitter.from_conf(conf)
        assert "composite" in repr(emitter) and API_KEY not in repr(emitter)
        emitter.emit(emitter.new_run("job", streaming=False).start())
        emitter.close(10)
        assert emitter.sent == 1
        assert validate_event(first.wait_for(1)[0]) == validate_event(second.wait_for(1)[0])


def test_gzip_compressed_events_are_received():
    with LineageReceiver() as receiver:
        conf = {"spark.openlineage.transport.type": "http",
                "spark.openlineage.transport.url": receiver.url,
                "spark.openlineage.transport.compression": "gzip"}
        emitter = PaimonLineageEmitter.from_conf(conf)
        emitter.emit(emitter.new_run("job", streaming=False).start())
        emitter.close(10)
        (event,) = receiver.wait_for(1)
        validate_event(event)
        assert receiver.requests[0].headers["Content-Encoding"] == "gzip"
