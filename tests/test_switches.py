"""The suite's environment switches fail closed: only 0 and 1 are values."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import jvm_archive, worker_preload_env
from support.switches import SwitchError, switch


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("0", False), (" 0 ", False), (" 1\n", True)])
def test_zero_and_one_are_the_values(monkeypatch, raw, expected):
    monkeypatch.setenv("PAIMON_TEST_SOME_SWITCH", raw)
    assert switch("PAIMON_TEST_SOME_SWITCH", default=not expected) is expected


@pytest.mark.parametrize("default", [True, False])
def test_unset_is_the_default(monkeypatch, default):
    monkeypatch.delenv("PAIMON_TEST_SOME_SWITCH", raising=False)
    assert switch("PAIMON_TEST_SOME_SWITCH", default=default) is default


@pytest.mark.parametrize("raw", ["false", "off", "no", "true", "", "2", "00"])
def test_anything_else_is_an_error_naming_the_switch(monkeypatch, raw):
    monkeypatch.setenv("PAIMON_TEST_SOME_SWITCH", raw)
    with pytest.raises(SwitchError, match=r"PAIMON_TEST_SOME_SWITCH=.*set PAIMON_TEST_SOME_SWITCH=1 \(on\)"):
        switch("PAIMON_TEST_SOME_SWITCH", default=True)


def test_the_jvm_archive_switch_fails_closed(monkeypatch):
    monkeypatch.setenv(jvm_archive.ENV, "off")
    with pytest.raises(SwitchError, match=jvm_archive.ENV):
        jvm_archive.archive_flags("-XX:+UseSerialGC")
    monkeypatch.setenv(jvm_archive.ENV, "0")
    assert jvm_archive.archive_flags("-XX:+UseSerialGC") == ""


def test_the_worker_preload_switch_fails_closed(monkeypatch):
    monkeypatch.setenv(worker_preload_env.SWITCH_ENV, "false")
    with pytest.raises(SwitchError, match=worker_preload_env.SWITCH_ENV):
        worker_preload_env.enable()
    monkeypatch.setenv(worker_preload_env.SWITCH_ENV, "0")
    assert worker_preload_env.enable() is None


def test_the_archive_builder_still_runs_as_a_script(tmp_path):
    """``start_build`` runs tests/support/jvm_archive.py as a script, where ``tests/`` is not
    on ``sys.path``: its top-level imports must resolve there (a ``support.`` import once
    failed silently in the detached builder, and every JVM of the run went without the
    archive)."""
    import subprocess
    import sys

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
    import os
    import time

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
