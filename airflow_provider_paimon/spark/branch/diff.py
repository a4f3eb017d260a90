"""Audit a branch before it replaces main: row diff per partition, and data checks.

Write-audit-publish: a corrected branch is written, *audited* here, and only then
published (``replace_main`` / ``fast_forward`` / ``publish_branches``). Both sides are
read with ``read_table`` (Spark's own file readers), and Spark computes everything:

- ``branch_diff``: rows added and removed per partition, as a multiset difference
  (``exceptAll`` both ways over the compared columns, so a duplicated row that lost
  one copy counts as one removed row), grouped by the table's partition columns.
- ``run_checks``: violation queries (SQL that must return no rows) over
  ``{branch_rows}`` / ``{base_rows}`` (``{main_rows}`` is the same as ``{base_rows}``),
  and Python callables ``(df_branch, df_base) -> True | False | "message"``.

Schemas may differ (the correction added or dropped a column): the diff compares the
branch's columns that also exist on the base (base values cast to the branch's type
when the type was widened) and names the columns it left out, so a reader of the
summary knows what "no difference" covers. Nothing here writes to the warehouse.
"""

from __future__ import annotations

import datetime
import decimal
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ...paimon.errors import InvalidArgumentError, PaimonError
from ...paimon.names import is_main

if TYPE_CHECKING:  # pyspark is imported where Spark work happens: the Airflow layer imports this
    from pyspark.sql import Column, DataFrame

    from ..native.plan import ReadPlan

DEFAULT_LIMIT_PARTITIONS = 1000
DEFAULT_SAMPLE_ROWS = 5
#: partitions ``to_dict`` keeps by default (XCom stays small)
DICT_PARTITIONS = 20
#: names a SQL check uses for the two sides (``{branch_rows}``, ``{base_rows}``, ``{main_rows}``)
VIEW_NAMES = ("branch_rows", "base_rows", "main_rows")

Check = str | Callable[["DataFrame", "DataFrame"], Any]


class AuditFailedError(PaimonError):
    """One or more checks failed; the branch should not be published."""


def _json_value(value: Any) -> Any:
    """A partition value or sample cell as JSON can carry it (dates as ISO text)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, datetime.date | datetime.datetime | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return str(value)


@dataclass(frozen=True)
class PartitionDiff:
    """Rows added to and removed from one partition (``{}`` for an unpartitioned table)."""

    partition: Mapping[str, Any]
    added: int
    removed: int

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.partition.items()) or "(table)"

    def to_dict(self) -> dict[str, Any]:
        return {"partition": _json_value(dict(self.partition)), "added": self.added, "removed": self.removed}


@dataclass(frozen=True)
class BranchDiff:
    """What publishing ``branch`` over ``base`` would change, in rows per partition.

    ``partitions`` holds the changed partitions only, most changed first, at most
    ``limit_partitions`` of them (``truncated`` says some were left out); ``added``,
    ``removed`` and ``changed_partitions`` always count all of them.
    """

    table: str
    base: str
    branch: str
    base_snapshot: int | None
    branch_snapshot: int | None
    partition_keys: tuple[str, ...]
    compared_columns: tuple[str, ...]
    only_in_branch: tuple[str, ...]
    only_in_base: tuple[str, ...]
    cast_columns: tuple[str, ...]
    added: int
    removed: int
    changed_partitions: int
    total_partitions: int
    partitions: tuple[PartitionDiff, ...] = field(default_factory=tuple)
    truncated: bool = False
    # a few of the rows publishing would add and remove (what a reviewer looks at)
    sample_added: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    sample_removed: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def identical(self) -> bool:
        """No row differs on the compared columns (see ``schema_note``: maybe not all of them)."""
        return self.added == 0 and self.removed == 0

    def schema_note(self) -> str:
        """Which columns the comparison left out, or ``""`` when the schemas match."""
        parts = []
        if self.only_in_branch:
            parts.append(f"not compared (only on {self.branch}): {', '.join(self.only_in_branch)}")
        if self.only_in_base:
            parts.append(f"not compared (only on {self.base}): {', '.join(self.only_in_base)}")
        if self.cast_columns:
            parts.append(f"{self.base} values cast to {self.branch}'s type: {', '.join(self.cast_columns)}")
        return "; ".join(parts)

    def summary(self) -> str:
        """One short line for logs and XCom, e.g. ``db.t main..fix: +12 -3 rows in 2 of 40 partitions``."""
        line = (
            f"{self.table} {self.base}..{self.branch}: +{self.added} -{self.removed} rows in "
            f"{self.changed_partitions} of {self.total_partitions} partition"
            f"{'' if self.total_partitions == 1 else 's'}"
        )
        note = self.schema_note()
        return f"{line} ({note})" if note else line

    def to_dict(self, max_partitions: int = DICT_PARTITIONS) -> dict[str, Any]:
        """JSON-able and small: at most ``max_partitions`` partitions (``truncated`` says so)."""
        shown = self.partitions[: max(0, max_partitions)]
        return {
            "table": self.table,
            "base": self.base,
            "branch": self.branch,
            "base_snapshot": self.base_snapshot,
            "branch_snapshot": self.branch_snapshot,
            "partition_keys": list(self.partition_keys),
            "compared_columns": list(self.compared_columns),
            "only_in_branch": list(self.only_in_branch),
            "only_in_base": list(self.only_in_base),
            "cast_columns": list(self.cast_columns),
            "added": self.added,
            "removed": self.removed,
            "changed_partitions": self.changed_partitions,
            "total_partitions": self.total_partitions,
            "partitions": [p.to_dict() for p in shown],
            "truncated": self.truncated or len(shown) < len(self.partitions),
            "summary": self.summary(),
            "sample_added": [{k: _json_value(v) for k, v in row.items()} for row in self.sample_added],
            "sample_removed": [{k: _json_value(v) for k, v in row.items()} for row in self.sample_removed],
        }


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome; ``sample`` holds up to N violating rows of a SQL check."""

    name: str
    kind: str  # "sql" or "python"
    passed: bool
    message: str
    violations: int | None = None
    sample: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "passed": self.passed,
            "message": self.message,
            "violations": self.violations,
            "sample": [_json_value(dict(r)) for r in self.sample],
        }


@dataclass(frozen=True)
class CheckReport:
    """Every check's result for one branch; ``passed`` only when all passed."""

    table: str
    base: str
    branch: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.results if not r.passed)

    def summary(self) -> str:
        total = len(self.results)
        if self.passed:
            return f"{self.table} branch {self.branch}: {total} of {total} checks passed"
        details = "; ".join(f"{r.name}: {r.message}" for r in self.results if not r.passed)
        return f"{self.table} branch {self.branch}: {len(self.failed)} of {total} checks failed ({details})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "base": self.base,
            "branch": self.branch,
            "passed": self.passed,
            "failed": list(self.failed),
            "checks": [r.to_dict() for r in self.results],
            "summary": self.summary(),
        }

    def raise_for_failures(self) -> None:
        """Raise ``AuditFailedError`` naming the failed checks (do not publish)."""
        if not self.passed:
            raise AuditFailedError(f"{self.summary()}; do not publish branch {self.branch!r}")


# -- reading both sides --


@dataclass(frozen=True)
class _Sides:
    branch: DataFrame
    base: DataFrame
    branch_snapshot: int | None
    base_snapshot: int | None
    partition_keys: tuple[str, ...]


def _branch_name(branch: str | None) -> str:
    return "main" if is_main(branch) else str(branch)


def _read_sides(
    spark: Any, table: str, branch: str, *, warehouse: str | None, base: str | None, options: Mapping[str, Any] | None
) -> _Sides:
    """Both sides as DataFrames over fixed files (the snapshots current now)."""
    from ..native import read_table
    from ..tables import open_table

    if not isinstance(branch, str) or not branch.strip():
        raise InvalidArgumentError("branch must name the branch to audit (e.g. 'fix'), got a blank value")
    if _branch_name(branch) == _branch_name(base):
        raise InvalidArgumentError(
            f"branch and base are both {_branch_name(branch)!r}: audit a branch against main or another branch"
        )
    df_branch = read_table(spark, table, warehouse=warehouse, branch=None if is_main(branch) else branch, options=options)
    df_base = read_table(spark, table, warehouse=warehouse, branch=None if is_main(base) else base, options=options)
    # read_table sets native_plan; DataFrame.__getattr__ types any unknown name as a Column
    plan = cast("ReadPlan", df_branch.native_plan)
    base_plan = cast("ReadPlan", df_base.native_plan)
    keys = tuple(open_table(plan.options, time_travel=False).partition_keys or ())
    return _Sides(df_branch, df_base, plan.snapshot_id, base_plan.snapshot_id, keys)


def _aligned(sides: _Sides) -> tuple[DataFrame, DataFrame, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Both sides on the branch's columns that exist on both, base cast to the branch's types."""
    from pyspark.sql import functions as F
    base_types = {f.name: f.dataType for f in sides.base.schema.fields}
    branch_fields = sides.branch.schema.fields
    compared = tuple(f.name for f in branch_fields if f.name in base_types)
    only_branch = tuple(f.name for f in branch_fields if f.name not in base_types)
    branch_names = {f.name for f in branch_fields}
    only_base = tuple(f.name for f in sides.base.schema.fields if f.name not in branch_names)
    missing_keys = [k for k in sides.partition_keys if k not in compared]
    if missing_keys:  # Paimon cannot drop partition columns; a foreign base could
        raise InvalidArgumentError(f"partition column(s) {', '.join(missing_keys)} missing on one side; cannot compare")
    cast = tuple(f.name for f in branch_fields if f.name in base_types and base_types[f.name] != f.dataType)
    if not compared:
        raise InvalidArgumentError("the branch and its base have no column in common; nothing to compare")
    branch_cols, base_cols = [], []
    for f in branch_fields:
        if f.name not in base_types:
            continue
        b = F.col(_quoted(f.name))
        m = F.col(_quoted(f.name))
        if f.name in cast:
            m = m.cast(f.dataType)
        branch_cols.append(_comparable(b, f.dataType).alias(f.name))
        base_cols.append(_comparable(m, f.dataType).alias(f.name))
    return (sides.branch.select(*branch_cols), sides.base.select(*base_cols), compared, only_branch, only_base, cast)


def _comparable(column: Column, data_type: Any) -> Column:
    """Set operations refuse map columns: compare a map as its entries in key order."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    if isinstance(data_type, MapType):
        return F.array_sort(F.map_entries(column))
    return column


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# -- the diff --


def branch_diff(
    spark: Any,
    table: str,
    branch: str,
    *,
    warehouse: str | None = None,
    base: str | None = "main",
    options: Mapping[str, Any] | None = None,
    limit_partitions: int = DEFAULT_LIMIT_PARTITIONS,
) -> BranchDiff:
    """Rows ``branch`` has that ``base`` lacks (added) and the reverse (removed), per partition.

    A multiset difference over the compared columns: a row present twice on the base
    and once on the branch is one removed row; NULLs compare equal to NULLs. Columns
    that exist on one side only are left out and named in the result.

    :param limit_partitions: keep at most this many changed partitions in the result
        (most changed first); totals always cover all of them.
    :raises TableNotFoundError, BranchNotFoundError: with the names that exist.
    """
    if not isinstance(limit_partitions, int) or limit_partitions < 0:
        raise InvalidArgumentError(f"limit_partitions must be an integer >= 0, got {limit_partitions!r}")
    sides = _read_sides(spark, table, branch, warehouse=warehouse, base=base, options=options)
    return _diff(sides, table, _branch_name(branch), _branch_name(base), limit_partitions)


# markers of a changed row's side, beside the table's own columns
_ADDED, _REMOVED = "__paimon_diff_added__", "__paimon_diff_removed__"


def _diff(sides: _Sides, table: str, branch: str, base: str, limit: int, sample_rows: int = 0) -> BranchDiff:
    """Spark actions over the changed rows (computed once): the totals, the top
    partitions and, with ``sample_rows``, a few added and removed rows."""
    from pyspark.sql import functions as F

    df_branch, df_base, compared, only_branch, only_base, cast = _aligned(sides)
    keys = list(sides.partition_keys)
    key_cols = [F.col(_quoted(k)) for k in keys]
    changed_rows = (
        df_branch.exceptAll(df_base).select("*", F.lit(1).alias(_ADDED), F.lit(0).alias(_REMOVED))
        .unionByName(df_base.exceptAll(df_branch).select("*", F.lit(0).alias(_ADDED), F.lit(1).alias(_REMOVED)))
    )
    if sample_rows:
        changed_rows = changed_rows.persist()
    try:
        counts = changed_rows.select(*key_cols, F.col(_ADDED).alias("_a"), F.col(_REMOVED).alias("_r"))
        diff = _counted(counts, df_branch, df_base, keys, limit)
        sample_added: tuple[dict[str, Any], ...] = ()
        sample_removed: tuple[dict[str, Any], ...] = ()
        if sample_rows and (diff[0] or diff[1]):
            columns = [F.col(_quoted(c)) for c in compared]
            sample_added = tuple(r.asDict(recursive=True) for r in
                                 changed_rows.where(F.col(_ADDED) == 1).select(*columns).limit(sample_rows).collect())
            sample_removed = tuple(r.asDict(recursive=True) for r in
                                   changed_rows.where(F.col(_REMOVED) == 1).select(*columns).limit(sample_rows).collect())
    finally:
        if sample_rows:
            changed_rows.unpersist()
    total_added, total_removed, changed, total_partitions, partitions = diff
    truncated = changed > len(partitions)
    return BranchDiff(
        table=table, base=base, branch=branch,
        base_snapshot=sides.base_snapshot, branch_snapshot=sides.branch_snapshot,
        partition_keys=tuple(keys), compared_columns=compared, only_in_branch=only_branch,
        only_in_base=only_base, cast_columns=cast, added=total_added, removed=total_removed,
        changed_partitions=changed, total_partitions=int(total_partitions),
        partitions=partitions, truncated=truncated, sample_added=sample_added, sample_removed=sample_removed,
    )


def _counted(changes: Any, df_branch: Any, df_base: Any, keys: list[str],
             limit: int) -> tuple[int, int, int, int, tuple[PartitionDiff, ...]]:
    """(added, removed, changed partitions, all partitions, top changed partitions)."""
    from pyspark.sql import functions as F

    key_cols = [F.col(_quoted(k)) for k in keys]
    if not keys:
        totals = changes.agg(F.coalesce(F.sum("_a"), F.lit(0)).alias("a"),
                             F.coalesce(F.sum("_r"), F.lit(0)).alias("r")).collect()[0]
        total_added, total_removed = int(totals.a), int(totals.r)
        changed = 1 if total_added or total_removed else 0
        partitions: tuple[PartitionDiff, ...] = (
            (PartitionDiff({}, total_added, total_removed),) if changed and limit else ()
        )
        total_partitions = 1
    else:
        # every partition either side has (for "n of N"), with zero changes unless found above
        present = (df_branch.select(*key_cols).unionByName(df_base.select(*key_cols)).distinct()
                   .select(*key_cols, F.lit(0).alias("_a"), F.lit(0).alias("_r")))
        per_partition = (changes.unionByName(present).groupBy(*key_cols)
                         .agg(F.sum("_a").alias("_a"), F.sum("_r").alias("_r")).persist())
        try:
            size = F.col("_a") + F.col("_r")
            totals = per_partition.agg(
                F.coalesce(F.sum("_a"), F.lit(0)).alias("a"),
                F.coalesce(F.sum("_r"), F.lit(0)).alias("r"),
                F.count(F.when(size > 0, 1)).alias("changed"),
                F.count(F.lit(1)).alias("n"),
            ).collect()[0]
            changed = int(totals.changed)
            rows = []
            if limit and changed:
                order = [size.desc(), *[c.asc_nulls_first() for c in key_cols]]
                rows = per_partition.where(size > 0).orderBy(*order).limit(limit).collect()
        finally:
            per_partition.unpersist()
        total_added, total_removed, total_partitions = int(totals.a), int(totals.r), int(totals.n)
        partitions = tuple(PartitionDiff({k: row[k] for k in keys}, int(row["_a"]), int(row["_r"])) for row in rows)
    return total_added, total_removed, changed, int(total_partitions), partitions


# -- the checks --

_LEADING_COMMENTS = re.compile(r"\A(\s+|--[^\n]*(\n|\Z)|/\*.*?\*/)*", re.S)
_QUERY_START = ("select", "with", "from", "values", "table", "(")


def _check_items(checks: Mapping[str, Check] | Sequence[Check] | Check) -> list[tuple[str, Check]]:
    """Named checks: a mapping's keys, else ``check_N`` (a function's own name when it has one)."""
    if isinstance(checks, str) or callable(checks):
        checks = [checks]
    if isinstance(checks, Mapping):
        items = [(str(k), v) for k, v in checks.items()]
    else:
        items = []
        for i, check in enumerate(checks, 1):
            name = getattr(check, "__name__", "") if callable(check) else ""
            items.append((name if name and name != "<lambda>" else f"check_{i}", check))
    if not items:
        raise InvalidArgumentError("no checks given: pass SQL violation queries or callables")
    for name, check in items:
        if isinstance(check, str):
            sql_query(check, name)  # refuse a bad one before running any
        elif not callable(check):
            raise InvalidArgumentError(
                f"check {name!r} is a {type(check).__name__}; give a SQL query (str) or a callable "
                "(df_branch, df_base) -> True | False | 'failure message'"
            )
    return items


def sql_query(text: str, name: str = "check") -> str:
    """The violation query, checked to be one read-only query, ready to wrap as a subquery.

    The query runs as ``SELECT * FROM (<query>)``: Spark's parser refuses a command
    (INSERT, DROP, CACHE...) there, so an audit cannot write; the leading keyword is
    checked too for a clear message.
    """
    query = text.strip().rstrip(";").strip()
    body = _LEADING_COMMENTS.sub("", query)
    if not body:
        raise InvalidArgumentError(f"check {name!r} is an empty SQL query")
    if not body.lower().startswith(_QUERY_START):
        raise InvalidArgumentError(
            f"check {name!r} must be a query (SELECT/WITH/FROM/VALUES...) returning the violating rows, "
            f"got {body.split()[0]!r}; audits never write"
        )
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(query) if f is not None}
    except ValueError as err:
        raise InvalidArgumentError(f"check {name!r}: {err} (write a literal brace as {{{{ or }}}})") from None
    unknown = sorted(fields - set(VIEW_NAMES))
    if unknown:
        known = ", ".join("{" + v + "}" for v in VIEW_NAMES)
        raise InvalidArgumentError(
            f"check {name!r} names {', '.join('{' + u + '}' for u in unknown)}; the tables are {known} "
            "(write a literal brace as {{ or }})"
        )
    return query


def run_checks(
    spark: Any,
    table: str,
    branch: str,
    checks: Mapping[str, Check] | Sequence[Check] | Check,
    *,
    warehouse: str | None = None,
    base: str | None = "main",
    options: Mapping[str, Any] | None = None,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    raise_on_failure: bool = False,
) -> CheckReport:
    """Run data checks on ``branch`` (with ``base`` beside it) and report each one.

    A SQL check is a *violation query*: it passes when it returns no rows. It reads
    the branch as ``{branch_rows}`` and the base as ``{base_rows}`` (``{main_rows}``
    too), e.g. ``SELECT * FROM {branch_rows} WHERE amount < 0``; write a literal brace
    as ``{{``. A callable gets ``(df_branch, df_base)`` and returns ``True`` (pass),
    ``False`` or a message (fail); anything else, or an exception, fails the check.

    :param checks: a mapping name -> check, a list of checks, or one check.
    :param sample_rows: violating rows kept per failed SQL check.
    :param raise_on_failure: raise ``AuditFailedError`` naming the failed checks.
    """
    items = _check_items(checks)
    if not isinstance(sample_rows, int) or sample_rows < 0:
        raise InvalidArgumentError(f"sample_rows must be an integer >= 0, got {sample_rows!r}")
    sides = _read_sides(spark, table, branch, warehouse=warehouse, base=base, options=options)
    report = _run(spark, sides, items, table, _branch_name(branch), _branch_name(base), sample_rows)
    if raise_on_failure:
        report.raise_for_failures()
    return report


def _run(spark: Any, sides: _Sides, items: list[tuple[str, Check]], table: str, branch: str, base: str,
         sample_rows: int) -> CheckReport:
    results = []
    for name, check in items:
        if isinstance(check, str):
            results.append(_run_sql(spark, sides, name, check, sample_rows))
        else:
            results.append(_run_callable(sides, name, check))
    return CheckReport(table, base, branch, tuple(results))


def _run_sql(spark: Any, sides: _Sides, name: str, text: str, sample_rows: int) -> CheckResult:
    query = sql_query(text, name)
    frames = {"branch_rows": sides.branch, "base_rows": sides.base, "main_rows": sides.base}
    try:
        df = spark.sql(f"SELECT * FROM (\n{query}\n) AS violations", **frames)
        sample = df.limit(max(sample_rows, 1)).collect()
        violations = 0 if not sample else df.count()
    except Exception as err:  # noqa: BLE001 - a broken check is a failed check, with Spark's reason
        return CheckResult(name, "sql", False, f"query failed: {_first_line(err)}")
    if violations == 0:
        return CheckResult(name, "sql", True, "no violating rows", 0)
    rows = tuple(r.asDict(recursive=True) for r in sample[:sample_rows])
    return CheckResult(name, "sql", False, f"{violations} violating row{'s' if violations != 1 else ''}",
                       violations, rows)


def _run_callable(sides: _Sides, name: str, check: Callable[[DataFrame, DataFrame], Any]) -> CheckResult:
    try:
        outcome = check(sides.branch, sides.base)
    except Exception as err:  # noqa: BLE001 - reported as this check's failure
        return CheckResult(name, "python", False, f"raised {type(err).__name__}: {_first_line(err)}")
    if outcome is True:
        return CheckResult(name, "python", True, "passed")
    if outcome is False:
        return CheckResult(name, "python", False, "returned False")
    if isinstance(outcome, str):
        return CheckResult(name, "python", False, outcome or "failed (empty message)")
    return CheckResult(name, "python", False,
                       f"returned {type(outcome).__name__} {outcome!r:.40}; must return True, False or a message")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:300]


# -- both at once (the Spark job and the operator) --


@dataclass(frozen=True)
class BranchAudit:
    """The diff and the checks of one audit, over the same files."""

    diff: BranchDiff
    checks: CheckReport | None

    @property
    def passed(self) -> bool:
        return self.checks is None or self.checks.passed

    def summary(self) -> str:
        line = self.diff.summary()
        return line if self.checks is None else f"{line}; {self.checks.summary().split(': ', 1)[1]}"

    def to_dict(self, max_partitions: int = DICT_PARTITIONS) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "summary": self.summary(),
            "diff": self.diff.to_dict(max_partitions),
            "checks": None if self.checks is None else self.checks.to_dict(),
        }


def audit_branch(
    spark: Any,
    table: str,
    branch: str,
    checks: Mapping[str, Check] | Sequence[Check] | None = None,
    *,
    warehouse: str | None = None,
    base: str | None = "main",
    options: Mapping[str, Any] | None = None,
    limit_partitions: int = DEFAULT_LIMIT_PARTITIONS,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
) -> BranchAudit:
    """``branch_diff`` and ``run_checks`` over one read of both sides (checks optional)."""
    items = _check_items(checks) if checks else None
    if not isinstance(limit_partitions, int) or limit_partitions < 0:
        raise InvalidArgumentError(f"limit_partitions must be an integer >= 0, got {limit_partitions!r}")
    sides = _read_sides(spark, table, branch, warehouse=warehouse, base=base, options=options)
    diff = _diff(sides, table, _branch_name(branch), _branch_name(base), limit_partitions, sample_rows)
    report = None if items is None else _run(spark, sides, items, table, _branch_name(branch), _branch_name(base), sample_rows)
    return BranchAudit(diff, report)
