"""Real Airflow, real spark-submit, a real Spark standalone cluster, tables written by pypaimon.

The temp AIRFLOW_HOME and its SQLite metadata DB are the session's (tests/conftest.py,
set before any test module imports Airflow; its ``airflow_db`` fixture migrates the DB
once for the tests that need it). Connections come from ``AIRFLOW_CONN_*`` variables.

No ``__init__.py`` in this folder on purpose: a package named ``airflow`` under
``tests`` would shadow the real one.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pytest
from support.airflow_connections import LOCAL_SPARK, SECRET, set_connection
from support.pypaimon_writes import commit_arrow

# AIRFLOW_HOME, PATH, PYSPARK_PYTHON and the py-files cache are set for the whole
# session in tests/conftest.py (one Airflow environment for every test folder).
VENV_BIN = str(Path(sys.executable).parent)

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


class Warehouse:
    """A file warehouse with tables, snapshots, tags, branches and consumers, via pypaimon."""

    def __init__(self, path: str) -> None:
        from pypaimon import CatalogFactory

        self.path = path
        self.catalog = CatalogFactory.create({"warehouse": path})
        self.catalog.create_database("db", True)

    def create_append(self, name: str = "db.events", partitioned: bool = True) -> str:
        from pypaimon import Schema

        schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"] if partitioned else None)
        self.catalog.create_table(name, schema, False)
        return name

    def create_pk(self, name: str = "db.users") -> str:
        from pypaimon import Schema

        schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "1"})
        self.catalog.create_table(name, schema, False)
        return name

    def table(self, name: str, branch: str | None = None):
        return self.catalog.get_table(name if not branch else f"{name}$branch_{branch}")

    def append(self, name: str, rows: int = 3, branch: str | None = None, dt: str = "2026-11-01") -> int:
        """Commit one APPEND snapshot and return its id."""
        data = pa.table(
            {"id": list(range(rows)), "dt": [dt] * rows, "v": [f"r{i}" for i in range(rows)]},
            schema=SCHEMA,
        )
        return commit_arrow(self.table(name, branch), data)

    def tag(self, name: str, tag: str, snapshot_id: int | None = None) -> None:
        self.table(name).create_tag(tag, snapshot_id)

    def branch(self, name: str, branch: str, tag: str | None = None) -> None:
        self.table(name).branch_manager().create_branch(branch, tag)

    def consumer(self, name: str, consumer_id: str, next_snapshot: int, branch: str | None = None) -> None:
        from pypaimon.consumer.consumer import Consumer

        self.table(name, branch).consumer_manager().reset_consumer(consumer_id, Consumer(next_snapshot))

    def files(self) -> dict[str, int]:
        """Every file under the warehouse with its size: equal before/after means unchanged."""
        root = Path(self.path)
        return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}

    def read_ids(self, name: str, branch: str | None = None) -> list[int]:
        table = self.table(name, branch)
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        return sorted(builder.new_read().to_arrow(splits).column("id").to_pylist())


@pytest.fixture
def wh(warehouse: str, monkeypatch: pytest.MonkeyPatch) -> Warehouse:
    """A warehouse with ``db.events`` (append, partitioned by dt): snapshots 1-3, tag t1 -> 1,
    branch ``fix`` from t1 (one more snapshot on it), consumer ``reader`` at 2; ``db.users``
    (primary key). Connections ``paimon_default`` (with a secret option) and ``spark_default``
    (local) point at it."""
    w = Warehouse(warehouse)
    w.create_append("db.events")
    for dt in ("2026-11-01", "2026-11-02", "2026-11-01"):
        w.append("db.events", dt=dt)
    w.tag("db.events", "t1", 1)
    w.branch("db.events", "fix", "t1")
    w.append("db.events", rows=5, branch="fix")
    w.consumer("db.events", "reader", 2)
    w.create_pk("db.users")
    set_connection(
        monkeypatch,
        "paimon_default",
        {"conn_type": "paimon", "host": warehouse, "extra": {"s3.secret-key": SECRET, "metastore": "filesystem"}},
    )
    set_connection(monkeypatch, "spark_default", LOCAL_SPARK)
    return w


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _spark_class() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory):
    """A Spark standalone master and one small worker on 127.0.0.1; yields the master URL.

    pyspark ships ``bin/spark-class`` but no ``sbin`` scripts, so both daemons are
    started here directly and stopped (by their own process ids) at the end.
    """
    logs = tmp_path_factory.mktemp("spark-standalone")
    port, ui_port, worker_ui = _free_port(), _free_port(), _free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(logs / "work"))
    env["SPARK_DAEMON_MEMORY"] = "256m"
    spark_class = _spark_class()
    procs = []
    master = f"spark://127.0.0.1:{port}"
    try:
        procs.append(
            subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui_port)],
                stdout=open(logs / "master.log", "w"), stderr=subprocess.STDOUT, env=env,  # noqa: SIM115 - the child keeps writing it for the whole session
                start_new_session=True,
            )
        )
        procs.append(
            subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui), master],
                stdout=open(logs / "worker.log", "w"), stderr=subprocess.STDOUT, env=env,  # noqa: SIM115 - the child keeps writing it for the whole session
                start_new_session=True,
            )
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
                    state = json.load(resp)
                if any(w.get("state") == "ALIVE" for w in state.get("workers", [])):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    "Spark standalone cluster did not come up: "
                    + (logs / "master.log").read_text()[-2000:]
                    + (logs / "worker.log").read_text()[-2000:]
                )
            time.sleep(1)
        yield master
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(logs / "work", ignore_errors=True)


@pytest.fixture
def no_submit(monkeypatch: pytest.MonkeyPatch) -> list:
    """Record (and refuse) any spark-submit, so a test can assert none happened."""
    from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook

    calls: list = []

    def refuse(self, *args, **kwargs):
        calls.append(self.job_args)
        raise AssertionError("spark-submit must not run")

    monkeypatch.setattr(PaimonSparkJobHook, "submit", refuse)
    return calls
