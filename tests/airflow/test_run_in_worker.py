"""``run_in="worker"``: metadata-only jobs run in a child of the worker's Python, no spark-submit.

The ``wh`` fixture (conftest): ``db.events`` with snapshots 1-3, tag t1 -> 1, branch
``fix``; ``paimon_default`` carries a secret option that must reach neither the child's
command line, nor XCom, nor the log. ``no_submit`` makes any spark-submit fail the test.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import structlog
from support.airflow_connections import SECRET

from airflow_provider_paimon.hooks.local_job import PaimonLocalJobHook
from airflow_provider_paimon.hooks.spark_job import PaimonJobInputError
from airflow_provider_paimon.operators.branch import BranchCreateOperator
from airflow_provider_paimon.operators.compaction import CompactionOperator
from airflow_provider_paimon.operators.maintenance import RollbackOperator
from airflow_provider_paimon.operators.tag import TagCreateOperator

pytestmark = [pytest.mark.airflow]


def _context() -> dict:
    ti = SimpleNamespace(dag_id="fix_dag", run_id="manual__1", task_id="op", try_number=2, map_index=-1)
    return {"ti": ti, "run_id": "manual__1"}


def _ids_at(wh, snapshot_id: int) -> list[int]:
    table = wh.table("db.events").copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    return sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()).column("id").to_pylist())


def _execute(op) -> tuple[dict, str]:
    context = _context()
    op.render_template_fields(context)
    with structlog.testing.capture_logs() as logs:
        result = op.execute(context)
    return result, "\n".join(json.dumps(e, default=str) for e in logs)


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (TagCreateOperator, dict(tag="t2", run_in="Worker"), r"run_in must be one of \('spark', 'worker'\)"),
        (TagCreateOperator, dict(tag="t2", run_in=""), "run_in must be one of"),
        (CompactionOperator, dict(run_in="worker"), "only for metadata-only jobs .*the compact job needs Spark"),
    ],
)
def test_run_in_is_checked_when_the_dag_is_parsed(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(task_id="op", table="db.events", **kwargs)


def test_metadata_jobs_run_in_the_worker_without_spark(wh, no_submit, monkeypatch):
    """Tag, branch and a rollback as latest run with no ``spark`` connection at all; the
    results are the jobs' own, the commit names the Airflow try, the secret stays hidden."""
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    rows = wh.read_ids("db.events")

    tag, tag_log = _execute(TagCreateOperator(task_id="op", table="db.events", tag="t2", snapshot_id=2,
                                              run_in="worker"))
    assert tag["tag"] == "t2" and tag["snapshot_id"] == 2
    assert wh.table("db.events").tag_manager().get("t2").id == 2  # plain pypaimon reads it

    branch, _ = _execute(BranchCreateOperator(task_id="op", table="db.events", branch="b2", tag="t2",
                                              run_in="worker"))
    assert branch["branch"] == "b2"
    assert wh.read_ids("db.events", branch="b2") == _ids_at(wh, 2)

    rolled, roll_log = _execute(RollbackOperator(task_id="op", table="db.events", snapshot_id=1,
                                                 as_latest=True, run_in="worker"))
    snapshot = wh.table("db.events").snapshot_manager().get_latest_snapshot()
    assert snapshot.id == 4 and rolled["snapshot_id"] == 4
    assert wh.read_ids("db.events") == _ids_at(wh, 1)
    assert _ids_at(wh, 3) == rows  # history kept
    properties = snapshot.properties or {}
    assert properties.get("airflow.dag_id") == "fix_dag" and properties.get("airflow.try_number") == "2"

    assert no_submit == []
    for text in (tag_log, roll_log, json.dumps([tag, branch, rolled])):
        assert SECRET not in text


def test_a_refusal_in_the_worker_is_an_input_error_and_no_secret_is_on_the_command_line(wh):
    hook = PaimonLocalJobHook(
        "tag",
        ["create", "--warehouse", wh.path, "--table", "db.events", "--tag", "t1", "--snapshot-id", "2"],
        secret_options={"s3.secret-key": SECRET},
    )
    assert SECRET not in " ".join(hook.command())
    with pytest.raises(PaimonJobInputError, match="t1") as err:
        hook.run()
    assert err.value.exit_code == 2 and err.value.family == "tag"
    assert wh.table("db.events").tag_manager().get("t1").id == 1  # nothing changed


def test_only_metadata_families_have_a_worker_hook():
    with pytest.raises(ValueError, match="job family 'compact' cannot run in the Airflow worker"):
        PaimonLocalJobHook("compact", [])
