"""Secrets stay out of everything a real run leaves behind, whatever punctuation they hold.

ONE real Airflow run (``dag.test()`` on the session's SQLite metadata DB: the task SDK,
its in-process execution API, the trigger run in line) of a DAG whose tasks get
passwords the ways users give them: a ``paimon`` connection (Password, an unknown extra,
a ``rest.client.pwd``, a header, a ``uri`` with user info), a ``paimon_lineage``
connection, and Variables templated into ``conf`` and ``warehouse_options``. The
passwords are drawn from the full printable ASCII range and Unicode punctuation
(``tests/secret_fuzz.py``, the generator of the policy's own fuzz test). The run has a
tag job in a child of the worker, a real spark-submit whose application reads and
writes a table (the native path: no Python workers, to keep the run short) with lineage
capture and OpenLineage events, a
deferred sensor and a sensor on a worker. While it runs, a thread samples every
process's argv with ``ps``. Then the passwords (and their URL-/JSON-encoded forms) are
looked for in: the metadata DB (``rendered_task_instance_fields``, ``trigger``,
``serialized_dag``, ``xcom``, ``dag_code``), argv, the task logs, the table
directories, the lineage store's rows and the OpenLineage events received.

The same run is the attack on "who chooses where the package writes": two tasks take
a lineage store (a SQLite file, a MariaDB database) and a warehouse from the run's
``conf``; they fail before rendering and nothing is created.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import zlib
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from secret_fuzz import fuzz_password
from support.dag_files import load_dag_file

DAG_ID = "paimon_secrets_everywhere"
SEED = int(os.environ.get("PAIMON_SECRET_FUZZ_SEED", "20261126"))
LINEAGE_JOB = f"{DAG_ID}.submit"
OLD_JOB = "fuzz.behind"  # consumed src snapshot 1 of 2: a sensor on it defers

APP = '''
import json
import os

from pyspark.sql import SparkSession

from airflow_provider_paimon.spark import register
from airflow_provider_paimon.spark.native import read_table, write_table

spark = SparkSession.builder.getOrCreate()
register(spark)  # lineage capture and OpenLineage from the conf the operator set
warehouse = os.environ["PAIMON_CONNECTION_WAREHOUSE"]  # the paimon connection's, with its options
result = write_table(read_table(spark, "db.src", warehouse=warehouse), "db.sink", warehouse=warehouse)
print("PAIMON_RESULT " + json.dumps({"rows": result.row_count, "snapshot_id": result.snapshot_id}))
spark.stop()
'''

DAG_SOURCE = '''
from airflow.sdk import DAG

from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.operators.tag import TagCreateOperator
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

with DAG({dag_id!r}, schedule=None) as dag:
    # a metadata job in a child of the worker: every catalog option in its environment
    TagCreateOperator(
        task_id="tag", table="db.src", tag="t1", paimon_conn_id="wh_fuzz", run_in="worker",
        conf={{"spark.paimon.catalog.header.X-Auth-Key": "{{{{ var.value.hdr }}}}"}},
    )
    # a real spark-submit: connection options, lineage store and OpenLineage api key
    PaimonSparkSubmitOperator(
        task_id="submit", application={app!r}, paimon_conn_id="wh_fuzz",
        lineage_conn_id="lineage_fuzz", lineage_job={job!r},
        conf={{
            "spark.paimon.openlineage.transport.type": "http",
            "spark.paimon.openlineage.transport.url": {ol_url!r},
            "spark.paimon.openlineage.transport.apiKey": "{{{{ var.value.ol_key }}}}",
            "spark.paimon.openlineage.async": "false",
        }},
    )
    # deferred: only connection ids may reach the trigger row
    SnapshotCatchUpSensor(
        task_id="wait_conn", table="db.sink", job={old_job!r}, paimon_conn_id="wh_fuzz",
        lineage_conn_id="lineage_fuzz", deferrable=True, poke_interval=0.2, timeout=2, soft_fail=True,
    )
    # on a worker: secret options from Variables, stored masked in the rendered fields
    SnapshotCatchUpSensor(
        task_id="wait_opts", table="db.sink", job="nobody.ever", warehouse={warehouse!r},
        warehouse_options={{
            "s3.secret-key": "{{{{ var.value.opt }}}}",
            "header.Authorization": "Bearer {{{{ var.value.opt }}}}",
        }},
        lineage_conn_id="lineage_fuzz", wait_for_job_start=True, poke_interval=0.2, timeout=1,
        soft_fail=True,
    )
    # a store URL with a password from a Variable: refused once rendered, never deferred
    SnapshotCatchUpSensor(
        task_id="wait_var", table="db.sink", job={job!r}, warehouse={warehouse!r},
        lineage_url="{{{{ var.value.store_url }}}}", deferrable=True, poke_interval=0.2, timeout=2,
    )
    # whoever triggers the run names a store and a warehouse: refused before rendering
    PaimonSparkSubmitOperator(
        task_id="store_from_params", application={app!r}, lineage_url="{{{{ params.store }}}}",
    )
    SnapshotCatchUpSensor(
        task_id="wh_from_conf", table="db.sink", job={job!r},
        warehouse="{{{{ dag_run.conf['wh'] }}}}", lineage_url="{{{{ params.sqlite }}}}",
    )
'''


class ArgvSampler:
    """Every distinct command line ``ps`` shows while it runs (all processes, full width)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="argv-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            out = subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True,
                                 errors="replace", check=False).stdout
            self.seen.update(line.strip() for line in out.splitlines() if line.strip())
            self._stop.wait(self.interval)

    def __enter__(self) -> ArgvSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _forms(secret: str) -> set[str]:
    """How a secret can show up: as is, URL-encoded, JSON-escaped (ASCII or not)."""
    return {secret, quote(secret, safe=""), quote_plus(secret, safe=""),
            json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


def _leaks(text: str, secrets: dict[str, str]) -> list[str]:
    return sorted(name for name, secret in secrets.items() if any(f in text for f in _forms(secret)))


def _load_dag(source: str):
    return load_dag_file(DAG_ID, source).dag


def _metadata_db_text() -> tuple[str, list[tuple[str, dict]], dict[str, dict]]:
    """(everything our DAG left in the metadata DB as text, trigger rows, rendered fields)."""
    import sqlalchemy as sa
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session

    parts: list[str] = []
    with create_session() as session:
        for table in ("trigger", "rendered_task_instance_fields", "xcom", "dag_code", "task_instance"):
            parts.extend(_column_texts(session.execute(sa.text(f"SELECT * FROM {table}")).all()))
        for data, compressed in session.execute(
            sa.text("SELECT data, data_compressed FROM serialized_dag WHERE dag_id = :d"), {"d": DAG_ID}
        ).all():
            parts.append(zlib.decompress(compressed).decode() if compressed else json.dumps(data))
        triggers = [(t.classpath, t.kwargs) for t in session.scalars(sa.select(Trigger)).all()]
        rendered = {
            task_id: json.loads(fields) if isinstance(fields, str) else fields
            for task_id, fields in session.execute(
                sa.text("SELECT task_id, rendered_fields FROM rendered_task_instance_fields WHERE dag_id = :d"),
                {"d": DAG_ID},
            ).all()
        }
    parts.append(json.dumps(triggers, default=str, ensure_ascii=False))
    return "\n".join(parts), triggers, rendered


def _column_texts(rows) -> list[str]:
    """Each column value as the text stored (never a ``repr``, which would escape a
    secret's backslashes and hide it from the search)."""
    return [col.decode("utf-8", "replace") if isinstance(col, bytes) else str(col)
            for row in rows for col in row if col is not None]


def _files_text(root: str) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in Path(root).rglob("*") if p.is_file())


@pytest.fixture
def lineage_db(postgres_server_url: str, unique_name: str):
    """A fresh PostgreSQL database for the lineage store (trust auth: any password works)."""
    import sqlalchemy as sa

    admin = sa.create_engine(postgres_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{unique_name}"'))
    try:
        yield unique_name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{unique_name}" WITH (FORCE)'))
        admin.dispose()


def test_one_real_run_leaves_no_secret_anywhere(
    tables, lineage_db, postgres_server_url, mysql_server_url, airflow_db, tmp_path, monkeypatch, capfd,
):
    import sqlalchemy as sa
    from olspec import LineageReceiver

    from airflow_provider_paimon.lineage.entities import SnapshotRef
    from airflow_provider_paimon.lineage.store import LineageStore

    rng = random.Random(SEED)
    secrets = {name: fuzz_password(rng) for name in (
        "conn_password", "conn_pwd_option", "conn_uri", "conn_header", "conn_vendor_option",
        "lineage_password", "var_header", "var_option", "var_store_url")}
    secrets["var_ol_key"] = fuzz_password(rng, ascii_only=True)  # an HTTP header takes ASCII only

    tables.create("db.src")
    tables.create("db.sink")
    tables.append("db.src")
    tables.append("db.src")
    tables.append("db.sink")
    pg = sa.engine.make_url(postgres_server_url)
    store_conn = {"conn_type": "paimon_lineage", "host": pg.host, "port": pg.port, "login": pg.username,
                  "password": secrets["lineage_password"], "schema": lineage_db,
                  "extra": {"backend": "postgresql", "database": "paimon"}}
    store_url = pg.set(database=lineage_db).render_as_string(hide_password=False)
    with LineageStore.from_url(store_url) as store:  # the job has a history: the sensors read it
        store.record_batch(OLD_JOB, 0, sources=[SnapshotRef("db", "src", 1)],
                           sinks=[SnapshotRef("db", "sink", 1)])

    monkeypatch.setenv("AIRFLOW_CONN_WH_FUZZ", json.dumps({
        "conn_type": "paimon", "host": tables.warehouse, "password": secrets["conn_password"],
        "extra": {"metastore": "filesystem", "rest.client.pwd": secrets["conn_pwd_option"],
                  "uri": f"http://rest-user:{quote(secrets['conn_uri'], safe='')}@rest.example:8080/v1",
                  "header.X-Auth-Key": secrets["conn_header"], "my.vendor.option": secrets["conn_vendor_option"]},
    }))
    monkeypatch.setenv("AIRFLOW_CONN_LINEAGE_FUZZ", json.dumps(store_conn))
    monkeypatch.setenv("AIRFLOW_VAR_HDR", secrets["var_header"])
    monkeypatch.setenv("AIRFLOW_VAR_OPT", secrets["var_option"])
    monkeypatch.setenv("AIRFLOW_VAR_OL_KEY", secrets["var_ol_key"])
    monkeypatch.setenv("AIRFLOW_VAR_STORE_URL", pg.set(database=lineage_db, password=secrets["var_store_url"])
                       .render_as_string(hide_password=False))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    app = tmp_path / "copy_rows.py"
    app.write_text(APP)
    attacker_sqlite = tmp_path / "attacker" / "lineage.sqlite"
    attacker_sqlite.parent.mkdir()
    attacker_mysql_db = "atk_" + lineage_db[-10:]
    mysql = sa.create_engine(mysql_server_url)

    with LineageReceiver(api_key=secrets["var_ol_key"]) as receiver:
        dag = _load_dag(DAG_SOURCE.format(dag_id=DAG_ID, app=str(app), job=LINEAGE_JOB, old_job=OLD_JOB,
                                          ol_url=receiver.url, warehouse=tables.warehouse))
        capfd.readouterr()
        with ArgvSampler() as argv:
            run = dag.test(run_conf={
                "store": mysql_server_url.rsplit("/", 1)[0] + "/" + attacker_mysql_db,
                "sqlite": f"sqlite:///{attacker_sqlite}", "wh": str(tmp_path / "attacker" / "wh"),
            })
        logs = "".join(capfd.readouterr())
        events = [r.body.decode("utf-8", "replace") for r in receiver.requests]
        accepted = receiver.events
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    db_text, triggers, rendered = _metadata_db_text()
    log_files = _files_text(os.path.join(os.environ["AIRFLOW_HOME"], "logs")) if (
        Path(os.environ["AIRFLOW_HOME"]) / "logs").is_dir() else ""
    with sa.create_engine(store_url).connect() as conn:
        names = [r[0] for r in conn.execute(sa.text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'paimon'"))]
        store_rows = "\n".join(_column_texts([r for t in names
                                              for r in conn.execute(sa.text(f'SELECT * FROM paimon."{t}"')).all()]))

    # the run did what it says: the worker child, the spark-submit JVM and its events ran
    assert states["tag"] == "success" and states["submit"] == "success", states
    assert any("airflow_provider_paimon.spark.jobs.launcher tag" in a for a in argv.seen)
    assert any("org.apache.spark.deploy.SparkSubmit" in a for a in argv.seen)
    assert accepted, "no OpenLineage event reached the receiver with the api key"
    assert "Running the Paimon tag job in the Airflow worker" in logs and "Spark-Submit cmd" in logs
    assert LINEAGE_JOB in store_rows
    assert tables.table("db.src").tag_manager().tag_exists("t1")

    # nowhere a secret (every place searched, all leaks reported at once)
    places = {"metadata DB": db_text, "argv": "\n".join(argv.seen), "task logs": logs + log_files,
              "table directories": _files_text(tables.warehouse), "lineage store": store_rows,
              "OpenLineage events": "\n".join(events)}
    leaks = {where: _leaks(text, secrets) for where, text in places.items() if _leaks(text, secrets)}
    assert leaks == {}, f"secrets found: {leaks}"

    # the deferred sensor's trigger row names connection ids only
    ours = [kw for path, kw in triggers if path.endswith("SnapshotCatchUpTrigger")
            and kw.get("check", {}).get("lineage_conn_id") == "lineage_fuzz"]
    assert ours and ours[0]["check"]["paimon_conn_id"] == "wh_fuzz" and ours[0]["check"]["lineage_url"] is None
    assert states["wait_conn"] == "skipped" and states["wait_opts"] == "skipped"
    # the rendered fields were stored, masked where they held secrets, readable elsewhere
    assert rendered["tag"]["conf"] == {"spark.paimon.catalog.header.X-Auth-Key": "***"}
    assert rendered["submit"]["conf"]["spark.paimon.openlineage.transport.apiKey"] == "***"
    assert rendered["submit"]["conf"]["spark.paimon.openlineage.transport.url"] == receiver.url
    assert "***" in json.dumps(rendered["wait_opts"]["warehouse_options"])
    assert rendered["wait_conn"]["lineage_conn_id"] == "lineage_fuzz"
    # a store URL with a password from a Variable failed at render: no rendered row, no trigger
    assert states["wait_var"] == "failed" and "wait_var" not in rendered
    assert "lineage_url carries credentials" in logs

    # who chooses where the package writes: not whoever triggers the run
    assert states["store_from_params"] == "failed" and states["wh_from_conf"] == "failed"
    assert "templated from params" in logs and "templated from dag_run" in logs
    assert not attacker_sqlite.exists() and not (tmp_path / "attacker" / "wh").exists()
    with mysql.connect() as conn:
        assert attacker_mysql_db not in {r[0] for r in conn.execute(sa.text("SHOW DATABASES"))}
    mysql.dispose()


def test_an_asset_watcher_trigger_with_credentials_is_refused_when_built():
    """The AssetWatcher's trigger is stored in the serialized DAG: a warehouse with
    credentials (punctuation and all) or secret options are refused in its constructor."""
    from airflow_provider_paimon.paimon.errors import InvalidArgumentError
    from airflow_provider_paimon.triggers.snapshot import PaimonSnapshotTrigger

    password = "AW,WATCH(1)'x/y"
    for kwargs in ({"warehouse": f"s3://AKID:{password}@bucket/wh"},
                   {"warehouse": "s3://bucket/wh", "warehouse_options": {"fs.s3.accessKeySecret": password}}):
        with pytest.raises(InvalidArgumentError, match="paimon_conn_id") as err:
            PaimonSnapshotTrigger(table="db.t", consumer_id="watch", **kwargs)
        assert password not in str(err.value) and "WATCH" not in str(err.value)
