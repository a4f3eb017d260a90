"""Spark's Python worker daemon with the ``paimon`` source's libraries imported once.

Why: Spark forks every Python worker from a daemon process (one per session and kind
of work), and a new worker imports what its work needs: pyarrow, pandas, polars,
pypaimon's catalog and write path, SQLAlchemy, and pyspark's own worker modules (from
Spark's ``pyspark.zip``, compiled from source each time). That is seconds of CPU per
worker on a loaded server, paid by the first work of every new Connect session and
again whenever the server stopped its idle workers (after one minute). Imported once in
the daemon, before it forks, they are in every worker from its start (a fork copies
the process): the worker only imports this package itself (shipped by the client).

A server admin turns it on (docs/connect.md, "Preloading the workers' libraries"):

* ``spark.python.daemon.module=paimon_worker_preload`` (this file copied onto the
  server Python's path under that name; or ``airflow_provider_paimon.spark.worker_preload``
  where the package is installed): Spark runs this module, with the worker module as
  its argument, as the daemon of the *tasks'* workers (``main``);
* and/or a startup hook (``preload_if_daemon``, from a ``.pth`` file or
  ``sitecustomize``) for the daemons Spark 4.3 always starts as ``pyspark.daemon``:
  those of the data source's planning steps on the driver (creating the source,
  its reader and writer, the commit), which take no daemon module.

Safety, because a daemon that does not start stops all Python work of the server:

* every import is guarded: a library that is missing or fails to import is skipped
  (the worker imports it itself, as without preloading), reported on stderr once;
* the daemon's stdout is its channel to Spark (it writes its port there): whatever a
  library prints while importing goes to stderr;
* imports only, nothing is run before the fork. pyspark's own daemon imports its worker
  module after the fork because pandas and pyarrow start threads; what these imports
  start are jemalloc's background threads (pyarrow, polars), OpenBLAS's (numpy) and
  polars' spill-cleanup thread, which a forked worker simply lacks: jemalloc and
  OpenBLAS handle fork, and polars starts its thread pool lazily, in the worker. The
  suite runs all its Connect tests (batch, streaming, lineage) on such daemons;
* this module imports nothing of its package, and drops its package's modules before
  forking when it was run from an installed package: the workers must import the
  version the client shipped, not the server's.

pyspark itself: Spark puts its ``pyspark.zip`` first on the workers' path, and a zip's
modules are compiled from source by every process that imports them (no bytecode
cache). When the server's Python has pyspark installed in the very same version (the
same ``pyspark/version.py``; a pip-installed pyspark *is* that zip's source), the
daemon takes the zip off its path and imports the installed copy, with its bytecode.

``PAIMON_WORKER_PRELOAD`` (comma-separated module names) replaces the default list;
empty: nothing is preloaded. Imports no Airflow, and only the standard library at the top.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
import zipfile
from collections.abc import Iterable, Iterator

__all__ = [
    "DEFAULT_MODULES",
    "PRELOAD_ENV",
    "is_pyspark_daemon",
    "main",
    "modules_to_preload",
    "prefer_installed_pyspark",
    "preload",
    "preload_if_daemon",
]

#: replaces ``DEFAULT_MODULES`` when set (comma-separated; empty: preload nothing)
PRELOAD_ENV = "PAIMON_WORKER_PRELOAD"

#: what a ``paimon`` read or write imports, heaviest first (pypaimon's catalog pulls
#: pandas, polars and pyarrow.dataset); measured in benchmarks/worker_preload.py
DEFAULT_MODULES: tuple[str, ...] = (
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.dataset",
    "pyarrow.fs",
    "pyarrow.parquet",
    "pandas",
    "polars",
    "pypaimon",
    "pypaimon.catalog.catalog_factory",
    "pypaimon.catalog.filesystem_catalog_loader",
    "pypaimon.filesystem.local_file_io",
    "pypaimon.write.commit.fixed_bucket_commit_check",
    "sqlalchemy",  # the lineage layer's store
    "pyspark.worker",
    "pyspark.sql.datasource",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.plan_data_source_read",
    "pyspark.sql.worker.write_into_data_source",
    "pyspark.sql.worker.commit_data_source_write",
)

#: the daemon Spark starts when no daemon module is configured
_PYSPARK_DAEMON = "pyspark.daemon"


def modules_to_preload(served: str | None = None) -> list[str]:
    """The modules to import: ``PAIMON_WORKER_PRELOAD`` or the default list, plus the
    worker module this daemon serves (``served``: what Spark passes as its argument);
    none at all when ``PAIMON_WORKER_PRELOAD`` is set empty."""
    raw = os.environ.get(PRELOAD_ENV)
    names = list(DEFAULT_MODULES) if raw is None else [n.strip() for n in raw.split(",") if n.strip()]
    if names and served and served.startswith("pyspark") and served not in names:
        names.append(served)
    return names


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 points at stderr for the block (C-level writes included)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def prefer_installed_pyspark() -> str | None:
    """Take Spark's ``pyspark.zip`` off ``sys.path`` when the same pyspark is installed
    (byte-identical ``pyspark/version.py``); the installed copy's folder, or None (left
    as it is: pyspark already imported, no zip, none installed, another version)."""
    if "pyspark" in sys.modules:
        return None
    zips = [p for p in sys.path if os.path.basename(p) == "pyspark.zip"]
    if not zips:
        return None
    try:
        with zipfile.ZipFile(zips[0]) as archive:
            zipped = archive.read("pyspark/version.py")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for entry in sys.path:
        installed = os.path.join(entry or ".", "pyspark", "version.py")
        if entry in zips or not os.path.isfile(installed):
            continue
        with open(installed, "rb") as source:
            if source.read() != zipped:
                return None
        sys.path[:] = [p for p in sys.path if p not in zips]
        return entry
    return None


def preload(names: Iterable[str]) -> dict[str, str]:
    """Import ``names``; the ones that failed, each with its error (never raises)."""
    failed: dict[str, str] = {}
    names = list(names)
    if not names:  # PAIMON_WORKER_PRELOAD="": the daemon as pyspark's own
        return failed
    with contextlib.suppress(Exception):
        prefer_installed_pyspark()
    with _stdout_to_stderr():
        for name in names:
            try:
                importlib.import_module(name)
            except Exception as err:  # noqa: BLE001 - a missing library must not stop the daemon
                failed[name] = f"{type(err).__name__}: {err}"
        if failed:
            print(f"paimon worker preload: skipped {', '.join(f'{k} ({v})' for k, v in failed.items())}",
                  file=sys.stderr, flush=True)
    _forget_own_package()
    # The preloaded objects go to the collector's permanent generation: a forked worker's
    # collections then never write to their headers, so their pages stay shared with the
    # daemon instead of being copied into every worker (Python's documented use of freeze).
    gc.collect()
    gc.freeze()
    return failed


def _forget_own_package() -> None:
    """Drop this module's package from ``sys.modules`` (run from an installed package):
    the workers import the package the client shipped, which a module already in
    ``sys.modules`` would shadow."""
    spec = globals().get("__spec__")
    name = getattr(spec, "name", None) or __name__
    top = name.split(".")[0] if "." in name else None
    if not top:
        return
    for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
        del sys.modules[key]


def is_pyspark_daemon(cmdline: list[str]) -> bool:
    """Whether ``cmdline`` starts Spark's default worker daemon (``python -m pyspark.daemon``)."""
    return _PYSPARK_DAEMON in _module_args(cmdline)[:1]


def _module_args(cmdline: list[str]) -> list[str]:
    """What follows ``-m`` in ``cmdline`` (the module and its arguments), or []."""
    return cmdline[cmdline.index("-m") + 1:] if "-m" in cmdline else []


def _this_cmdline() -> list[str]:
    orig = getattr(sys, "orig_argv", None)  # Python 3.10+
    if orig:
        return list(orig)
    try:
        with open("/proc/self/cmdline", "rb") as raw:
            return [a.decode(errors="replace") for a in raw.read().split(b"\0") if a]
    except OSError:
        return []


def preload_if_daemon() -> None:
    """The startup hook: in a ``pyspark.daemon`` process preload; anywhere else nothing.

    For a ``.pth`` file or ``sitecustomize`` of the server's Python. Never raises.
    """
    with contextlib.suppress(Exception):
        cmdline = _this_cmdline()
        if is_pyspark_daemon(cmdline):
            served = _module_args(cmdline)[1:2]
            preload(modules_to_preload(served[0] if served else None))


def main() -> None:
    """Preload, then run pyspark's own daemon (which forks the workers)."""
    preload(modules_to_preload(sys.argv[1] if len(sys.argv) > 1 else None))
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
