"""One secret policy on every path: credentials the operators did not recognise before
(pypaimon REST ``header.*`` options, ``user:password@`` inside a ``uri``, an OpenLineage
``apiKey`` in ``conf``) stay off the spark-submit command line and out of the task log,
and still reach the job (environment / private properties file). Also: a missing
``spark`` connection fails before anything is submitted.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest
from support.airflow_connections import LOCAL_SPARK, set_connection
from support.dag_files import load_dag_file

from airflow_provider_paimon.hooks.spark_job import (
    PaimonSparkJobHook,
    SparkConnectionNotFoundError,
)
from airflow_provider_paimon.operators.base import PaimonPreflightError
from airflow_provider_paimon.operators.branch import MergeBranchOperator
from airflow_provider_paimon.operators.compaction import CompactionOperator
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.paimon.secrets import is_secret, mask_mapping, mask_url

HEADER_TOKEN = "Bearer hdr-T0ken-9f8e"
URI_PASSWORD = "uri-Pa55-7c6d"
API_KEY = "ol-ApiKey-5b4a"
OL_URL_PASSWORD = "ol-url-Pw-3e2f"
ALL = (HEADER_TOKEN, URI_PASSWORD, API_KEY, OL_URL_PASSWORD)
SECRET_CONF = {
    "spark.paimon.openlineage.transport.apiKey": API_KEY,
    "spark.paimon.openlineage.transport.url": f"http://ol:{OL_URL_PASSWORD}@marquez:5000",
}


def _dag_operator(cls, **kwargs):
    from airflow.sdk import DAG

    with DAG("paimon_dag", schedule=None):
        return cls(task_id="task", **kwargs)


def _leaks(text: str) -> list[str]:
    return [s for s in ALL if s in text]


def test_policy_covers_what_the_five_copies_missed():
    assert is_secret("header.Authorization") and is_secret("spark.openlineage.transport.headers.X-Api")
    assert is_secret("uri", f"http://root:{URI_PASSWORD}@rest:8080") and not is_secret("uri", "http://rest:8080")
    assert is_secret("spark.paimon.openlineage.transport.apiKey")
    assert not is_secret("primary-key") and not is_secret("bucket-key") and not is_secret("metastore", "rest")
    masked = mask_mapping({"header.Authorization": HEADER_TOKEN, "uri": f"http://root:{URI_PASSWORD}@rest",
                           "nested": {"token": "t"}, "metastore": "rest"})
    assert masked == {"header.Authorization": "***", "uri": "http://root:***@rest",
                      "nested": {"token": "***"}, "metastore": "rest"}


def test_rest_headers_uri_password_and_conf_api_key_stay_off_the_command_line_and_log(wh, monkeypatch):
    import structlog
    from airflow.sdk.log import redact

    set_connection(monkeypatch, "paimon_rest", {
        "conn_type": "paimon", "host": wh.path,
        "extra": {"metastore": "filesystem", "uri": f"http://root:{URI_PASSWORD}@rest:8080",
                  "header.Authorization": HEADER_TOKEN, "jdbc.useSSL": "false"},
    })
    op = _dag_operator(MergeBranchOperator, table="db.events", branch="fix", paimon_conn_id="paimon_rest",
                       conf={"spark.paimon.openlineage.transport.apiKey": "{{ var.value.ol_key }}",
                             "spark.executor.memory": "1g"})
    op.render_template_fields({"var": {"value": {"ol_key": API_KEY}}})
    with structlog.testing.capture_logs() as logs:
        hook = op.make_job_hook({})
        cmd = hook.build_command()
    assert _leaks(" ".join(cmd)) == []
    assert _leaks("\n".join(str(e) for e in logs)) == [] and "Spark-Submit cmd" in str(logs)
    assert "spark.executor.memory=1g" in cmd and "--catalog-option" not in cmd  # public conf still there
    # every catalog option reaches the job through the environment ...
    env = json.loads(hook.job_environment()["PAIMON_CATALOG_OPTIONS_JSON"])
    assert env == {"uri": f"http://root:{URI_PASSWORD}@rest:8080", "header.Authorization": HEADER_TOKEN,
                   "metastore": "filesystem", "jdbc.useSSL": "false"}
    # ... the secret conf through the private properties file, and all are masked in task logs
    assert hook.secret_conf == {"spark.paimon.openlineage.transport.apiKey": API_KEY}
    assert _leaks(str(redact(" ".join((HEADER_TOKEN, URI_PASSWORD, API_KEY))))) == []


def test_transport_urls_with_credentials_are_refused_in_conf_and_kept_off_argv_when_injected(monkeypatch):
    """A transport URL with a password written into a DAG, or templated from a Variable,
    is refused (it would be shown); the one Airflow's [openlineage] config injects is
    kept off the command line with every other transport key."""
    from airflow.sdk.exceptions import AirflowFailException

    url = f"http://ol:{OL_URL_PASSWORD}@marquez:5000"
    with pytest.raises(ValueError, match="conf holds a URL with credentials") as err:
        _dag_operator(PaimonSparkSubmitOperator, application="/x.py",
                      conf={"spark.openlineage.transport.url": url})
    assert OL_URL_PASSWORD not in str(err.value)
    op = _dag_operator(CompactionOperator, table="db.events",
                       conf={"spark.openlineage.transport.url": "{{ var.value.ol_url }}"})
    with pytest.raises(AirflowFailException, match="conf holds a URL with credentials") as err:
        op.render_template_fields({"var": {"value": {"ol_url": url}}})
    assert OL_URL_PASSWORD not in str(err.value)
    set_connection(monkeypatch, "spark_default", LOCAL_SPARK)
    hook = PaimonSparkJobHook("branch", [], conf={
        "spark.openlineage.transport.url": "http://marquez:5000", "spark.openlineage.transport.type": "http",
        **SECRET_CONF, "spark.executor.memory": "1g"})
    assert set(hook.secret_conf) == {"spark.openlineage.transport.url", "spark.openlineage.transport.type",
                                     *SECRET_CONF}
    assert not any("openlineage.transport" in part for part in hook.build_command())


def test_secret_conf_file_is_private_and_keeps_the_spark_defaults(wh, tmp_path):
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    hook = PaimonSparkJobHook("branch", [], conf={**SECRET_CONF, "spark.paimon.lineage.url": "sqlite:////x a=b"})
    path = hook.write_secret_properties(tmp_path, {"SPARK_CONF_DIR": str(conf_dir)})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert text.startswith("spark.ui.enabled false\n")
    assert f"spark.paimon.openlineage.transport.apiKey={API_KEY}" in text
    assert f"spark.paimon.openlineage.transport.url=http\\://ol\\:{OL_URL_PASSWORD}@marquez\\:5000" in text
    assert "spark.paimon.lineage.url" not in text  # no password in it: stays a plain --conf
    assert PaimonSparkJobHook("branch", [], conf={"spark.a": "1"}).write_secret_properties(tmp_path, {}) is None


PROBE_APP = '''
import hashlib, json
from pyspark.java_gateway import launch_gateway

jvm = launch_gateway().jvm  # the spark-submit JVM: its system properties are the Spark conf
def digest(key):
    value = jvm.System.getProperty(key)
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()
keys = ["spark.paimon.openlineage.transport.apiKey", "spark.paimon.openlineage.transport.url",
        "spark.executor.memory"]
print("PAIMON_RESULT " + json.dumps({k: digest(k) for k in keys}))
'''


def test_secret_conf_reaches_the_job_without_reaching_the_log(tmp_path, monkeypatch):
    """Real spark-submit: the JVM has the secret conf, the task log does not."""
    import structlog

    set_connection(monkeypatch, "spark_default", LOCAL_SPARK)
    app = tmp_path / "probe.py"
    app.write_text(PROBE_APP)
    hook = PaimonSparkJobHook("probe", [], application=str(app), conf={**SECRET_CONF, "spark.executor.memory": "1g"})
    with structlog.testing.capture_logs() as logs:
        result = hook.run()
    expected = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in SECRET_CONF.items()}
    assert result == {**expected, "spark.executor.memory": hashlib.sha256(b"1g").hexdigest()}
    logged = "\n".join(str(e) for e in logs)
    assert "--properties-file" in logged and _leaks(logged) == []


SPARK_CONN_DAG = """
import json
import os

from airflow.sdk import DAG, task

from airflow_provider_paimon.hooks.spark_job import missing_spark_connection
from airflow_provider_paimon.operators.compaction import CompactionOperator

with DAG("paimon_spark_conn", schedule=None) as dag:
    @task
    def probe():
        with open(os.environ["PAIMON_PROBE_OUT"], "w") as f:
            json.dump({c: missing_spark_connection(c) for c in ("spark_in_db", "spark_nowhere")}, f)

    probe() >> CompactionOperator(task_id="compact", table="db.events", spark_conn_id="spark_nowhere")
"""


def test_missing_spark_connection_fails_fast_naming_it(airflow_db, wh, no_submit, tmp_path, monkeypatch):
    """Under dag.test() with the real metadata DB: a spark connection stored in the DB is
    found, a missing one is named with how to create it, and the operator fails before
    submitting anything (no silent fallback to yarn)."""
    from airflow.models import Connection
    from airflow.utils.session import create_session

    out = tmp_path / "probe.json"
    monkeypatch.setenv("PAIMON_PROBE_OUT", str(out))
    with create_session() as session:
        session.query(Connection).filter(Connection.conn_id == "spark_in_db").delete()
        session.add(Connection(conn_id="spark_in_db", conn_type="spark", host="local[1]"))
    before = wh.files()
    try:
        dag = load_dag_file("paimon_spark_conn", SPARK_CONN_DAG).dag
        run = dag.test()
    finally:
        with create_session() as session:
            session.query(Connection).filter(Connection.conn_id == "spark_in_db").delete()
    assert run.state == "failed"
    found = json.loads(out.read_text())
    assert found["spark_in_db"] is None  # read from the metadata DB
    message = found["spark_nowhere"]
    assert message.startswith("spark connection 'spark_nowhere' does not exist")
    assert "airflow connections add spark_nowhere --conn-type spark" in message
    assert "AIRFLOW_CONN_SPARK_NOWHERE" in message
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states == {"probe": "success", "compact": "failed"}
    assert no_submit == [] and wh.files() == before

    app = tmp_path / "app.py"
    app.write_text("print('never runs')\n")
    with pytest.raises(SparkConnectionNotFoundError, match=r"'spark_nowhere' does not exist.*nothing was submitted"):
        _dag_operator(PaimonSparkSubmitOperator, application=str(app), spark_conn_id="spark_nowhere").execute({})
    with pytest.raises(PaimonPreflightError, match=r"'spark_nowhere' does not exist.*nothing was submitted"):
        CompactionOperator(task_id="compact", table="db.events", spark_conn_id="spark_nowhere").execute({})
    assert no_submit == []


def test_mask_url_hides_every_mistyped_shape():
    for url in ("mysql+pymysql:/root:PW9x@h", "mysql+pymysql//root:PW9x@h", "root:PW9x@h",
                "mysql+pymysql://root:PW9x@h:abc/db", "mysql+pymysql://root:P@W9x@h/db"):
        assert "W9x" not in mask_url(url) and "***@h" in mask_url(url), url


@pytest.mark.parametrize("module", ["hooks.lineage", "operators.tag", "sensors.partition", "triggers.snapshot"])
def test_importing_any_part_of_the_airflow_layer_arms_airflows_masker(module):
    """A fresh process: import one module, register a secret with the package's registry,
    and Airflow's own redaction (task logs, rendered fields) hides it."""
    import subprocess
    import sys

    probe = (
        f"import airflow_provider_paimon.{module}\n"
        "from airflow_provider_paimon.paimon.secrets import register_secret\n"
        "from airflow.sdk.log import redact\n"
        "register_secret(\"Pw,(arm)'9z\")\n"
        "print(redact(\"log line Pw,(arm)'9z end\"))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "log line *** end"
