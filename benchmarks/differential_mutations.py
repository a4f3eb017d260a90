"""Measurement: how many differential cases a run needs to catch a reader defect.

The differential read tests (tests/spark/test_spark_differential.py) compare the
``paimon`` source with Spark's own Parquet on generated cases; ``PAIMON_DIFF_CASES``
sets how many. This script chooses that number by measurement instead of by feel.

It injects known kinds of reader defect (``MUTANTS``: the lost-rows defect the tests
were written for, and the conversion and pruning slips a reader of Arrow batches
typically makes) into a copy of the package, one at a time, and runs the same cases
the tests run (``tests/spark/differential.py``: ``build_world`` and ``compare``) on
each. Every mutant runs in a process of its own with its own local Spark, whose driver
and Python workers import the mutated copy (``PYTHONPATH``). A control run without a
mutation must pass every case, or the figures mean nothing.

For each mutant and group it prints the fraction of cases that catch the defect, and
for each candidate case count the chance that one run catches nothing:
``prod over groups (1 - p_group) ** cases_in_group``. The cases change every day
(``PAIMON_DIFF_BASE``), so a defect one run misses meets new cases the next day.

    python benchmarks/differential_mutations.py [--per-group 24] [--mutants a,b] [--counts 60,40,30,20,12]

The study uses its own seeds (``--base``, default 9,000,000), apart from any day's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "airflow_provider_paimon"
# the tests' cases; differential imports the package only inside build_world, so a child
# still gets the mutated copy that PYTHONPATH puts first
sys.path.insert(0, str(ROOT / "tests" / "spark"))

from differential import GROUPS, SNAPSHOTS, build_world, compare  # noqa: E402


@dataclass(frozen=True)
class Mutant:
    """A defect: code appended to one module of a copy of the package."""

    name: str
    module: str  # path under the package
    code: str
    models: str


_CONFORM = '''
import pyarrow.compute as _mut_pc

_mut_conform = conform_batch


def conform_batch(batch, target):
    batch = _mut_conform(batch, target)
    columns = [_mut_column(column, field) for column, field in zip(batch.columns, batch.schema)]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)
'''

MUTANTS = [
    Mutant(
        "pushdown-leak", "spark/datasource/reader.py", '''
from pyspark.sql.datasource import EqualTo as _MutEqualTo, In as _MutIn


def _mut_push_filters(self, filters):
    keys = list(self._planning_table().partition_keys)
    self.mut_pushed = []
    for flt in filters:
        if isinstance(flt, (_MutEqualTo, _MutIn)) and len(flt.attribute) == 1 and flt.attribute[0] in keys:
            values = flt.value if isinstance(flt, _MutIn) else (flt.value,)
            self.mut_pushed.append((flt.attribute[0], tuple(values)))
        yield flt


_mut_plan = PaimonReader.plan


def _mut_pruned_plan(self):
    splits, snapshot_id = _mut_plan(self)
    pushed = getattr(self, "mut_pushed", [])
    if pushed:
        keys = list(self._planning_table().partition_keys)
        splits = [s for s in splits
                  if all(dict(zip(keys, s.partition.values))[k] in values for k, values in pushed)]
    return splits, snapshot_id


PaimonReader.pushFilters = _mut_push_filters
PaimonReader.plan = _mut_pruned_plan
''', "the defect the tests were written for: partitions pruned by the filters Spark pushed for one "
        "query (and handed back to Spark), which Spark 4 reuses for later queries on the same DataFrame"),
    Mutant(
        "empty-string-as-null", "spark/datasource/types.py", _CONFORM + '''

def _mut_column(column, field):
    if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
        return _mut_pc.if_else(_mut_pc.equal(column, ""), pa.scalar(None, field.type), column)
    return column
''', "'' read as NULL (a common text-conversion slip)"),
    Mutant(
        "nan-as-null", "spark/datasource/types.py", _CONFORM + '''

def _mut_column(column, field):
    if pa.types.is_floating(field.type):
        return _mut_pc.if_else(_mut_pc.is_nan(column), pa.scalar(None, field.type), column)
    return column
''', "NaN read as NULL"),
    Mutant(
        "null-struct-as-struct-of-nulls", "spark/datasource/types.py", _CONFORM + '''

def _mut_column(column, field):
    if pa.types.is_struct(field.type):
        children = column.flatten()
        return pa.StructArray.from_arrays(children, fields=list(field.type))
    return column
''', "a NULL struct read as a struct whose fields are NULL (validity bitmap lost)"),
    Mutant(
        "empty-array-as-null", "spark/datasource/types.py", _CONFORM + '''

def _mut_column(column, field):
    if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        return pa.array([None if v == [] else v for v in column.to_pylist()], type=field.type)
    return column
''', "an empty array read as NULL"),
    Mutant(
        "timestamp-millis", "spark/datasource/types.py", _CONFORM + '''

def _mut_column(column, field):
    if pa.types.is_timestamp(field.type):
        unit = pa.timestamp("ms", tz=field.type.tz)
        return column.cast(unit, safe=False).cast(field.type)
    return column
''', "timestamps truncated to milliseconds (a unit slip)"),
    Mutant(
        "null-bool-as-false", "spark/datasource/types.py", _CONFORM + '''

def _mut_column(column, field):
    if pa.types.is_boolean(field.type):
        return _mut_pc.fill_null(column, False)
    return column
''', "a NULL boolean read as false"),
    Mutant(
        "partition-in-first-value", "paimon/predicates.py", '''
_mut_where_filter = where_filter


def where_filter(where, partition_types):
    import re as _re

    return _mut_where_filter(_re.sub(r"IN \\(([^,)]+),[^)]*\\)", r"IN (\\1)", where), partition_types)
''', "partition-filter: IN keeps only its first value (a parser slip)"),
]
GROUP_NAMES = tuple(GROUPS)


def snapshots_of(group: str) -> tuple[int | None, ...]:
    """The snapshots each seed of ``group`` is compared at (``time_travel``: each of ``SNAPSHOTS``)."""
    return SNAPSHOTS if group == "time_travel" else (None,)


def mutated_copy(mutant: Mutant | None, into: Path) -> Path:
    """A copy of the package under ``into`` with ``mutant``'s code appended; ``into`` for PYTHONPATH."""
    target = into / PACKAGE
    shutil.copytree(ROOT / PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        module = target / mutant.module
        if not module.exists():
            raise SystemExit(f"mutant {mutant.name}: {mutant.module} is gone from the package; update MUTANTS")
        module.write_text(module.read_text() + "\n\n# ---- injected by benchmarks/differential_mutations.py\n"
                          + mutant.code)
    return into


# -- the child: one Spark, one world, every group's cases -------------------------------------


def child(per_group: int, base: int, out: Path) -> None:
    import airflow_provider_paimon
    from airflow_provider_paimon.spark.session import local_session

    spark = local_session("differential-mutations", conf={"spark.sql.python.filterPushdown.enabled": "true"})
    results: dict[str, list[dict]] = {g: [] for g in GROUP_NAMES}
    with tempfile.TemporaryDirectory(prefix="diff-mutations-") as root:
        world = build_world(spark, Path(root))
        for group in GROUP_NAMES:
            offset = GROUPS[group][0]
            for seed in range(base + offset, base + offset + per_group):
                for snapshot in snapshots_of(group):
                    try:
                        caught = any(got != want for got, want, _ in compare(spark, world, group, seed, snapshot))
                        error = None
                    except Exception as err:  # noqa: BLE001 - a case that raises fails the test: it catches
                        caught, error = True, f"{type(err).__name__}: {str(err)[:200]}"
                    results[group].append({"seed": seed, "snapshot": snapshot, "caught": caught, "error": error})
    spark.stop()
    out.write_text(json.dumps({"package": airflow_provider_paimon.__file__, "results": results}))


# -- the parent ---------------------------------------------------------------------------------


def run(mutant: Mutant | None, per_group: int, base: int) -> dict[str, list[dict]]:
    name = mutant.name if mutant else "control"
    with tempfile.TemporaryDirectory(prefix=f"diff-mutant-{name}-") as tmp:
        copy = mutated_copy(mutant, Path(tmp) / "src")
        out = Path(tmp) / "result.json"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(copy), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
            SPARK_LOCAL_IP="127.0.0.1")
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, __file__, "--child", "--per-group", str(per_group), "--base", str(base), "--out", str(out)],
            env=env, capture_output=True, text=True, cwd=tmp,
        )
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"{name}: the run failed (exit {done.returncode})\n{done.stderr[-4000:]}")
        report = json.loads(out.read_text())
        if not report["package"].startswith(str(copy)):
            raise SystemExit(f"{name}: the child imported {report['package']}, not the mutated copy")
        print(f"  {name}: {time.monotonic() - started:.0f} s", flush=True)
        return report["results"]


def cases_in_group(group: str, count: int) -> int:
    """How many comparisons group ``group`` makes in a run whose case count is ``count``."""
    return GROUPS[group][1](count) * len(snapshots_of(group))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-group", type=int, default=24, help="seeds per group and mutant")
    parser.add_argument("--base", type=int, default=9_000_000, help="first seed (apart from any day's)")
    parser.add_argument("--mutants", default=",".join(m.name for m in MUTANTS))
    parser.add_argument("--counts", default="60,40,30,24,20,12", help="PAIMON_DIFF_CASES values to price")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.per_group, args.base, args.out)
        return
    by_name = {m.name: m for m in MUTANTS}
    unknown = [n for n in args.mutants.split(",") if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown mutant(s) {unknown}; known: {', '.join(by_name)}")
    counts = [int(c) for c in args.counts.split(",")]

    print(f"differential mutation study: {args.per_group} seeds per group, base {args.base}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    control = run(None, args.per_group, args.base)
    false_alarms = {g: [r for r in rs if r["caught"]] for g, rs in control.items()}
    if any(false_alarms.values()):
        raise SystemExit(f"the control run failed cases, so nothing can be measured: {false_alarms}")
    rates: dict[str, dict[str, float]] = {}
    for name in args.mutants.split(","):
        results = run(by_name[name], args.per_group, args.base)
        rates[name] = {g: sum(r["caught"] for r in rs) / len(rs) for g, rs in results.items()}

    print("\nfraction of cases that catch each defect, by group (control: 0 of every group)")
    print(f"{'defect':32}" + "".join(f"{g:>17}" for g in GROUP_NAMES))
    for name, by_group in rates.items():
        print(f"{name:32}" + "".join(f"{by_group[g]:>17.2f}" for g in GROUP_NAMES))

    print("\nchance that one run catches nothing, by PAIMON_DIFF_CASES (cases in the run in brackets)")
    sizes = {c: {g: cases_in_group(g, c) for g in GROUP_NAMES} for c in counts}
    print(f"{'defect':32}" + "".join(f"{f'{c} ({sum(sizes[c].values())})':>14}" for c in counts))
    for name, by_group in rates.items():
        cells = []
        for c in counts:
            miss = 1.0
            for g in GROUP_NAMES:
                miss *= (1.0 - by_group[g]) ** sizes[c][g]
            cells.append(f"{miss:>14.1e}")
        print(f"{name:32}" + "".join(cells))
    for mutant in MUTANTS:
        if mutant.name in rates:
            print(f"  {mutant.name}: {mutant.models}")


if __name__ == "__main__":
    main()
