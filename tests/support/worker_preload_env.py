"""The suite's Spark Python workers start from daemons that preload their libraries.

Spark forks each Python worker from a daemon, and every new worker imports what the
``paimon`` source needs (pyarrow, pandas, polars, pypaimon, SQLAlchemy): seconds of CPU
per worker, paid again whenever Spark stops idle workers (after a minute). The package's
``spark/worker_preload.py`` imports them once in the daemon, before it forks
(docs/connect.md, "Preloading the workers' libraries"). The suite configures its local
Spark as a Spark admin would (the Connect server does the same in
``tests/connect_server.py``):

* ``spark-defaults.conf`` in a ``SPARK_CONF_DIR`` of the run names the module as
  ``spark.python.daemon.module`` (the tasks' daemons of the local sessions, of every
  spark-submit the tests run and of the standalone cluster's jobs); a ``SPARK_CONF_DIR``
  set before keeps its own defaults, ours are added after them;
* a ``sitecustomize`` on ``PYTHONPATH`` calls ``preload_if_daemon`` (the planner's
  daemons, which Spark 4.3 starts as plain ``pyspark.daemon``; it does nothing in any
  other process).

Measured 2026-11-27 (same files A/B, one process each, interleaved, CPU of the whole
process tree from a cgroup): tests/spark/test_spark_datasource_partitions.py +
tests/capture/test_capture_spark.py 118.9 / 115.2 CPU-s without, 84.2 / 76.9 with (-31%);
wall 109 / 97 s vs 82 / 73 s; peak memory of the tree 1.86 GB both ways.

Memory: the first try (d6e5f1a, reverted) ran the 24 GB machine out of memory, when a
long-lived session kept one set of daemons per lineage capture (61 daemons on one JVM);
captures now route their workers without a new environment (spark/lineage/routing_state.py),
so a session keeps one set, and the daemon freezes what it preloaded (``gc.freeze``) so its
workers' collections do not copy those pages.

The module is copied under the name an admin installs it as (``paimon_worker_preload``),
so the daemons do not import this checkout's package. ``PAIMON_TEST_WORKER_PRELOAD=0``
runs the suite on Spark's own daemons. Tests assert behaviour, not import timing, so
they hold either way; the Connect preload tests (``tests/connect/test_worker_preload.py``)
check the mechanism itself.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

PACKAGE_SOURCE = Path(__file__).resolve().parents[2] / "airflow_provider_paimon" / "spark" / "worker_preload.py"
MODULE = "paimon_worker_preload"
SWITCH_ENV = "PAIMON_TEST_WORKER_PRELOAD"
MARK_ENV = "PAIMON_TEST_WORKER_PRELOAD_DIR"  # set once: xdist workers inherit it


def enable() -> str | None:
    """Configure this process's environment (and its children's); the folder, or None."""
    if os.environ.get(SWITCH_ENV, "1").strip() == "0":
        return None
    if os.environ.get(MARK_ENV):
        return os.environ[MARK_ENV]  # the controller did it; its children inherit it
    root = tempfile.mkdtemp(prefix="paimon-tests-preload-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    site = Path(root, "site")
    conf = Path(root, "spark-conf")
    site.mkdir()
    conf.mkdir()
    shutil.copyfile(PACKAGE_SOURCE, site / f"{MODULE}.py")
    (site / "sitecustomize.py").write_text(f"import {MODULE}\n\n{MODULE}.preload_if_daemon()\n")
    defaults = []
    previous = os.environ.get("SPARK_CONF_DIR")
    if previous:
        for name in os.listdir(previous):  # log4j2.properties and the like come along
            if os.path.isfile(os.path.join(previous, name)):
                shutil.copyfile(os.path.join(previous, name), conf / name)
        if (conf / "spark-defaults.conf").is_file():
            defaults.append((conf / "spark-defaults.conf").read_text())
    defaults.append(f"spark.python.daemon.module {MODULE}\n")
    (conf / "spark-defaults.conf").write_text("\n".join(defaults))
    os.environ["SPARK_CONF_DIR"] = str(conf)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    os.environ[MARK_ENV] = root
    return root
