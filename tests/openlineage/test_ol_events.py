"""Every event we build validates against the official OpenLineage schemas, and our
custom facet against the schema file shipped in the package."""

from __future__ import annotations

import copy
import json
import sys
import uuid

import jsonschema
import pyarrow as pa
import pytest
from olspec import validate_event, validate_facet
from openlineage.client.serde import Serde

from airflow_provider_paimon.lineage.openlineage import (
    PAIMON_BATCH_FACET_KEY,
    PAIMON_BATCH_SCHEMA_ID,
    PAIMON_BATCH_SCHEMA_URL,
    PAIMON_RUN_SCHEMA_URL,
    PRODUCER,
    PaimonBatchRunFacet,
    PaimonJobRun,
    PaimonTableRef,
    PaimonTableSnapshot,
    paimon_batch_schema_path,
    paimon_dataset,
    parent_run_facet,
    schema_fields_from_arrow,
    schema_fields_from_paimon,
)

PARENT_RUN = "01890f5e-4c3b-7f3a-9b1e-1234567890ab"
ROOT_RUN = "01890f5e-0000-7000-8000-00000000abcd"
AIRFLOW_CONF = {
    "spark.openlineage.parentJobNamespace": "airflow-prod",
    "spark.openlineage.parentJobName": "correct_orders.run_fix",
    "spark.openlineage.parentRunId": PARENT_RUN,
    "spark.openlineage.rootParentJobNamespace": "airflow-prod",
    "spark.openlineage.rootParentJobName": "correct_orders",
    "spark.openlineage.rootParentRunId": ROOT_RUN,
    "spark.app.name": "correct_orders.run_fix",
}
ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("ts", pa.timestamp("us")),
        pa.field("customer", pa.struct([("name", pa.string()), ("tags", pa.list_(pa.string()))])),
        pa.field("attrs", pa.map_(pa.string(), pa.int32())),
    ]
)


def to_dict(obj) -> dict:
    return json.loads(Serde.to_json(obj))


@pytest.fixture
def refs(tmp_path):
    wh = str(tmp_path / "wh")
    src = PaimonTableRef(wh, "sales", "orders", snapshot_id=12, schema_fields=ARROW_SCHEMA,
                         stats={"row_count": 10_000, "file_count": 3, "size": 123_456})
    dst = PaimonTableRef(wh + "/", "sales", "orders_clean", branch="fix", snapshot_id=5,
                         schema_fields=ARROW_SCHEMA, stats={"rowCount": 9_990})
    return wh, src, dst


@pytest.mark.parametrize("streaming", [True, False])
def test_whole_life_of_a_run_validates(refs, streaming):
    wh, src, dst = refs
    run = PaimonJobRun("correct_orders.run_fix", job_namespace="spark-prod", streaming=streaming,
                       parent_conf=AIRFLOW_CONF, engine_version="4.3.0")
    events = [
        run.start(inputs=[src], outputs=[dst]),
        run.batch(0, sources=[src], sinks=[dst]),
        run.batch(1, sources=[src], sinks=[PaimonTableRef(wh, "sales", "orders_clean", "fix")]),
        run.complete(inputs=[src], outputs=[dst]),
        run.fail(RuntimeError("commit conflict on sales.orders_clean")),
        run.fail("plain message"),
        run.abort(),
    ]
    seen = [validate_event(event) for event in events]
    assert [e["eventType"] for e in seen] == [
        "START", "RUNNING", "RUNNING", "COMPLETE", "FAIL", "FAIL", "ABORT"
    ]
    assert {e["run"]["runId"] for e in seen} == {run.run_id}
    for event in seen:
        job_type = event["job"]["facets"]["jobType"]
        assert job_type["integration"] == "SPARK"
        assert job_type["jobType"] == "JOB"
        assert job_type["processingType"] == ("STREAMING" if streaming else "BATCH")
        assert event["job"] == {**event["job"], "namespace": "spark-prod",
                                "name": "correct_orders.run_fix"}
        assert event["producer"] == PRODUCER
        assert event["run"]["facets"]["processing_engine"]["version"] == "4.3.0"


def test_batch_event_carries_datasets_and_our_facet(refs):
    wh, src, dst = refs
    run = PaimonJobRun("job", streaming=True)
    event = validate_event(run.batch(7, sources=[src], sinks=[dst]))
    assert event["eventType"] == "RUNNING"

    (inp,) = event["inputs"]
    assert inp["namespace"] == f"file://{wh}" and inp["name"] == "sales.orders"
    assert inp["facets"]["version"]["datasetVersion"] == "12"
    assert inp["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "file", "name": f"{wh}/sales.db/orders", "type": "LOCATION"}
    ]
    assert inp["facets"]["catalog"]["framework"] == "paimon"
    assert inp["inputFacets"]["inputStatistics"] == {
        **inp["inputFacets"]["inputStatistics"], "rowCount": 10_000, "fileCount": 3, "size": 123_456
    }
    (out,) = event["outputs"]
    assert out["namespace"] == f"file://{wh}"  # trailing slash folded
    assert out["name"] == "sales.orders_clean$branch_fix"
    assert out["facets"]["version"]["datasetVersion"] == "5"
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 9_990
    assert "outputStatistics" not in out["facets"]

    facet = event["run"]["facets"][PAIMON_BATCH_FACET_KEY]
    assert facet["_schemaURL"] == PAIMON_BATCH_SCHEMA_URL
    assert facet["batchId"] == 7
    assert facet["sources"] == [{"namespace": f"file://{wh}", "name": "sales.orders",
                                 "database": "sales", "table": "orders", "branch": "main",
                                 "snapshotId": 12}]
    assert facet["sinks"] == [{"namespace": f"file://{wh}", "name": "sales.orders_clean$branch_fix",
                               "database": "sales", "table": "orders_clean", "branch": "fix",
                               "snapshotId": 5}]


def test_schema_facet_has_paimon_types_and_nested_fields():
    fields = to_dict(schema_fields_from_arrow(ARROW_SCHEMA)[0])
    assert fields == {"name": "id", "type": "BIGINT NOT NULL", "ordinal_position": 1}
    by_name = {f.name: to_dict(f) for f in schema_fields_from_arrow(ARROW_SCHEMA)}
    assert by_name["amount"]["type"] == "DECIMAL(10, 2)"
    assert by_name["ts"]["type"] == "TIMESTAMP(6)"
    customer = by_name["customer"]
    assert customer["type"].startswith("ROW<")
    assert [(f["name"], f["type"], f["ordinal_position"]) for f in customer["fields"]] == [
        ("name", "STRING", 1), ("tags", "ARRAY<STRING>", 2)
    ]
    assert by_name["attrs"]["type"].startswith("MAP<")
    dataset = to_dict(paimon_dataset("/wh", "db", "t", schema_fields=ARROW_SCHEMA))
    validate_facet("schema", dataset["facets"]["schema"])


def test_schema_from_pypaimon_fields_and_arrow_fallback():
    from pypaimon.schema.data_types import PyarrowFieldParser

    paimon_fields = PyarrowFieldParser.to_paimon_schema(ARROW_SCHEMA)
    assert [to_dict(f) for f in schema_fields_from_paimon(paimon_fields)] == [
        to_dict(f) for f in schema_fields_from_arrow(ARROW_SCHEMA)
    ]
    # a type pypaimon does not map still gets a name (Arrow's), never an error
    odd = pa.schema([pa.field("d", pa.duration("s")),
                     pa.field("s", pa.struct([("x", pa.int8())]),
                              metadata={b"description": b"a struct"})])
    fields = [to_dict(f) for f in schema_fields_from_arrow(odd)]
    assert fields[0]["name"] == "d" and fields[0]["type"]
    assert fields[1]["fields"][0]["name"] == "x"


def test_dataset_kinds_and_minimal_dataset():
    inp = to_dict(paimon_dataset("s3://bucket/wh/", "db", "t"))
    assert inp["namespace"] == "s3://bucket/wh" and inp["name"] == "db.t"
    assert "version" not in inp["facets"] and "schema" not in inp["facets"]
    assert "inputFacets" not in inp
    assert inp["facets"]["symlinks"]["identifiers"][0] == {
        "namespace": "s3://bucket", "name": "wh/db.db/t", "type": "LOCATION"
    }
    out = to_dict(paimon_dataset("/wh", "db", "t", kind="output", stats={"rows": 3},
                                 table_path="/elsewhere/t"))
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 3
    assert out["facets"]["symlinks"]["identifiers"][0]["name"] == "/elsewhere/t"
    with pytest.raises(ValueError, match="kind must be 'input' or 'output'"):
        paimon_dataset("/wh", "db", "t", kind="sideways")
    with pytest.raises(TypeError):
        paimon_dataset("/wh", "db", "t", schema_fields=[1, 2])


def test_parent_facet_from_airflow_conf_has_root():
    facet = to_dict(parent_run_facet(AIRFLOW_CONF))
    assert facet["run"]["runId"] == PARENT_RUN
    assert facet["job"] == {"namespace": "airflow-prod", "name": "correct_orders.run_fix",
                            **{k: v for k, v in facet["job"].items() if k == "facets"}}
    assert facet["root"]["run"]["runId"] == ROOT_RUN
    assert facet["root"]["job"]["name"] == "correct_orders"
    validate_facet("parent", facet)


def test_parent_without_root_keys_is_its_own_root():
    conf = {k: v for k, v in AIRFLOW_CONF.items() if "rootParent" not in k}
    facet = to_dict(parent_run_facet(conf))
    assert facet["root"]["run"]["runId"] == PARENT_RUN
    assert facet["root"]["job"]["name"] == "correct_orders.run_fix"
    validate_facet("parent", facet)


def test_invalid_or_missing_parent_gives_no_facet(caplog):
    assert parent_run_facet({}) is None
    assert parent_run_facet(None) is None
    bad = {**AIRFLOW_CONF, "spark.openlineage.parentRunId": "not-a-uuid"}
    assert parent_run_facet(bad) is None
    assert "no parent facet" in caplog.text
    run = PaimonJobRun("job", streaming=False, parent_conf=bad)
    event = validate_event(run.start())
    assert "parent" not in event["run"]["facets"]
    # a bad root alone falls back to the parent as root
    facet = to_dict(parent_run_facet({**AIRFLOW_CONF, "spark.openlineage.rootParentRunId": "x"}))
    assert facet["root"]["run"]["runId"] == PARENT_RUN


def test_fail_event_error_facet():
    run = PaimonJobRun("job", streaming=False)
    try:
        raise ValueError("sink schema does not match the stream")
    except ValueError as err:
        event = validate_event(run.fail(err))
    facet = event["run"]["facets"]["errorMessage"]
    assert facet["message"] == "ValueError: sink schema does not match the stream"
    assert facet["programmingLanguage"] == "PYTHON"
    assert "Traceback" in facet["stackTrace"] and "test_fail_event_error_facet" in facet["stackTrace"]


def test_custom_facet_schema_ships_in_package_and_is_strict():
    path = paimon_batch_schema_path()
    document = json.loads(path.read_text())
    assert document["$id"] == PAIMON_BATCH_SCHEMA_ID
    assert PAIMON_BATCH_SCHEMA_URL.startswith(PAIMON_BATCH_SCHEMA_ID + "#/$defs/")
    assert path.parent.name == "facets" and path.parent.parent.name == "lineage"

    facet = to_dict(PaimonBatchRunFacet(
        batchId=0, sources=[PaimonTableSnapshot.of("/wh", "db", "src", None, 1)]))
    assert facet["_producer"] == PRODUCER
    validate_facet(PAIMON_BATCH_FACET_KEY, facet)

    for broken in (
        {**facet, "batchId": -1},
        {**facet, "batchId": "7"},
        {k: v for k, v in facet.items() if k != "batchId"},
        {**facet, "sources": [{"database": "db", "table": "src"}]},  # no branch
        {**facet, "sources": [{**facet["sources"][0], "snapshotId": 0}]},
        {**facet, "sources": [{**facet["sources"][0], "surprise": 1}]},
        {k: v for k, v in facet.items() if k != "_producer"},  # base RunFacet required field
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate_facet(PAIMON_BATCH_FACET_KEY, broken)
    with pytest.raises(AssertionError, match="declares"):
        validate_facet("paimonBatch", facet)  # wrong key for this schema


def test_validator_rejects_broken_events_and_unknown_facets():
    """Negative controls: the validator is not a rubber stamp."""
    good = validate_event(PaimonJobRun("job", streaming=True).start())
    for mutate in (
        lambda e: e.pop("job"),
        lambda e: e.__setitem__("eventType", "PAUSED"),
        lambda e: e["run"].__setitem__("runId", "123"),
        lambda e: e.__setitem__("eventTime", "2026-11-21"),
        lambda e: e["job"]["facets"]["jobType"].pop("integration"),
        lambda e: e["job"]["facets"]["jobType"].pop("_producer"),
    ):
        event = copy.deepcopy(good)
        mutate(event)
        with pytest.raises(jsonschema.ValidationError):
            validate_event(event)
    event = copy.deepcopy(good)
    event["run"]["facets"]["mystery"] = {"_producer": PRODUCER,
                                         "_schemaURL": "https://example.com/x.json#/$defs/X"}
    with pytest.raises(AssertionError, match="not among the local schemas"):
        validate_event(event)
    validate_event(event, allow_unknown_facets=True)


def test_run_ids_and_arguments():
    run = PaimonJobRun("job", streaming=True, run_id=str(uuid.uuid4()).upper())
    assert run.run_id == run.run_id.lower()
    assert "job" in repr(run)
    with pytest.raises(ValueError, match="run_id must be a UUID"):
        PaimonJobRun("job", streaming=True, run_id="nope")
    with pytest.raises(ValueError, match="job_name must not be empty"):
        PaimonJobRun("", streaming=True)
    with pytest.raises(TypeError):
        run.start(inputs=[paimon_dataset("/wh", "db", "t", kind="output")])


def test_module_imports_neither_spark_nor_airflow():
    import subprocess

    code = (
        "import sys, airflow_provider_paimon.lineage.openlineage as m; "
        "bad = [n for n in sys.modules if n.split('.')[0] in ('pyspark', 'airflow')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_batch_job_completes_with_its_batch_facet(refs):
    """A batch job: START, then COMPLETE carrying the data lineage of its one batch."""
    _wh, src, dst = refs
    run = PaimonJobRun("nightly.compact", streaming=False)
    start = validate_event(run.start(inputs=[src], outputs=[dst]))
    done = validate_event(run.batch(41, sources=[src], sinks=[dst], state="COMPLETE"))
    assert (start["eventType"], done["eventType"]) == ("START", "COMPLETE")
    assert done["job"]["facets"]["jobType"]["processingType"] == "BATCH"
    assert done["run"]["facets"][PAIMON_BATCH_FACET_KEY]["batchId"] == 41
    assert done["outputs"][0]["facets"]["version"]["datasetVersion"] == "5"


def test_every_event_names_the_airflow_run_and_spark_app_like_the_snapshots(refs):
    """``paimon_run``: the snapshot properties' airflow.* and spark.app.id, on each event."""
    props = {"airflow.dag_id": "correct_orders", "airflow.run_id": "manual__2024-01-01",
             "airflow.task_id": "run_fix", "airflow.try_number": "2", "airflow.map_index": "0",
             "spark.app.id": "local-1700000000000"}
    run = PaimonJobRun("correct_orders.run_fix", streaming=True, parent_conf=AIRFLOW_CONF, run_properties=props)
    _, src, dst = refs
    events = [run.start(inputs=[src]), run.batch(0, [src], [dst]), run.complete()]
    for event in events:
        data = validate_event(to_dict(event))
        assert data["run"]["facets"]["paimon_run"] == {
            "_producer": PRODUCER,
            "_schemaURL": PAIMON_RUN_SCHEMA_URL,
            "dagId": "correct_orders", "runId": "manual__2024-01-01", "taskId": "run_fix",
            "tryNumber": 2, "mapIndex": 0, "sparkAppId": "local-1700000000000",
        }
        # and the standard parent facet names the Airflow task run ({dag_id}.{task_id})
        assert data["run"]["facets"]["parent"]["job"]["name"] == "correct_orders.run_fix"
    spark_only = PaimonJobRun("job", streaming=False, run_properties={"spark.app.id": "app-1"}).start()
    assert to_dict(spark_only)["run"]["facets"]["paimon_run"]["sparkAppId"] == "app-1"
    assert "dagId" not in to_dict(spark_only)["run"]["facets"]["paimon_run"]
    validate_event(to_dict(spark_only))
    assert "paimon_run" not in to_dict(PaimonJobRun("job", streaming=False).start())["run"]["facets"]
    broken = to_dict(events[0])["run"]["facets"]["paimon_run"]
    broken["tryNumber"] = "2"
    with pytest.raises(jsonschema.ValidationError):
        validate_facet("paimon_run", broken)
