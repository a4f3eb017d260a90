"""PaimonSparkSubmitOperator: command line, lineage capture wiring, secrets, bad input.

The real spark-submit of this operator runs in tests/e2e (the correction DAG's
corrected job and the ETL DAG); here the command and environment it builds.
"""

from __future__ import annotations

import json

import pytest
from support.airflow_connections import LOCAL_SPARK, set_connection

from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator

PASSWORD = "Lin3age-pw-Secret"


@pytest.fixture
def app(tmp_path, monkeypatch):
    set_connection(monkeypatch, "spark_default", LOCAL_SPARK)
    path = tmp_path / "my_job.py"
    path.write_text("print('PAIMON_RESULT {}')\n")
    return str(path)


def _operator(app: str, **kwargs) -> PaimonSparkSubmitOperator:
    from airflow.sdk import DAG

    with DAG("paimon_dag", schedule=None):
        return PaimonSparkSubmitOperator(task_id="job", application=app, **kwargs)


def test_command_line_with_lineage_url_keeps_the_url_in_the_environment(app):
    with pytest.raises(ValueError, match=r"lineage_url carries credentials.*lineage_conn_id") as err:
        _operator(app, lineage_url=f"mysql+pymysql://lineage:{PASSWORD},x@127.0.0.1:3306/x")
    assert PASSWORD not in str(err.value)
    url = "mysql+pymysql://lineage@127.0.0.1:3306/x"
    op = _operator(app, application_args=["--n", 3], lineage_url=url, lineage_job="my.job",
                   conf={"spark.executor.memory": "1g"})
    hook = op.make_hook({})
    cmd = hook.build_command()
    assert cmd[0] == "spark-submit" and cmd[-3:] == [app, "--n", "3"]
    assert cmd[cmd.index("--name") + 1] == "paimon_dag.job"
    assert cmd[cmd.index("--py-files") + 1].endswith(".zip")
    assert "spark.paimon.lineage.enabled=true" in cmd and "spark.paimon.lineage.job=my.job" in cmd
    assert "spark.executor.memory=1g" in cmd
    assert not any(url in part for part in cmd)
    assert hook.job_environment()["PAIMON_LINEAGE_URL"] == url


def test_lineage_connection_and_user_conf_win(app, monkeypatch):
    set_connection(
        monkeypatch,
        "lineage_mysql",
        {"conn_type": "paimon_lineage", "host": "127.0.0.1", "port": 3306, "login": "root",
         "password": PASSWORD, "extra": {"backend": "mysql", "database": "lin"}},
    )
    op = _operator(app, lineage_conn_id="lineage_mysql", conf={"spark.paimon.lineage.job": "mine"})
    hook = op.make_hook({})
    cmd = hook.build_command()
    assert "spark.paimon.lineage.job=mine" in cmd and "spark.paimon.lineage.database=lin" in cmd
    assert not any(PASSWORD in part for part in cmd)
    env_url = hook.job_environment()["PAIMON_LINEAGE_URL"]
    assert env_url.startswith("mysql+pymysql://root:") and PASSWORD in env_url


def test_no_lineage_store_means_no_capture(app):
    hook = _operator(app, lineage_url="  ").make_hook({})
    cmd = hook.build_command()
    assert not any("spark.paimon.lineage" in part for part in cmd)
    assert hook._secret_env == {}


def test_bad_input_fails_before_submitting(app, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match="does not exist; nothing was submitted"):
        _operator(str(tmp_path / "missing.py")).make_hook({})
    with pytest.raises(AirflowFailException, match="not a SQLAlchemy URL") as err:
        _operator(app, lineage_url=f"not a url:{PASSWORD}@").make_hook({})
    assert PASSWORD not in str(err.value)
    with pytest.raises(ValueError, match="lineage_url carries credentials") as err:
        _operator(app, lineage_url=f"mysql+pymysql//root:{PASSWORD}@h")
    assert PASSWORD not in str(err.value)


def test_templated_fields_render_from_params(app):
    assert {"application", "application_args", "lineage_url", "lineage_job", "conf"} <= set(
        PaimonSparkSubmitOperator.template_fields
    )
    assert set(PaimonSparkSubmitOperator.template_fields_renderers) <= set(PaimonSparkSubmitOperator.template_fields)
    op = _operator("{{ params.app }}", application_args=["--day", "{{ params.day }}"],
                   lineage_job="{{ params.job }}", conf={"spark.app.x": "{{ params.day }}"})
    op.render_template_fields({"params": {"app": app, "day": "2026-11-24", "job": "etl.orders"}})
    assert op.application == app
    assert op.application_args == ["--day", "2026-11-24"]
    assert op.lineage_job == "etl.orders"
    assert op.conf == {"spark.app.x": "2026-11-24"}


GARBLED_APP = '''
import json, os, sys
# What spark-submit hands Airflow when a JVM log line lands inside a long result line
# (it copies the Python driver's output in 1 KiB chunks): unparsable.
sys.stdout.write('PAIMON_RESULT {"rows": 4, "sink"\\n26/11/22 INFO SparkContext: Invoking stop()\\n: "db.t"}\\n')
with open(os.environ["PAIMON_RESULT_FILE"], "w") as out:
    json.dump({"result": {"rows": 4, "sink": "db.t"}}, out)
'''


def test_result_file_wins_over_a_garbled_result_line(tmp_path, monkeypatch):
    """Real spark-submit: the hook hands the job a result file and prefers it to stdout."""
    set_connection(monkeypatch, "spark_default", LOCAL_SPARK)
    path = tmp_path / "garbled.py"
    path.write_text(GARBLED_APP)
    assert _operator(str(path)).execute({}) == {"rows": 4, "sink": "db.t"}


def test_print_result_and_error_write_the_result_file(tmp_path, monkeypatch, capsys):
    from airflow_provider_paimon.job_contract import RESULT_FILE_ENV
    from airflow_provider_paimon.spark.jobs.common import print_error, print_result

    target = tmp_path / "result.json"
    monkeypatch.setenv(RESULT_FILE_ENV, str(target))
    print_result({"snapshot_id": 3})
    assert json.loads(target.read_text()) == {"result": {"snapshot_id": 3}}
    assert capsys.readouterr().out == 'PAIMON_RESULT {"snapshot_id": 3}\n'
    print_error("table db.t does not exist")
    assert json.loads(target.read_text()) == {"error": "table db.t does not exist"}
    assert capsys.readouterr().err == "PAIMON_ERROR table db.t does not exist\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left


def test_paimon_connection_lineage_options_reach_the_capture_off_the_command_line(app, monkeypatch, tmp_path):
    """The proposal's options in the ``paimon`` connection's extra turn the job's capture on."""
    from airflow_provider_paimon.spark.lineage.config import capture_config

    set_connection(
        monkeypatch,
        "paimon_lineage_opts",
        {"conn_type": "paimon", "host": str(tmp_path / "wh"),
         "extra": {"table-lineage": "true", "data-lineage": "true", "lineage-meta": "jdbc",
                   "jdbc.url": "jdbc:mysql://127.0.0.1:3306/x", "jdbc.username": "lineage",
                   "jdbc.password": PASSWORD, "jdbc.database": "cat1"}},
    )
    hook = _operator(app, paimon_conn_id="paimon_lineage_opts").make_hook({})
    cmd = hook.build_command()
    assert not any(PASSWORD in part for part in cmd)
    env = hook.job_environment()
    # what the job's register(spark) sees: its app name and the environment
    cfg = capture_config({}, cmd[cmd.index("--name") + 1], environ=env)
    assert cfg.enabled and cfg.table_lineage and cfg.data_lineage and cfg.job == "paimon_dag.job"
    assert cfg.database == "cat1" and cfg.url.startswith("mysql+pymysql://lineage:") and PASSWORD in cfg.url
    assert PASSWORD not in cfg.describe()
