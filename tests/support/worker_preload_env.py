"""The suite's shared local Spark session starts its Python workers from preloading daemons.

Spark forks each Python worker from a daemon, and every new worker imports what the
``paimon`` source needs (pyarrow, pandas, polars, pypaimon, SQLAlchemy): seconds of CPU
per worker, paid again whenever Spark stops idle workers (after a minute). The package's
``spark/worker_preload.py`` imports them once in the daemon, before it forks
(docs/connect.md, "Preloading the workers' libraries"), configured as a Spark admin
would: ``spark.python.daemon.module`` names the module (the tasks' daemons), and a
``sitecustomize`` on ``PYTHONPATH`` calls ``preload_if_daemon`` (the planner's daemons,
which Spark 4.3 starts as plain ``pyspark.daemon``).

Only the session of the ``spark`` fixture (one per test process, living for the whole
run) gets it; the Connect server has its own (``tests/connect_server.py``). A daemon pays
for the whole list once (~2-3 s of CPU), which only a long-lived session earns back: the
spark-submits, streaming jobs and short sessions the tests start fork one or two workers
per daemon. The hook acts only in a process whose environment carries ``SESSION_ENV``,
which is set while the fixture's JVM starts (so it and its daemons inherit it) and
removed before anything else starts.

Measured 2026-11-27 (same files, one process each, CPU of the whole process tree from a
cgroup; off / preloading in every JVM / this fixture's session only):
tests/spark/test_spark_datasource_partitions.py + tests/capture/test_capture_spark.py
118.9 and 115.2 / 84.2 and 76.9 / 62.0 CPU-s; tests/streaming/test_streaming_kill.py
(spark-submit jobs killed and restarted) 86.4 / 83.9 / 67.7. The daemon freezes what it
preloaded (``gc.freeze``) so its workers' collections do not copy those pages. (The first
try, d6e5f1a, preloaded in every JVM and ran the machine out of memory when a session
kept one set of daemons per lineage capture; captures no longer add daemon sets.)

``enable`` also starts the run's daemon zygote (``support/daemon_zygote.py``), which
forks the Python processes of every other JVM the suite starts (spark-submits, streaming
jobs, short sessions) from one preloaded process; the ``sitecustomize`` hands them over.
``PAIMON_TEST_DAEMON_ZYGOTE=0`` turns only that off; ``PAIMON_TEST_WORKER_PRELOAD=0``
turns off both (the zygote's hand-over lives in this folder's ``sitecustomize``).

The module is copied under the name an admin installs it as (``paimon_worker_preload``),
so the daemons do not import this checkout's package. ``PAIMON_TEST_WORKER_PRELOAD=0``
runs the suite on Spark's own daemons. Tests assert behaviour, not import timing, so
they hold either way; the Connect preload tests (``tests/connect/test_worker_preload.py``)
check the mechanism itself.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from support import daemon_zygote
from support.switches import switch

PACKAGE_SOURCE = Path(__file__).resolve().parents[2] / "airflow_provider_paimon" / "spark" / "worker_preload.py"
#: the preload module under the name a server admin installs it as (docs/connect.md);
#: the zygote's stand-ins (stdlib only) recognise the daemons started by that name
MODULE = daemon_zygote.PRELOAD_DAEMON_MODULE
SWITCH_ENV = "PAIMON_TEST_WORKER_PRELOAD"
MARK_ENV = "PAIMON_TEST_WORKER_PRELOAD_DIR"  # set once: xdist workers inherit it
SESSION_ENV = "PAIMON_TEST_PRELOADING_SESSION"  # only the fixture session's JVM has it
ZYGOTE_SWITCH_ENV = "PAIMON_TEST_DAEMON_ZYGOTE"
ZYGOTE_MODULE = "paimon_test_zygote"  # support/daemon_zygote.py, copied beside the preload module

SITECUSTOMIZE = f"""import os

if os.environ.get({daemon_zygote.SOCKET_ENV!r}):
    import {ZYGOTE_MODULE}

    {ZYGOTE_MODULE}.handoff_if_spark()  # returns only where the zygote does not serve
if os.environ.get({SESSION_ENV!r}) == "1":
    import {MODULE}

    {MODULE}.preload_if_daemon()
"""


def _switched_off() -> bool:
    return not switch(SWITCH_ENV, default=True)


def enable() -> str | None:
    """Put the module and the hook on this process's (and its children's) ``PYTHONPATH``;
    the folder, or None when switched off. Nothing preloads until ``preloading_session``."""
    if _switched_off():
        return None
    zygote_on = switch(ZYGOTE_SWITCH_ENV, default=True)  # read first: a bad value changes nothing
    if os.environ.get(MARK_ENV):
        return os.environ[MARK_ENV]  # the controller did it; its children inherit it
    root = tempfile.mkdtemp(prefix="paimon-tests-preload-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    site = write_site(Path(root, "site"))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    os.environ[MARK_ENV] = root
    if zygote_on:
        zygote = start_zygote(site)
        atexit.register(stop_zygote, zygote)
        os.environ[daemon_zygote.SOCKET_ENV] = zygote.args[-1]
    return root


def write_site(site: Path) -> Path:
    """Create ``site``: the preload module, the zygote's module and the ``sitecustomize``
    that calls them (what goes first on the suite's ``PYTHONPATH``)."""
    site.mkdir(parents=True)
    shutil.copyfile(PACKAGE_SOURCE, site / f"{MODULE}.py")
    shutil.copyfile(daemon_zygote.__file__, site / f"{ZYGOTE_MODULE}.py")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site


def start_zygote(site: Path) -> subprocess.Popen:
    """Start a zygote (support/daemon_zygote.py) for the Python processes started with
    ``site`` on their path; its socket is the command's last argument.

    Not waited for: it binds the socket once its imports are done (~2-3 s of CPU), and
    until then (or if it fails: its stderr is ``zygote.log`` beside ``site``) Spark's
    Python processes start as usual. It ends when its stdin closes (``stop_zygote``, or
    this process's end)."""
    socket_path = str(site.parent / "zygote.sock")
    with open(site.parent / "zygote.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, str(site / f"{ZYGOTE_MODULE}.py"), socket_path],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # what Spark gives its workers
            cwd=str(site.parent), start_new_session=True,
        )


def wait_until_listening(zygote: subprocess.Popen, timeout: float = 120) -> str:
    """Wait until ``zygote`` (``start_zygote``) listens; its socket. Raises RuntimeError
    with its log when it exits or does not listen within ``timeout`` seconds."""
    socket_path = zygote.args[-1]
    log = Path(socket_path).with_name("zygote.log")
    deadline = time.monotonic() + timeout
    while not os.path.exists(socket_path):
        if zygote.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {zygote.returncode}" if zygote.returncode is not None else \
                f"did not listen within {timeout:.0f} s"
            raise RuntimeError(f"the daemon zygote {state}:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)
    return socket_path


def zygote_env(site: Path, socket_path: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with ``site`` first on ``PYTHONPATH`` and the
    zygote's socket: what a process needs to be served by that zygote."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    env[daemon_zygote.SOCKET_ENV] = socket_path
    return env


def stop_zygote(zygote: subprocess.Popen) -> None:
    """Close the zygote's stdin (it stops listening and exits); wait up to 10 s."""
    with contextlib.suppress(OSError):
        zygote.stdin.close()  # type: ignore[union-attr]
    with contextlib.suppress(subprocess.TimeoutExpired):
        zygote.wait(timeout=10)


@contextlib.contextmanager
def preloading_session() -> Iterator[dict[str, str]]:
    """Start a session inside the block to give it preloading daemons: yields the conf to
    pass (empty when switched off); the marker is in the environment only meanwhile."""
    if not os.environ.get(MARK_ENV) or _switched_off():
        yield {}
        return
    os.environ[SESSION_ENV] = "1"
    try:
        yield {"spark.python.daemon.module": MODULE}
    finally:
        os.environ.pop(SESSION_ENV, None)
