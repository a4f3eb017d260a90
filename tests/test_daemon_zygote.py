"""The suite's daemon zygote (tests/support/daemon_zygote.py): a ``python -m pyspark.*``
process it serves behaves as the one Spark started (output, exit code, signals, stdin's
end, cgroups), and anything it must not serve starts as usual.

Each test starts its own zygote from its own site folder (the suite's one serves the
suite); a process is pointed at it by ``PYTHONPATH`` and the socket variable, as the
suite's processes are. ``pyspark.find_spark_home`` (prints Spark's home) and
``pyspark.daemon`` (Spark's worker daemon: writes its port, stops on SIGTERM or when its
stdin ends) are real pyspark modules run as Spark runs them.
"""

from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import daemon_zygote, worker_preload_env

FIND_SPARK_HOME = [sys.executable, "-m", "pyspark.find_spark_home"]
DAEMON = [sys.executable, "-m", "pyspark.daemon", "pyspark.worker"]


class Zygote:
    def __init__(self, root: Path) -> None:
        self.site = worker_preload_env.write_site(root / "site")
        self.log = root / "zygote.log"
        self.process = worker_preload_env.start_zygote(self.site)
        self.socket = worker_preload_env.wait_until_listening(self.process)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a suite process pointed at this zygote."""
        return {**worker_preload_env.zygote_env(self.site, self.socket), **extra}

    def served(self) -> dict[int, int]:
        """{stand-in pid: child pid} of every process the zygote ran so far."""
        found = re.findall(r"pid (\d+) runs python -m .* \(stand-in (\d+)\)", self.log.read_text())
        return {int(stand_in): int(child) for child, stand_in in found}


@pytest.fixture
def zygote(tmp_path):
    zygote = Zygote(tmp_path)
    yield zygote
    worker_preload_env.stop_zygote(zygote.process)
    assert zygote.process.returncode == 0, zygote.log.read_text()
    assert not os.path.exists(zygote.socket)  # it cleans up after itself


def _gone(pid: int, within: float = 30) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_served_module_prints_and_exits_as_when_started_by_itself(zygote):
    alone = subprocess.run(FIND_SPARK_HOME, env={**zygote.env(), daemon_zygote.SOCKET_ENV: ""},
                           capture_output=True, text=True, check=True)
    proc = subprocess.Popen(FIND_SPARK_HOME, env=zygote.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (0, alone.stdout, alone.stderr)
    assert out.strip() and Path(out.strip()).is_dir()
    assert proc.pid in zygote.served()  # the zygote ran it, not the process itself


def _catches_sigterm(pid: int) -> bool:
    """Whether ``pid`` has a SIGTERM handler (pyspark's daemon installs one after it wrote
    its port: a SIGTERM before that kills it, a race Spark shares)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(re.search(r"SigCgt:\s*([0-9a-f]+)", status).group(1), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return True
        time.sleep(0.05)
    return False


def test_a_served_daemon_talks_over_the_stand_ins_pipes_and_obeys_its_signals(zygote):
    """Spark reads the daemon's port from its stdout and stops it with SIGTERM
    (stopDaemon) or by closing its stdin: the same exit codes as pyspark's own daemon."""
    for stop in (lambda d: d.send_signal(signal.SIGTERM), lambda d: d.stdin.close()):
        alone = subprocess.Popen(DAEMON, env={**zygote.env(), daemon_zygote.SOCKET_ENV: ""},
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        alone.stdout.read(4)
        assert _catches_sigterm(alone.pid)
        stop(alone)
        daemon = subprocess.Popen(DAEMON, env=zygote.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        (port,) = struct.unpack("!i", daemon.stdout.read(4))  # its port, on its stdout, as Spark reads it
        assert 0 < port < 65536
        child = zygote.served()[daemon.pid]
        assert _catches_sigterm(child)
        stop(daemon)
        assert daemon.wait(timeout=60) == alone.wait(timeout=60) == 1  # pyspark's daemon exits 1 either way
        assert _gone(child)


def test_a_child_killed_by_a_signal_kills_its_stand_in_by_the_same_signal(zygote):
    """Spark sees its Python process end as the process that ran the work ended."""
    daemon = subprocess.Popen(DAEMON, env=zygote.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    daemon.stdout.read(4)
    os.kill(zygote.served()[daemon.pid], signal.SIGKILL)  # e.g. the kernel's OOM killer
    assert daemon.wait(timeout=60) == -signal.SIGKILL


def test_a_worker_that_kills_its_own_group_kills_only_itself(zygote, tmp_path):
    """A plain worker (the streaming source's runner) connects back to Spark and reports
    its pid; the streaming fault SIGKILLs the worker's own process group. Served, that
    group is the child's own, never the zygote's."""
    import socket

    path = str(tmp_path / "spark.sock")  # what the JVM listens on (no secret: a Unix socket)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as spark:
        spark.bind(path)
        spark.listen(1)
        worker = subprocess.Popen([sys.executable, "-m", "pyspark.worker"],
                                  env=zygote.env(PYTHON_WORKER_FACTORY_SOCK_PATH=path))
        conn, _ = spark.accept()
        with conn:
            (pid,) = struct.unpack("!i", conn.recv(4, socket.MSG_WAITALL))  # the pid Spark kills by
            assert pid == zygote.served()[worker.pid]
            assert os.getpgid(pid) == pid != os.getpgid(zygote.process.pid)
            os.killpg(pid, signal.SIGKILL)
            assert worker.wait(timeout=60) == -signal.SIGKILL
    assert zygote.process.poll() is None  # still serving
    assert subprocess.run(FIND_SPARK_HOME, env=zygote.env(), capture_output=True, timeout=60).returncode == 0


def test_a_killed_stand_in_leaves_no_daemon_once_spark_is_gone(zygote):
    """The fault tests SIGKILL the job's process group: the stand-in dies with the JVM,
    and the daemon, in a group of its own as pyspark's is, stops when its stdin ends."""
    spark = subprocess.Popen(DAEMON, env=zygote.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             start_new_session=True)
    spark.stdout.read(4)
    child = zygote.served()[spark.pid]
    os.killpg(spark.pid, signal.SIGKILL)
    spark.wait(timeout=60)
    assert not _gone(child, within=1)  # Spark's pipe is still open here (this test holds it)
    spark.stdin.close()
    spark.stdout.close()
    assert _gone(child)


def test_what_it_must_not_serve_starts_as_usual(zygote, tmp_path):
    """Interpreter flags, another hash seed, a module outside pyspark, no zygote: each
    process runs by itself and does its work."""
    cases = {
        "flags": ([sys.executable, "-u", "-m", "pyspark.find_spark_home"], zygote.env()),
        "seed": (FIND_SPARK_HOME, zygote.env(PYTHONHASHSEED="123")),
        "module": ([sys.executable, "-m", "json.tool", "--help"], zygote.env()),
        "no zygote": (FIND_SPARK_HOME, zygote.env(**{daemon_zygote.SOCKET_ENV: str(tmp_path / "none.sock")})),
    }
    for name, (command, env) in cases.items():
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout.strip(), (name, proc.stderr)
    assert zygote.served() == {}
    assert "refused python -m pyspark.find_spark_home" in zygote.log.read_text()
    assert "another hash seed" in zygote.log.read_text()


@pytest.mark.skipif(not os.access("/sys/fs/cgroup/cpuacct", os.W_OK), reason="needs a writable cgroup v1 cpuacct")
def test_the_served_process_joins_the_stand_ins_cgroup(zygote, tmp_path):
    """Per-test CPU (support/cpu_accounting.py) counts what a test started: the child
    the zygote forks moves into the cgroup of the process Spark started."""
    group = Path("/sys/fs/cgroup/cpuacct") / f"zygote-test-{os.getpid()}"
    group.mkdir()
    try:
        proc = subprocess.Popen(DAEMON, env=zygote.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
        proc.stdout.read(4)
        child = zygote.served()[proc.pid]
        assert str(child) in (group / "cgroup.procs").read_text().split()
        proc.stdin.close()
        proc.wait(timeout=60)
        assert _gone(child)
    finally:
        deadline = time.monotonic() + 10
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        group.rmdir()


@pytest.mark.parametrize("code", [None, 0, 3, 255, "a message: stop", ["not", "a", "number"]])
def test_a_served_module_that_exits_ends_as_python_would(code, capfd):
    """``sys.exit(code)`` in a served module: the status and what goes to stderr are
    Python's own for the same code (a text is printed and the status is 1)."""
    python = subprocess.run([sys.executable, "-c", f"raise SystemExit({code!r})"], capture_output=True, text=True)
    status = daemon_zygote.exit_status(SystemExit(code))
    assert (status, capfd.readouterr().err) == (python.returncode, python.stderr)
