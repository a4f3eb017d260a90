"""PublishBranchesOperator / UndoPublishOperator and the ``publish`` job family.

Two tables (``db.events`` from the ``wh`` fixture and ``db.orders``) each have a branch
``fix`` holding rows main lacks. References are plain pypaimon reads of each table's
main and branch before anything runs. The job runs in-process (fault, then the rerun
that resumes the journal), through the operator with the launcher run by plain Python
(a killed try, then the retry), and once through a real spark-submit on local[2].
"""

from __future__ import annotations

import os
import re

import pytest
from test_airflow_replace_main_retry import submit_with_python  # noqa: F401 - a fixture

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.lineage import LineageStore
from airflow_provider_paimon.lineage.queries import upstream
from airflow_provider_paimon.operators.base import PaimonPreflightError
from airflow_provider_paimon.operators.branch import BranchCreateOperator
from airflow_provider_paimon.operators.preflight import (
    PaimonPreflightFailed,
    PaimonPreflightOperator,
)
from airflow_provider_paimon.operators.publish import PublishBranchesOperator, UndoPublishOperator
from airflow_provider_paimon.paimon.branch.publish_many import pending_publish
from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.spark.jobs import publish as publish_job

NAMES = ["db.events", "db.orders"]
PAIRS = [(n, "fix") for n in NAMES]


@pytest.fixture
def two(wh):
    """``db.orders``: main 2 snapshots, ``fix`` from tag t1 plus one snapshot; ``db.events`` from ``wh``."""
    wh.create_append("db.orders", partitioned=False)
    wh.append("db.orders", rows=2)
    wh.tag("db.orders", "t1")
    wh.branch("db.orders", "fix", "t1")
    wh.append("db.orders", rows=4, branch="fix")
    wh.append("db.orders", rows=6)
    old = {n: wh.read_ids(n) for n in NAMES}
    new = {n: wh.read_ids(n, "fix") for n in NAMES}
    assert all(old[n] != new[n] for n in NAMES)
    return wh, old, new


def mains(wh) -> dict[str, list[int]]:
    return {n: wh.read_ids(n) for n in NAMES}


def run_job(capsys, argv: list[str]) -> tuple[int, dict | None, str]:
    code = publish_job.main(argv)
    out, err = capsys.readouterr()
    return code, parse_result(out), err


# ------------------------------------------------------------------ job, in-process


def test_job_fault_then_rerun_resumes_and_undo_restores(two, capsys, monkeypatch):
    wh, old, new = two
    argv = ["publish", "--warehouse", wh.path, "--pair", "db.events", "fix", "--pair", "db.orders", "fix",
            "--backup-name", "before_fix"]
    monkeypatch.setenv("PAIMON_FAULT", "publish.table")  # after the first table's switch
    code, result, err = run_job(capsys, argv)
    assert code == 1 and result is None and "injected fault at publish.table" in err
    assert mains(wh) == {"db.events": new["db.events"], "db.orders": old["db.orders"]}
    assert pending_publish(wh.path)["backup"] == "before_fix"

    monkeypatch.delenv("PAIMON_FAULT")
    url = f"sqlite:///{wh.path}.lineage.sqlite"
    monkeypatch.setenv("PAIMON_LINEAGE_URL", url)  # the operators put it there, never in argv
    code, result, _ = run_job(capsys, [*argv, "--lineage-database", "lin"])  # the retry: same pairs
    assert code == 0 and result["command"] == "publish" and result["resumed"] is True
    with LineageStore.from_url(url, "lin") as store:
        for entry in result["tables"]:
            (node,) = upstream(store, "db", entry["table"].split(".")[1], entry["main_snapshot_id"])
            assert (node.branch, node.snapshot_id) == ("fix", entry["branch_snapshot_id"])
    assert [link["recorded"] for link in result["lineage"]] == [True, True]
    monkeypatch.delenv("PAIMON_LINEAGE_URL")
    assert result["backup_name"] == "before_fix" and [t["table"] for t in result["tables"]] == NAMES
    assert mains(wh) == new and pending_publish(wh.path) is None
    assert {n: wh.read_ids(n, "before_fix") for n in NAMES} == old

    code, again, _ = run_job(capsys, argv)  # a retry after it finished changes nothing
    assert code == 0 and again["unchanged"] is True and mains(wh) == new

    code, undone, _ = run_job(capsys, ["undo", "--warehouse", wh.path, "--table", "db.events",
                                       "--table", "db.orders", "--backup-name", "before_fix"])
    assert code == 0 and [t["restored"] for t in undone["tables"]] == [True, True]
    assert mains(wh) == old


def test_job_refuses_bad_arguments_and_changes_nothing(two, capsys):
    wh, _old, _new = two
    before = wh.files()
    code, _, err = run_job(capsys, ["publish", "--warehouse", wh.path, "--pair", "db.events", "nope"])
    assert code == 2 and "nope" in err
    code, _, err = run_job(capsys, ["publish", "--warehouse", wh.path])
    assert code == 2 and "--pair" in err
    code, _, err = run_job(capsys, ["undo", "--warehouse", wh.path])
    assert code == 2 and "no publish is pending" in err
    code, _, err = run_job(capsys, ["bogus"])
    assert code == 2 and "must be a command (publish, undo)" in err
    assert wh.files() == before


# ------------------------------------------------- operator, launcher run by Python


def test_operator_retry_after_a_killed_try_resumes(two, submit_with_python, monkeypatch):  # noqa: F811
    wh, old, new = two
    op = PublishBranchesOperator(task_id="publish", tables={"db.events": "fix", "db.orders": "fix"})
    monkeypatch.setenv("PAIMON_FAULT", "replace_main.switch")
    monkeypatch.setenv("PAIMON_FAULT_MODE", "kill")
    with pytest.raises(AssertionError):  # the job process SIGKILLed itself: the try fails
        op.execute({})
    # killed just after the first table's switch: a prefix of the list reads new
    assert mains(wh) == {"db.events": new["db.events"], "db.orders": old["db.orders"]}
    backup = pending_publish(wh.path)["backup"]
    assert backup.startswith("backup_main_")

    monkeypatch.delenv("PAIMON_FAULT")
    monkeypatch.delenv("PAIMON_FAULT_MODE")
    retry = PublishBranchesOperator(task_id="publish", tables={"db.events": "fix", "db.orders": "fix"})
    result = retry.execute({})
    argv = submit_with_python[-1]
    assert argv[argv.index("publish"):][:2] == ["publish", "publish"] and "--table" not in argv
    assert os.environ.get("PAIMON_FAULT") is None
    assert result["resumed"] is True and result["backup_name"] == backup
    assert [(t["table"], t["branch"]) for t in result["tables"]] == PAIRS
    assert mains(wh) == new and retry.last_result == result

    undo = UndoPublishOperator(task_id="undo", tables=NAMES, backup_name=backup)
    undone = undo.execute({})
    assert [t["restored"] for t in undone["tables"]] == [True, True] and mains(wh) == old
    assert undo.output_tables() == [(n, None) for n in NAMES]
    assert undo.input_tables() == [(n, backup) for n in NAMES]


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ([], "tables is empty"),
        ("db.events", "not a JSON list"),
        ([("db.events",)], "is not a (database.table, branch) pair"),
        ([("events", "fix")], "must be 'database.table'"),
        ([("db.events", "fix"), ("db.events", "fix2")], "db.events is listed twice"),
        ([("db.events", "main")], "reserved for the main branch"),
        ({"db.events": 3}, "must be a string"),
    ],
)
def test_bad_tables_fail_when_the_dag_is_parsed(tables, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        PublishBranchesOperator(task_id="p", tables=tables)


def test_bad_backup_name_and_table_argument_fail_when_parsed():
    with pytest.raises(ValueError, match="backup_name"):
        PublishBranchesOperator(task_id="p", tables=PAIRS, backup_name="a/b")
    with pytest.raises(ValueError, match="give tables"):
        PublishBranchesOperator(task_id="p", tables=PAIRS, table="db.events")
    with pytest.raises(ValueError, match="listed twice"):
        UndoPublishOperator(task_id="u", tables=["db.a", "db.a"])


def test_templated_tables_are_checked_once_rendered_and_nothing_is_submitted(two, no_submit):
    wh, _old, _new = two
    before = wh.files()
    op = PublishBranchesOperator(task_id="p", tables="{{ params.tables }}", backup_name="{{ params.bk }}")
    assert "tables" in op.template_fields and "table" not in op.template_fields
    for rendered, bk, message in [
        ('[["db.events", "fix"], ["db.orders", "nope"]]', "ok", "branch 'nope' does not exist on db.orders"),
        ('[["db.events", "fix"], ["db.missing", "fix"]]', "ok", "table db.missing does not exist"),
        ("db.events=fix", "ok", "not a JSON list"),
        ("[('db.events', 'fix'), ('db.orders', 'nope')]", "ok", "branch 'nope' does not exist"),
        ('{"db.events": "fix"}', "a/b", "branch name 'a/b' must not contain path separators"),
    ]:
        op.tables, op.backup_name = rendered, bk
        with pytest.raises(PaimonPreflightError, match="nothing was submitted") as err:
            op.execute({})
        assert message in str(err.value)
    undo = UndoPublishOperator(task_id="u")
    with pytest.raises(PaimonPreflightError, match="no publish is pending"):
        undo.execute({})
    assert no_submit == [] and wh.files() == before


def test_rendered_json_pairs_build_the_job_arguments(two):
    op = PublishBranchesOperator(task_id="p", tables="{{ x }}", backup_name=" bk ")
    op.tables = '{"db.events": "fix", "db.orders": "fix"}'
    assert op.preflight() is None
    args = op.command_args()
    assert args[:3] == ["publish", "--warehouse", two[0].path]
    assert args[args.index("--pair"):] == ["--pair", "db.events", "fix", "--pair", "db.orders", "fix",
                                           "--backup-name", "bk"]
    assert "s3cr3t" not in " ".join(args)  # the secret option travels in the environment
    op.lineage_url, op.lineage_database = "postgresql://u@db.example/lin", "lin"
    args = op.command_args()
    assert "db.example" not in " ".join(args) and args[-2:] == ["--lineage-database", "lin"]
    assert op.job_secret_env() == {"PAIMON_LINEAGE_URL": "postgresql://u@db.example/lin"}
    op.lineage_url = "postgresql://u:pw-Secret-9@db.example/lin"  # a password: a connection's job
    with pytest.raises(PaimonPreflightError, match="lineage_url carries credentials") as err:
        op.preflight()
    assert "pw-Secret-9" not in str(err.value)
    op.lineage_url = "not a url:pw@"
    with pytest.raises(PaimonPreflightError, match="lineage_url is not a SQLAlchemy URL"):
        op.preflight()
    assert op.output_tables() == [("db.events", None), ("db.orders", None)]


# ------------------------------------------------------------- real spark-submit


def test_publish_through_spark_submit(two):
    wh, old, new = two
    op = PublishBranchesOperator(task_id="publish", tables=PAIRS, backup_name="bk")
    result = op.execute({})
    assert result["backup_name"] == "bk" and result["unchanged"] is False
    assert [t["main_snapshot_id"] for t in result["tables"]] == [
        open_catalog(wh.path).get_table(n).snapshot_manager().get_latest_snapshot().id for n in NAMES
    ]
    assert mains(wh) == new and {n: wh.read_ids(n, "bk") for n in NAMES} == old
    # OpenLineage: each table's main at the snapshot the publish left, read from its branch
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [(d.name, d.facets["version"].datasetVersion) for d in lineage.outputs] == [
        (t["table"], str(t["main_snapshot_id"])) for t in result["tables"]
    ]
    assert [(d.name, d.facets["version"].datasetVersion) for d in lineage.inputs] == [
        (f"{t['table']}$branch_fix", str(t["branch_snapshot_id"])) for t in result["tables"]
    ]
    assert len(op.add_paimon_outlets(result)) == 2  # both tables' assets, so downstream DAGs run


def test_preflight_all_sees_a_branch_an_earlier_task_creates(two):
    """PaimonPreflightOperator renders the list param (its repr) and checks every pair."""
    from airflow.sdk import DAG

    wh, _old, _new = two

    def dag_with(tables):
        with DAG("publish_preflight", schedule=None, params={"tables": tables}) as dag:
            check = PaimonPreflightOperator(task_id="preflight")
            branch = BranchCreateOperator(task_id="branch", table="db.orders", branch="fix2", tag="t1")
            publish = PublishBranchesOperator(task_id="publish", tables="{{ params.tables }}")
            check >> branch >> publish
        return dag, check

    before = wh.files()
    dag, check = dag_with([["db.events", "fix"], ["db.orders", "fix2"]])
    result = check.execute({"params": dict(dag.params)})
    assert [(r["task_id"], r["preflight"]) for r in result] == [("branch", "submit"), ("publish", "submit")]
    dag, check = dag_with([["db.events", "fix"], ["db.orders", "fix3"]])
    with pytest.raises(PaimonPreflightFailed, match=re.escape("publish: branch 'fix3' does not exist on db.orders")):
        check.execute({"params": dict(dag.params)})
    assert wh.files() == before
