"""Kill and restart: run a Spark job in a process group of its own until a fault SIGKILLs it.

The exactly-once tests arm a fault (``PAIMON_STREAMING_FAULT``, the streaming writer's
``FAULT_ENV``) that SIGKILLs the job's whole process group (driver, JVM, Python
workers) at a chosen point of a chosen micro-batch or compaction; the test then
restarts the query on the same checkpoint and checks every row landed exactly once.
One harness for all of them: the job runs in its own session (so the kill reaches only
it), a job that outlives the timeout is killed and the test fails, and a job that ends
any other way than by SIGKILL fails the test with the tail of its stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from airflow_provider_paimon.spark.datasource.streaming_writer import FAULT_ENV

#: the repository root (what a job script puts on ``sys.path``)
ROOT = str(Path(__file__).resolve().parents[2])
#: ``tests/streaming/stream_job.py``: a paimon -> paimon query, db.src -> db.dst
STREAM_JOB = str(Path(__file__).resolve().parents[1] / "streaming" / "stream_job.py")


def run_until_killed(command: Sequence[str], fault: str, env: Mapping[str, str] | None = None,
                     timeout: float = 600) -> int:
    """Run ``command`` armed with ``fault`` in a process group of its own; return its exit
    code, ``-SIGKILL`` (anything else fails the test, showing the job's stderr)."""
    proc = subprocess.Popen(
        list(command),
        env={**os.environ, **(env or {}), FAULT_ENV: fault},
        start_new_session=True,  # its own process group: the fault kills only the job
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    if proc.returncode != -signal.SIGKILL:
        raise AssertionError(
            f"job exited with {proc.returncode}, expected {-signal.SIGKILL} (killed by its fault):\n"
            + err.decode(errors="replace")[-3000:]
        )
    return proc.returncode


def run_stream_job(warehouse: str, checkpoint: str, fault: str, *extra: str) -> int:
    """``stream_job.py WAREHOUSE CHECKPOINT [EXTRA...]`` until ``fault`` kills it."""
    return run_until_killed([sys.executable, STREAM_JOB, warehouse, checkpoint, *extra], fault)


def run_script_until_killed(tmp_path: Path, source: str, fault: str, *args: str) -> int:
    """Write ``source`` (a job script) under ``tmp_path`` and run it with ``args`` until
    ``fault`` kills it."""
    script = Path(tmp_path) / "job.py"
    script.write_text(source)
    return run_until_killed([sys.executable, str(script), *args], fault)
