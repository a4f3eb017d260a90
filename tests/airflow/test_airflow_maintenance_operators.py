"""Maintenance and tag-lifecycle operators: preflight refusals, then real spark-submits.

The ``wh`` fixture (conftest): ``db.events`` with snapshots 1-3, tag t1 -> 1, branch
``fix`` from t1 (+1 snapshot), consumer ``reader`` at 2; ``paimon_default`` carries a
secret option that must reach neither XCom nor the log. Submits are few (each starts
a JVM): a run tag with a retention, its rename, the tag's expiry, one rollback. The
example DAG's test covers compaction, snapshot expiry and orphan cleanup.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import structlog
from support.airflow_connections import SECRET

from airflow_provider_paimon.operators.base import PaimonPreflightError
from airflow_provider_paimon.operators.maintenance import (
    ExpireSnapshotsOperator,
    ExpireTagsOperator,
    RemoveOrphanFilesOperator,
    RollbackOperator,
)
from airflow_provider_paimon.operators.tag import (
    TagCreateOperator,
    TagDagRunOperator,
    TagRenameOperator,
)

pytestmark = [pytest.mark.airflow]

RUN_DATE = datetime(2026, 11, 24, 9, 0, tzinfo=timezone.utc)


def _run_context(run_id: str = "scheduled__2026-11-24T09:00:00+00:00") -> dict:
    return {"run_id": run_id, "logical_date": RUN_DATE}


def _dag_op(cls, **kwargs):
    from airflow.sdk import DAG

    with DAG("nightly_etl", schedule=None):
        return cls(task_id="op", **kwargs)


def _execute(op, context: dict | None = None) -> tuple[dict, list[str]]:
    """Render with ``context`` and execute, as a worker does; the result and the logged lines."""
    context = context or {}
    op.render_template_fields(context)
    with structlog.testing.capture_logs() as logs:
        result = op.execute(context)
    lines = [str(e.get("event", "")) for e in logs]
    return result, lines


REFUSED = [
    (ExpireSnapshotsOperator, dict(branch="nope"), "branch 'nope' does not exist.*branches: fix"),
    (ExpireSnapshotsOperator, dict(retain_min="{{ '0' }}"), "retain_min must be an integer >= 1"),
    (ExpireSnapshotsOperator, dict(retain_max="{{ '2' }}", retain_min="{{ '5' }}"), "retain_min .5.* is larger than retain_max .2"),
    (ExpireSnapshotsOperator, dict(older_than="{{ '1 hour-ish' }}"), "older_than '1 hour-ish' is not a duration"),
    (ExpireSnapshotsOperator, dict(older_than="{{ '-5' }}"), "not a duration"),
    (ExpireSnapshotsOperator, dict(dry_run="{{ 'ture' }}"), "dry_run must be a boolean"),
    (ExpireSnapshotsOperator, dict(table="db.nope"), "table db.nope does not exist"),
    (RemoveOrphanFilesOperator, dict(older_than="{{ '10 min' }}"), "older_than 10 min is shorter than 1 h"),
    (RemoveOrphanFilesOperator, dict(dry_run="{{ 'maybe' }}"), "dry_run must be a boolean"),
    (RollbackOperator, dict(snapshot_id=42), "snapshot 42 does not exist.*latest snapshot: 3"),
    (RollbackOperator, dict(tag="t9"), "tag 't9' does not exist.*tags: t1"),
    (RollbackOperator, dict(tag="t1", branch="nope"), "branch 'nope' does not exist"),
    (RollbackOperator, dict(snapshot_id="{{ '' }}", tag="{{ '' }}"), "exactly one of snapshot_id or tag"),
    (RollbackOperator, dict(tag="t1", as_latest="{{ 'sure' }}"), "as_latest must be a boolean"),
    (ExpireTagsOperator, dict(branch="nope"), "branch 'nope' does not exist"),
    (TagCreateOperator, dict(tag="t2", time_retained="{{ '7 weeks' }}"), "time_retained '7 weeks' is not a duration"),
    (TagCreateOperator, dict(tag="t2", time_retained="{{ '0' }}"), "time_retained must be longer than zero"),
    (TagRenameOperator, dict(tag="t9", new_name="t2"), "tag 't9' does not exist"),
    (TagRenameOperator, dict(tag="t1", new_name="t1"), "cannot be renamed to itself"),
    (TagRenameOperator, dict(tag="t1", new_name="12"), "all digits"),
    (TagDagRunOperator, dict(snapshot_id=9), "snapshot 9 does not exist"),
    (TagDagRunOperator, dict(time_retained="{{ 'forever' }}"), "not a duration"),
]


@pytest.mark.parametrize(("cls", "kwargs", "message"), REFUSED, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(REFUSED)])
def test_preflight_refuses_before_submitting_and_changes_nothing(wh, no_submit, cls, kwargs, message):
    before = wh.files()
    op = _dag_op(cls, **{"table": "db.events", **kwargs})
    with pytest.raises(PaimonPreflightError, match=message) as err:
        _execute(op, _run_context())
    assert "nothing was submitted" in str(err.value) and SECRET not in str(err.value)
    assert no_submit == [] and wh.files() == before


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (ExpireSnapshotsOperator, dict(retain_min=0), "retain_min must be an integer >= 1"),
        (ExpireSnapshotsOperator, dict(retain_min=5, retain_max=2), "retain_min .5. must not be larger"),
        (ExpireSnapshotsOperator, dict(older_than="soon"), "not a duration"),
        (ExpireSnapshotsOperator, dict(dry_run="ture"), "dry_run must be a boolean"),
        (RemoveOrphanFilesOperator, dict(older_than=timedelta(minutes=5)), "shorter than 1 h"),
        (RollbackOperator, dict(), "exactly one of snapshot_id or tag"),
        (RollbackOperator, dict(snapshot_id=1, tag="t1"), "exactly one of snapshot_id or tag"),
        (RollbackOperator, dict(snapshot_id=0), "snapshot_id must be an integer >= 1"),
        (TagCreateOperator, dict(tag="t", time_retained=-3), "must not be negative"),
    ],
)
def test_bad_arguments_fail_when_the_dag_is_parsed(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(task_id="op", table="db.events", **kwargs)


def test_command_lines_mirror_the_maintenance_functions():
    expire = ExpireSnapshotsOperator(task_id="e", table="db.t", branch="fix", retain_max=50, retain_min="5",
                                     older_than=timedelta(hours=2), max_deletes=100, dry_run="true")
    assert expire.job_args() == ["--branch", "fix", "--retain-max", "50", "--retain-min", "5",
                                 "--max-deletes", "100", "--older-than", "7200.0", "--dry-run"]
    assert ExpireSnapshotsOperator(task_id="e", table="db.t", older_than="1 h").job_args() == ["--older-than", "3600.0"]
    assert ExpireSnapshotsOperator(task_id="e", table="db.t", older_than=90).job_args() == ["--older-than", "90.0"]
    assert RemoveOrphanFilesOperator(task_id="o", table="db.t").job_args() == []
    assert RemoveOrphanFilesOperator(task_id="o", table="db.t", older_than="2 d", dry_run=True).job_args() == [
        "--older-than", "172800.0", "--dry-run"]
    assert RollbackOperator(task_id="r", table="db.t", tag="t1", as_latest=True).job_args() == ["--tag", "t1", "--as-latest"]
    assert RollbackOperator(task_id="r", table="db.t", snapshot_id="7", branch="b").job_args() == [
        "--branch", "b", "--snapshot-id", "7"]
    assert ExpireTagsOperator(task_id="x", table="db.t", dry_run="False").job_args() == []
    assert TagCreateOperator(task_id="c", table="db.t", tag="a", time_retained="7 d").job_args() == [
        "--tag", "a", "--time-retained", "604800.0"]


def test_run_tag_with_retention_rename_and_expiry(wh, monkeypatch):
    """TagDagRunOperator (time_retained) -> rerun idempotent -> TagRenameOperator -> ExpireTagsOperator.

    Three spark-submits; after each, plain pypaimon reads the tags as Paimon Java's
    ``Tag`` shape and the table's rows are unchanged.
    """
    from pypaimon.tag.tag import Tag

    rows, fix_rows = wh.read_ids("db.events"), wh.read_ids("db.events", branch="fix")
    tag_op = _dag_op(TagDagRunOperator, table="db.events", snapshot_id=2, time_retained="{{ 3 }}")
    result, lines = _execute(tag_op, _run_context())
    name = "nightly_etl-20261124T090000Z"
    assert result["tag"] == name and result["snapshot_id"] == 2 and result["time_retained"] == "3 s"
    tag_file = f"{wh.path}/db.db/events/tag/tag-{name}"
    doc = json.loads(Path(tag_file).read_text())
    assert doc["id"] == 2 and doc["tagTimeRetained"] == 3.0
    created = datetime(*(doc["tagCreateTime"] + [0])[:6])
    assert abs((datetime.now() - created).total_seconds()) < 120  # local time, as Java's LocalDateTime.now()
    read = wh.table("db.events").tag_manager().get(name)  # plain pypaimon, Java's Tag shape
    assert isinstance(read, Tag) and read.id == 2 and read.tag_time_retained == timedelta(seconds=3)
    assert read.tag_create_time.replace(microsecond=0) == created

    # the same run again (a cleared task): nothing submitted, same tag
    from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook

    calls = []
    with monkeypatch.context() as patch:
        patch.setattr(PaimonSparkJobHook, "submit", lambda self, *a, **k: calls.append(self.job_args))
        again, _ = _execute(_dag_op(TagDagRunOperator, table="db.events", snapshot_id="{{ 2 }}", time_retained=3),
                            _run_context())
        assert again["existing"] is True and again["snapshot_id"] == 2 and again["tag"] == name
        latest_again, _ = _execute(_dag_op(TagDagRunOperator, table="db.events"), _run_context())
        assert latest_again["existing"] is True and latest_again["snapshot_id"] == 2
        with pytest.raises(PaimonPreflightError, match=rf"tag '{name}' already tags snapshot 2, not the requested snapshot 3"):
            _execute(_dag_op(TagDagRunOperator, table="db.events", snapshot_id=3), _run_context())
        # another run gets its own tag name (checked without submitting)
        other = _dag_op(TagDagRunOperator, table="db.events")
        other.render_template_fields({"run_id": "manual__2026-11-24T10:15:00.5+00:00", "logical_date": None})
        assert other.tag == "nightly_etl-manual__2026-11-24T10_15_00.5_00_00"
        assert calls == []

    renamed, lines = _execute(_dag_op(TagRenameOperator, table="db.events", tag=name, new_name="nightly-keep"))
    assert renamed["new_name"] == "nightly-keep" and renamed["snapshot_id"] == 2
    tags = wh.table("db.events").tag_manager()
    assert sorted(tags.list_tags()) == ["nightly-keep", "t1"]
    moved = json.loads(Path(f"{wh.path}/db.db/events/tag/tag-nightly-keep").read_text())
    assert moved == doc  # same snapshot, same creation time and retention

    time.sleep(max(0.0, (created + timedelta(seconds=4) - datetime.now()).total_seconds()))
    expired, lines = _execute(_dag_op(ExpireTagsOperator, table="db.events"))
    assert expired["expired_tags"] == ["nightly-keep"] and expired["kept_tags"] == {"t1": "no time_retained"}
    summary = [line for line in lines if line.startswith("Expire tags of db.events")]
    assert summary == [line for line in lines if "Expire tags" in line] and len(summary) == 1
    assert "expired 1 tags (nightly-keep)" in summary[0] and "\n" not in summary[0]
    assert json.loads(json.dumps(expired)) == expired  # JSON-safe XCom
    assert SECRET not in json.dumps(expired) and not any(SECRET in line for line in lines)
    assert wh.table("db.events").tag_manager().list_tags() == ["t1"]
    assert wh.read_ids("db.events") == rows and wh.read_ids("db.events", branch="fix") == fix_rows


def test_rollback_summary_says_whether_an_as_latest_rollback_committed():
    op = RollbackOperator(task_id="r", table="db.t", tag="t1", as_latest=True)
    base = {"branch": "main", "target_snapshot_id": 2, "tag": "t1", "as_latest": True, "duration_s": 0.1}
    first = op.summary({**base, "snapshot_id": 6, "already_rolled_back": False})
    retry = op.summary({**base, "snapshot_id": 6, "already_rolled_back": True})
    assert "committed snapshot 6" in first and "already" not in first
    assert "snapshot 6 already reads as it" in retry and "nothing committed" in retry


def test_rollback_destructive_keeps_branch_and_tag(wh):
    """Roll main back to snapshot 2 (one submit): snapshot 3 goes, the branch and tag t1 still read."""
    fix_rows = wh.read_ids("db.events", branch="fix")
    op = _dag_op(RollbackOperator, table="db.events", snapshot_id="{{ 2 }}")
    result, lines = _execute(op, _run_context())
    assert result["snapshot_id"] == 2 and result["removed_snapshot_ids"] == [3] and result["as_latest"] is False
    summary = [line for line in lines if line.startswith("Rollback of db.events")]
    assert len(summary) == 1 and "removed snapshots 3" in summary[0], lines
    assert SECRET not in json.dumps(result) and not any(SECRET in line for line in lines)
    table = wh.table("db.events")
    assert table.snapshot_manager().get_latest_snapshot().id == 2
    assert wh.read_ids("db.events") == [0, 0, 1, 1, 2, 2]  # snapshots 1 and 2: three rows each
    assert wh.read_ids("db.events", branch="fix") == fix_rows
    assert table.tag_manager().get("t1").id == 1


def test_preflight_all_plans_a_rename_and_the_run_tag(wh, no_submit):
    """A DAG renames t1, deletes the new name, tags its run: all checked up front, nothing submitted."""
    from airflow.sdk import DAG
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_paimon.operators.preflight import preflight_all
    from airflow_provider_paimon.operators.tag import TagDeleteOperator

    def build(restore: bool):
        with DAG("nightly_etl", schedule=None) as dag:
            rename = TagRenameOperator(task_id="rename", table="db.events", tag="t1", new_name="t1-old")
            drop = TagDeleteOperator(task_id="drop", table="db.events", tag="t1-old")
            run_tag = TagDagRunOperator(task_id="run_tag", table="db.events", time_retained="7 d")
            rename >> drop >> run_tag
            if restore:  # after the delete: the tag it names is gone by then
                run_tag >> RollbackOperator(task_id="restore", table="db.events", tag="t1-old", as_latest=True)
        return dag

    before = wh.files()
    checked = preflight_all(build(False).tasks, _run_context())
    assert [(c["task_id"], c["preflight"]) for c in checked] == [
        ("rename", "submit"), ("drop", "submit"), ("run_tag", "submit")]
    with pytest.raises(AirflowFailException, match=r"restore: tag 't1-old' does not exist on db.events \(tags: nightly_etl-20261124T090000Z\)"):
        preflight_all(build(True).tasks, _run_context())
    assert no_submit == [] and wh.files() == before
