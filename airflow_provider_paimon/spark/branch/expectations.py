"""Expectations: declarative rules a branch must meet before it is published.

Write-audit-publish with rules instead of hand-written violation queries, as
Databricks' pipeline expectations and dbt's tests have them. Each rule has a name, a
kind and what happens when rows violate it (``on_violation``):

* ``"fail"`` (default): the audit fails; nothing downstream publishes the branch;
* ``"warn"``: the violation is reported (result, OpenLineage facet), nothing else;
* ``"drop"``: the violating rows are moved out of the branch into a quarantine branch
  (``spark/branch/quarantine.py``), so the branch holds only passing rows and nothing
  is lost. Only row rules can drop: a table-level rule (row-count change, freshness)
  has no rows to move, and asking it to drop is an error.

Kinds (constructors below, or ``Expectation.from_dict`` for JSON/YAML specs):

==================  ===========================================================
``row``             a SQL boolean per row (``amount >= 0``); a row passes only
                    when it is TRUE (NULL violates, as a fail-closed check should)
``not_null``        the columns hold no NULL
``unique``          no two rows share the key (rows with a NULL key column are
                    not compared, as SQL's UNIQUE does); every copy of a
                    duplicated key violates, since none of them is known good
``accepted_values`` the column's value is one of ``values`` (NULL violates
                    unless ``None`` is among them)
``row_count``       the branch's row count changed by a ratio in
                    ``[min_change, max_change]`` vs the base (``-0.1`` = 10% fewer)
``freshness``       the newest value of a date/timestamp column is at most
                    ``max_age`` old when the audit runs
==================  ===========================================================

Evaluation (``evaluate_expectations``) reads the branch once: every row rule becomes
a violation flag, and one aggregation per partition counts rows and violations, so
the cost is one pass over the branch (plus a shuffle for ``unique``). Results are
kept per rule and per partition (rows checked, violations) with a few sample keys,
bounded in size (``max_partitions``, ``sample_rows``) so they fit in XCom.

Spark is imported where the work happens: the Airflow layer imports this module to
check rules at DAG parse time.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...paimon.durations import duration_text, parse_duration
from ...paimon.errors import InvalidArgumentError, PaimonError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ON_VIOLATION = ("fail", "warn", "drop")
ROW_KINDS = ("row", "not_null", "unique", "accepted_values")
TABLE_KINDS = ("row_count", "freshness")
KINDS = ROW_KINDS + TABLE_KINDS
#: OpenLineage ``severity`` of each reaction
SEVERITY = {"fail": "error", "warn": "warn", "drop": "drop"}
DEFAULT_SAMPLE_ROWS = 5
DEFAULT_MAX_PARTITIONS = 50
#: the column a quarantined row carries: the names of the rules it violated
RULE_COLUMN = "_expectation"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


class ExpectationsFailedError(PaimonError):
    """A ``fail`` rule was violated: the branch must not be published."""


@dataclass(frozen=True)
class Expectation:
    """One named rule. Build with ``expect_row``, ``expect_not_null``... or ``from_dict``."""

    name: str
    kind: str
    on_violation: str = "fail"
    condition: str | None = None
    columns: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()
    min_change: float | None = None
    max_change: float | None = None
    max_age_seconds: float | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        _check_name(self.name)
        where = f"expectation {self.name!r}"
        if self.kind not in KINDS:
            raise InvalidArgumentError(f"{where}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.on_violation not in ON_VIOLATION:
            raise InvalidArgumentError(
                f"{where}: on_violation must be one of {', '.join(ON_VIOLATION)}, got {self.on_violation!r}"
            )
        if self.on_violation == "drop" and self.kind in TABLE_KINDS:
            raise InvalidArgumentError(
                f"{where}: a {self.kind} rule checks the whole table and has no rows to drop; "
                "use on_violation='fail' or 'warn'"
            )
        if self.kind == "row" and not (isinstance(self.condition, str) and self.condition.strip()):
            raise InvalidArgumentError(f"{where}: a row rule needs a SQL condition, e.g. 'amount >= 0'")
        if self.kind in ("not_null", "unique") and not self.columns:
            raise InvalidArgumentError(f"{where}: name the column(s) to check")
        if self.kind in ("accepted_values", "freshness") and len(self.columns) != 1:
            raise InvalidArgumentError(f"{where}: name exactly one column")
        if self.kind == "accepted_values" and not self.values:
            raise InvalidArgumentError(f"{where}: give the accepted values")
        if self.kind == "row_count":
            if self.min_change is None and self.max_change is None:
                raise InvalidArgumentError(f"{where}: give min_change and/or max_change (e.g. -0.1, 0.1)")
            for label, bound in (("min_change", self.min_change), ("max_change", self.max_change)):
                if bound is not None and (isinstance(bound, bool) or not math.isfinite(float(bound))):
                    raise InvalidArgumentError(f"{where}: {label} must be a finite number, got {bound!r}")
            if (self.min_change is not None and self.max_change is not None
                    and float(self.min_change) > float(self.max_change)):
                raise InvalidArgumentError(f"{where}: min_change {self.min_change} > max_change {self.max_change}")
        if self.kind == "freshness" and self.max_age_seconds is None:
            raise InvalidArgumentError(f"{where}: give max_age (e.g. '1 d')")
        for column in self.columns:
            if not isinstance(column, str) or not column.strip():
                raise InvalidArgumentError(f"{where}: column names must be non-blank text, got {column!r}")

    @property
    def drops(self) -> bool:
        return self.on_violation == "drop"

    @property
    def row_rule(self) -> bool:
        return self.kind in ROW_KINDS

    def content(self) -> str:
        """The rule as one line of text (shown to reviewers, sent as the assertion content)."""
        if self.kind == "row":
            return str(self.condition)
        if self.kind == "not_null":
            return " AND ".join(f"{c} IS NOT NULL" for c in self.columns)
        if self.kind == "unique":
            return f"UNIQUE({', '.join(self.columns)})"
        if self.kind == "accepted_values":
            return f"{self.columns[0]} IN ({', '.join(repr(v) for v in self.values)})"
        if self.kind == "row_count":
            return f"row count change in [{_bound(self.min_change)}, {_bound(self.max_change)}] vs base"
        age = duration_text(datetime.timedelta(seconds=float(self.max_age_seconds or 0)))
        return f"max({self.columns[0]}) newer than {age}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "on_violation": self.on_violation}
        if self.condition is not None:
            out["condition"] = self.condition
        if self.columns:
            out["columns"] = list(self.columns)
        if self.values:
            out["values"] = list(self.values)
        for key in ("min_change", "max_change", "max_age_seconds", "description"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Expectation:
        """A rule from a mapping (``to_dict``'s shape; ``column`` for one column and
        ``max_age`` as a duration are accepted too). Unknown keys are an error."""
        if not isinstance(spec, Mapping):
            raise InvalidArgumentError(f"an expectation must be a mapping, got {type(spec).__name__}")
        known = {"name", "kind", "on_violation", "condition", "columns", "column", "values",
                 "min_change", "max_change", "max_age", "max_age_seconds", "description"}
        unknown = sorted(set(spec) - known)
        if unknown:
            raise InvalidArgumentError(
                f"expectation {spec.get('name')!r}: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"known are {', '.join(sorted(known))}"
            )
        columns = spec.get("columns", ())
        if "column" in spec:
            if columns:
                raise InvalidArgumentError(f"expectation {spec.get('name')!r}: give 'column' or 'columns', not both")
            columns = (spec["column"],)
        if isinstance(columns, str):
            columns = (columns,)
        max_age = spec.get("max_age_seconds")
        if "max_age" in spec:
            max_age = parse_duration(spec["max_age"], f"expectation {spec.get('name')!r} max_age",
                                     allow_zero=False).total_seconds()
        values = spec.get("values", ())
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise InvalidArgumentError(f"expectation {spec.get('name')!r}: values must be a list")
        return cls(
            name=spec.get("name", ""),
            kind=spec.get("kind", ""),
            on_violation=spec.get("on_violation", "fail"),
            condition=spec.get("condition"),
            columns=tuple(columns),
            values=tuple(values),
            min_change=spec.get("min_change"),
            max_change=spec.get("max_change"),
            max_age_seconds=max_age,
            description=spec.get("description"),
        )


def _bound(value: float | None) -> str:
    return "-inf" if value is None else f"{float(value):g}"


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name or len(name) > 100 or not set(name) <= _NAME_CHARS:
        raise InvalidArgumentError(
            f"expectation name {name!r} must be 1-100 characters of letters, digits, '_', '-' or '.'"
        )


def expect_row(name: str, condition: str, on_violation: str = "fail", description: str | None = None) -> Expectation:
    """Every row satisfies the SQL boolean ``condition`` (NULL counts as a violation)."""
    return Expectation(name, "row", on_violation, condition=condition, description=description)


def expect_not_null(name: str, columns: str | Sequence[str], on_violation: str = "fail") -> Expectation:
    return Expectation(name, "not_null", on_violation, columns=_columns(columns))


def expect_unique(name: str, columns: str | Sequence[str], on_violation: str = "fail") -> Expectation:
    return Expectation(name, "unique", on_violation, columns=_columns(columns))


def expect_accepted_values(name: str, column: str, values: Iterable[Any], on_violation: str = "fail") -> Expectation:
    return Expectation(name, "accepted_values", on_violation, columns=(column,), values=tuple(values))


def expect_row_count_change(name: str, min_change: float | None = None, max_change: float | None = None,
                            on_violation: str = "fail") -> Expectation:
    """The branch's row count is within ``[min_change, max_change]`` of the base's, as a
    ratio (``-0.1`` allows 10% fewer rows, ``0.2`` 20% more)."""
    return Expectation(name, "row_count", on_violation, min_change=min_change, max_change=max_change)


def expect_fresh(name: str, column: str, max_age: Any, on_violation: str = "fail") -> Expectation:
    """The newest value of ``column`` (date or timestamp) is at most ``max_age`` old
    (a ``timedelta``, seconds, or ``'1 d'``)."""
    seconds = parse_duration(max_age, f"expectation {name!r} max_age", allow_zero=False).total_seconds()
    return Expectation(name, "freshness", on_violation, columns=(column,), max_age_seconds=seconds)


def _columns(columns: str | Sequence[str]) -> tuple[str, ...]:
    return (columns,) if isinstance(columns, str) else tuple(columns)


def parse_expectations(raw: Any) -> tuple[Expectation, ...]:
    """Rules from a list of ``Expectation`` objects and/or mappings; names must be unique."""
    if raw is None:
        return ()
    if isinstance(raw, (Expectation, Mapping)):
        raw = [raw]
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        raise InvalidArgumentError(f"expectations must be a list of rules, got {type(raw).__name__}")
    rules = tuple(item if isinstance(item, Expectation) else Expectation.from_dict(item) for item in raw)
    seen: set[str] = set()
    for rule in rules:
        if rule.name in seen:
            raise InvalidArgumentError(f"expectation name {rule.name!r} is used twice")
        seen.add(rule.name)
    return rules


# -- results --------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionResult:
    """One rule on one partition: rows checked and how many violated."""

    partition: dict[str, Any]
    rows: int
    violations: int

    def to_dict(self) -> dict[str, Any]:
        return {"partition": {k: _json(v) for k, v in self.partition.items()}, "rows": self.rows,
                "violations": self.violations}


@dataclass(frozen=True)
class ExpectationResult:
    """One rule's outcome over the whole branch."""

    rule: Expectation
    passed: bool
    rows_checked: int
    violations: int
    message: str
    expected: str = ""
    actual: str = ""
    partitions: tuple[PartitionResult, ...] = ()  # partitions with violations, most first
    partitions_with_violations: int = 0
    samples: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.rule.name,
            "kind": self.rule.kind,
            "on_violation": self.rule.on_violation,
            "content": self.rule.content(),
            "columns": list(self.rule.columns),
            "passed": self.passed,
            "rows_checked": self.rows_checked,
            "violations": self.violations,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
            "partitions_with_violations": self.partitions_with_violations,
            "partitions": [p.to_dict() for p in self.partitions],
            "samples": [{k: _json(v) for k, v in s.items()} for s in self.samples],
        }


@dataclass(frozen=True)
class ExpectationReport:
    """Every rule's result for one table's branch, and what it means for publishing."""

    table: str
    branch: str
    base: str
    snapshot_id: int | None
    rows: int
    results: tuple[ExpectationResult, ...]
    dropped: int = 0  # rows moved to the quarantine branch (spark/branch/quarantine.py)
    quarantine: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No ``fail`` rule was violated (``warn`` and handled ``drop`` rules do not fail)."""
        return all(r.passed or r.rule.on_violation != "fail" for r in self.results)

    @property
    def failed(self) -> tuple[ExpectationResult, ...]:
        return tuple(r for r in self.results if not r.passed and r.rule.on_violation == "fail")

    @property
    def warnings(self) -> tuple[ExpectationResult, ...]:
        return tuple(r for r in self.results if not r.passed and r.rule.on_violation == "warn")

    @property
    def to_drop(self) -> tuple[ExpectationResult, ...]:
        return tuple(r for r in self.results if not r.passed and r.rule.drops)

    def summary(self) -> str:
        parts = [f"{len(self.results)} expectation(s) on {self.table}@{self.branch} ({self.rows} rows)"]
        if self.failed:
            parts.append("FAILED " + ", ".join(f"{r.rule.name} ({r.message})" for r in self.failed))
        if self.warnings:
            parts.append("warned " + ", ".join(f"{r.rule.name} ({r.message})" for r in self.warnings))
        if self.to_drop:
            parts.append(f"dropped {self.dropped} row(s) by " + ", ".join(r.rule.name for r in self.to_drop))
        if not (self.failed or self.warnings or self.to_drop):
            parts.append("all passed")
        return "; ".join(parts)

    def raise_for_failures(self) -> None:
        if not self.passed:
            raise ExpectationsFailedError(self.summary())

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "branch": self.branch,
            "base": self.base,
            "snapshot_id": self.snapshot_id,
            "rows": self.rows,
            "passed": self.passed,
            "summary": self.summary(),
            "dropped": self.dropped,
            "quarantine": dict(self.quarantine),
            "results": [r.to_dict() for r in self.results],
        }


def _json(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return str(value)


# -- evaluation -----------------------------------------------------------------------


def violation_flags(df: DataFrame, rules: Sequence[Expectation]) -> dict[str, Column]:
    """A boolean column per row rule: TRUE where the row violates it (never NULL)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    names = set(df.columns)
    flags: dict[str, Column] = {}
    for rule in rules:
        if not rule.row_rule:
            continue
        missing = [c for c in rule.columns if c not in names]
        if missing:
            raise InvalidArgumentError(
                f"expectation {rule.name!r} names column(s) {', '.join(missing)} that the table does not "
                f"have; columns are {', '.join(df.columns)}"
            )
        if rule.kind == "row":
            try:
                condition = F.expr(str(rule.condition))
                df.select(condition.alias("_check")).schema  # noqa: B018 - analysed now, named error
            except Exception as err:  # noqa: BLE001 - Spark's parse/analysis error names the problem
                first = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
                raise InvalidArgumentError(
                    f"expectation {rule.name!r}: condition {rule.condition!r} is not a SQL expression over "
                    f"the table's columns: {first.strip()[:300]}"
                ) from None
            flag = ~F.coalesce(condition.cast("boolean"), F.lit(False))
        elif rule.kind == "not_null":
            flag = F.lit(False)
            for name in rule.columns:
                flag = flag | F.col(_quoted(name)).isNull()
        elif rule.kind == "accepted_values":
            value = F.col(_quoted(rule.columns[0]))
            allowed = [v for v in rule.values if v is not None]
            inside = F.coalesce(value.isin(allowed), F.lit(False)) if allowed else F.lit(False)
            if None in rule.values:
                inside = inside | value.isNull()
            flag = ~inside
        else:  # unique
            keys = [F.col(_quoted(c)) for c in rule.columns]
            any_null = F.lit(False)
            for key in keys:
                any_null = any_null | key.isNull()
            window = Window.partitionBy(*keys)
            flag = (~any_null) & (F.count(F.lit(1)).over(window) > 1)
        flags[rule.name] = flag
    return flags


def evaluate_expectations(
    df_branch: DataFrame,
    rules: Sequence[Expectation],
    *,
    table: str,
    branch: str,
    base: str = "main",
    partition_keys: Sequence[str] = (),
    key_columns: Sequence[str] = (),
    base_rows: int | None = None,
    snapshot_id: int | None = None,
    now: datetime.datetime | None = None,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    max_partitions: int = DEFAULT_MAX_PARTITIONS,
    flagged: DataFrame | None = None,
) -> ExpectationReport:
    """Evaluate ``rules`` on the branch's rows; ``base_rows`` for ``row_count`` rules.

    ``flagged`` is ``with_violation_flags(df_branch, rules)`` when the caller already
    built it (the quarantine reuses the same flags for the rows it moves).
    """
    from pyspark.sql import functions as F

    if sample_rows < 0 or max_partitions < 0:
        raise InvalidArgumentError("sample_rows and max_partitions must not be negative")
    rules = tuple(rules)
    if flagged is None:
        flagged = with_violation_flags(df_branch, rules)
    row_rules = [r for r in rules if r.row_rule]
    fresh_rules = [r for r in rules if r.kind == "freshness"]
    for rule in fresh_rules:
        if rule.columns[0] not in df_branch.columns:
            raise InvalidArgumentError(
                f"expectation {rule.name!r} names column {rule.columns[0]!r} that the table does not have"
            )
    keys = [k for k in partition_keys if k in df_branch.columns]
    aggs = [F.count(F.lit(1)).alias("_rows")]
    aggs += [F.sum(F.col(_quoted(flag_column(r.name))).cast("long")).alias(f"_v{i}") for i, r in enumerate(row_rules)]
    aggs += [F.max(F.col(_quoted(r.columns[0]))).alias(f"_f{i}") for i, r in enumerate(fresh_rules)]
    grouped = flagged.groupBy(*[F.col(_quoted(k)) for k in keys]).agg(*aggs) if keys else flagged.agg(*aggs)
    per_partition = grouped.collect()
    total = sum(int(row["_rows"]) for row in per_partition)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    sample_columns = list(key_columns) or [c for c in df_branch.columns][:8]
    results: list[ExpectationResult] = []
    for rule in rules:
        if rule.row_rule:
            index = row_rules.index(rule)
            parts = [
                PartitionResult({k: row[k] for k in keys}, int(row["_rows"]), int(row[f"_v{index}"] or 0))
                for row in per_partition
            ]
            bad = sorted((p for p in parts if p.violations), key=lambda p: -p.violations)
            violations = sum(p.violations for p in bad)
            samples: tuple[dict[str, Any], ...] = ()
            if violations and sample_rows:
                columns = list(dict.fromkeys([*sample_columns, *[c for c in rule.columns if c not in sample_columns]]))
                picked = flagged.where(F.col(_quoted(flag_column(rule.name)))).select(
                    *[F.col(_quoted(c)) for c in columns]).limit(sample_rows).collect()
                samples = tuple(r.asDict(recursive=True) for r in picked)
            results.append(ExpectationResult(
                rule, violations == 0, total, violations,
                "no violating rows" if not violations else
                f"{violations} of {total} rows violate in {len(bad)} partition(s)" if keys else
                f"{violations} of {total} rows violate",
                expected="0", actual=str(violations),
                partitions=tuple(bad[:max_partitions]), partitions_with_violations=len(bad), samples=samples,
            ))
        elif rule.kind == "row_count":
            results.append(_row_count_result(rule, total, base_rows))
        else:
            index = fresh_rules.index(rule)
            newest = max((row[f"_f{index}"] for row in per_partition if row[f"_f{index}"] is not None), default=None)
            results.append(_freshness_result(rule, total, newest, now))
    return ExpectationReport(table, branch, base, snapshot_id, total, tuple(results))


def flag_column(name: str) -> str:
    """The hidden column holding ``name``'s violation flag in ``with_violation_flags``."""
    return f"__violates__{name}"


def with_violation_flags(df: DataFrame, rules: Sequence[Expectation]) -> DataFrame:
    """``df`` with one boolean column per row rule (``flag_column``)."""
    flags = violation_flags(df, rules)
    return df.select("*", *[flag.alias(flag_column(name)) for name, flag in flags.items()]) if flags else df


def _row_count_result(rule: Expectation, rows: int, base_rows: int | None) -> ExpectationResult:
    expected = f"[{_bound(rule.min_change)}, {_bound(rule.max_change)}]"
    if base_rows is None:
        return ExpectationResult(rule, False, rows, 1, "the base's row count is unknown", expected, "unknown")
    # from an empty base any row is an unbounded change
    change = (rows - base_rows) / base_rows if base_rows else (0.0 if rows == 0 else math.inf)
    low = -math.inf if rule.min_change is None else float(rule.min_change)
    high = math.inf if rule.max_change is None else float(rule.max_change)
    ok = low <= change <= high
    actual = "inf" if math.isinf(change) else f"{change:+.4f}"
    message = f"{rows} rows vs {base_rows} on the base ({actual})"
    return ExpectationResult(rule, ok, rows, 0 if ok else 1, message, expected, actual)


def _freshness_result(rule: Expectation, rows: int, newest: Any, now: datetime.datetime) -> ExpectationResult:
    limit = datetime.timedelta(seconds=float(rule.max_age_seconds or 0))
    expected = f"<= {duration_text(limit)} old"
    if newest is None:
        return ExpectationResult(rule, False, rows, 1, f"{rule.columns[0]} has no value", expected, "none")
    if isinstance(newest, datetime.datetime):
        moment = newest if newest.tzinfo else newest.replace(tzinfo=datetime.timezone.utc)
    elif isinstance(newest, datetime.date):
        # a day counts from its end: data for today is fresh all day
        moment = datetime.datetime.combine(newest + datetime.timedelta(days=1), datetime.time(),
                                           tzinfo=datetime.timezone.utc)
    else:
        raise InvalidArgumentError(
            f"expectation {rule.name!r}: column {rule.columns[0]!r} must be a date or timestamp for freshness, "
            f"it holds {type(newest).__name__}"
        )
    age = now - moment
    ok = age <= limit
    return ExpectationResult(rule, ok, rows, 0 if ok else 1,
                             f"newest {rule.columns[0]} is {_json(newest)}", expected, _json(newest))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
