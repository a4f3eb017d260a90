"""What the suite's daemon zygote saves a short Spark job (tests/support/daemon_zygote.py).

The job is what most of the suite's JVMs do: a fresh ``local[1]`` session (the tests' C1
+ serial-GC JVM options) creates a ``paimon`` table's data with one append through the
source and reads it back twice, then stops. It runs ``--repeat`` times without and with
the zygote, alternating so both see the same load, each run in a cgroup of its own so the
CPU counted is every process it caused: the JVM, Spark's Python daemons and workers (with
the zygote: their stand-ins and the zygote's children, which join the stand-in's cgroup).
The zygote itself is started once, before the first run, as the suite starts it once per
run (its ~3 CPU-s of imports are not counted). One warm-up pair is discarded. Prints
each run, the medians and the ratio with/without, for CPU and wall time.

Needs root and a cgroup-v1 ``cpuacct`` hierarchy (the project's VM); says so otherwise.

    python benchmarks/daemon_zygote.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

JOB = """
import sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
from support.lineage_capture import append, make_tables
from airflow_provider_paimon.spark import register
from airflow_provider_paimon.spark.session import local_session

warehouse = sys.argv[1]
catalog = make_tables(warehouse, "db.src", "db.dst")
append(catalog, "db.src", range(50))
spark = local_session("zygote-probe", master="local[1]", conf={{"spark.sql.shuffle.partitions": "1"}})
register(spark)
src = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
src.write.format("paimon").option("warehouse", warehouse).option("table", "db.dst").mode("append").save()
dst = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.dst").load()
assert dst.count() == 50 and sorted(r.id for r in dst.collect()) == list(range(50))
spark.stop()
"""


def run_job(env: dict[str, str], name: str) -> tuple[float, float]:
    """CPU seconds (whole cgroup) and wall seconds of one job."""
    group = CPUACCT / f"paimon-zygote-bench-{os.getpid()}-{name}"
    group.mkdir()
    try:
        with tempfile.TemporaryDirectory(prefix="zygote-bench-") as warehouse:
            start = time.monotonic()
            subprocess.run(
                [sys.executable, "-c", JOB.format(root=str(ROOT), tests=str(ROOT / "tests")), warehouse],
                env=env, check=True, capture_output=True, timeout=900,
                preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())),
            )
            wall = time.monotonic() - start
        deadline = time.monotonic() + 30  # daemons stop when the JVM closes their stdin
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        return int((group / "cpuacct.usage").read_text()) / 1e9, wall
    finally:
        group.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="measured pairs (after one warm-up pair)")
    args = parser.parse_args()
    if not os.access(CPUACCT, os.W_OK):
        sys.exit(f"{CPUACCT} is not writable: run as root on a cgroup-v1 host")

    from support import daemon_zygote, worker_preload_env

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["SPARK_SUBMIT_OPTS"] = JVM_OPTS
    with tempfile.TemporaryDirectory(prefix="zygote-bench-site-") as root:
        site = worker_preload_env.write_site(Path(root, "site"))
        zygote = worker_preload_env.start_zygote(site)
        try:
            socket_path = worker_preload_env.wait_until_listening(zygote)
        except RuntimeError as err:
            sys.exit(str(err))
        served = worker_preload_env.zygote_env(site, socket_path)
        envs = {"without": {**served, daemon_zygote.SOCKET_ENV: ""}, "with": served}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
        try:
            for round_ in range(args.repeat + 1):
                for name, env in envs.items():
                    cpu, wall = run_job(env, name)
                    label = "warm-up" if round_ == 0 else f"round {round_}"
                    print(f"{label:8} {name:8} CPU {cpu:6.1f} s  wall {wall:6.1f} s", flush=True)
                    if round_:
                        results[name].append((cpu, wall))
        finally:
            worker_preload_env.stop_zygote(zygote)
    print(f"\nmedians of {args.repeat} (load average {os.getloadavg()[0]:.1f}):")
    print(f"{'':10}{'CPU s':>8}{'wall s':>8}")
    med = {name: [statistics.median(v[i] for v in runs) for i in (0, 1)] for name, runs in results.items()}
    for name, (cpu, wall) in med.items():
        print(f"{name:10}{cpu:8.1f}{wall:8.1f}")
    print(f"{'with/without':10}{med['with'][0] / med['without'][0]:8.2f}{med['with'][1] / med['without'][1]:8.2f}")


if __name__ == "__main__":
    main()
