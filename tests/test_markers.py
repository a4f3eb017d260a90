"""The markers say what a test starts (tests/markers.py), and the guard holds them to it."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest
from markers import GUARD_ENV, _marker_guard, _starts_spark, kinds_of


def _item(fixtures=(), marks=()):
    return SimpleNamespace(fixturenames=list(fixtures),
                           iter_markers=lambda: [SimpleNamespace(name=m) for m in marks])


@pytest.mark.parametrize(
    ("fixtures", "marks", "rel", "kinds"),
    [
        (["warehouse"], [], "tests/paimon/test_x.py", set()),
        (["spark", "warehouse"], [], "tests/paimon/test_x.py", {"spark"}),
        (["warehouse"], [], "tests/streaming/test_x.py", {"spark"}),  # child-process streams
        (["wh", "no_submit"], [], "tests/airflow/test_x.py", {"airflow"}),
        (["wh"], [], "tests/airflow/test_x.py", {"airflow", "submit", "spark"}),
        (["browser"], [], "tests/ui/test_y.py", {"airflow", "browser"}),
        ([], ["postgres"], "tests/lineage/test_x.py", {"db"}),
        (["mysql_server_url"], [], "tests/lineage/test_x.py", {"db"}),
        (["connect_spark"], [], "tests/airflow/test_x.py", {"airflow", "submit", "spark", "connect"}),
        (["warehouse"], [], "tests/connect/test_x.py", {"spark", "connect"}),
    ],
)
def test_kinds_come_from_fixtures_folders_and_marks(fixtures, marks, rel, kinds):
    assert kinds_of(_item(fixtures, marks), rel) == kinds


def test_the_guard_fails_an_unmarked_test_that_starts_spark(monkeypatch):
    assert _starts_spark(["/venv/bin/spark-submit", "--master", "local[1]", "job.py"])
    assert _starts_spark(["java", "-version"]) and not _starts_spark(["python", "-c", "1"])
    monkeypatch.setenv(GUARD_ENV, "1")
    request = SimpleNamespace(node=SimpleNamespace(nodeid="t::unmarked", iter_markers=lambda: []))
    with pytest.MonkeyPatch.context() as patch:
        guard = _marker_guard.__wrapped__(request, patch)
        next(guard)
        with pytest.raises(AssertionError, match=r"t::unmarked starts Spark .* add pytest.mark.spark"):
            subprocess.Popen(["java", "-version"])
        assert subprocess.run(["true"]).returncode == 0  # anything else still runs
