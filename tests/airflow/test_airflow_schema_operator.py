"""AlterTableOperator: checks at parse time, renders templates, alters main or a branch in
the worker (no Spark), refuses with nothing written, XCom through dag.test().

The ``wh`` fixture (conftest): ``db.events`` (id BIGINT, dt STRING partition key, v
STRING) with snapshots 1-3 on main, branch ``fix`` from tag t1 with one more snapshot;
``paimon_default`` carries a secret option that must reach neither XCom nor the log.
"""

from __future__ import annotations

import json
import os

import pytest
import structlog
from airflow.sdk.exceptions import AirflowFailException
from support.airflow_connections import SECRET
from support.dag_files import load_dag_file

from airflow_provider_paimon.operators import AlterTableOperator

pytestmark = [pytest.mark.airflow]

ADD = [{"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "after": "id"}]


def _dag_op(**kwargs):
    from airflow.sdk import DAG

    with DAG("schema_fix", schedule=None):
        return AlterTableOperator(task_id="alter", **kwargs)


def _execute(op, context: dict | None = None) -> tuple[dict, list[str]]:
    context = context or {}
    op.render_template_fields(context)
    with structlog.testing.capture_logs() as logs:
        result = op.execute(context)
    return result, [str(e.get("event", "")) for e in logs]


def _rows(wh, branch=None) -> list[dict]:
    table = wh.table("db.events", branch)
    rb = table.new_read_builder()
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: (r["id"], r["dt"]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(changes=[]), "no changes given"),
        (dict(changes=[{"op": "add_colum", "name": "x"}]), "unknown op 'add_colum'"),
        (dict(changes=[{"op": "add_column", "name": "x", "type": "NUMBER"}]), "unknown type 'NUMBER'"),
        (dict(changes=[{"op": "drop_column"}]), "missing 'name'"),
        (dict(table="events", changes=ADD), "must be 'database.table'"),
    ],
)
def test_bad_arguments_fail_when_the_dag_is_parsed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AlterTableOperator(task_id="alter", **{"table": "db.events", **kwargs})


def test_templated_changes_are_checked_after_rendering():
    op = AlterTableOperator(task_id="alter", table="{{ params.t }}",
                            changes=[{"op": "add_column", "name": "{{ params.col }}", "type": "{{ params.type }}"}])
    assert op.changes[0]["name"] == "{{ params.col }}"
    assert set(AlterTableOperator.template_fields) >= {"table", "changes", "branch"}


def test_alter_main_with_templates(wh):
    before_fix = _rows(wh, "fix")
    op = _dag_op(table="{{ params.t }}", changes=[
        {"op": "add_column", "name": "{{ params.col }}", "type": "DECIMAL(10,2)", "after": "id"},
        {"op": "set_option", "key": "snapshot.num-retained.max", "value": "{{ 20 + 5 }}"},
    ])
    result, lines = _execute(op, {"params": {"t": "db.events", "col": "discount"}})
    assert result == {
        "table": "db.events", "branch": "main", "old_schema_id": 0, "new_schema_id": 1,
        "changes": [{"op": "add_column", "name": "discount", "after": "id", "type": "DECIMAL(10,2)"},
                    {"op": "set_option", "key": "snapshot.num-retained.max", "value": "25"}],
        "columns": ["id", "discount", "dt", "v"], "changed": True, "skipped": [],
    }
    logged = [line for line in lines if line.startswith("altered db.events on main")]
    assert logged == ["altered db.events on main: schema 0 -> 1, 2 change(s); columns: id, discount, dt, v"]
    assert SECRET not in json.dumps(result) and not any(SECRET in line for line in lines)
    main = _rows(wh)
    assert len(main) == 9 and all(r["discount"] is None for r in main)  # plain pypaimon reads null
    assert wh.table("db.events").table_schema.options["snapshot.num-retained.max"] == "25"
    assert _rows(wh, "fix") == before_fix and "discount" not in wh.table("db.events", "fix").field_names


def test_a_retried_task_with_if_not_exists_succeeds_writing_nothing(wh):
    changes = [{"op": "add_column", "name": "discount", "type": "DOUBLE", "if_not_exists": True},
               {"op": "drop_column", "name": "v", "if_exists": "{{ 'true' }}"}]
    first, _ = _execute(_dag_op(table="db.events", changes=changes))
    assert first["changed"] and first["skipped"] == [] and first["columns"] == ["id", "dt", "discount"]
    before = wh.files()
    again, lines = _execute(_dag_op(table="db.events", changes=changes))
    assert again["changed"] is False and len(again["skipped"]) == 2 and again["new_schema_id"] == 1
    assert any("already has the requested schema" in line for line in lines)
    assert wh.files() == before


def test_alter_a_branch_leaves_main_alone(wh):
    main_schema = sorted(os.listdir(f"{wh.path}/db.db/events/schema"))
    op = _dag_op(table="db.events", branch="{{ params.b }}",
                 changes='[{"op": "rename_column", "name": "v", "new_name": "value"}]')
    result, _ = _execute(op, {"params": {"b": "fix"}})
    assert result["branch"] == "fix" and result["new_schema_id"] == 1
    assert sorted(os.listdir(f"{wh.path}/db.db/events/branch/branch-fix/schema")) == ["schema-0", "schema-1"]
    assert sorted(os.listdir(f"{wh.path}/db.db/events/schema")) == main_schema
    assert wh.table("db.events", "fix").field_names == ["id", "dt", "value"]
    assert {r["value"] for r in _rows(wh, "fix")} == {"r0", "r1", "r2", "r3", "r4"}  # data kept
    assert wh.table("db.events").field_names == ["id", "dt", "v"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(changes=[{"op": "drop_column", "name": "dt"}]), "cannot drop 'dt', it is a partition key"),
        (dict(changes=[{"op": "update_column_type", "name": "id", "type": "{{ 'INT' }}"}]),
         "BIGINT -> INT for 'id' is a narrowing"),
        (dict(changes=[{"op": "set_option", "key": "bucket", "value": "4"}]), "option 'bucket' cannot change"),
        (dict(changes=ADD, branch="nope"), "branch 'nope' does not exist"),
        (dict(changes=ADD, table="db.nope"), "table db.nope does not exist"),
        (dict(changes="{{ 'not json' }}"), "not a JSON list"),
        (dict(changes=[{"op": "add_column", "name": "{{ '' }}", "type": "INT"}]), "'name' must be a non-empty"),
    ],
)
def test_refused_fails_without_retry_and_writes_nothing(wh, kwargs, message):
    before = wh.files()
    op = _dag_op(**{"table": "db.events", **kwargs})
    with pytest.raises(AirflowFailException, match=message) as err:
        _execute(op)
    assert SECRET not in str(err.value)
    assert wh.files() == before


SCHEMA_DAG = """
import json
import os

from airflow.sdk import DAG, task

from airflow_provider_paimon.operators import AlterTableOperator

with DAG("paimon_schema_e2e", schedule=None, params={"table": "db.events", "branch": "fix"}) as dag:
    alter = AlterTableOperator(
        task_id="alter",
        table="{{ params.table }}",
        branch="{{ params.branch }}",
        changes=[{"op": "add_column", "name": "discount", "type": "DECIMAL(10,2)", "after": "id"}],
    )

    @task
    def collect(result):
        with open(os.environ["PAIMON_SCHEMA_OUT"], "w") as f:
            json.dump(result, f)

    collect(alter.output)
"""


def test_dag_test_result_reaches_the_next_task(wh, airflow_db, tmp_path, monkeypatch):

    out = tmp_path / "xcom.json"
    monkeypatch.setenv("PAIMON_SCHEMA_OUT", str(out))
    dag = load_dag_file("paimon_schema_e2e", SCHEMA_DAG).dag
    run = dag.test()
    assert run.state == "success", run.state
    result = json.loads(out.read_text())
    assert result["branch"] == "fix" and result["old_schema_id"] == 0 and result["new_schema_id"] == 1
    assert result["columns"] == ["id", "discount", "dt", "v"]
    assert wh.table("db.events", "fix").field_names == ["id", "discount", "dt", "v"]
    assert wh.table("db.events").field_names == ["id", "dt", "v"]
    assert all(r["discount"] is None for r in _rows(wh, "fix"))


def test_schema_doc_dag_sample_builds():
    import re
    from pathlib import Path

    from airflow.sdk import DAG

    doc = Path(__file__).resolve().parents[2] / "docs" / "schema.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert len(blocks) == 2
    with DAG("doc_schema", schedule=None) as dag:
        exec(compile(blocks[1], str(doc), "exec"), {})
    add = dag.get_task("add_discount")
    assert isinstance(add, AlterTableOperator) and add.branch == "fix_{{ ds_nodash }}"
    assert add.upstream_task_ids == {"branch"} and dag.get_task("rerun_fixed").upstream_task_ids == {"add_discount"}
    assert dag.get_task("replace").upstream_task_ids == {"rerun_fixed"}


def test_preflight_checks_alter_tasks_against_the_planned_branch(wh):
    """PaimonPreflightOperator checks AlterTableOperator tasks too (nothing written): on a
    branch an earlier task creates (against main's schema), and a refused change fails it."""
    from airflow.sdk import DAG

    from airflow_provider_paimon.operators.branch import BranchCreateOperator
    from airflow_provider_paimon.operators.preflight import (
        PaimonPreflightFailed,
        PaimonPreflightOperator,
    )

    def dag_with(changes, branch="fix2"):
        with DAG("alter_preflight", schedule=None, params={"changes": changes}) as dag:
            check = PaimonPreflightOperator(task_id="preflight")
            create = BranchCreateOperator(task_id="branch", table="db.events", branch="fix2", tag="t1")
            alter = AlterTableOperator(task_id="alter", table="db.events", branch=branch,
                                       changes="{{ params.changes | tojson }}")
            check >> create >> alter
        return dag, check

    before = _rows(wh), _rows(wh, "fix")
    schema_dir = os.path.join(wh.path, "db.db", "events", "schema")
    files = sorted(os.listdir(schema_dir))
    dag, check = dag_with(ADD)
    result = check.execute({"params": dict(dag.params)})
    assert [(r["task_id"], r["preflight"]) for r in result] == [("branch", "submit"), ("alter", "submit")]
    for changes, branch, message in (
        ([{"op": "drop_column", "name": "dt"}], "fix2", "partition key"),
        ([{"op": "add_column", "name": "v", "type": "INT"}], "fix", "already exists"),
        (ADD, "nope", "branch 'nope' of db.events does not exist"),
    ):
        dag, check = dag_with(changes, branch)
        with pytest.raises(PaimonPreflightFailed, match=message):
            check.execute({"params": dict(dag.params)})
    assert (_rows(wh), _rows(wh, "fix")) == before and sorted(os.listdir(schema_dir)) == files
