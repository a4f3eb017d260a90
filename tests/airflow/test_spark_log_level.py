"""Spark's own log level in task logs: WARN by default, configurable, typos refused.

The real spark-submit that shows the effect (Spark INFO lines gone from the task log)
is ``test_compaction_on_standalone_cluster`` in test_airflow_submit_e2e.py.
"""

from __future__ import annotations

import logging
from urllib.parse import urlparse

import pytest
from support.airflow_connections import set_connection

from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook
from airflow_provider_paimon.operators.branch import BranchCreateOperator
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.spark.log_level import CONFIG_FILE, DRIVER_JAVA_OPTIONS, with_log_level


def _driver_options(cmd: list[str]) -> list[str]:
    return [c for i, c in enumerate(cmd) if i and cmd[i - 1] == "--conf" and c.startswith(DRIVER_JAVA_OPTIONS)]


def test_job_operators_submit_with_spark_at_warn_by_default(wh):
    op = BranchCreateOperator(task_id="t", table="db.events", branch="b2", tag="t1")
    (option,) = _driver_options(op.make_job_hook({}).build_command())
    assert f"-Dlog4j2.configurationFile={CONFIG_FILE.as_uri()}" in option
    assert option.endswith("-Dpaimon.spark.log.level=WARN")
    assert CONFIG_FILE.is_file() and "${sys:paimon.spark.log.level:-WARN}" in CONFIG_FILE.read_text()


def test_level_is_configurable_and_none_keeps_sparks_own(wh, tmp_path):
    app = tmp_path / "job.py"
    app.write_text("print('hi')\n")
    op = PaimonSparkSubmitOperator(task_id="j", application=str(app), spark_log_level="error")
    (option,) = _driver_options(op.make_hook({}).build_command())
    assert option.endswith("-Dpaimon.spark.log.level=ERROR")
    op = BranchCreateOperator(task_id="t", table="db.events", branch="b2", spark_log_level=None)
    assert _driver_options(op.make_job_hook({}).build_command()) == []


def test_users_java_options_are_kept_and_their_log_config_wins():
    merged = with_log_level({DRIVER_JAVA_OPTIONS: "-Dfoo=1"}, "INFO")
    assert merged[DRIVER_JAVA_OPTIONS].startswith("-Dfoo=1 -Dlog4j2.configurationFile=")
    own = {DRIVER_JAVA_OPTIONS: "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"}
    assert with_log_level(own, "WARN") == own


@pytest.mark.parametrize(("cls", "kwargs"), [
    (BranchCreateOperator, {"table": "db.events", "branch": "b"}),
    (PaimonSparkSubmitOperator, {"application": "job.py"}),
])
@pytest.mark.parametrize("level", ["WARNING", "", "verbose", 3])
def test_unknown_level_is_refused_when_the_dag_is_parsed(cls, kwargs, level):
    with pytest.raises(ValueError, match="spark_log_level must be one of OFF, FATAL, ERROR, WARN, INFO"):
        cls(task_id="t", spark_log_level=level, **kwargs)


def test_the_submit_hook_turns_the_level_into_the_drivers_java_option(wh):
    """The level travels to the hook as a level; the spark-submit hook alone makes it conf."""
    hook = PaimonSparkJobHook("branch", [], conf={DRIVER_JAVA_OPTIONS: "-Dfoo=1"}, log_level="INFO")
    (option,) = _driver_options(hook.build_command())
    assert option == f"{DRIVER_JAVA_OPTIONS}=-Dfoo=1 -Dlog4j2.configurationFile={CONFIG_FILE.as_uri()} " \
                     "-Dpaimon.spark.log.level=INFO"
    assert _driver_options(PaimonSparkJobHook("branch", []).build_command()) == []


def _connect_connection(monkeypatch, conn_id: str, url: str = "sc://127.0.0.1:15002") -> None:
    parsed = urlparse(url.replace("sc://", "http://"))
    set_connection(monkeypatch, conn_id, {"conn_type": "spark_connect", "host": parsed.hostname, "port": parsed.port,
                                          "login": "log-level-tests", "extra": {"session_reuse": "false"}})


def _session_of(spark):
    return {"session_id": spark.session_id}


def test_a_connect_job_gets_no_driver_log_option_but_keeps_the_users(wh, monkeypatch):
    """A Connect server's driver runs already: no log option is built for its jobs (it
    would only be refused as static conf); a user's own Java options still reach it."""
    _connect_connection(monkeypatch, "sc_log")
    job = BranchCreateOperator(task_id="t", table="db.events", branch="b2", spark_conn_id="sc_log",
                               spark_log_level="ERROR", conf={"spark.sql.shuffle.partitions": "4"})
    assert job.make_job_hook({}).conf == {"spark.sql.shuffle.partitions": "4"}
    users = {DRIVER_JAVA_OPTIONS: "-Dfoo=1 -Xss4m"}
    submit = PaimonSparkSubmitOperator(task_id="j", python_callable=_session_of, spark_conn_id="sc_log",
                                       spark_log_level="INFO", conf=users)
    assert submit.make_hook({}).conf == users
    job = BranchCreateOperator(task_id="t", table="db.events", branch="b2", spark_conn_id="sc_log", conf=users)
    assert job.make_job_hook({}).conf == users


def test_a_connect_session_warns_about_the_users_java_options_only(connect_server, monkeypatch, caplog):
    """Run on the suite's Connect server: the log level draws no 'static conf' warning; a
    user's own driver Java options still do (the server decides those)."""
    _connect_connection(monkeypatch, "sc_log_run", connect_server.url)

    def warnings_of(conf: dict) -> list[str]:
        caplog.clear()
        op = PaimonSparkSubmitOperator(task_id="j", python_callable=_session_of, spark_conn_id="sc_log_run",
                                       spark_log_level="INFO", conf=conf)
        with caplog.at_level(logging.WARNING, logger="airflow_provider_paimon.spark.session"):
            assert op.make_hook({}).run()["session_id"]
        return [r.getMessage() for r in caplog.records if "does not take" in r.getMessage()]

    assert warnings_of({"spark.sql.shuffle.partitions": "4"}) == []
    (warning,) = warnings_of({DRIVER_JAVA_OPTIONS: "-Dfoo=1"})
    assert DRIVER_JAVA_OPTIONS in warning
