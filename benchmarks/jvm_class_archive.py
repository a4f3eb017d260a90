"""What the tests' class-data-sharing archive saves a JVM (tests/support/jvm_archive.py).

Starts a small local Spark (``local[1]``, 512 MB driver, the tests' C1 + serial-GC
options) and runs one query, ``--repeat`` times without and with the archive,
alternating so both see the same load; prints the gateway JVM's CPU seconds (read from
/proc before it stops), the Python driver's CPU and the wall time, medians, and the
ratio with/without. The archive is built first when missing (once per machine, Java
and pyspark).

    python benchmarks/jvm_class_archive.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
PROBE = """
import os, resource, sys, time
sys.path.insert(0, {root!r})
t = time.monotonic()
from airflow_provider_paimon.spark.session import local_session
spark = local_session("jvm-archive-probe", master="local[1]",
                      conf={{"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m"}})
spark.range(10).selectExpr("sum(id)").collect()
stat = open(f"/proc/{{spark.sparkContext._gateway.proc.pid}}/stat").read().rsplit(")", 1)[1].split()
jvm = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
own = resource.getrusage(resource.RUSAGE_SELF)
print(jvm, own.ru_utime + own.ru_stime, time.monotonic() - t)
spark.stop()
"""


def probe(flags: str) -> tuple[float, float, float]:
    env = dict(os.environ, SPARK_SUBMIT_OPTS=f"{JVM_OPTS} {flags}".strip())
    out = subprocess.run([sys.executable, "-c", PROBE.format(root=ROOT)], env=env, capture_output=True,
                         text=True, check=True, timeout=900).stdout.split()
    jvm, python, wall = (float(v) for v in out[-3:])
    return jvm, python, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from support.jvm_archive import archive_flags, build

    flags = archive_flags(JVM_OPTS)
    if not flags:
        raise SystemExit("no archive: PAIMON_TEST_JVM_ARCHIVE=0 or no java found")
    archive = flags.split()[0].split("=", 1)[1]
    if not os.path.exists(archive):
        failed = build(archive, JVM_OPTS)
        if failed:
            raise SystemExit(failed)
    runs: dict[str, list[tuple[float, float, float]]] = {"without": [], "with": []}
    for _ in range(args.repeat):
        runs["without"].append(probe(""))
        runs["with"].append(probe(flags))
    print(f"{os.uname().nodename}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{'':8} {'JVM CPU s':>10} {'Python CPU s':>13} {'wall s':>8}   (medians of {args.repeat})")
    medians = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
    for name, (jvm, python, wall) in medians.items():
        print(f"{name:8} {jvm:10.1f} {python:13.1f} {wall:8.1f}")
    ratio = [w / o if o else float("nan") for w, o in zip(medians["with"], medians["without"], strict=True)]
    print(f"{'ratio':8} {ratio[0]:10.2f} {ratio[1]:13.2f} {ratio[2]:8.2f}   (with / without)")


if __name__ == "__main__":
    main()
