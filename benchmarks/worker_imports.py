"""Benchmark: the imports one Python worker of the ``paimon`` source pays, per way of starting it.

A Spark Python worker forked from a daemon imports pyspark's worker modules (from
Spark's ``pyspark.zip``: compiled from source, a zip gets no bytecode cache), the
libraries the source needs (pyarrow, pandas, polars, pypaimon, SQLAlchemy) and this
package from the zip the client shipped. Measured here without Spark, as the CPU time
a forked child spends importing what a write worker imports (``source``, ``writer``,
``task_write`` and pypaimon's catalog), for:

* daemon: ``pyspark.daemon`` (nothing preloaded) or ``worker_preload`` (the libraries
  imported before the fork: ``spark/worker_preload.py``);
* the package zip: sources only (as before) or with bytecode (``packaging``).

And what a preloading daemon itself spends importing before it forks (once per session
and kind of work), with pyspark from Spark's zip or from the installed copy of the same
version (``worker_preload.prefer_installed_pyspark``).

Each sample is a fresh interpreter (the "daemon") that forks one child (the "worker");
variants interleave; medians of ``--repeat`` samples, CPU seconds (what load inflates
least), with the ratios to the old way (``pyspark.daemon``, sources only) and the load
average.

    python benchmarks/worker_imports.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# the "daemon": preload (or not), fork, and in the child import what a write worker does
CHILD = r'''
import os, sys, time
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "airflow_provider_paimon"))]
if sys.argv[2] == "preload":
    sys.path.insert(0, sys.argv[3])
    import worker_preload
    worker_preload.preload(worker_preload.modules_to_preload("pyspark.worker"))
    sys.path.remove(sys.argv[3])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    started = time.process_time()
    import pyspark.worker, pyspark.sql.worker.write_into_data_source  # what the worker module loads
    sys.path.insert(1, sys.argv[1])  # the session's package zip, as pyspark's worker adds it
    import airflow_provider_paimon.spark.datasource.source
    import airflow_provider_paimon.spark.datasource.writer
    import airflow_provider_paimon.spark.datasource.task_write
    import pypaimon.catalog.catalog_factory
    os.write(w, f"{time.process_time() - started:.4f}".encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(r, 64).decode())
'''


# a preloading daemon's own imports, pyspark from the zip or the installed copy
DAEMON = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
import worker_preload
sys.path.remove(sys.argv[1])
if sys.argv[2] == "zip":
    worker_preload.prefer_installed_pyspark = lambda: None
started = time.process_time()
worker_preload.preload(worker_preload.modules_to_preload("pyspark.worker"))
print(f"{time.process_time() - started:.4f}")
'''


def zips(folder: Path) -> dict[str, str]:
    """{"sources only": zip, "with bytecode": zip} of this package."""
    from airflow_provider_paimon.packaging import build_py_files_zip

    with_bytecode = build_py_files_zip(folder)
    sources = folder / "sources-only.zip"
    with zipfile.ZipFile(with_bytecode) as src, zipfile.ZipFile(sources, "w", zipfile.ZIP_DEFLATED) as out:
        for name in src.namelist():
            if not name.endswith(".pyc"):
                out.writestr(name, src.read(name))
    return {"sources only": str(sources), "with bytecode": with_bytecode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sorted(lib.glob("*.zip")))}
    preload_dir = str(ROOT / "airflow_provider_paimon" / "spark")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")
    with tempfile.TemporaryDirectory(prefix="paimon-bench-imports-") as tmp:
        packages = zips(Path(tmp))
        variants = [(daemon, package) for daemon in ("pyspark.daemon", "worker_preload") for package in packages]
        cpu: dict[tuple[str, str], list[float]] = {v: [] for v in variants}
        daemon_cpu: dict[str, list[float]] = {"zip": [], "installed": []}
        for _ in range(args.repeat):
            for source in daemon_cpu:
                out = subprocess.run([sys.executable, "-c", DAEMON, preload_dir, source], env=env,
                                     capture_output=True, text=True, check=True, cwd=tmp)
                daemon_cpu[source].append(float(out.stdout.strip().splitlines()[-1]))
            for daemon, package in variants:
                mode = "preload" if daemon == "worker_preload" else "plain"
                out = subprocess.run([sys.executable, "-c", CHILD, packages[package], mode, preload_dir],
                                     env=env, capture_output=True, text=True, check=True, cwd=tmp)
                cpu[(daemon, package)].append(float(out.stdout.strip().splitlines()[-1]))
    base = statistics.median(cpu[("pyspark.daemon", "sources only")])
    print("one write worker's imports after the fork, CPU seconds (median), and old / this:")
    for (daemon, package), values in cpu.items():
        median = statistics.median(values)
        print(f"  {daemon:15s} package {package:14s} {median:6.3f} s  {base / median:5.1f}x")
    zipped = statistics.median(daemon_cpu["zip"])
    print("a preloading daemon's own imports, CPU seconds (median), and zip / this:")
    for source, values in daemon_cpu.items():
        print(f"  pyspark from {source:9s} {statistics.median(values):6.3f} s  {zipped / statistics.median(values):5.1f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
