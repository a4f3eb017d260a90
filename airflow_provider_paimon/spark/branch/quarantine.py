"""Apply expectations to a branch: evaluate them, and move the rows ``drop`` rules reject.

``apply_expectations`` reads the branch once (``read_table``, files pinned to the
branch's current snapshot), evaluates every rule (``expectations.py``), and when a
``drop`` rule has violations:

1. appends the violating rows, with ``_expectation`` naming the rules each broke, to
   the quarantine branch ``<branch>__quarantine`` (created empty from the branch's
   schema the first time; the column is added by schema merge), so nothing is lost;
2. replaces, in ONE OVERWRITE snapshot of the branch, every partition that held a
   violating row by its passing rows (``write_table(replace_partitions=...)``); a
   partition whose rows all failed ends up empty. An unpartitioned table is
   overwritten whole.

Crash safety: the quarantine commit carries ``expectations.source`` = the branch
snapshot it was computed from (id and commit time: ids alone are reused). Killed
after it, a rerun reads the same branch snapshot, sees the quarantine already holds
its rows and only rewrites the branch; killed after the branch rewrite, a rerun finds
no violating rows and changes nothing. Either way the branch stays readable: both
steps are single Paimon commits.

Primary-key tables are refused for ``drop`` (their rows would need delete records,
not a partition rewrite); ``warn`` and ``fail`` rules work on them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ...paimon.errors import InvalidArgumentError
from ...paimon.names import is_main
from .expectations import (
    DEFAULT_MAX_PARTITIONS,
    DEFAULT_SAMPLE_ROWS,
    RULE_COLUMN,
    Expectation,
    ExpectationReport,
    evaluate_expectations,
    flag_column,
    parse_expectations,
    with_violation_flags,
)

if TYPE_CHECKING:
    from ..native.plan import ReadPlan

log = logging.getLogger(__name__)

QUARANTINE_SUFFIX = "__quarantine"
#: snapshot property of a quarantine commit: the branch snapshot its rows came from
SOURCE_PROPERTY = "expectations.source"
#: snapshot property of the branch rewrite: how many rows it moved out
DROPPED_PROPERTY = "expectations.dropped-rows"


def quarantine_branch(branch: str) -> str:
    """The branch that receives ``branch``'s dropped rows."""
    return f"{branch}{QUARANTINE_SUFFIX}"


def apply_expectations(
    spark: Any,
    table: str,
    branch: str,
    expectations: Any,
    *,
    warehouse: str | None = None,
    base: str | None = "main",
    options: Mapping[str, Any] | None = None,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    max_partitions: int = DEFAULT_MAX_PARTITIONS,
) -> ExpectationReport:
    """Evaluate ``expectations`` on ``branch`` of ``table`` and carry out ``drop`` rules.

    Returns the report (``report.passed`` is False when a ``fail`` rule was violated;
    the caller decides whether to raise). Nothing is written unless a ``drop`` rule
    has violations.
    """
    from pyspark.sql import functions as F

    from ..native import read_table
    from ..tables import catalog_for, open_table

    rules = parse_expectations(expectations)
    if not rules:
        raise InvalidArgumentError("no expectations given")
    if not isinstance(branch, str) or not branch.strip() or is_main(branch):
        raise InvalidArgumentError(
            f"expectations apply to a branch before it is published, not to main; got branch {branch!r}"
        )
    if branch.endswith(QUARANTINE_SUFFIX):
        raise InvalidArgumentError(f"{branch!r} is a quarantine branch; apply expectations to the branch it serves")
    base_name = "main" if is_main(base) else str(base)
    df = read_table(spark, table, warehouse=warehouse, branch=branch, options=options)
    plan = cast("ReadPlan", df.native_plan)
    paimon_table = open_table(plan.options, time_travel=False)
    schema = paimon_table.table_schema
    partition_keys = list(schema.partition_keys or ())
    primary_keys = list(schema.primary_keys or ())
    base_rows = None
    if any(r.kind == "row_count" for r in rules):
        base_rows = read_table(spark, table, warehouse=warehouse,
                               branch=None if base_name == "main" else base_name, options=options).count()
    columns = list(df.columns)
    flagged = with_violation_flags(df, rules)
    report = evaluate_expectations(
        df, rules, table=table, branch=branch, base=base_name, partition_keys=partition_keys,
        key_columns=primary_keys, base_rows=base_rows, snapshot_id=plan.snapshot_id,
        sample_rows=sample_rows, max_partitions=max_partitions, flagged=flagged,
    )
    log.info("%s", report.summary())
    dropping = [r.rule for r in report.to_drop]
    if not dropping:
        return report
    if primary_keys:
        raise InvalidArgumentError(
            f"{table} is a primary-key table: on_violation='drop' would need delete records, which "
            "expectations do not write yet; use 'fail' or 'warn' for "
            + ", ".join(repr(r.name) for r in dropping)
        )
    violates = F.lit(False)
    for rule in dropping:
        violates = violates | F.col(_quoted(flag_column(rule.name)))
    rule_names = F.concat_ws(",", *[
        F.when(F.col(_quoted(flag_column(r.name))), F.lit(r.name)) for r in dropping
    ])
    bad = flagged.where(violates).select(*[F.col(_quoted(c)) for c in columns], rule_names.alias(RULE_COLUMN))
    good = flagged.where(~violates).select(*[F.col(_quoted(c)) for c in columns])
    affected = _affected_partitions(bad, partition_keys)
    dropped = bad.count()
    source = _source_id(paimon_table, plan.snapshot_id)
    quarantined = _quarantine(catalog_for(plan.options), table, branch, bad, source,
                              warehouse=warehouse, options=options)
    _rewrite_branch(good, table, branch, partition_keys, affected, dropped, source,
                    warehouse=warehouse, options=options)
    log.info("moved %d row(s) of %s@%s violating %s to branch %s", dropped, table, branch,
             ", ".join(r.name for r in dropping), quarantine_branch(branch))
    return _with_drop(report, dropped, {
        "branch": quarantine_branch(branch),
        "source": source,
        "appended": quarantined,
        "partitions_rewritten": len(affected) if partition_keys else None,
    })


def _affected_partitions(bad: Any, partition_keys: Sequence[str]) -> list[dict[str, Any]]:
    if not partition_keys:
        return []
    from pyspark.sql import functions as F

    rows = bad.select(*[F.col(_quoted(k)) for k in partition_keys]).distinct().collect()
    return [{k: row[k] for k in partition_keys} for row in rows]


def _source_id(paimon_table: Any, snapshot_id: int | None) -> str:
    """The branch snapshot the rows come from: its id and commit time (ids are reused)."""
    if snapshot_id is None:
        return "empty"
    snapshot = paimon_table.snapshot_manager().get_snapshot_by_id(int(snapshot_id))
    millis = getattr(snapshot, "time_millis", None) if snapshot is not None else None
    return f"{snapshot_id}@{millis}"


def _quarantine(catalog: Any, table: str, branch: str, bad: Any, source: str, *,
                warehouse: str | None, options: Mapping[str, Any] | None) -> bool:
    """Append ``bad`` to the quarantine branch unless it already holds rows of ``source``."""
    from ...paimon.branch import create_branch
    from ...paimon.catalog import list_branch_names, load_table
    from ..native import write_table

    target = quarantine_branch(branch)
    main_table = load_table(catalog, table)
    if target not in set(list_branch_names(main_table)):
        create_branch(main_table, target, source_branch=branch)
    latest = load_table(catalog, table, target).snapshot_manager().get_latest_snapshot()
    if latest is not None and (getattr(latest, "properties", None) or {}).get(SOURCE_PROPERTY) == f"{branch}:{source}":
        log.info("quarantine branch %s already holds the rows of %s@%s; not appending again", target, branch, source)
        return False
    write_table(bad, table, warehouse=warehouse, branch=target, mode="append",
                options={**dict(options or {}), "write.merge-schema": "true"},
                snapshot_properties={SOURCE_PROPERTY: f"{branch}:{source}"})
    return True


def _rewrite_branch(good: Any, table: str, branch: str, partition_keys: Sequence[str],
                    affected: list[dict[str, Any]], dropped: int, source: str, *,
                    warehouse: str | None, options: Mapping[str, Any] | None) -> None:
    """One OVERWRITE snapshot of ``branch``: each affected partition keeps its passing rows."""
    from pyspark.sql import functions as F

    from ..native import write_table

    properties = {DROPPED_PROPERTY: str(dropped), SOURCE_PROPERTY: f"{branch}:{source}"}
    if not partition_keys:
        write_table(good, table, warehouse=warehouse, branch=branch, mode="overwrite",
                    options=options, snapshot_properties=properties)
        return
    match = F.lit(False)
    for spec in affected:
        one = F.lit(True)
        for key, value in spec.items():
            column = F.col(_quoted(key))
            one = one & (column.isNull() if value is None else column == F.lit(value))
        match = match | one
    write_table(good.where(match), table, warehouse=warehouse, branch=branch, mode="overwrite",
                options=options, replace_partitions=affected, snapshot_properties=properties)


def _with_drop(report: ExpectationReport, dropped: int, quarantine: dict[str, Any]) -> ExpectationReport:
    from dataclasses import replace

    return replace(report, dropped=dropped, quarantine=quarantine)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


__all__ = ["Expectation", "apply_expectations", "quarantine_branch"]
