"""The suite's environment switches fail closed: only 0 and 1 are values."""

from __future__ import annotations

import os

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


def test_the_daemon_zygote_switch_fails_closed(monkeypatch):
    monkeypatch.setenv(worker_preload_env.ZYGOTE_SWITCH_ENV, "off")
    pythonpath = os.environ.get("PYTHONPATH")
    with pytest.raises(SwitchError, match=worker_preload_env.ZYGOTE_SWITCH_ENV):
        worker_preload_env.enable()
    assert os.environ.get("PYTHONPATH") == pythonpath  # nothing changed
