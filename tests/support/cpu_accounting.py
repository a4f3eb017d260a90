"""Per-test CPU of everything a test starts: a pytest plugin for finding where the suite's time goes.

Wall time misleads on the two-core machine: a test that waits on a spark-submit looks as
slow as one that computes, and either is slowed by whatever the other xdist worker runs.
CPU is what the suite runs out of. This plugin puts each test process (the controller
or an xdist worker) into a cgroup of its own (cgroup v1 ``cpuacct``), which every process
it starts inherits: JVMs, Spark's Python daemons and workers, spark-submit drivers,
Airflow's components, the S3 server. A test's CPU is the cgroup's usage after it minus
before it (setup and teardown included), recorded as the junit property ``cpu_s``;
the session's total is printed at the end.

Shared servers started by a fixture (the Spark Connect server, the session's JVM) are
children too: their CPU lands on whichever tests run while they work, which is where
it belongs. Processes left running after their test (an idle daemon's timers) leak a
little into the next tests.

Use: ``bash scripts/test.sh -p tests.support.cpu_accounting --junitxml=run.xml``, then
``python benchmarks/junit_cpu.py run.xml``. Needs a writable
``/sys/fs/cgroup/cpuacct`` (root on a cgroup-v1 host); without one it stops the run
with a message saying so rather than report nothing.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

ROOT = Path("/sys/fs/cgroup/cpuacct")
PROPERTY = "cpu_s"


def _remove_stale_groups() -> None:
    """Earlier runs' groups whose test process is gone (a group is left behind when a
    child was still exiting at the end): removed when empty, else left alone."""
    for group in ROOT.glob("paimon-tests-*-*"):
        pid = group.name.rsplit("-", 1)[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                group.rmdir()


def _group_for(name: str) -> Path:
    group = ROOT / f"paimon-tests-{name}-{os.getpid()}"
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as exc:
        raise pytest.UsageError(
            f"support.cpu_accounting needs a writable cgroup-v1 cpuacct hierarchy at {ROOT} "
            f"({exc}); run without '-p tests.support.cpu_accounting'"
        ) from None
    return group


class CpuAccounting:
    def __init__(self, group: Path) -> None:
        self.group = group
        self.start = self.before = self._usage()

    def _usage(self) -> int:
        return int((self.group / "cpuacct.usage").read_text())

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location) -> None:
        self.before = self._usage()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> None:
        # the teardown report is the last one made, and carries the item's properties
        # to the junit file (across xdist too): record the figure just before it is made
        if call.when == "teardown":
            item.user_properties.append((PROPERTY, f"{(self._usage() - self.before) / 1e9:.2f}"))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        total = (self._usage() - self.start) / 1e9
        terminalreporter.write_line(f"cpu_accounting: {total:.0f} CPU-s in {self.group.name}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Back to the parent group, and the group removed once empty (a process still in
        it, such as a daemon that outlives the run, keeps it: harmless)."""
        with contextlib.suppress(OSError):
            (self.group.parent / "cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()


def pytest_configure(config: pytest.Config) -> None:
    name = getattr(config, "workerinput", {}).get("workerid", "main")
    _remove_stale_groups()
    config.pluginmanager.register(CpuAccounting(_group_for(name)), "paimon-cpu-accounting")
