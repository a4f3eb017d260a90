"""tests/support/capture_streams.py: a logging handler left on pytest's captured stderr
does not turn the last log records of the run into "--- Logging error ---" tracebacks.

The reproduction is what happened in the suite: a handler put on ``sys.stderr`` while
pytest captured it, and a record logged at interpreter exit (py4j's goodbye).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LEFT_BEHIND = '''
import atexit
import logging
import sys

logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))
logging.getLogger().setLevel(logging.INFO)
atexit.register(lambda: logging.getLogger("py4j.clientserver").info("Closing down clientserver connection"))


def test_nothing():
    pass
'''


def _run(folder: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "test_left_behind.py"],
        cwd=folder, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(TESTS)}, capture_output=True, text=True,
        timeout=120,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "test_left_behind.py").write_text(LEFT_BEHIND)
    return tmp_path


def test_a_handler_on_the_captured_stream_is_taken_off_when_pytest_ends(folder):
    without = _run(folder)
    assert without.returncode == 0 and "--- Logging error ---" in without.stderr  # the defect, reproduced
    with_plugin = _run(folder, "-p", "support.capture_streams")
    assert with_plugin.returncode == 0, with_plugin.stdout + with_plugin.stderr
    assert "Logging error" not in with_plugin.stdout + with_plugin.stderr
