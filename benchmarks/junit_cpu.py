"""Where a test run's CPU went, from a junit file written with ``-p tests.support.cpu_accounting``.

Prints the run's CPU and wall totals, then by folder, by file and the slowest tests, each
with CPU-s (everything the test started: JVMs, Spark's Python workers, Airflow
components) beside wall-s. On the two-core machine CPU is the budget: a file with much
wall and little CPU waits on something, one with CPU near its wall computes.

    python benchmarks/junit_cpu.py run.xml [--top N]
    python benchmarks/junit_cpu.py before.xml after.xml   # two runs side by side
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET

PROPERTY = "cpu_s"


def load(path: str) -> dict[str, tuple[float, float]]:
    """test id -> (cpu_s, wall_s); cpu is 0 for a file written without the plugin."""
    tests = {}
    for case in ET.parse(path).iter("testcase"):
        cpu = 0.0
        for prop in case.iter("property"):
            if prop.get("name") == PROPERTY:
                cpu = float(prop.get("value") or 0)
        tests[f"{case.get('classname')}::{case.get('name')}"] = (cpu, float(case.get("time") or 0))
    return tests


def _file_of(test_id: str) -> str:
    module = test_id.split("::")[0]
    return ".".join(p for p in module.split(".") if not p[:1].isupper())


def _folder_of(test_id: str) -> str:
    parts = _file_of(test_id).split(".")
    return parts[1] if len(parts) > 2 else parts[0]


def _group(tests: dict[str, tuple[float, float]], key) -> dict[str, list[float]]:
    out: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for test_id, (cpu, wall) in tests.items():
        out[key(test_id)][0] += cpu
        out[key(test_id)][1] += wall
    return out


def _table(title: str, runs: list[dict[str, list[float]]], top: int) -> None:
    first = runs[0]
    names = sorted(first, key=lambda k: -first[k][0] or -first[k][1])[:top]
    print(f"\n{title}")
    for name in names:
        cols = "  ".join(f"{r.get(name, [0, 0])[0]:7.1f} {r.get(name, [0, 0])[1]:7.1f}" for r in runs)
        print(f"  {cols}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    runs = [load(f) for f in args.files]
    print("columns per run: CPU-s, wall-s")
    for path, run in zip(args.files, runs, strict=True):
        cpu = sum(c for c, _ in run.values())
        wall = sum(w for _, w in run.values())
        print(f"{path}: {len(run)} tests, {cpu:.0f} CPU-s, {wall:.0f} worker-s")
    _table("by folder", [_group(r, _folder_of) for r in runs], 40)
    _table("by file", [_group(r, _file_of) for r in runs], args.top)
    _table("tests", [{k: list(v) for k, v in r.items()} for r in runs], args.top)


if __name__ == "__main__":
    main()
