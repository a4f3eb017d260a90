"""Worker daemons that preload the ``paimon`` source's libraries (``spark/worker_preload.py``).

A Connect server of this module's own runs it as a server admin would
(``tests/connect_server.py``, ``preload="all"``): ``spark.python.daemon.module`` for the
tasks' workers, the ``sitecustomize`` hook for the planner's ``pyspark.daemon``s. (The
suite's shared server runs Spark's own daemons: a preloading daemon holds ~84 MB more,
and the suite's sessions leave many daemons behind.) These tests check what a worker has in ``sys.modules``
when it starts, never timings (benchmarks/worker_preload.py has the figures), and that a
daemon whose preload list names a missing library still serves its workers.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from connect_server import PRELOAD_MODULE
from support.kill import ROOT

from airflow_provider_paimon.spark import worker_preload

#: preloaded by default and imported by nothing a plain UDF or Python data source loads
HEAVY = ["polars", "pypaimon.catalog.catalog_factory", "pyarrow.dataset", "sqlalchemy"]


@pytest.fixture(scope="module")
def preloading_server():
    """A Connect server whose worker daemons preload (stopped after this module)."""
    from connect_server import start_connect_server

    server = start_connect_server(preload="all")
    yield server
    server.stop()


def _fresh_session(url: str):
    """A new server session: its own daemons and workers (none started by other tests)."""
    from pyspark.sql.connect.session import SparkSession

    return SparkSession.builder.remote(url).create()


def test_a_new_sessions_task_workers_start_with_the_libraries_imported(preloading_server):
    from pyspark.sql.functions import udf

    names = list(HEAVY)

    def probe(_):
        import gc
        import os
        import sys

        with open(f"/proc/{os.getppid()}/cmdline", "rb") as raw:
            daemon = raw.read().split(b"\0")
        return json.dumps({"loaded": [n for n in names if n in sys.modules],
                           "package": "airflow_provider_paimon" in sys.modules,
                           "frozen": gc.get_freeze_count(),
                           "daemon": [a.decode() for a in daemon if a][1:]})

    spark = _fresh_session(preloading_server.url)
    try:
        seen = json.loads(spark.range(1).select(udf(probe, "string")("id")).collect()[0][0])
    finally:
        spark.stop()
    assert seen["daemon"] == ["-m", PRELOAD_MODULE, "pyspark.worker"]  # forked from the preloading daemon
    assert seen["loaded"] == names
    assert seen["package"] is False  # the client's shipped version is what workers import
    # what the daemon preloaded sits in the collector's permanent generation, so the
    # worker's collections leave those (shared) pages alone
    assert seen["frozen"] > 10_000


def test_the_planners_workers_start_with_the_libraries_imported_too(preloading_server):
    """The data source's planning runs in workers of ``pyspark.daemon`` (Spark gives them
    no daemon module): the startup hook preloads there. A source of the test's own
    reports, from its planning worker (``partitions``), what that worker had loaded."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    names = list(HEAVY)

    class ProbeReader(DataSourceReader):
        def partitions(self):
            import os
            import sys

            with open(f"/proc/{os.getppid()}/cmdline", "rb") as raw:
                daemon = [a.decode() for a in raw.read().split(b"\0") if a][1:]
            return [InputPartition(json.dumps({"loaded": [n for n in names if n in sys.modules],
                                               "daemon": daemon}))]

        def read(self, partition):
            yield (partition.value,)

    class ProbeSource(DataSource):
        @classmethod
        def name(cls):
            return "preload_probe"

        def schema(self):
            return "seen string"

        def reader(self, schema):
            return ProbeReader()

    spark = _fresh_session(preloading_server.url)
    try:
        spark.dataSource.register(ProbeSource)
        seen = json.loads(spark.read.format("preload_probe").load().collect()[0][0])
    finally:
        spark.stop()
    assert seen["daemon"] == ["-m", "pyspark.daemon", "pyspark.sql.worker.plan_data_source_read"]
    assert seen["loaded"] == names


# A worker module for the daemon test: pyspark's daemon imports its argument after the
# fork when the name starts with "pyspark"; its main reports what the worker had loaded.
PROBE_WORKER = textwrap.dedent("""
    import json, sys
    from pyspark.serializers import write_with_length

    def main(infile, outfile):
        names = ["polars", "no_such_library_for_the_test", "noisy_library_for_the_test",
                 "airflow_provider_paimon"]
        seen = {n: n in sys.modules for n in names}
        seen["pyspark from"] = "zip" if ".zip" in sys.modules["pyspark"].__file__ else "installed"
        write_with_length(json.dumps(seen).encode(), outfile)
        outfile.flush()
""")

# prints to stdout (Python and C level) when imported: the daemon's port must still arrive
NOISY = "import os, sys\nprint('noise from a library')\nsys.stdout.flush()\nos.write(1, b'more noise')\n"


def _run_daemon(tmp_path: Path, module: str, preload: str, python: str = sys.executable) -> tuple[dict, str]:
    """Start ``python -m module`` as Spark does, ask it for one worker, and return what
    that worker had in ``sys.modules`` and the daemon's stderr."""
    from pyspark.serializers import UTF8Deserializer, read_int, write_with_length

    (tmp_path / "pyspark_preload_probe.py").write_text(PROBE_WORKER)
    (tmp_path / "noisy_library_for_the_test.py").write_text(NOISY)
    secret = "s3cret-for-the-test"
    import pyspark

    spark_zips = sorted(str(p) for p in (Path(pyspark.__file__).parent / "python" / "lib").glob("*.zip"))
    env = {**os.environ, "PYTHON_WORKER_FACTORY_SECRET": secret, worker_preload.PRELOAD_ENV: preload,
           "PYTHONPATH": os.pathsep.join([*spark_zips, str(tmp_path), ROOT])}  # Spark's zips first, as Spark does
    daemon = subprocess.Popen([python, "-m", module, "pyspark_preload_probe"], env=env, cwd=tmp_path,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        port = struct.unpack("!i", daemon.stdout.read(4))[0]  # the daemon's first 4 bytes: its port
        assert 0 < port < 65536, f"not a port: {port} (stderr: {daemon.stderr.read1().decode()})"
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock, \
                sock.makefile("rwb") as stream:
            assert read_int(stream) > 0  # the forked worker's pid
            write_with_length(secret.encode(), stream)
            stream.flush()
            assert UTF8Deserializer().loads(stream) == "ok"
            seen = json.loads(UTF8Deserializer().loads(stream))
        daemon.stdin.close()  # Spark closes the daemon's stdin to stop it: it ends
        daemon.wait(timeout=60)
        return seen, daemon.stderr.read().decode()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


@pytest.mark.parametrize("module", ["airflow_provider_paimon.spark.worker_preload", "pyspark.daemon"])
def test_a_daemon_with_a_missing_library_in_its_list_still_serves_its_workers(tmp_path, module):
    """``PAIMON_WORKER_PRELOAD`` names a library that is not installed and one that
    prints to stdout: the daemon skips the first, says so on stderr, keeps its stdout
    for Spark, and its workers start with the rest imported. Run from the installed
    package, it leaves no module of the package to the workers (they import the
    client's). ``pyspark.daemon``: the same without preloading (the test's own check)."""
    names = "no_such_library_for_the_test,polars,noisy_library_for_the_test"
    if module == "pyspark.daemon":  # as a server without this module runs it
        seen, _ = _run_daemon(tmp_path, module, names)
        assert seen["polars"] is False and seen["pyspark from"] == "zip"
        return
    seen, stderr = _run_daemon(tmp_path, module, names)
    # pyspark: the installed copy of the same version (bytecode), not Spark's zip
    assert seen == {"polars": True, "no_such_library_for_the_test": False,
                    "noisy_library_for_the_test": True, "airflow_provider_paimon": False, "pyspark from": "installed"}
    assert "skipped no_such_library_for_the_test (ModuleNotFoundError" in stderr
    assert "noise from a library" in stderr and "more noise" in stderr


def test_an_empty_preload_list_leaves_the_daemon_as_pysparks_own(tmp_path):
    seen, _ = _run_daemon(tmp_path, "airflow_provider_paimon.spark.worker_preload", "")
    assert seen["polars"] is False and seen["pyspark from"] == "zip"


def test_the_documented_pth_file_preloads_in_pyspark_daemons(tmp_path):
    """docs/connect.md's step 3, as an admin does it: the module and a ``.pth`` line in
    the server Python's site-packages (here a virtualenv's, which sees this one's
    libraries); Spark's own ``pyspark.daemon`` then forks workers that have them."""
    import site
    import sysconfig

    doc = (Path(ROOT) / "docs" / "connect.md").read_text()
    line = f"import {PRELOAD_MODULE}; {PRELOAD_MODULE}.preload_if_daemon()"
    assert f"`{line}`" in doc
    venv = tmp_path / "server-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in {*site.getsitepackages(), sysconfig.get_paths()["purelib"]} if os.path.isdir(p)]
    Path(purelib, "libraries.pth").write_text("\n".join(ours) + "\n")
    Path(purelib, f"{PRELOAD_MODULE}.py").write_bytes(Path(worker_preload.__file__).read_bytes())
    Path(purelib, f"{PRELOAD_MODULE}.pth").write_text(line + "\n")
    daemon_tmp = tmp_path / "daemon"
    daemon_tmp.mkdir()
    seen, _ = _run_daemon(daemon_tmp, "pyspark.daemon", "polars", python=python)
    assert seen["polars"] is True


def test_the_startup_hook_preloads_only_in_pyspark_daemons(tmp_path):
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); from airflow_provider_paimon.spark import worker_preload; "
            "worker_preload.preload_if_daemon(); print('polars' in sys.modules)")
    env = {**os.environ, worker_preload.PRELOAD_ENV: "polars"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert worker_preload.is_pyspark_daemon(["/usr/bin/python3", "-m", "pyspark.daemon", "pyspark.worker"])
    assert not worker_preload.is_pyspark_daemon(["/usr/bin/python3", "-m", PRELOAD_MODULE, "pyspark.worker"])
    assert not worker_preload.is_pyspark_daemon(["python", "job.py", "pyspark.daemon"])


def test_workers_import_the_shipped_package_from_its_bytecode(connect_server):
    """The package zip ``register`` ships carries each module's bytecode: a worker
    imports it rather than compiling the package from source (``packaging``)."""
    from pyspark.sql.functions import udf

    from airflow_provider_paimon.spark.session import remote_session

    def origin(_):
        import airflow_provider_paimon.spark.datasource.writer as writer

        return writer.__file__

    spark = remote_session(connect_server.url)  # registered: the package is shipped
    try:
        path = spark.range(1).select(udf(origin, "string")("id")).collect()[0][0]
    finally:
        spark.stop()
    assert ".zip/airflow_provider_paimon/spark/datasource/writer.pyc" in path
