"""Markers that say what a test starts, set from what it uses, and a guard that checks them.

``spark`` (a JVM: a local SparkSession or a Spark job in a child process), ``connect``
(the suite's Spark Connect server; always ``spark`` too), ``submit``
(spark-submit through the operators), ``airflow`` (Airflow's metadata DB or real Airflow
components), ``browser`` (headless Chromium), ``db`` (MariaDB or PostgreSQL). A test is
marked from the fixtures it uses and the folder it is in, so nobody has to remember to
mark it; an explicit ``pytest.mark.X`` adds to that.

The fast target (``bash scripts/test.sh --fast``) deselects spark, submit, airflow and
browser tests and sets ``PAIMON_MARKER_GUARD=1``: then a test that starts a JVM or
spark-submit without carrying ``spark`` or ``submit`` fails, naming the marker to add.
So the fast target cannot quietly grow slow, and the markers cannot quietly lie.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.switches import switch

KINDS = ("spark", "connect", "submit", "airflow", "browser", "db")

#: fixtures (anywhere in a test's fixture closure) that start each kind of part
FIXTURES = {
    "spark": {"spark", "spark_standalone", "probe", "paimon_io"},
    "connect": {"connect_server", "connect_spark"},
    "airflow": {"airflow_db"},
    "browser": {"browser"},
    "db": {"mysql_server_url", "postgres_server_url", "mysql_target"},
}

#: folders whose tests start the part in ways fixtures do not show (child processes)
FOLDERS = {
    "spark": ("tests/spark/", "tests/streaming/", "tests/capture/", "tests/e2e/", "tests/s3/"),
    "connect": ("tests/connect/",),
    "airflow": ("tests/airflow/", "tests/e2e/", "tests/ui/"),
    "submit": ("tests/e2e/",),
    "browser": ("tests/ui/test_lineage_page_browser.py",),
}

#: files that run spark-submit outside the two folders above
SUBMIT_FILES = ("tests/docs/test_shell_samples.py", "tests/s3/test_s3_airflow_submit.py")

GUARD_ENV = "PAIMON_MARKER_GUARD"


def kinds_of(item: pytest.Item, rel: str) -> set[str]:
    """The kinds ``item`` starts, from its fixtures, folder and explicit markers."""
    names = set(getattr(item, "fixturenames", ()))
    kinds = {kind for kind, fixtures in FIXTURES.items() if names & fixtures}
    kinds |= {kind for kind, prefixes in FOLDERS.items() if rel.startswith(prefixes)}
    if rel.startswith("tests/airflow/") and "no_submit" not in names:
        kinds.add("submit")  # operators there run real spark-submits unless refused
    if rel in SUBMIT_FILES:
        kinds.add("submit")
    explicit = {mark.name for mark in item.iter_markers()}
    kinds |= explicit & set(KINDS)
    if explicit & {"mysql", "postgres"}:
        kinds.add("db")
    if kinds & {"submit", "connect"}:
        kinds.add("spark")
    return kinds


def add_markers(items: list[pytest.Item], root: Path) -> None:
    for item in items:
        try:
            rel = Path(str(item.path)).relative_to(root).as_posix()
        except ValueError:
            continue
        for kind in sorted(kinds_of(item, rel) - {m.name for m in item.iter_markers()}):
            item.add_marker(getattr(pytest.mark, kind))


def _starts_spark(args: object) -> bool:
    words = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
    return any(os.path.basename(w) in ("spark-submit", "spark-class", "java") for w in words)


@pytest.fixture(autouse=True)
def _marker_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """With ``PAIMON_MARKER_GUARD=1``: a JVM started by an unmarked test fails it."""
    if not switch(GUARD_ENV, default=False):
        yield
        return
    marked = {m.name for m in request.node.iter_markers()}
    if marked & {"spark", "submit"}:
        yield
        return
    real_init = subprocess.Popen.__init__

    def guarded(self, args, *a, **k):
        if _starts_spark(args):
            raise AssertionError(
                f"{request.node.nodeid} starts Spark ({args!r}) but is not marked: add "
                "pytest.mark.spark (or submit), or list its folder in tests/markers.py"
            )
        real_init(self, args, *a, **k)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    yield
