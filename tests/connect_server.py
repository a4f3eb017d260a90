"""A real Spark Connect server on 127.0.0.1, started from pyspark's bundled jars.

Used by the session fixture ``connect_server`` in ``tests/conftest.py`` and by
``benchmarks/task_overhead.py``. The server is ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` with pyspark's own
``spark-connect`` jar (no download), ``local[2]``, bound to loopback on a free port.

Its Python workers run this virtualenv's interpreter but, by default, can NOT import
``airflow_provider_paimon`` (``hide_package``): the virtualenv has an editable install of
some checkout, and a server that silently ran that checkout's code would test nothing.
``register(spark)`` ships the client's package with ``spark.addArtifacts``, as it must on
a real server that does not have it installed.

Its Python worker daemons can preload the ``paimon`` source's libraries (``preload``,
default ``"none"``: Spark's own daemons, as a server nobody tuned, forked from the suite's
zygote when it runs (``support/daemon_zygote.py``: the same pyspark code, imports done once); ``"all"`` for
tests/connect/test_worker_preload.py's own server), as docs/connect.md tells a server admin: the package's
``spark/worker_preload.py`` copied onto the workers' path as ``paimon_worker_preload``
(never the package itself), named by ``spark.python.daemon.module`` (the tasks' daemons)
and called from the workers' ``sitecustomize`` (the planner's ``pyspark.daemon``s).
``"tasks"``: the conf only. ``$PAIMON_TEST_CONNECT_PRELOAD`` sets the default (to time
the suite either way).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
from support import daemon_zygote
from support.worker_preload_env import MODULE as PRELOAD_MODULE
from support.worker_preload_env import PACKAGE_SOURCE as PRELOAD_SOURCE
from support.worker_preload_env import ZYGOTE_MODULE

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PACKAGE = "airflow_provider_paimon"
PRELOAD_MODES = ("none", "tasks", "all")
PRELOAD_ENV = "PAIMON_TEST_CONNECT_PRELOAD"

# Put first on the workers' PYTHONPATH: drops the editable install's finder (and any path
# entry that holds the package), so only what the client ships is importable.
_HIDE_PACKAGE = f'''"""Test-only: hide {PACKAGE} from Spark Connect's Python workers."""
import os
import sys

sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__name__.lower()
                    and "editable" not in getattr(f, "__name__", "").lower()]
sys.path[:] = [p for p in sys.path
               if not os.path.isdir(os.path.join(p or ".", "{PACKAGE}")) or p.endswith(".zip")]
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spark_home() -> str:
    return os.path.dirname(pyspark.__file__)


@dataclass
class ConnectServer:
    """One Spark Connect server process; ``url`` is ``sc://127.0.0.1:<port>``."""

    port: int
    process: subprocess.Popen
    workdir: str
    log_path: str
    started_in: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server (its process group: the JVM and its Python workers)."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_connect_server(
    hide_package: bool = True,
    conf: dict[str, str] | None = None,
    timeout: float = 240.0,
    preload: str | None = None,
    env_extra: dict[str, str] | None = None,
) -> ConnectServer:
    """Start a Spark Connect server on a free loopback port and wait until it listens.

    ``env_extra``: set in the server's environment (its Python workers inherit it).
    """
    preload = preload or os.environ.get(PRELOAD_ENV) or "none"
    if preload not in PRELOAD_MODES:
        raise ValueError(f"preload is {preload!r}: one of {', '.join(PRELOAD_MODES)}")
    workdir = tempfile.mkdtemp(prefix="paimon-connect-server-")
    port = free_port()
    env = dict(os.environ)
    env["SPARK_HOME"] = spark_home()
    env["PYSPARK_PYTHON"] = sys.executable  # the workers need pyarrow and pypaimon
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    site_dir = os.path.join(workdir, "site")  # on the workers' PYTHONPATH
    site = []
    if hide_package:
        site.append(_HIDE_PACKAGE)
    if preload == "all":
        site.append(f"import {PRELOAD_MODULE}\n\n{PRELOAD_MODULE}.preload_if_daemon()\n")
    # Spark's own daemons ("none") run forked from the suite's zygote when there is one
    # (support/daemon_zygote.py: the same pyspark code, its imports done once per run);
    # after the package is hidden, so the zygote's child hides it too
    zygote = preload == "none" and bool(os.environ.get(daemon_zygote.SOCKET_ENV))
    if zygote:
        site.append(f"import {ZYGOTE_MODULE}\n\n{ZYGOTE_MODULE}.handoff_if_spark()\n")
    if site or preload != "none":
        os.makedirs(site_dir)
        env["PYTHONPATH"] = site_dir
    if preload != "none":
        shutil.copyfile(PRELOAD_SOURCE, os.path.join(site_dir, f"{PRELOAD_MODULE}.py"))
    if zygote:
        shutil.copyfile(daemon_zygote.__file__, os.path.join(site_dir, f"{ZYGOTE_MODULE}.py"))
    if site:
        Path(site_dir, "sitecustomize.py").write_text("\n".join(site))
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": os.environ.get("PAIMON_SPARK_DRIVER_MEMORY", "2g"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        "spark.local.dir": os.path.join(workdir, "local"),
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={workdir}",
        **({"spark.python.daemon.module": PRELOAD_MODULE} if preload != "none" else {}),
        **(conf or {}),
    }
    argv = [os.path.join(spark_home(), "bin", "spark-submit"), "--class", CONNECT_CLASS,
            "--master", "local[2]", "--name", "paimon-connect-tests"]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    argv.append("spark-internal")
    log_path = os.path.join(workdir, "server.log")
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=workdir, start_new_session=True)
    server = ConnectServer(port=port, process=process, workdir=workdir, log_path=log_path)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = server.log_tail()
            server.stop()
            raise RuntimeError(f"Spark Connect server exited with {process.returncode}:\n{tail}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                server.started_in = time.monotonic() - started
                return server
        except OSError:
            time.sleep(0.5)
    tail = server.log_tail()
    server.stop()
    raise RuntimeError(f"Spark Connect server did not listen on {port} within {timeout:.0f} s:\n{tail}")
