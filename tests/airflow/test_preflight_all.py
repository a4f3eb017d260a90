"""PaimonPreflightOperator: every downstream Paimon task checked before any of them runs."""

from __future__ import annotations

import pytest

from airflow_provider_paimon.operators.branch import BranchCreateOperator, ReplaceMainBranchOperator
from airflow_provider_paimon.operators.preflight import (
    PaimonPreflightFailed,
    PaimonPreflightOperator,
)
from airflow_provider_paimon.operators.tag import TagCreateOperator


def _dag(tag: str, branch: str, if_exists: str = "fail"):
    from airflow.sdk import DAG

    with DAG("preflight_dag", schedule=None, params={"tag": tag, "branch": branch, "if_exists": if_exists}) as dag:
        check = PaimonPreflightOperator(task_id="preflight")
        tag_op = TagCreateOperator(task_id="tag", table="db.events", tag="{{ params.tag }}",
                                   if_exists="{{ params.if_exists }}")
        branch_op = BranchCreateOperator(task_id="branch", table="db.events", branch="{{ params.branch }}",
                                         tag="{{ params.tag }}", if_exists="{{ params.if_exists }}")
        replace = ReplaceMainBranchOperator(task_id="replace", table="db.events", branch="{{ params.branch }}")
        check >> tag_op >> branch_op >> replace
    return dag, check


def test_later_tasks_see_what_earlier_ones_will_create(wh):
    dag, check = _dag("t2", "b2")
    before = wh.files()
    result = check.execute({"params": dict(dag.params)})
    assert [(r["task_id"], r["preflight"]) for r in result] == [("tag", "submit"), ("branch", "submit"),
                                                                 ("replace", "submit")]
    assert wh.files() == before
    assert dag.get_task("branch").tag == "{{ params.tag }}"  # the DAG's operators are not rendered


def test_every_problem_is_reported_and_skip_lets_a_rerun_through(wh):
    dag, check = _dag("t1", "fix")  # both exist in the warehouse already
    with pytest.raises(PaimonPreflightFailed) as err:
        check.execute({"params": dict(dag.params)})
    text = str(err.value)
    assert text.startswith("2 Paimon task(s) would fail; nothing was changed")
    assert "tag: tag 't1' already exists" in text and "branch: branch 'fix' already exists" in text
    dag, check = _dag("t1", "fix", if_exists="skip")
    result = check.execute({"params": dict(dag.params)})
    assert [r["preflight"]["skipped"] for r in result[:2]] == [True, True]
    dag, check = _dag("t1", "fix", if_exists="maybe")
    with pytest.raises(PaimonPreflightFailed, match="if_exists must be one of fail, skip, got 'maybe'"):
        check.execute({"params": dict(dag.params)})
