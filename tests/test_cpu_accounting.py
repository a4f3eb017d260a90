"""The per-test CPU plugin counts what a test's child processes burn, not only its own."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support import cpu_accounting

REPO = Path(__file__).resolve().parents[1]

INNER = '''
import subprocess, sys

def test_child_burns():
    subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass"], check=True)

def test_idle():
    pass
'''


@pytest.mark.skipif(not os.access(cpu_accounting.ROOT, os.W_OK), reason="no writable cgroup-v1 cpuacct here")
def test_a_childs_cpu_is_the_tests(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    report = tmp_path / "run.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.support.cpu_accounting",
         "--rootdir", str(tmp_path), "-c", os.devnull, f"--junitxml={report}", str(tmp_path / "test_inner.py")],
        cwd=REPO, check=True, capture_output=True,
    )
    cpu = {case.get("name"): float(next(p.get("value") for p in case.iter("property")
                                        if p.get("name") == cpu_accounting.PROPERTY))
           for case in ET.parse(report).iter("testcase")}
    assert cpu["test_child_burns"] >= 0.5
    assert cpu["test_idle"] < 0.3
