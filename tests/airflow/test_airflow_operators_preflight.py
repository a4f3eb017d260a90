"""Operators fail fast on what metadata already shows: nothing submitted, nothing changed.

Also: the command lines they build, and that secrets stay off command lines and logs.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from support.airflow_connections import SECRET, set_connection

from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook
from airflow_provider_paimon.operators.base import PaimonPreflightError
from airflow_provider_paimon.operators.branch import (
    BranchCreateOperator,
    BranchDeleteOperator,
    BranchRenameOperator,
    MergeBranchOperator,
    ReplaceMainBranchOperator,
)
from airflow_provider_paimon.operators.compaction import CompactionOperator, summarize
from airflow_provider_paimon.operators.tag import TagCreateOperator, TagDeleteOperator

CASES = [
    (BranchCreateOperator, dict(table="db.nope", branch="b"), "table db.nope does not exist"),
    (BranchCreateOperator, dict(table="nodot", branch="b"), "must be 'database.table'"),
    (BranchCreateOperator, dict(table="db.events", branch="main"), "reserved"),
    (BranchCreateOperator, dict(table="db.events", branch="123"), "all digits"),
    (BranchCreateOperator, dict(table="db.events", branch="a/b"), "path separators"),
    (BranchCreateOperator, dict(table="db.events", branch="fix"), "already exists"),
    (BranchCreateOperator, dict(table="db.events", branch="b", tag="t9"), "tag 't9' does not exist.*tags: t1"),
    (BranchCreateOperator, dict(table="db.events", branch="b", snapshot_id="42"), "snapshot 42 does not exist.*latest snapshot: 3"),
    (BranchCreateOperator, dict(table="db.events", branch="b", snapshot_id="x"), "must be an integer"),
    (BranchCreateOperator, dict(table="db.events", branch="b", tag="t1", snapshot_id=1), "either tag or snapshot_id"),
    (BranchDeleteOperator, dict(table="db.events", branch="nope"), "branch 'nope' does not exist.*branches: fix"),
    (BranchDeleteOperator, dict(table="db.events", branch="main"), "reserved"),
    (BranchRenameOperator, dict(table="db.events", branch="nope", new_name="x"), "does not exist"),
    (BranchRenameOperator, dict(table="db.events", branch="fix", new_name="7"), "all digits"),
    (MergeBranchOperator, dict(table="db.events", branch="nope"), "does not exist"),
    (ReplaceMainBranchOperator, dict(table="db.events", branch="nope"), "does not exist"),
    (ReplaceMainBranchOperator, dict(table="db.events", branch="fix", backup_name="t1", backup_kind="tag"), "backup tag 't1' already exists"),
    (ReplaceMainBranchOperator, dict(table="db.events", branch="fix", backup_name="fix", backup_kind="branch"), "backup branch 'fix' already exists"),
    (TagCreateOperator, dict(table="db.events", tag="t1"), "tag 't1' already exists"),
    (TagCreateOperator, dict(table="db.events", tag="42"), "all digits"),
    (TagCreateOperator, dict(table="db.events", tag="t2", snapshot_id=9), "snapshot 9 does not exist"),
    (TagCreateOperator, dict(table="db.events", tag="t2", branch="nope"), "branch 'nope' does not exist"),
    (TagCreateOperator, dict(table="db.users", tag="t2"), "no snapshot to tag"),
    (TagDeleteOperator, dict(table="db.events", tag="t9"), "tag 't9' does not exist"),
    (TagDeleteOperator, dict(table="db.events", tag="t9", branch="fix"), "tag 't9' does not exist on db.events branch fix"),
    (CompactionOperator, dict(table="db.users", mode="major"), "must be 'full'.*or 'minor'"),
    (CompactionOperator, dict(table="db.events", mode="minor"), "mode is for primary-key tables"),
    (CompactionOperator, dict(table="db.nope"), "does not exist"),
    (CompactionOperator, dict(table="db.events", branch="nope"), "branch 'nope' does not exist"),
    (CompactionOperator, dict(table="db.events", partitions=[{"region": "eu"}]), "not partition keys.*region.*partition keys: dt"),
    (CompactionOperator, dict(table="db.events", options={"compaction.min.file-num": 0}), "at least 1"),
    (CompactionOperator, dict(table="db.events", options={"target-file-size": "-5 mb"}), "must not be negative"),
    (CompactionOperator, dict(table="db.events", max_retries=-1), "max_retries must be >= 0"),
    (CompactionOperator, dict(table="db.events", partitions=["dt=x"], where="dt > 'a'"), "either partitions or where"),
    # where is whitelisted: partition columns vs literals, nothing Spark SQL would run
    (CompactionOperator, dict(table="db.events", where="reflect('java.lang.System', 'exit', 1) IS NULL"),
     r"function calls are not allowed \(reflect"),
    (CompactionOperator, dict(table="db.events", where="dt = reflect('java.lang.System', 'exit', 1)"),
     r"function calls are not allowed \(reflect"),
    (CompactionOperator, dict(table="db.events", where="dt IN (SELECT dt FROM db.events)"), "subqueries are not allowed"),
    (CompactionOperator, dict(table="db.events", where="1=1; DROP TABLE db.events"), "semicolon"),
    (CompactionOperator, dict(table="db.events", where="v = 'r1'"), "'v' is not a partition column.*partition columns: dt"),
    (CompactionOperator, dict(table="db.events", where="dt = '2026-11-01' -- x"), "comments are not allowed"),
    (CompactionOperator, dict(table="db.events", where="(" * 2000 + "dt = '2026-11-01'" + ")" * 2000),
     "more than 50 deep"),
    # names: invisible characters, the name profile, look-alikes of existing names
    (BranchCreateOperator, dict(table="db.events", branch="m\u034fain"), "invisible character U\\+034F"),
    (BranchCreateOperator, dict(table="db.events", branch="fi\u034fx"), "invisible character U\\+034F"),
    (BranchCreateOperator, dict(table="db.events", branch="m\u1d00in"), "looks like 'main'"),
    (BranchCreateOperator, dict(table="db.events", branch="correção"), "default name profile does not allow"),
    (BranchCreateOperator, dict(table="db.events", branch="Fix"), "looks like the existing branch 'fix'"),
    (BranchRenameOperator, dict(table="db.events", branch="fix", new_name="mai\u0307n"), "looks like 'main'"),
    (ReplaceMainBranchOperator, dict(table="db.events", branch="fix", backup_name="FIX", backup_kind="branch"),
     "looks like the existing branch 'fix'"),
    (TagCreateOperator, dict(table="db.events", tag="T1"), "looks like the existing tag 't1'"),
    (TagCreateOperator, dict(table="db.events", tag="t\ufe0f"), "invisible character U\\+FE0F"),
    (TagDeleteOperator, dict(table="db.events", tag="MA\u0130N"), "U\\+0130 .* default name profile"),
    (CompactionOperator, dict(table="db.events", manifests_only=True, partitions=["dt=2026-11-01"]),
     "manifests_only compacts the whole manifest list"),
    (CompactionOperator, dict(table="db.events", manifests_only="yes", options={"target-file-size": "1 mb"}),
     r"manifests_only takes only manifest\.\* options, got target-file-size"),
    (CompactionOperator, dict(table="db.events", manifests_only="ture"), "manifests_only must be a boolean"),
    (CompactionOperator, dict(table="db.nope", manifests_only=True), "does not exist"),
]


@pytest.mark.parametrize(("cls", "kwargs", "message"), CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_fail_fast_submits_nothing_and_changes_nothing(wh, no_submit, cls, kwargs, message):
    before = wh.files()
    op = cls(task_id="t", **kwargs)
    with pytest.raises(PaimonPreflightError, match=message) as err:
        op.execute({})
    assert "nothing was submitted" in str(err.value)
    assert no_submit == []
    assert wh.files() == before


@pytest.mark.parametrize(
    ("partition", "message"),
    [
        ("day=2026-13-45", "value '2026-13-45' of partition column 'day' is not a valid DATE"),
        ({"day": "2026-11-03", "hr": "abc"}, "value 'abc' of partition column 'hr' is not a valid INT"),
    ],
)
def test_compaction_partition_values_are_parsed_by_type(wh, no_submit, partition, message):
    """A value its column cannot hold stops the task before spark-submit."""
    from pypaimon import Schema

    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("hr", pa.int32())])
    wh.catalog.create_table("db.daily", Schema.from_pyarrow_schema(schema, partition_keys=["day", "hr"]), False)
    before = wh.files()
    op = CompactionOperator(task_id="t", table="db.daily", partitions=[partition])
    with pytest.raises(PaimonPreflightError, match=message):
        op.execute({})
    assert no_submit == [] and wh.files() == before
    CompactionOperator(task_id="t", table="db.daily", partitions=["day=2026-11-03,hr=7"]).preflight()


def _dag_operator(cls, **kwargs):
    from airflow.sdk import DAG

    with DAG("paimon_dag", schedule=None):
        return cls(task_id="task", **kwargs)


def test_command_line_and_secrets(wh):
    import structlog

    op = _dag_operator(BranchCreateOperator, table="db.events", branch="b2", tag="t1", conf={"spark.executor.memory": "1g"})
    op.preflight()
    with structlog.testing.capture_logs() as logs:  # Airflow 3 hooks log through structlog
        hook = op.make_job_hook({})
        cmd = hook.build_command()
    logged = "\n".join(str(entry) for entry in logs)
    launcher = cmd.index(next(c for c in cmd if c.endswith("spark/jobs/launcher.py")))
    assert cmd[0] == "spark-submit"
    assert cmd[cmd.index("--master") + 1] == "local[2]"
    assert cmd[cmd.index("--name") + 1] == "paimon_dag.task"
    assert "spark.executor.memory=1g" in cmd
    assert cmd[cmd.index("--py-files") + 1].endswith(".zip")
    assert cmd[launcher + 1:] == [
        "branch", "create", "--warehouse", wh.path, "--table", "db.events", "--branch", "b2", "--tag", "t1",
    ]
    # no catalog option goes on the command line, secret or not: all reach the job
    # through the environment
    assert not any(SECRET in part for part in cmd) and "--catalog-option" not in cmd
    assert SECRET not in logged and "Spark-Submit cmd" in logged
    env = hook.job_environment()
    assert json.loads(env["PAIMON_CATALOG_OPTIONS_JSON"]) == {"s3.secret-key": SECRET, "metastore": "filesystem"}


def test_connection_password_stays_off_the_command_line(wh, monkeypatch):
    set_connection(
        monkeypatch,
        "paimon_jdbc",
        {"conn_type": "paimon", "host": wh.path, "login": "bob", "password": SECRET,
         "extra": {"metastore": "jdbc", "uri": "jdbc:sqlite:/tmp/x.db"}},
    )
    op = _dag_operator(MergeBranchOperator, table="db.events", branch="fix", paimon_conn_id="paimon_jdbc")
    hook = op.make_job_hook({})
    cmd = hook.build_command()
    assert not any(SECRET in part for part in cmd) and "--catalog-option" not in cmd
    assert json.loads(hook.job_environment()["PAIMON_CATALOG_OPTIONS_JSON"]) == {
        "jdbc.password": SECRET, "jdbc.user": "bob", "metastore": "jdbc", "uri": "jdbc:sqlite:/tmp/x.db"}


@pytest.mark.parametrize(
    ("cls", "kwargs", "expected"),
    [
        (BranchCreateOperator, dict(branch="b", snapshot_id="2"), ["--branch", "b", "--snapshot-id", "2"]),
        (BranchDeleteOperator, dict(branch="fix"), ["--branch", "fix"]),
        (BranchRenameOperator, dict(branch="fix", new_name="fix2"), ["--branch", "fix", "--new-name", "fix2"]),
        (MergeBranchOperator, dict(branch="fix"), ["--branch", "fix"]),
        (ReplaceMainBranchOperator, dict(branch="fix"), ["--branch", "fix", "--backup-kind", "branch"]),
        (ReplaceMainBranchOperator, dict(branch="fix", backup_name="old", backup_kind="branch"),
         ["--branch", "fix", "--backup-name", "old", "--backup-kind", "branch"]),
        (ReplaceMainBranchOperator, dict(branch="fix", backup=False), ["--branch", "fix", "--no-backup"]),
        (TagCreateOperator, dict(tag="t2", branch="fix", snapshot_id=2), ["--tag", "t2", "--branch", "fix", "--snapshot-id", "2"]),
        (TagDeleteOperator, dict(tag="t1"), ["--tag", "t1"]),
        (CompactionOperator, dict(branch="fix", partitions=[{"dt": "2026-11-01"}, "dt=2026-11-02"],
                                  options={"target-file-size": "64 mb"}, dry_run=True, max_retries=2),
         ["--branch", "fix", "--partition", "dt=2026-11-01", "--partition", "dt=2026-11-02",
          "--option", "target-file-size=64 mb", "--dry-run", "--max-retries", "2"]),
        (CompactionOperator, dict(where="dt > '2026'"), ["--where", "dt > '2026'"]),
        (CompactionOperator, dict(where="dt IN ('2026-11-01', '2026-11-02') AND NOT dt IS NULL"),
         ["--where", "dt IN ('2026-11-01', '2026-11-02') AND NOT dt IS NULL"]),
    ],
)
def test_job_arguments(wh, cls, kwargs, expected):
    op = cls(task_id="t", table="db.events", **kwargs)
    op.preflight()  # valid input passes the checks
    args = op.command_args()
    assert args[: len(args) - len(expected)][-2:] == ["--table", "db.events"]
    assert "--catalog-option" not in args  # catalog options travel in the environment
    assert args[len(args) - len(expected):] == expected
    if op.action:
        assert args[0] == op.action


def test_templated_fields_render(wh):
    from airflow.sdk import DAG

    with DAG("tpl", schedule=None, user_defined_macros={"suffix": "x"}) as dag:
        op = BranchCreateOperator(task_id="c", table="{{ params.table }}", branch="fix_{{ suffix }}",
                                  tag="{{ params.tag }}", params={"table": "db.events", "tag": "t1"})
    assert {"table", "branch", "tag", "snapshot_id"} <= set(op.template_fields)
    assert {"partitions", "where", "branch"} <= set(CompactionOperator.template_fields)
    op.render_template_fields({"params": op.params, "suffix": "x"}, jinja_env=dag.get_template_env())
    assert (op.table, op.branch, op.tag) == ("db.events", "fix_x", "t1")


def test_job_hook_refuses_cluster_mode_and_env_vars(wh):
    with pytest.raises(ValueError, match="client deploy mode"):
        PaimonSparkJobHook("branch", [], deploy_mode="cluster")
    with pytest.raises(ValueError, match="env_vars"):
        PaimonSparkJobHook("branch", [], env_vars={"A": "b"})


def test_result_and_error_lines_are_captured(wh):
    hook = PaimonSparkJobHook("branch", [])
    hook.capture_line("26/11/21 INFO noise\n")
    hook.capture_line('PAIMON_RESULT {"main_snapshot_id": 7, "backup": {"kind": "tag", "name": "b"}}\n')
    hook.capture_line("PAIMON_ERROR branch 'x' does not exist\n")
    assert hook.answer.result == {"main_snapshot_id": 7, "backup": {"kind": "tag", "name": "b"}}
    assert hook.answer.error == "branch 'x' does not exist"


def test_compaction_summary_is_readable():
    line = summarize("db.events", None, {
        "files_before": 120, "bytes_before": 12 * 1024 * 1024, "files_after": 3, "bytes_after": 11.5 * 1024 * 1024,
        "snapshot_id": 42, "committed": True, "duration_s": 14.23, "bins": 3, "message": "ok",
    })
    assert line == "Compaction of db.events: 120 files (12.0 MiB) -> 3 files (11.5 MiB), snapshot 42, 3 bins, took 14.2 s"
    idle = summarize("db.events", "fix", {"files_before": 2, "bytes_before": 10, "committed": False,
                                          "message": "nothing to compact", "duration_s": 0.5})
    assert "branch fix" in idle and "nothing committed (nothing to compact)" in idle
    expired = summarize("db.events", None, {
        "files_before": 4, "bytes_before": 40, "files_after": 1, "bytes_after": 40, "snapshot_id": 12,
        "committed": True, "duration_s": 1.0, "bins": 1, "expired": {"expired_snapshot_ids": [1, 2, 3]},
    })
    assert expired.endswith("snapshot 12, 1 bins, then expired snapshots 1-3, took 1.0 s")


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [(BranchCreateOperator, dict(branch="fix", tag="t1")), (TagCreateOperator, dict(tag="t1"))],
)
def test_if_exists_skip_succeeds_without_submitting(wh, no_submit, cls, kwargs):
    before = wh.files()
    result = cls(task_id="t", table="db.events", if_exists="skip", **kwargs).execute({})
    assert result["skipped"] is True and "already exists" in result["message"]
    assert no_submit == [] and wh.files() == before
    with pytest.raises(ValueError, match="if_exists"):
        cls(task_id="t2", table="db.events", if_exists="replace", **kwargs)


def test_warehouse_param_replaces_the_connection(wh, monkeypatch):
    """A rendered ``warehouse`` needs no ``paimon`` connection; blank means the connection."""
    monkeypatch.delenv("AIRFLOW_CONN_PAIMON_DEFAULT", raising=False)
    op = _dag_operator(BranchCreateOperator, table="db.events", branch="b3", warehouse=wh.path)
    assert "warehouse" in op.template_fields
    op.preflight()
    cmd = op.make_job_hook({}).build_command()
    launcher = cmd.index(next(c for c in cmd if c.endswith("spark/jobs/launcher.py")))
    assert cmd[launcher + 1:launcher + 7] == ["branch", "create", "--warehouse", wh.path, "--table", "db.events"]
    # no connection options leak in: the paimon_default connection was never read
    assert "--catalog-option" not in cmd

    blank = _dag_operator(BranchCreateOperator, table="db.events", branch="b3", warehouse="  ")
    with pytest.raises(Exception, match="paimon_default"):
        blank.preflight()


def test_warehouse_param_keeps_a_named_connections_options(wh):
    op = _dag_operator(
        MergeBranchOperator, table="db.events", branch="fix", warehouse=wh.path, paimon_conn_id="paimon_default"
    )
    hook = op.make_job_hook({})
    assert wh.path in hook.build_command()
    assert json.loads(hook.job_environment()["PAIMON_CATALOG_OPTIONS_JSON"])["metastore"] == "filesystem"


@pytest.mark.parametrize("operator", [ReplaceMainBranchOperator, MergeBranchOperator])
def test_branch_operators_refuse_a_rendered_lineage_url_with_a_password(wh, operator):
    """lineage_url is templated: a password in it fails the task once rendered (a
    connection is the place for it), and is masked before any message could show it."""
    from airflow.sdk._shared.secrets_masker import redact
    from airflow.sdk.exceptions import AirflowFailException

    secret = f"BranchLinkPw9031,({operator.__name__})"  # the masker is process-wide: one per case
    url = f"mysql+pymysql://etl:{secret}@127.0.0.1:3306/paimon"
    op = operator(task_id=f"t_{operator.__name__}", table="db.events", branch="fix",
                  lineage_url="{{ var.value.url }}")
    assert secret in str(redact(url))  # unknown to the masker before rendering
    with pytest.raises(AirflowFailException, match=r"lineage_url carries credentials.*lineage_conn_id") as err:
        op.render_template_fields({"var": {"value": {"url": url}}})
    assert secret not in str(err.value)
    assert secret not in str(redact(f"rendered {url}"))


@pytest.mark.parametrize(
    ("field", "template", "source"),
    [
        ("warehouse", "{{ params.wh }}", "params"),
        ("warehouse", "/data/{{ dag_run.conf['team'] }}/wh", "dag_run"),
        ("warehouse", "{% set w = params.wh %}{{ w }}", "params"),  # found by Jinja's parser, not by text
        ("warehouse", "/wh/{{ run_id }}", "run_id"),
        ("warehouse", "{{ ti.xcom_pull('where') }}", "ti"),
        ("lineage_url", "{{ var.value.get(params.store) }}", "params"),
        ("lineage_url", "{{ unknown_name }}", "unknown_name"),  # fail closed: a name we do not know
    ],
)
def test_a_location_from_what_the_trigger_chooses_is_refused_before_rendering(wh, field, template, source):
    """Whoever triggers a DAG chooses params/dag_run (and run id): a warehouse or store
    templated from them fails the task, naming the source, unless the DAG opts in."""
    from airflow.sdk import DAG
    from airflow.sdk.exceptions import AirflowFailException

    with DAG("loc", schedule=None) as dag:
        op = MergeBranchOperator(task_id="m", table="db.events", branch="fix", **{field: template})
        opted = MergeBranchOperator(task_id="o", table="db.events", branch="fix", allow_location_from_params=True,
                                    **{field: "{{ params.x }}"})
    context = {"params": {"wh": wh.path, "x": wh.path, "store": "s"}, "run_id": "r", "var": {"value": {}},
               "dag_run": None, "ti": None}
    before = getattr(op, field)
    with pytest.raises(AirflowFailException, match=rf"{field} is templated from {source}.*allow_location_from_params"):
        op.render_template_fields(context, jinja_env=dag.get_template_env())
    assert getattr(op, field) == before  # refused before anything was rendered
    opted.render_template_fields(context, jinja_env=dag.get_template_env())
    assert getattr(opted, field) == wh.path


def test_a_location_from_dag_code_variables_dates_or_macros_renders(wh):
    from airflow.sdk import DAG

    with DAG("loc_ok", schedule=None, user_defined_macros={"wh_root": wh.path}) as dag:
        op = MergeBranchOperator(task_id="m", table="db.events", branch="fix", warehouse="{{ wh_root }}",
                                 lineage_url="sqlite:///{{ var.value.dir }}/{{ ds_nodash }}.sqlite",
                                 conf={"spark.app.day": "{{ params.day }}"})  # not a location: params fine
    op.render_template_fields({"var": {"value": {"dir": "/tmp"}}, "ds_nodash": "20261126", "params": {"day": "1"}},
                              jinja_env=dag.get_template_env())
    assert (op.warehouse, op.lineage_url, op.conf) == (wh.path, "sqlite:////tmp/20261126.sqlite", {"spark.app.day": "1"})
    with pytest.raises(ValueError, match="allow_location_from_params must be True or False"):
        MergeBranchOperator(task_id="bad", table="db.events", branch="fix", allow_location_from_params="yes")


def test_a_location_conf_entry_from_params_is_refused():
    from airflow.sdk import DAG
    from airflow.sdk.exceptions import AirflowFailException

    with DAG("loc_conf", schedule=None) as dag:
        op = CompactionOperator(task_id="c", table="db.events", conf={"spark.paimon.lineage.url": "{{ params.u }}"})
    with pytest.raises(AirflowFailException, match="conf is templated from params"):
        op.render_template_fields({"params": {"u": "sqlite:////tmp/x"}}, jinja_env=dag.get_template_env())
