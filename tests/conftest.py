"""Shared fixtures: one SparkSession for all in-process tests, real database servers.

Database fixtures fail (rather than skip) when ``CI=true`` and the server is not
reachable, so a CI run can never pass by silently skipping the MySQL/PostgreSQL tests.
"""

from __future__ import annotations

import atexit
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from markers import _marker_guard, add_markers  # noqa: F401  (the guard is an autouse fixture)
from support.capture_streams import pytest_unconfigure  # noqa: F401  (a hook: registered by its name here)

IN_CI = os.environ.get("CI", "").lower() == "true"
MYSQL_ROOT_URL = os.environ.get("PAIMON_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
POSTGRES_ROOT_URL = os.environ.get(
    "PAIMON_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)

# Airflow reads its configuration when first imported, so ONE throwaway AIRFLOW_HOME
# (SQLite metadata DB, an empty DAGs folder tests may write into) is set here, before
# any test module imports Airflow; every test folder shares it.
REPO = Path(__file__).resolve().parents[1]
REPO_DAGS = REPO / "dags"
VENV_BIN = str(Path(sys.executable).parent)
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="paimon-tests-airflow-")
atexit.register(shutil.rmtree, _AIRFLOW_HOME, ignore_errors=True)
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = os.path.join(_AIRFLOW_HOME, "dags")
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_AIRFLOW_HOME}/airflow.db"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "False"
os.environ["PAIMON_PY_FILES_CACHE_DIR"] = os.path.join(_AIRFLOW_HOME, "pyfiles")
# spark-submit and airflow (from the venv) must be on PATH for SparkSubmitHook.
os.environ["PATH"] = VENV_BIN + os.pathsep + os.environ.get("PATH", "")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The example DAGs import their helper module the way Airflow would (DAGs folder on sys.path).
if str(REPO_DAGS) not in sys.path:
    sys.path.insert(0, str(REPO_DAGS))

# The differential read tests draw new query cases every day (the same in every xdist
# worker: workers inherit this from the controller); a failing case's test id is its seed,
# and PAIMON_DIFF_BASE=<seed> PAIMON_DIFF_CASES=1 runs it again on any day.
os.environ.setdefault("PAIMON_DIFF_BASE", str(datetime.date.today().toordinal() * 10_000))

# The suite's JVMs (the local session's gateway, every spark-submit, the Spark Connect
# server, the standalone master and worker) live seconds and hold little data: the C1
# compiler alone and the serial collector start them with less CPU than HotSpot's default
# tiered C2 and parallel GC (a trivial spark-submit: 36.7 -> 20-22 CPU-s on the 2-core VM,
# 2026-11-26), and CPU is what the two-core suite runs out of. Behaviour is the same; only
# the JIT's optimisation level differs. PAIMON_TEST_JVM_OPTS="" turns it off.
TEST_JVM_OPTS = os.environ.get("PAIMON_TEST_JVM_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
for _var in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    if TEST_JVM_OPTS and TEST_JVM_OPTS not in os.environ.get(_var, ""):
        os.environ[_var] = f"{os.environ.get(_var, '')} {TEST_JVM_OPTS}".strip()


# The shared session's Python workers start from daemons that import the data source's
# libraries once (tests/support/worker_preload_env.py; PAIMON_TEST_WORKER_PRELOAD=0: off).
from support.worker_preload_env import enable as _enable_worker_preload  # noqa: E402
from support.worker_preload_env import preloading_session  # noqa: E402

_enable_worker_preload()


def pytest_configure(config):
    """The JVMs also map Spark's classes from a class-data-sharing archive (built once per
    machine, Java and pyspark: tests/support/jvm_archive.py; PAIMON_TEST_JVM_ARCHIVE=0 turns
    it off). The controller adds the flags before xdist starts its workers, which inherit
    them; a worker finds them already set."""
    if hasattr(config, "workerinput") or "SharedArchiveFile" in os.environ.get("SPARK_SUBMIT_OPTS", ""):
        return
    from support.jvm_archive import archive_flags

    flags = archive_flags(os.environ.get("SPARK_SUBMIT_OPTS", ""))
    for var in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        if flags:
            os.environ[var] = f"{os.environ.get(var, '')} {flags}".strip()

# Spark's Python workers must run this interpreter (it has pyarrow and pypaimon).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _unavailable(what: str, err: Exception) -> None:
    msg = f"{what} is not reachable ({type(err).__name__}: {err})"
    if IN_CI:
        pytest.fail(f"{msg}; CI=true requires it (see .ci/run for how it is started)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def spark():
    """The one local SparkSession of the test run, with our data source registered."""
    from airflow_provider_paimon.spark.session import local_session

    with preloading_session() as conf:
        session = local_session("airflow-provider-paimon-tests", conf=conf)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_server():
    """The test run's one Spark Connect server on 127.0.0.1 (pyspark's bundled jars).

    Its Python workers run this interpreter but cannot import the package: a
    session's ``register(spark)`` ships it (``spark.addArtifacts``), as on a real server.
    """
    from connect_server import start_connect_server

    try:
        server = start_connect_server()
    except Exception as err:  # noqa: BLE001 - a JVM that cannot start here: fail in CI
        _unavailable("a Spark Connect server", err)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def connect_spark(connect_server):
    """A Spark Connect session on the suite's server, with the ``paimon`` source registered."""
    from airflow_provider_paimon.spark.session import connect_mode, remote_session

    session = remote_session(connect_server.url)  # pyspark's Connect switch: left off
    yield session
    with connect_mode(True):
        session.stop()


@pytest.fixture
def warehouse(tmp_path):
    """A fresh file warehouse (a local path) for one test."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture(scope="session")
def mysql_server_url() -> str:
    """URL of the MariaDB/MySQL server (root, no password), checked reachable."""
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(MYSQL_ROOT_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
    except Exception as err:  # noqa: BLE001
        _unavailable(f"MySQL/MariaDB at {MYSQL_ROOT_URL}", err)
    return MYSQL_ROOT_URL


@pytest.fixture(scope="session")
def postgres_server_url() -> str:
    """URL of the PostgreSQL server (trust auth), checked reachable."""
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(POSTGRES_ROOT_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
    except Exception as err:  # noqa: BLE001
        _unavailable(f"PostgreSQL at {POSTGRES_ROOT_URL}", err)
    return POSTGRES_ROOT_URL


@pytest.fixture
def unique_name() -> str:
    """A short unique name for databases/schemas a test creates on a shared server."""
    return "t_" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """Migrate the session's Airflow metadata DB once (``dag.test()`` needs it)."""
    subprocess.run(
        [os.path.join(VENV_BIN, "airflow"), "db", "migrate"],
        check=True, capture_output=True, env=dict(os.environ), timeout=600,
    )
    return os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]


@pytest.fixture(scope="session")
def s3_server():
    """The loopback S3 server (moto), one per test session."""
    from s3support import start_loopback_s3

    try:
        server = start_loopback_s3()
    except Exception as err:  # noqa: BLE001 - moto missing or not starting: a CI failure, a local skip
        _unavailable("the loopback S3 server (moto[server])", err)
    yield server
    server.stop()


@pytest.fixture
def s3_warehouse(s3_server):
    """A warehouse in a fresh bucket of the loopback S3 server."""
    from s3support import S3Warehouse

    bucket = s3_server.new_bucket()
    return S3Warehouse(uri=f"s3://{bucket}/warehouse", bucket=bucket, options=s3_server.options(), server=s3_server)



@pytest.fixture(autouse=True)
def _no_airflow_task_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test starts inside another's Airflow task context.

    ``dag.test()`` runs tasks in this process, and the task runner exports the task's
    context (``AIRFLOW_CTX_DAG_ID`` and friends) into ``os.environ`` without removing
    it, so a later test in the same worker would see a DAG run it is not part of (the
    commit properties and lineage runs name it).
    """
    for key in [k for k in os.environ if k.startswith("AIRFLOW_CTX_")]:
        monkeypatch.delenv(key)


@pytest.fixture(autouse=True)
def _package_loggers_enabled() -> None:
    """Tests that start Airflow in this process run its logging setup (dictConfig), which
    disables loggers that already exist; tests assert on our own log lines, so the
    package's loggers are switched back on before each test."""
    import logging

    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.startswith("airflow_provider_paimon") and isinstance(logger, logging.Logger):
            logger.disabled = False


@pytest.fixture
def fresh_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty secret registry for the test (``paimon/secrets.py``'s is process-wide by
    design: a secret an earlier test registered would change how this test's output is
    masked). What the test registers is dropped afterwards."""
    from airflow_provider_paimon.paimon import secrets

    monkeypatch.setattr(secrets, "_known", set())
    monkeypatch.setattr(secrets, "_pattern", None)


# The suite runs on two pytest-xdist workers that take whole files (scripts/test.sh:
# ``-n 2 --dist loadfile``), in collection order. These files each hold one test of several
# minutes (real Airflow, SIGKILL-and-restart streams, spark-submit chains: measured with
# ``--durations``), so they go first: a worker that ends on one of them leaves the other
# idle for minutes. Order inside a file is unchanged.
HEAVY_FILES_FIRST = (
    "tests/e2e/test_cascade_dag.py",
    "tests/e2e/test_correction_real_airflow.py",
    "tests/airflow/test_partition_assets_real_airflow.py",
    "tests/pk/test_pk_stream_kill.py",
    "tests/pk/test_pk_spark_writes.py",
    "tests/spark/test_table_options_attack.py",
    "tests/spark/test_native_write_safety.py",
    "tests/e2e/test_correction_dag.py",
    "tests/e2e/test_correction_dag_s3.py",
    "tests/streaming/test_streaming_expire.py",
    "tests/s3/test_s3_capabilities.py",
    "tests/capture/test_capture_spark.py",
    "tests/capture/test_capture_ol_only.py",
    "tests/docs/test_readme.py",
    "tests/docs/test_shell_samples.py",
    "tests/streaming/test_streaming_kill.py",
    "tests/e2e/test_maintenance_dag.py",
    "tests/s3/test_s3_airflow_submit.py",
    "tests/airflow/test_snapshot_trigger_real_airflow.py",
    "tests/spark/test_spark_differential.py",
    "tests/spark/test_branch_redirect.py",
    "tests/airflow/test_airflow_audit_operator.py",
    "tests/spark/test_spark_datasource_partitions.py",
    "tests/spark/test_schema_evolution_spark.py",
    "tests/capture/test_lineage_proposal_options_spark.py",
    "tests/streaming/test_streaming_compaction.py",
    "tests/ui/test_history_page_browser.py",
    "tests/streaming/test_streaming_schema_change.py",
    "tests/streaming/test_foreach_batch_compaction.py",
    "tests/capture/test_capture_self_compaction.py",
    "tests/e2e/test_approval_hitl.py",
    "tests/compaction/test_merging_commits.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(HEAVY_FILES_FIRST)}
    root = Path(str(config.rootpath))

    def key(item):
        try:
            rel = Path(str(item.path)).relative_to(root).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(rel, len(rank))

    items.sort(key=key)  # stable: the rest keep pytest's order
    add_markers(items, root)
