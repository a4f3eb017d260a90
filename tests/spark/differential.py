"""Generated query shapes for the differential tests: the same SQL on two DataFrames.

A case is a small program over one "source" (a function that returns a DataFrame
for the table state under test): filters of every kind Spark can push (``=``,
``<``, ``<=``, ``IN``, ``IS NULL``, ``NOT``, ``AND``/``OR``, string prefix /
suffix / contains) on partition and non-partition columns of every type, plus
filters Spark cannot push (nested fields, arrays); projections; several actions on
one DataFrame in any order; ``cache()``; views; self-joins and unions of filtered
reads of one DataFrame; aggregates and ``limit``. ``run_case`` runs a case on the
``paimon`` read and on Spark's own Parquet read of the same rows and returns both
results, canonicalised so they compare with ``==``.

Everything is drawn from ``random.Random(seed)``, so a failing case is replayed by
its id alone.

The table states the cases run on (``build_world``) and what each group of cases
compares (``compare``) live here too, so that the tests and the measurement that sets
their count (``benchmarks/differential_mutations.py``: how many cases catch each of a
set of injected reader defects) run exactly the same thing.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = (
    "id BIGINT, i INT, s STRING, d DOUBLE, b BOOLEAN, day DATE, ts TIMESTAMP, "
    "dec DECIMAL(10,2), bin BINARY, arr ARRAY<INT>, st STRUCT<x: INT, y: STRING>, "
    "p STRING, q INT"
)
PK_SCHEMA = "id BIGINT NOT NULL, i INT, s STRING, d DOUBLE, day DATE, p STRING NOT NULL"
COLUMNS = ["id", "i", "s", "d", "b", "day", "ts", "dec", "bin", "arr", "st", "p", "q"]
#: the partition columns of the tables the cases read (``diff.t``: both; ``diff.pk``: ``p``)
PARTITION_COLUMNS = ("p", "q")
PK_COLUMNS = ["id", "i", "s", "d", "day", "p"]

WORDS = ["apple", "apricot", "banana", "band", "cherry", "", "Ünïcode", "a%b", "x_y", "O'Brien"]
PARTS = ["north", "south", "east"]
DAY0 = dt.date(2026, 11, 1)
TS0 = dt.datetime(2026, 11, 1, 0, 0, 0)


def make_rows(rng: random.Random, start: int, count: int) -> list[tuple]:
    """``count`` rows with ids from ``start``: every type, nulls, NaN, odd strings."""

    def maybe(value: Any, null_rate: float = 0.15) -> Any:
        return None if rng.random() < null_rate else value

    rows = []
    for k in range(start, start + count):
        d = rng.choice([rng.uniform(-1000, 1000), 0.0, -0.0, 1.5, float("nan"), 1e300])
        rows.append(
            (
                k,
                maybe(rng.randint(-50, 50)),
                maybe(rng.choice(WORDS)),
                maybe(d),
                maybe(rng.random() < 0.5),
                maybe(DAY0 + dt.timedelta(days=rng.randint(-3, 3))),
                maybe(TS0 + dt.timedelta(seconds=rng.randint(-86400, 86400), microseconds=rng.randint(0, 999999))),
                maybe(decimal.Decimal(rng.randint(-99999, 99999)) / 100),
                maybe(bytes([rng.randint(0, 3), rng.randint(0, 255)])),
                maybe([rng.randint(0, 5) for _ in range(rng.randint(0, 3))]),
                maybe((rng.randint(0, 9), rng.choice(WORDS))),
                rng.choice(PARTS),
                rng.randint(1, 3),
            )
        )
    return rows


def make_pk_rows(rng: random.Random, keys: int, count: int) -> list[tuple]:
    """Upserts of ``count`` distinct keys out of ``keys``: commits overlap, rows of one commit don't.

    Two rows with one key in ONE Spark write may land in different tasks, and which
    wins is then not defined (in Paimon Java's Spark writer either), so each commit
    holds a key at most once; the later commit wins.
    """
    out = []
    for key in rng.sample(range(keys), count):
        out.append(
            (
                key,
                None if rng.random() < 0.1 else rng.randint(-50, 50),
                None if rng.random() < 0.1 else rng.choice(WORDS),
                rng.uniform(-10, 10),
                DAY0 + dt.timedelta(days=rng.randint(0, 3)),
                PARTS[key % len(PARTS)],  # a key stays in one partition
            )
        )
    return out


# -- predicates ----------------------------------------------------------------


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP'{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"CAST({value} AS DECIMAL(10,2))"
    if isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        return repr(value) + "D"
    return str(value)


_COMPARE = ["=", "<>", "<", "<=", ">", ">=", "<=>"]


class PredicateMaker:
    """Random SQL predicates over ``columns``, with literals drawn from ``rows``."""

    def __init__(self, rng: random.Random, rows: Sequence[tuple], columns: Sequence[str]) -> None:
        self.rng = rng
        self.columns = list(columns)
        self.values: dict[str, list[Any]] = {c: [] for c in columns}
        for row in rows:
            for name, value in zip(columns, row, strict=True):
                if value is not None and not isinstance(value, list | tuple):
                    self.values[name].append(value)

    def _value(self, col: str) -> Any:
        pool = self.values[col]
        if not pool:
            return None
        value = self.rng.choice(pool)
        if isinstance(value, int) and not isinstance(value, bool) and self.rng.random() < 0.2:
            value += self.rng.choice([-1000, 1, 1000])  # absent values too
        return value

    def atom(self) -> str:
        rng = self.rng
        kinds = ["compare", "compare", "compare", "in", "null", "string", "nested"]
        kind = rng.choice(kinds)
        scalar = [c for c in self.columns if self.values.get(c)]
        if kind == "nested" and "st" in self.columns:
            return rng.choice(
                [
                    f"st.x {rng.choice(_COMPARE[:6])} {rng.randint(0, 9)}",
                    f"st.y LIKE '{rng.choice(['a', 'b', 'ch'])}%'",
                    f"try_element_at(arr, 1) = {rng.randint(0, 5)}",
                    f"size(arr) > {rng.randint(0, 2)}",
                ]
            )
        if kind == "null":
            return f"{rng.choice(self.columns)} IS {rng.choice(['', 'NOT '])}NULL"
        if kind == "string":
            col = rng.choice([c for c in ("s", "p") if c in self.columns])
            word = rng.choice(WORDS + PARTS)
            cut = word[: rng.randint(0, max(1, len(word)))]
            return rng.choice(
                [
                    f"{col} LIKE '{_like(cut)}%'",
                    f"{col} LIKE '%{_like(cut)}'",
                    f"{col} LIKE '%{_like(cut)}%'",
                    f"startswith({col}, {_sql_literal(cut)})",
                    f"contains({col}, {_sql_literal(cut)})",
                    f"endswith({col}, {_sql_literal(cut)})",
                ]
            )
        col = rng.choice(scalar)
        if kind == "in":
            values = [self._value(col) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.2:
                values.append(None)
            inner = ", ".join("NULL" if v is None else _sql_literal(v) for v in values)
            return f"{col} {rng.choice(['IN', 'NOT IN'])} ({inner})"
        op = rng.choice(_COMPARE)
        if col == "b":
            op = rng.choice(["=", "<>", "<=>"])
        return f"{col} {op} {_sql_literal(self._value(col))}"

    def predicate(self, depth: int = 2) -> str:
        rng = self.rng
        if depth == 0 or rng.random() < 0.4:
            atom = self.atom()
            return f"NOT ({atom})" if rng.random() < 0.15 else atom
        op = rng.choice(["AND", "OR"])
        return f"({self.predicate(depth - 1)} {op} {self.predicate(depth - 1)})"

    def pushable(self, depth: int = 2) -> str:
        """``predicate(depth)``, half the time under a top-level ``=`` or ``IN`` on a partition column.

        Those are the filters Spark hands a Python source (``pushFilters``) and a reader
        would prune partitions with; in a shape that runs several queries on one DataFrame
        they are what exposes a reader whose plan keeps one query's pruning for the next
        (the lost-rows defect). Plain ``predicate`` makes such a conjunct in ~2% of cases
        (measured by benchmarks/differential_mutations.py: none of 192 cases caught it).
        """
        rng = self.rng
        inner = self.predicate(depth)
        partition = [c for c in PARTITION_COLUMNS if self.values.get(c)]
        if not partition or rng.random() < 0.5:
            return inner
        col = rng.choice(partition)
        if rng.random() < 0.5:
            atom = f"{col} = {_sql_literal(rng.choice(self.values[col]))}"
        else:
            values = sorted({_sql_literal(rng.choice(self.values[col])) for _ in range(2)})
            atom = f"{col} IN ({', '.join(values)})"
        return f"{atom} AND ({inner})"


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace("'", "\\'")
    return escaped


# -- canonical results ---------------------------------------------------------------


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value + 0.0))  # -0.0 == 0.0 in SQL
    if isinstance(value, bytes | bytearray):
        return ("bytes", bytes(value).hex())
    if isinstance(value, list):
        return ("list", tuple(_canon(v) for v in value))
    if isinstance(value, dict):
        return ("map", tuple(sorted((repr(k), _canon(v)) for k, v in value.items())))
    if hasattr(value, "asDict"):
        return ("row", tuple(_canon(v) for v in value))
    if value is None:
        return ("null",)
    return (type(value).__name__, value)


def canon_rows(rows: Sequence[Any]) -> list[tuple]:
    """Rows as sorted tuples of comparable, type-tagged values (NaN-, bytes- and -0.0-safe)."""
    return sorted(tuple(_canon(v) for v in row) for row in rows)


# -- cases ----------------------------------------------------------------------------


@dataclass
class Case:
    """One generated scenario: a description and the steps that produce its results."""

    seed: int
    shape: str
    steps: list[Callable[[Any, Any], Any]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"case seed={self.seed} shape={self.shape}: " + " | ".join(self.text)


SHAPES = ["filter", "project", "reuse", "cache", "view", "selfjoin", "union", "aggregate", "limit"]


def make_case(seed: int, rows: Sequence[tuple], columns: Sequence[str], shapes: Sequence[str] = SHAPES) -> Case:
    """The case for ``seed``; its steps take ``(spark, df)`` and return canonical results."""
    rng = random.Random(seed)
    preds = PredicateMaker(rng, rows, columns)
    shape = shapes[seed % len(shapes)]
    case = Case(seed, shape)
    scalar_cols = [c for c in columns if c not in ("arr", "st", "bin")]

    def add(text: str, step: Callable[[Any, Any], Any]) -> None:
        case.text.append(text)
        case.steps.append(step)

    if shape == "filter":
        f = preds.predicate()
        add(f"where {f} -> rows", lambda s, df: canon_rows(df.where(f).collect()))
    elif shape == "project":
        cols = rng.sample(list(columns), rng.randint(1, len(columns)))
        f = preds.predicate(1)
        add(f"select {cols} where {f}", lambda s, df: canon_rows(df.where(f).select(*cols).collect()))
    elif shape == "reuse":
        # The shape that lost rows: several actions on ONE DataFrame, filtered and not.
        for _ in range(rng.randint(3, 6)):
            action = rng.choice(["count", "where-count", "collect", "where-collect", "distinct-p"])
            if action == "count":
                add("count", lambda s, df: df.count())
            elif action == "collect":
                add("collect", lambda s, df: canon_rows(df.collect()))
            elif action == "distinct-p":
                add("distinct p", lambda s, df: canon_rows(df.select("p").distinct().collect()))
            else:
                f = preds.pushable()
                if action == "where-count":
                    add(f"where {f} count", lambda s, df, f=f: df.where(f).count())
                else:
                    add(f"where {f} rows", lambda s, df, f=f: canon_rows(df.where(f).collect()))
    elif shape == "cache":
        f, g = preds.pushable(1), preds.pushable(1)

        def cached(s: Any, df: Any) -> Any:
            part = df.where(f).cache()
            try:
                return (part.count(), canon_rows(part.where(g).collect()), df.count())
            finally:
                part.unpersist()

        add(f"cache(where {f}); count; where {g}; whole count", cached)
    elif shape == "view":
        f = preds.pushable()

        def view(s: Any, df: Any) -> Any:
            name = f"diff_view_{seed}"
            df.createOrReplaceTempView(name)
            try:
                first = canon_rows(s.sql(f"SELECT * FROM {name} WHERE {f}").collect())
                total = s.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
                return first, total
            finally:
                s.catalog.dropTempView(name)

        add(f"view where {f}; view count", view)
    elif shape == "selfjoin":
        f, g = preds.pushable(1), preds.pushable(1)
        col = rng.choice([c for c in scalar_cols if c != "id"])

        def selfjoin(s: Any, df: Any) -> Any:
            left = df.where(f).select("id", col)
            right = df.where(g).select("id", "p")
            return canon_rows(left.join(right, "id").collect()), df.count()

        add(f"join(where {f}, where {g}) on id; count", selfjoin)
    elif shape == "union":
        f, g = preds.pushable(1), preds.pushable(1)
        add(f"union(where {f}, where {g})", lambda s, df: canon_rows(df.where(f).union(df.where(g)).collect()))
        add("count", lambda s, df: df.count())
    elif shape == "aggregate":
        key = rng.choice([c for c in ("p", "q", "b", "day", "s") if c in columns])
        f = preds.predicate(1)

        def aggregate(s: Any, df: Any) -> Any:
            from pyspark.sql import functions as F

            agg = [F.count("*").alias("n"), F.min("id"), F.max("id")]
            if "i" in columns:
                agg += [F.sum("i"), F.count("i")]
            if "s" in columns:
                agg.append(F.max("s"))
            return canon_rows(df.where(f).groupBy(key).agg(*agg).collect())

        add(f"where {f} group by {key}", aggregate)
    elif shape == "limit":
        f = preds.predicate(1)
        n = rng.randint(0, 30)
        add(f"where {f} order by id limit {n}", lambda s, df: canon_rows(df.where(f).orderBy("id").limit(n).collect()))
        add(f"where {f} limit {n} count", lambda s, df: df.where(f).limit(n).count())
    else:  # pragma: no cover - a shape name typo is a test bug
        raise ValueError(shape)
    return case


def run_case(case: Case, spark: Any, ours: Any, reference: Any) -> tuple[list[Any], list[Any]]:
    """Run every step on both DataFrames (interleaved, as a user would) and return both results."""
    got, want = [], []
    for step in case.steps:
        got.append(step(spark, ours))
        want.append(step(spark, reference))
    return got, want


# -- the table states under test --------------------------------------------------------

TABLE = "diff.t"
PK_TABLE = "diff.pk"
COMMIT_ROWS = 150


def build_world(spark: Any, root: Path) -> dict[str, Any]:
    """One warehouse under ``root`` and its Parquet twins: the states every group reads.

    ``diff.t``: three commits partitioned by ``p, q`` with every type; tag ``two`` at
    snapshot 2 and branch ``fix`` from it with rows of its own; ``diff.pk``: a
    primary-key table upserted in three commits (expected: the last write per key);
    ``diff.plain``: unpartitioned. All written through the ``paimon`` source.
    """
    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.tag import create_tag

    wh = str(root / "warehouse")
    rng = random.Random(20261124)

    def write(rows: list[tuple], table: str, schema: str, branch: str | None = None, **opts: str) -> None:
        writer = (
            spark.createDataFrame(rows, schema).write.format("paimon").mode("append")
            .option("warehouse", wh).option("table", table)
        )
        if branch:
            writer = writer.option("branch", branch)
        for key, value in opts.items():
            writer = writer.option(key, value)
        writer.save()

    commits = [make_rows(rng, k * COMMIT_ROWS, COMMIT_ROWS) for k in range(3)]
    parquet = []
    for k, rows in enumerate(commits):
        create = {"create-table": "true", "partition-keys": "p,q"} if k == 0 else {}
        write(rows, TABLE, SCHEMA, **create)
        path = str(root / f"parquet-{k}")
        spark.createDataFrame(rows, SCHEMA).write.parquet(path)
        parquet.append(path)

    table = load_table(open_catalog(wh), TABLE)
    create_tag(table, "two", snapshot_id=2)
    create_branch(table, "fix", tag="two")
    branch_rows = make_rows(rng, 10_000, 100)
    write(branch_rows, TABLE, SCHEMA, branch="fix")
    branch_parquet = str(root / "parquet-branch")
    spark.createDataFrame(branch_rows, SCHEMA).write.parquet(branch_parquet)

    merged: dict[int, tuple] = {}
    for k in range(3):
        rows = make_pk_rows(rng, 160, 100)
        create = {"create-table": "true", "partition-keys": "p", "primary-keys": "id,p", "bucket": "2"} if k == 0 else {}
        write(rows, PK_TABLE, PK_SCHEMA, **create)
        for row in rows:
            merged[row[0]] = row
    pk_parquet = str(root / "parquet-pk")
    spark.createDataFrame(list(merged.values()), PK_SCHEMA).write.parquet(pk_parquet)

    def paimon(table: str = TABLE, **options: str) -> Any:
        reader = spark.read.format("paimon").option("warehouse", wh).option("table", table)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    def reference(*paths: str) -> Any:
        return spark.read.schema(SCHEMA).parquet(*paths)

    write(commits[0][:5], "diff.plain", SCHEMA, **{"create-table": "true"})

    return {
        "warehouse": wh,
        "paimon": paimon,
        "reference": reference,
        "parquet": parquet,
        "branch_parquet": branch_parquet,
        "pk_reference": spark.read.schema(PK_SCHEMA.replace(" NOT NULL", "")).parquet(pk_parquet),
        "rows": [r for rows in commits for r in rows],
        "pk_rows": list(merged.values()),
        # ONE DataFrame per source reused by every case, as in a notebook
        "latest": paimon(),
        "latest_reference": reference(*parquet),
    }


# -- groups of cases ------------------------------------------------------------------

#: group -> (first seed past the day's base, number of seeds for ``PAIMON_DIFF_CASES`` = n).
#: ``time_travel`` runs each seed at snapshots 1, 2 and 3; ``tag_branch`` reads the tag and the branch.
GROUPS: dict[str, tuple[int, Callable[[int], int]]] = {
    "latest": (0, lambda n: n),
    "fresh": (1000, lambda n: max(9, n // 6)),
    "time_travel": (2000, lambda n: max(3, n // 20)),
    "tag_branch": (3000, lambda n: max(3, n // 12)),
    "primary_key": (4000, lambda n: max(9, n // 3)),
    "partition_filter": (5000, lambda n: max(12, n // 10)),
}
SNAPSHOTS = (1, 2, 3)
PK_SHAPES = [s for s in SHAPES if s != "selfjoin"] + ["selfjoin"]


def group_seeds(group: str, n: int, base: int) -> range:
    """The seeds group ``group`` runs when the run's case count is ``n`` and its base ``base``."""
    offset, size = GROUPS[group]
    return range(base + offset, base + offset + size(n))


def partition_predicate(rng: random.Random, depth: int = 2) -> str:
    """A predicate in the ``partition-filter`` grammar that Spark SQL reads the same way."""
    if depth == 0 or rng.random() < 0.4:
        atom = rng.choice(
            [
                f"p {rng.choice(['=', '<>', '<', '>='])} '{rng.choice(['north', 'south', 'east', 'west'])}'",
                f"q {rng.choice(['=', '<>', '<', '<=', '>', '>='])} {rng.randint(0, 4)}",
                f"q {rng.choice(['IN', 'NOT IN'])} ({', '.join(str(rng.randint(1, 3)) for _ in range(2))})",
                f"q BETWEEN {rng.randint(0, 2)} AND {rng.randint(1, 4)}",
                f"p IN ('north', '{rng.choice(['east', 'nowhere'])}')",
                "p IS NOT NULL",
            ]
        )
        return f"NOT ({atom})" if rng.random() < 0.2 else atom
    return f"({partition_predicate(rng, depth - 1)} {rng.choice(['AND', 'OR'])} {partition_predicate(rng, depth - 1)})"


def compare(spark: Any, world: dict[str, Any], group: str, seed: int, snapshot: int | None = None) -> list[tuple]:
    """Run group ``group``'s case ``seed`` on the ``paimon`` read and on its Parquet twin.

    Returns ``(got, want, description)`` per comparison (two for ``tag_branch``); the
    case passes when ``got == want`` in each. ``snapshot`` is for ``time_travel``.
    """
    rows = world["rows"]
    if group == "latest":
        case = make_case(seed, rows, COLUMNS)
        return [(*run_case(case, spark, world["latest"], world["latest_reference"]), case.describe())]
    if group == "fresh":
        case = make_case(seed, rows, COLUMNS)
        ours, reference = world["paimon"](), world["reference"](*world["parquet"])
        return [(*run_case(case, spark, ours, reference), case.describe())]
    if group == "time_travel":
        if snapshot not in SNAPSHOTS:
            raise ValueError(f"time_travel needs a snapshot in {SNAPSHOTS}, not {snapshot!r}")
        case = make_case(seed, rows, COLUMNS)
        ours = world["paimon"](**{"snapshot-id": str(snapshot)})
        reference = world["reference"](*world["parquet"][:snapshot])
        return [(*run_case(case, spark, ours, reference), f"snapshot {snapshot}: {case.describe()}")]
    if group == "tag_branch":
        case = make_case(seed, rows, COLUMNS)
        tag_ref = world["reference"](*world["parquet"][:2])
        branch_ref = world["reference"](*world["parquet"][:2], world["branch_parquet"])
        return [
            (*run_case(case, spark, world["paimon"](tag="two"), tag_ref), f"tag two: {case.describe()}"),
            (*run_case(case, spark, world["paimon"](branch="fix"), branch_ref), f"branch fix: {case.describe()}"),
        ]
    if group == "primary_key":
        case = make_case(seed, world["pk_rows"], PK_COLUMNS, PK_SHAPES)
        return [(*run_case(case, spark, world["paimon"](PK_TABLE), world["pk_reference"]), case.describe())]
    if group == "partition_filter":
        pred = partition_predicate(random.Random(seed))
        ours = world["paimon"](**{"partition-filter": pred})
        reference = world["latest_reference"].where(pred)
        case = make_case(seed, rows, COLUMNS, ["reuse", "cache", "union", "aggregate"])
        return [(*run_case(case, spark, ours, reference), f"partition-filter {pred}: {case.describe()}")]
    raise ValueError(f"unknown group {group!r}; groups: {', '.join(GROUPS)}")
