"""The JVM class archive's upkeep: its detached builder starts, a crashed build is
reported, stale archives are pruned (tests/support/jvm_archive.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from support import jvm_archive


def test_the_archive_builder_still_runs_as_a_script(tmp_path):
    """``start_build`` runs tests/support/jvm_archive.py as a script, where ``tests/`` is not
    on ``sys.path``: its top-level imports must resolve there (a ``support.`` import once
    failed silently in the detached builder, and every JVM of the run went without the
    archive)."""
    script = jvm_archive.__file__
    done = subprocess.run([sys.executable, "-c", f"import runpy; runpy.run_path({script!r}, run_name='x')"],
                          cwd=tmp_path, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def test_a_crashed_archive_build_is_reported_by_the_next_run(tmp_path, monkeypatch, capsys):
    """The detached builder's stderr goes to ``<archive>.log``; a run that finds no archive
    and a traceback there says so on stderr (and starts a new build)."""
    started = []
    monkeypatch.setattr(jvm_archive, "start_build", lambda archive, opts: started.append(archive))
    monkeypatch.setenv(jvm_archive.ENV, "1")
    flags = jvm_archive.archive_flags("-XX:+UseSerialGC", folder=str(tmp_path))
    assert started and "crashed" not in capsys.readouterr().err  # no log yet: quiet
    archive = started[0]
    Path(archive + ".log").write_text("Traceback (most recent call last):\nModuleNotFoundError: No module named 'x'\n")
    assert jvm_archive.archive_flags("-XX:+UseSerialGC", folder=str(tmp_path)) == flags
    err = capsys.readouterr().err
    assert "its last build crashed" in err and "No module named 'x'" in err
    assert len(started) == 2


def test_a_new_archive_prunes_the_ones_nobody_used_for_days(tmp_path):
    now = time.time()
    keep = tmp_path / "spark-new.jsa"
    old = tmp_path / "spark-old.jsa"
    read_lately = tmp_path / "spark-read.jsa"
    other = tmp_path / "notes.txt"
    for path in (keep, old, read_lately, other, tmp_path / "spark-old.jsa.lock", tmp_path / "spark-old.jsa.log"):
        path.write_text("x")
    week_ago = now - 7 * 24 * 3600
    for path in (keep, old, other):
        os.utime(path, (week_ago, week_ago))
    os.utime(read_lately, (now - 3600, week_ago))  # read an hour ago (atime), written long ago
    assert jvm_archive.prune(str(tmp_path), keep=str(keep), now=now) == [str(old)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "spark-new.jsa", "spark-read.jsa"]
