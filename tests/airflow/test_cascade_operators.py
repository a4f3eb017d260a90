"""The cascade's building blocks without Spark: ``branch_at`` and the plan, branch and skip steps.

``branch_at`` is checked on a pypaimon warehouse (the ``wh`` fixture) against what a
plain pypaimon reader sees on the new branch, and for every refusal that nothing under
the warehouse changed. The operators run in a real ``dag.test()``: plan from a SQLite
lineage store, the mapped branch task, and a job of a table the plan leaves out (it
skips before any submit). The whole cascade with real Spark jobs is
tests/e2e/test_cascade_dag.py.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from airflow.sdk.exceptions import AirflowFailException
from support.dag_files import load_dag_file

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.operators.cascade import (
    CascadeJobOperator,
    CascadePlanOperator,
    check_job_order,
)
from airflow_provider_paimon.paimon.branch.branch_point import branch_at
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.errors import AlreadyExistsError, InvalidArgumentError
from airflow_provider_paimon.task_groups.cascade import cascade_correction


def main_table(wh, name="db.events"):
    return load_table(open_catalog(wh.path), name)


# ------------------------------------------------------------------ branch_at


def test_branch_at_tags_then_branches_and_a_rerun_changes_nothing(wh):
    result = branch_at(main_table(wh), "cfix", snapshot_id=2, tag="cfix_base")
    assert result == {"branch": "cfix", "tag": "cfix_base", "snapshot_id": 2, "source_branch": "main",
                      "created": {"tag": True, "branch": True}}
    assert wh.table("db.events").tag_manager().get("cfix_base").id == 2
    # the branch reads as main did at snapshot 2 (two appends of 3 rows)
    assert wh.read_ids("db.events", "cfix") == sorted(list(range(3)) * 2)
    before = wh.files()
    again = branch_at(main_table(wh), "cfix", snapshot_id=2, tag="cfix_base")
    assert again["created"] == {"tag": False, "branch": False}
    assert wh.files() == before


def test_branch_at_a_snapshot_of_another_branch_for_a_second_correction(wh):
    """After a publish a table's rows came from its correction branch: the next correction
    starts on that branch (the plan's branch_point_branch), tagged there."""
    branch_at(main_table(wh), "cfix", snapshot_id=2, tag="cfix_base")
    second = branch_at(main_table(wh), "cfix2", snapshot_id=2, tag="cfix2_base", source_branch="cfix")
    assert second["source_branch"] == "cfix" and second["created"] == {"tag": True, "branch": True}
    assert wh.table("db.events", "cfix").tag_manager().get("cfix2_base").id == 2
    assert wh.table("db.events").tag_manager().get("cfix2_base") is None  # main untouched
    assert wh.read_ids("db.events", "cfix2") == wh.read_ids("db.events", "cfix")
    assert branch_at(main_table(wh), "cfix2", snapshot_id=2, tag="cfix2_base",
                     source_branch="cfix")["created"] == {"tag": False, "branch": False}
    before = wh.files()
    with pytest.raises(InvalidArgumentError, match=r"branch 'gone' of table .* does not exist"):
        branch_at(main_table(wh), "cfix3", snapshot_id=2, tag="cfix3_base", source_branch="gone")
    assert wh.files() == before


def test_branch_at_after_a_crash_between_tag_and_branch_makes_the_branch(wh):
    wh.tag("db.events", "cfix_base", 2)  # what a try killed after the tag left
    result = branch_at(main_table(wh), "cfix", snapshot_id=2, tag="cfix_base")
    assert result["created"] == {"tag": False, "branch": True}
    assert wh.read_ids("db.events", "cfix") == sorted(list(range(3)) * 2)


def test_branch_at_none_makes_an_empty_branch(wh):
    result = branch_at(main_table(wh), "cfix", snapshot_id=None)
    assert result["created"] == {"tag": False, "branch": True}
    assert wh.table("db.events", "cfix").snapshot_manager().get_latest_snapshot() is None
    assert branch_at(main_table(wh), "cfix", snapshot_id=None)["created"]["branch"] is False
    wh.append("db.events", branch="cfix")  # a re-run job wrote its first snapshot: still ours
    assert branch_at(main_table(wh), "cfix", snapshot_id=None)["created"]["branch"] is False


@pytest.mark.parametrize(
    ("setup", "kwargs", "error", "message"),
    [
        (lambda wh: wh.tag("db.events", "cfix_base", 1), {"snapshot_id": 2, "tag": "cfix_base"},
         AlreadyExistsError, r"tag 'cfix_base' .* at snapshot 1, not at the branch point 2"),
        (lambda wh: wh.branch("db.events", "cfix", "t1"), {"snapshot_id": 2, "tag": "cfix_base"},
         AlreadyExistsError, r"branch 'cfix' .* was not made from tag 'cfix_base' at snapshot 2"),
        (lambda wh: wh.branch("db.events", "cfix", "t1"), {"snapshot_id": None},
         AlreadyExistsError, r"branch 'cfix' .* was not made empty"),
        (None, {"snapshot_id": 2}, InvalidArgumentError, r"needs a tag name"),
        (None, {"snapshot_id": None, "tag": "x"}, InvalidArgumentError, r"nothing to tag"),
        (None, {"snapshot_id": 0, "tag": "x"}, InvalidArgumentError, r"positive integer"),
        (None, {"snapshot_id": 99, "tag": "x"}, Exception, r"99"),
    ],
)
def test_branch_at_refuses_and_changes_nothing(wh, setup, kwargs, error, message):
    if setup is not None:
        setup(wh)
    before = wh.files()
    with pytest.raises(error, match=message):
        branch_at(main_table(wh), "cfix", **kwargs)
    assert wh.files() == before


# ------------------------------------------------------------------ plan


@pytest.fixture
def store_url(tmp_path):
    """raw@1 -> clean@1 -> mart@1; raw@2 -> clean@2 (mart does not read it); other tables untouched."""
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"

    def s(name, snap):
        db, tbl = name.split(".")
        return SnapshotRef(db, tbl, snap, "main")

    with LineageStore.from_url(url) as store:
        store.record_batch("p.ingest", 1, [], [s("ods.raw", 1)])
        store.record_batch("p.ingest", 2, [], [s("ods.raw", 2)])
        store.record_batch("p.clean", 1, [s("ods.raw", 1)], [s("dwd.clean", 1)])
        store.record_batch("p.clean", 2, [s("ods.raw", 2)], [s("dwd.clean", 2)])
        store.record_batch("p.mart", 1, [s("dwd.clean", 1)], [s("ads.mart", 1)])
    return url


def plan_op(url, jobs, **kw):
    return CascadePlanOperator(task_id="plan", table=kw.pop("table", "ods.raw"), snapshot_id=kw.pop("snapshot_id", 2),
                               correction=kw.pop("correction", "cfix"), jobs=jobs, lineage_url=url, **kw)


def test_plan_names_branch_points_redirects_and_publish_order(store_url):
    plan = plan_op(store_url, ["ods.raw", "dwd.clean", "ads.mart"]).build_plan()
    assert [(t["name"], t["branch_point"], t["tag"]) for t in plan["tables"]] == [
        ("ods.raw", 1, "cfix_base"), ("dwd.clean", 1, "cfix_base"),
    ]
    assert plan["redirects"] == {"ods.raw": "cfix", "dwd.clean": "cfix"}
    assert plan["publish"] == [["ods.raw", "cfix"], ["dwd.clean", "cfix"]]
    assert plan["tables"][1]["jobs"] == ["p.clean"]


@pytest.mark.parametrize(
    ("jobs", "kw", "message"),
    [
        (["ods.raw"], {}, r"corrects dwd.clean but the cascade has no job for it: add it to jobs="),
        (["dwd.clean", "ods.raw"], {}, r"dwd.clean reads ods.raw, but its job is declared before"),
        (["ods.raw", "dwd.clean"], {"snapshot_id": 7}, r"cannot plan the cascade: .*7"),
        (["ods.raw", "dwd.clean"], {"snapshot_id": "two"}, r"cannot plan the cascade"),
        (["ods.raw", "dwd.clean"], {"correction": "bad/name"}, r"cannot plan the cascade"),
        (["ods.raw", "dwd.clean"], {"table": "ods.raw$branch_b"}, r"pass the branch separately"),
    ],
)
def test_plan_refusals_say_what_to_fix_and_nothing_changed(store_url, jobs, kw, message):
    with pytest.raises(AirflowFailException, match=message) as err:
        plan_op(store_url, jobs, **kw).build_plan()
    assert "nothing was changed" in str(err.value)


def test_plan_operator_checks_its_arguments_when_the_dag_is_parsed(store_url):
    with pytest.raises(ValueError, match="lineage_conn_id or lineage_url"):
        CascadePlanOperator(task_id="p", table="ods.raw", snapshot_id=1, correction="c", jobs=["ods.raw"])
    with pytest.raises(ValueError, match="two jobs"):
        plan_op(store_url, ["ods.raw", "ODS.raw"])
    with pytest.raises(ValueError, match="depth"):
        plan_op(store_url, ["ods.raw"], depth=0)


def test_check_job_order_accepts_any_order_the_plan_allows():
    plan = {"order": ["a.r", "b.c", "c.m"], "tables": [
        {"name": "a.r", "upstreams": []}, {"name": "b.c", "upstreams": ["a.r"]}, {"name": "c.m", "upstreams": ["a.r"]},
    ]}
    check_job_order(plan, ["a.r", "c.m", "b.c"])  # siblings in either order
    check_job_order(plan, ["x.y", "a.r", "b.c", "c.m"])  # a job the plan does not need is fine
    with pytest.raises(ValueError, match=re.escape("c.m reads a.r")):
        check_job_order(plan, ["c.m", "a.r", "b.c"])


def test_factory_refuses_checks_for_tables_without_jobs():
    from airflow.sdk import DAG

    with DAG("cascade_factory_refusal", schedule=None, start_date=datetime(2026, 1, 1)):
        with pytest.raises(ValueError, match=re.escape("checks name tables without a job: x.y")):
            cascade_correction(table="a.b", snapshot_id=1, correction="c", lineage_url="sqlite://",
                               jobs={"a.b": {"application": "app.py"}}, checks={"x.y": ["SELECT 1"]})
        with pytest.raises(ValueError, match="at least the corrected job"):
            cascade_correction(table="a.b", snapshot_id=1, correction="c", lineage_url="sqlite://", jobs={})
    with pytest.raises(ValueError, match="come from the plan"):
        CascadeJobOperator(task_id="j", cascade_table="a.b", plan_task_id="p", application="app.py",
                           branch_redirects={"a.b": "x"})


def test_factory_passes_expectations_to_each_audit_and_the_gate_to_the_publish():
    from airflow.sdk import DAG

    from airflow_provider_paimon.spark.branch.expectations import expect_row

    rule = expect_row("positive", "amount >= 0", "drop")
    with DAG("cascade_factory_rules", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        cascade_correction(table="a.b", snapshot_id=1, correction="c", lineage_url="sqlite://",
                           jobs={"a.b": {"application": "app.py"}, "c.d": {"application": "app.py"}},
                           expectations={"c.d": [rule]}, approve=True, approval_timeout="2 h",
                           sensitive_columns=["card"])
        with pytest.raises(ValueError, match=re.escape("expectations name tables without a job: x.y")):
            cascade_correction(group_id="other", table="a.b", snapshot_id=1, correction="c",
                               lineage_url="sqlite://", jobs={"a.b": {"application": "app.py"}},
                               expectations={"x.y": [rule]})
    audit = dag.get_task("cascade.audit_c__d")
    assert audit.expectations == (rule,) and dag.get_task("cascade.audit_a__b").expectations == ()
    publish = dag.get_task("cascade.publish")
    assert publish.approve and publish.sensitive_columns == ["card"]
    assert {"cascade.audit_a__b", "cascade.audit_c__d"} <= publish.upstream_task_ids  # the evidence


def test_factory_waits_as_told():
    from airflow.sdk import DAG

    with DAG("cascade_factory_wait", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        cascade_correction(table="a.b", snapshot_id=1, correction="c", lineage_url="sqlite://",
                           jobs={"a.b": {"application": "app.py"}, "c.d": {"application": "app.py"}},
                           wait_poke_interval=30, wait_timeout=7200)
    wait = dag.get_task("cascade.wait_c__d")
    assert (wait.poke_interval, wait.timeout, wait.mode) == (30, 7200, "reschedule")
    assert "cascade.wait_a__b" not in dag.task_dict  # the root table's job waits for nothing


# ------------------------------------------------------------------ in a real dag.test()


BLOCKS_DAG = """
import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_paimon.operators.cascade import (
    CascadeBranchOperator, CascadeJobOperator, CascadePlanOperator,
)

with DAG("cascade_blocks", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    plan = CascadePlanOperator(
        task_id="plan", table="ods.raw", snapshot_id=2, correction="cfix",
        jobs=["ods.raw", "dwd.clean", "ads.mart"], lineage_url=os.environ["CASCADE_TEST_LINEAGE_URL"],
    )
    branch = CascadeBranchOperator.partial(
        task_id="branch", warehouse=os.environ["CASCADE_TEST_WAREHOUSE"],
    ).expand(entry=plan.output)
    skipped = CascadeJobOperator(
        task_id="run_mart", cascade_table="ads.mart", plan_task_id="plan",
        application="/nonexistent/app.py", trigger_rule="none_failed",
    )
    plan >> branch >> skipped
"""


def test_plan_branch_and_skip_in_a_dag_run(wh, store_url, airflow_db, monkeypatch):
    """plan -> branch (mapped over two tables) -> a job for a table the plan leaves out: skipped."""

    from airflow.utils.session import create_session

    def task_states(run):
        with create_session() as session:
            return {ti.task_id: ti.state for ti in run.get_task_instances(session=session)}

    for name in ("ods.raw", "dwd.clean"):
        wh.catalog.create_database(name.split(".")[0], True)
        wh.create_append(name, partitioned=False)
        wh.append(name)
        wh.append(name)
    monkeypatch.setenv("CASCADE_TEST_WAREHOUSE", wh.path)
    monkeypatch.setenv("CASCADE_TEST_LINEAGE_URL", store_url)
    module = load_dag_file("cascade_blocks", BLOCKS_DAG)

    run = module.dag.test()
    assert run.state == "success", task_states(run)
    assert task_states(run)["run_mart"] == "skipped"
    for name in ("ods.raw", "dwd.clean"):
        assert wh.table(name).tag_manager().get("cfix_base").id == 1
        assert wh.read_ids(name, "cfix") == [0, 1, 2]  # main as of snapshot 1
    before = wh.files()
    rerun = module.dag.test()  # the same plan again: tags and branches reused, nothing written
    assert rerun.state == "success" and wh.files() == before


def test_docs_sample_builds_the_task_group():
    """docs/cascade.md's sample, as written, in a DAG: the tasks, their order, the trigger rules."""
    import re
    from pathlib import Path

    from airflow.sdk import DAG

    page = (Path(__file__).resolve().parents[2] / "docs" / "cascade.md").read_text()
    (sample,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    with DAG("cascade_doc_sample", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        exec(compile(sample, "cascade.md", "exec"), {})
    ids = {t.task_id.removeprefix("cascade.") for t in dag.tasks}
    assert ids == {
        "plan", "branch", "run_ods__raw", "run_dwd__clean", "wait_dwd__clean", "run_ads__mart", "wait_ads__mart",
        "audit_ods__raw", "audit_dwd__clean", "audit_ads__mart", "publish",
    }
    task = dag.get_task
    assert task("cascade.run_dwd__clean").upstream_task_ids == {"cascade.run_ods__raw"}
    assert task("cascade.run_ads__mart").upstream_task_ids == {"cascade.wait_dwd__clean"}
    assert task("cascade.wait_ads__mart").job == "cascade_doc_sample.cascade.run_ads__mart"
    assert task("cascade.publish").upstream_task_ids == {f"cascade.audit_{t}" for t in ("ods__raw", "dwd__clean", "ads__mart")}
    assert task("cascade.audit_ads__mart").checks == {"no_negative_revenue": "SELECT * FROM {branch_rows} WHERE revenue_cents < 0"}
    assert str(task("cascade.publish").trigger_rule) in ("none_failed", "TriggerRule.NONE_FAILED")
