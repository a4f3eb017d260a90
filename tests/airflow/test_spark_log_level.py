"""Spark's own log level in task logs: WARN by default, configurable, typos refused.

The real spark-submit that shows the effect (Spark INFO lines gone from the task log)
is ``test_compaction_on_standalone_cluster`` in test_airflow_submit_e2e.py.
"""

from __future__ import annotations

import pytest

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


def test_a_connect_session_gets_no_driver_log_option_but_keeps_the_users():
    """A Connect server's driver runs already: our log option would only be refused there
    (and warned about on every task); a user's own Java options still reach it (and its warning)."""
    from airflow_provider_paimon.spark.log_level import without_log_level

    ours = with_log_level({"spark.sql.shuffle.partitions": "4"}, "WARN")
    assert without_log_level(ours) == {"spark.sql.shuffle.partitions": "4"}
    mixed = with_log_level({DRIVER_JAVA_OPTIONS: "-Dfoo=1 -Xss4m"}, "ERROR")
    assert without_log_level(mixed) == {DRIVER_JAVA_OPTIONS: "-Dfoo=1 -Xss4m"}
    users = {DRIVER_JAVA_OPTIONS: "-Dlog4j2.configurationFile=/etc/mine.properties"}
    assert without_log_level(with_log_level(users, "WARN")) == users
