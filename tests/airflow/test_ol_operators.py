"""OpenLineage from the Airflow side: each operator's datasets, events built by Airflow's
real OpenLineage provider (validated against the spec), the parent job info injected into
the Spark conf, and runtime outlets, end to end through ``dag.test()`` in a fresh process
(the provider registers its listener only when configured at import time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from olspec import LineageReceiver, validate_event
from support.airflow_connections import SECRET

from airflow_provider_paimon.assets import asset_uri
from airflow_provider_paimon.lineage.openlineage import paimon_dataset
from airflow_provider_paimon.operators.branch import (
    BranchCreateOperator,
    BranchDeleteOperator,
    BranchRenameOperator,
    MergeBranchOperator,
    ReplaceMainBranchOperator,
)
from airflow_provider_paimon.operators.compaction import CompactionOperator
from airflow_provider_paimon.operators.openlineage_mixin import table_changed
from airflow_provider_paimon.operators.spark_lineage_conf import (
    PARENT_KEYS,
    ROOT_KEYS,
    inject_openlineage_spark_conf,
)
from airflow_provider_paimon.operators.tag import TagCreateOperator, TagDeleteOperator

pytestmark = pytest.mark.airflow

T = "db.events"


def _ids(datasets):
    return [(d.namespace, d.name) for d in datasets]


def _expected(wh, branch=None):
    ds = paimon_dataset(wh.path, "db", "events", branch=branch)
    return (ds.namespace, ds.name)


@pytest.mark.parametrize(
    ("cls", "kwargs", "inputs", "outputs"),
    [
        (BranchCreateOperator, {"branch": "new", "tag": "t1"}, [None], ["new"]),
        (BranchDeleteOperator, {"branch": "fix"}, ["fix"], ["fix"]),
        (MergeBranchOperator, {"branch": "fix"}, ["fix"], [None]),
        (ReplaceMainBranchOperator, {"branch": "fix"}, ["fix"], [None]),
        (TagCreateOperator, {"tag": "t9"}, [None], [None]),
        (TagDeleteOperator, {"tag": "t1", "branch": "fix"}, ["fix"], ["fix"]),
        (CompactionOperator, {}, [None], [None]),
    ],
)
def test_start_facets_name_the_same_datasets_as_spark(wh, cls, kwargs, inputs, outputs):
    op = cls(task_id="t", table=T, **kwargs)
    lineage = op.get_openlineage_facets_on_start()
    assert _ids(lineage.inputs) == [_expected(wh, b) for b in inputs]
    assert _ids(lineage.outputs) == [_expected(wh, b) for b in outputs]
    assert lineage.inputs[0].namespace == "file://" + os.path.abspath(wh.path)
    for dataset in lineage.inputs:
        # the schema comes from the table through the hook, with Paimon type names
        assert [f.name for f in dataset.facets["schema"].fields] == ["id", "dt", "v"]
        assert dataset.facets["schema"].fields[0].type == "BIGINT"
        assert "version" in dataset.facets  # the snapshot the task starts from
    assert SECRET not in json.dumps([str(d) for d in lineage.inputs + lineage.outputs])


def test_complete_facets_carry_the_snapshot_versions(wh):
    compact = CompactionOperator(task_id="c", table=T)
    compact.pre_execute({})  # records the start snapshot (3)
    compact.last_result = {"committed": True, "snapshot_id": 4, "files_before": 3, "files_after": 1}
    lineage = compact.get_openlineage_facets_on_complete(None)
    assert lineage.inputs[0].facets["version"].datasetVersion == "3"
    assert lineage.outputs[0].facets["version"].datasetVersion == "4"

    merge = MergeBranchOperator(task_id="m", table=T, branch="fix")
    merge.last_result = {"branch": "fix", "main_snapshot_id": 2, "previous_main_snapshot_id": 3}
    lineage = merge.get_openlineage_facets_on_complete(None)
    assert _ids(lineage.outputs) == [_expected(wh)]
    assert lineage.outputs[0].facets["version"].datasetVersion == "2"
    assert lineage.inputs[0].facets["version"].datasetVersion == "2"  # the fix branch's latest

    create = BranchCreateOperator(task_id="b", table=T, branch="new", tag="t1")
    create.last_result = {"branch": "new", "tag": "t1", "snapshot_id": 1}
    lineage = create.get_openlineage_facets_on_complete(None)
    assert lineage.inputs[0].facets["version"].datasetVersion == "1"  # main at the tag
    facet = lineage.outputs[0].facets["lifecycleStateChange"]
    assert facet.lifecycleStateChange.value == "CREATE"

    failed = CompactionOperator(task_id="f", table=T).get_openlineage_facets_on_failure(None)
    assert "version" not in failed.outputs[0].facets


def test_outlets_added_only_when_a_table_changed(wh):
    op = CompactionOperator(task_id="c", table=T, branch="fix")
    assert op.add_paimon_outlets({"committed": False, "message": "nothing to compact"}) == []
    assert op.add_paimon_outlets({"dry_run": True}) == []
    assert op.outlets == []
    [added] = op.add_paimon_outlets({"committed": True, "snapshot_id": 3})
    assert added.uri == asset_uri(wh.path, T, "fix") == op.outlets[0].uri
    assert op.add_paimon_outlets({"committed": True, "snapshot_id": 4}) == []  # not duplicated
    assert not table_changed({"skipped": True}) and not table_changed({"unchanged": True})
    # tags are metadata and a deleted branch has nothing to read: no asset event
    assert TagCreateOperator(task_id="t", table=T, tag="t9").add_paimon_outlets({"snapshot_id": 3}) == []
    assert BranchDeleteOperator(task_id="d", table=T, branch="fix").add_paimon_outlets({"deleted": True}) == []


def test_rename_reads_the_old_branch_and_names_it_in_the_lifecycle_facet(wh):
    op = BranchRenameOperator(task_id="r", table=T, branch="fix", new_name="fix2")
    lineage = op.get_openlineage_facets_on_start()
    assert _ids(lineage.inputs) == [_expected(wh, "fix")]
    assert _ids(lineage.outputs) == [_expected(wh, "fix2")]
    facet = lineage.outputs[0].facets["lifecycleStateChange"]
    assert facet.lifecycleStateChange.value == "RENAME"
    assert (facet.previousIdentifier.namespace, facet.previousIdentifier.name) == _expected(wh, "fix")


def test_provider_adapter_builds_valid_events(wh):
    """Airflow's OpenLineage adapter turns our OperatorLineage into events; they validate."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    op = CompactionOperator(task_id="compact", table=T, branch="fix")
    with LineageReceiver() as receiver:
        client = OpenLineageClient(transport=HttpTransport(HttpConfig(url=receiver.url, timeout=5)))
        adapter = OpenLineageAdapter(client=client)
        run_id = str(uuid.uuid4())
        common = {"run_id": run_id, "job_name": "dag.compact", "job_description": None,
                  "nominal_start_time": None, "nominal_end_time": None, "owners": ["me"], "tags": []}
        adapter.start_task(event_time="2026-11-21T00:00:00+00:00",
                           task=op.get_openlineage_facets_on_start(), **common)
        op.last_result = {"committed": True, "snapshot_id": 3}
        adapter.complete_task(end_time="2026-11-21T00:01:00+00:00",
                              task=op.get_openlineage_facets_on_complete(None), **common)
        events = receiver.wait_for(2)
    for event in events:
        validate_event(event, allow_unknown_facets=True)
    start, complete = events
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    out = complete["outputs"][0]
    assert (out["namespace"], out["name"]) == _expected(wh, "fix")
    assert out["facets"]["version"]["datasetVersion"] == "3"


def test_conf_keys_the_user_set_are_kept():
    conf = {"spark.openlineage.parentJobName": "mine", "spark.executor.memory": "1g"}
    assert inject_openlineage_spark_conf(conf, context={}, transport=False) == conf
    assert inject_openlineage_spark_conf(conf, context={}, parent=False, transport=False) == conf


E2E_DAGS = '''
import json
import os

from airflow.sdk import DAG, task

from airflow_provider_paimon.assets import asset_for
from airflow_provider_paimon.operators.compaction import CompactionOperator

WAREHOUSE = {warehouse!r}


class _RecordedJob:
    """Stands in for spark-submit (covered by test_airflow_submit_e2e): the Airflow side is real."""

    def __init__(self, result):
        self.result = result

    def run(self):
        return self.result

    def on_kill(self):
        pass


class RecordingCompaction(CompactionOperator):
    def make_job_hook(self, context):
        hook = super().make_job_hook(context)
        with open(os.environ["PAIMON_OL_RECORD"], "w") as f:
            json.dump({{"conf": hook._conf, "command": hook.build_command()}}, f)
        return _RecordedJob({{"committed": True, "snapshot_id": 4, "files_before": 3,
                              "files_after": 1, "bins": 1, "duration_s": 0.1}})


with DAG("paimon_ol_consumer", schedule=[asset_for(WAREHOUSE, "db.events")],
         is_paused_upon_creation=False) as consumer:
    @task
    def react():
        return "ran"

    react()

with DAG("paimon_ol_producer", schedule=None) as producer:
    RecordingCompaction(task_id="compact_it", table="db.events")
'''


def test_dag_run_emits_valid_events_and_links_spark_to_the_task(wh, airflow_db, tmp_path):
    """Real Airflow + its OpenLineage provider, HTTP to a receiver: the task's events carry
    our datasets, the Spark conf carries the task's run id as parent, the run queues the
    DAG scheduled on the table."""
    folder = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    dag_file = folder / "paimon_ol_dags.py"
    dag_file.write_text(E2E_DAGS.format(warehouse=wh.path))
    record = tmp_path / "record.json"
    with LineageReceiver() as receiver:
        env = dict(
            os.environ,
            AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(
                {"type": "http", "url": receiver.url, "endpoint": "api/v1/lineage", "timeout": 5}
            ),
            AIRFLOW__OPENLINEAGE__NAMESPACE="airflow-test",
            PAIMON_OL_RECORD=str(record),
        )
        script = (
            "import runpy, sys; run = runpy.run_path(sys.argv[1])['producer'].test(); "
            # one write: the OpenLineage listener's forked senders log to the same stdout
            "sys.stdout.write(f'STATE {run.state}\\n'); sys.stdout.flush()"
        )
        proc = subprocess.run([sys.executable, "-c", script, str(dag_file)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert "STATE success" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
        # the task's START and COMPLETE (and the DAG run's events) were sent before the
        # process ended; the listener waits for its forked senders
        receiver.wait_for(2, timeout=15)
        events = receiver.events

    for event in events:
        validate_event(event, allow_unknown_facets=True)
    task_events = {e["eventType"]: e for e in events if e["job"]["name"] == "paimon_ol_producer.compact_it"}
    assert {"START", "COMPLETE"} <= set(task_events), [(e["job"]["name"], e["eventType"]) for e in events]
    complete = task_events["COMPLETE"]
    # the task's own parent facet names the DAG run: the Spark run's root must be the same
    dag_run = complete["run"]["facets"]["parent"]
    root_run_id = (dag_run.get("root") or dag_run)["run"]["runId"]
    assert complete["job"]["namespace"] == "airflow-test"
    assert [(d["namespace"], d["name"]) for d in complete["outputs"]] == [_expected(wh)]
    assert complete["outputs"][0]["facets"]["version"]["datasetVersion"] == "4"
    assert complete["inputs"][0]["facets"]["version"]["datasetVersion"] == "3"
    assert [f["name"] for f in complete["inputs"][0]["facets"]["schema"]["fields"]] == ["id", "dt", "v"]
    assert SECRET not in json.dumps(events)

    recorded = json.loads(record.read_text())
    conf = recorded["conf"]
    assert set(PARENT_KEYS) | set(ROOT_KEYS) <= set(conf)
    assert conf["spark.openlineage.parentJobNamespace"] == "airflow-test"
    assert conf["spark.openlineage.parentJobName"] == "paimon_ol_producer.compact_it"
    assert conf["spark.openlineage.parentRunId"] == complete["run"]["runId"]
    assert conf["spark.openlineage.rootParentJobName"] == "paimon_ol_producer"
    assert conf["spark.openlineage.rootParentRunId"] == root_run_id
    assert f"spark.openlineage.parentRunId={complete['run']['runId']}" in recorded["command"]

    # the operator's runtime outlet: an asset event, and the consumer DAG queued
    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        asset = session.scalar(select(AssetModel).where(AssetModel.uri == asset_uri(wh.path, T)))
        assert asset is not None
        sources = session.execute(
            select(AssetEvent.source_dag_id, AssetEvent.source_task_id).where(AssetEvent.asset_id == asset.id)
        ).all()
        assert ("paimon_ol_producer", "compact_it") in [tuple(s) for s in sources]
        queued = session.scalars(
            select(AssetDagRunQueue.target_dag_id).where(AssetDagRunQueue.asset_id == asset.id)
        ).all()
        assert "paimon_ol_consumer" in queued
