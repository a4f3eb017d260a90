"""BranchAuditOperator: audit a corrected branch before it replaces main (write-audit-publish).

The ``audit`` Spark job (``spark/jobs/audit.py``) diffs the branch against its base
per partition and runs SQL violation queries on it (``spark/branch/diff.py``). This
operator checks names and queries before submitting, logs the summary, returns the
report as XCom and fails the task when a check fails, so a ``ReplaceMainBranchOperator``
downstream never runs on a branch that did not pass. Nothing is written either way.

Beside the report it stores a bounded summary under a key named after the table
(``audit_summary.summary_key``): the lineage page's audits panel reads only the asked
table's summaries instead of decoding every audit report in the metadata database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.audit_summary import audit_summary, summary_key
from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.base import (
    PaimonSparkJobOperator,
    optional_int,
    optional_str,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.names import is_main
from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.spark.branch.diff import sql_query
from airflow_provider_paimon.spark.branch.expectations import parse_expectations
from airflow_provider_paimon.spark.branch.quarantine import quarantine_branch

#: XCom key of the report when a check failed (on success it is the return value)
AUDIT_XCOM_KEY = "audit"


class PaimonAuditFailedError(AirflowFailException):
    """A check failed on the branch: do not publish it (nothing was changed)."""


def check_items(checks: Mapping[str, str] | Sequence[str] | str | None) -> dict[str, str]:
    """``{"name": "SELECT ..."}`` from a mapping, a list (``check_1``...) or one query."""
    if checks is None:
        return {}
    if isinstance(checks, str):
        checks = [checks]
    if isinstance(checks, Mapping):
        items = {str(k): v for k, v in checks.items()}
    else:
        items = {f"check_{i}": v for i, v in enumerate(checks, 1)}
    for name, sql in items.items():
        if not isinstance(sql, str):
            raise InvalidArgumentError(
                f"check {name!r} must be a SQL violation query (str); Python callables run with "
                "airflow_provider_paimon.spark.branch.diff.run_checks in your own Spark session"
            )
        if not name.strip() or "=" in name:
            raise InvalidArgumentError(f"check name {name!r} must be non-blank and contain no '='")
        sql_query(sql, name)
    return items


class BranchAuditOperator(PaimonSparkJobOperator):
    """Diff ``branch`` against ``base`` per partition and run SQL checks on it, with Spark.

    :param branch: the branch to audit (templated).
    :param base: what the branch would replace (templated; default ``main``).
    :param checks: SQL violation queries that must return no rows, as ``{name: sql}`` or
        a list; they read ``{branch_rows}`` and ``{base_rows}`` (also ``{main_rows}``).
        Not templated on purpose: whoever can trigger a DAG must not write SQL that
        Spark runs.
    :param limit_partitions: changed partitions the job keeps (most changed first).
    :param xcom_partitions: changed partitions in the XCom report (keeps it small).
    :param sample_rows: violating rows kept per failed check (they land in XCom).
    :param fail_on_check_failure: fail the task when a check fails (default); false
        returns the report with ``passed: false`` for a branching task to read.
    :param expectations: declarative rules applied to the branch first
        (``spark/branch/expectations.py``: ``expect_row``, ``expect_unique``... or
        mappings), each failing, warning or dropping violating rows into
        ``<branch>__quarantine``; a violated ``fail`` rule fails the audit like a check.
        Not templated, like ``checks``. The results are in the report under
        ``expectations`` and go to OpenLineage as data quality facets of the branch.

    XCom: the return value is the report (``passed``, ``summary``, ``diff``, ``checks``);
    when a check fails the task fails and the report is pushed under key ``audit``.
    Either way a summary of at most 8 KB goes under ``paimon_audit:<db.table>`` (for the
    lineage page).
    """

    job_family = "audit"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "branch", "base")

    def __init__(
        self,
        *,
        branch: str,
        base: str = "main",
        checks: Mapping[str, str] | Sequence[str] | None = None,
        limit_partitions: int = 1000,
        xcom_partitions: int = 20,
        sample_rows: int = 5,
        fail_on_check_failure: bool | str = True,
        expectations: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:  # a bad rule fails when the DAG is parsed
            self.expectations = parse_expectations(expectations)
        except InvalidArgumentError as err:
            raise ValueError(f"{self.task_id}: {err}") from None
        self.branch = branch
        self.base = base
        self.checks = check_items(checks)  # a bad query fails when the DAG is parsed
        self.limit_partitions = limit_partitions
        self.xcom_partitions = xcom_partitions
        self.sample_rows = sample_rows
        self.fail_on_check_failure = fail_on_check_failure

    def _base(self) -> str:
        base = optional_str(self.base)
        return "main" if base is None or is_main(base) else base

    def job_args(self) -> list[str]:
        args = ["--branch", str(self.branch), "--base", self._base()]
        for name, sql in self.checks.items():
            args += ["--check", f"{name}={sql}"]
        for flag, value in (("--limit-partitions", self.limit_partitions), ("--dict-partitions", self.xcom_partitions),
                            ("--sample-rows", self.sample_rows)):
            args += [flag, str(optional_int(value, flag.lstrip("-")))]
        if self.expectations:
            args += ["--expectations", json.dumps([rule.to_dict() for rule in self.expectations])]
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        parse_bool(self.fail_on_check_failure, "fail_on_check_failure", True)
        branch = optional_str(self.branch)
        if branch is None:
            self.fail("branch must name the branch to audit")
        if (branch if not is_main(branch) else "main") == self._base():
            self.fail(f"branch and base are both {self._base()!r}: audit a branch against main or another branch")
        self.require_branch(hook, branch)
        self.require_branch(hook, None if self._base() == "main" else self._base())
        for name in ("limit_partitions", "xcom_partitions", "sample_rows"):
            value = optional_int(getattr(self, name), name)
            if value is None or value < 0:
                self.fail(f"{name} must be an integer >= 0, got {getattr(self, name)!r}")
        return None

    def input_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, optional_str(self.branch)), (self.table, None if self._base() == "main" else self._base())]

    def output_tables(self) -> list[tuple[str, str | None]]:
        """Nothing, unless a ``drop`` expectation may move rows: then the branch and its
        quarantine branch."""
        branch = optional_str(self.branch)
        if branch is None or not any(rule.drops for rule in self.expectations):
            return []
        return [(self.table, branch), (self.table, quarantine_branch(branch))]

    def ol_input_facets(self, table: str, branch: str | None, result: dict[str, Any]) -> dict[str, Any]:
        """The expectation results as data quality facets of the audited branch."""
        report = result.get("expectations")
        if not report or table != self.table or branch != optional_str(self.branch):
            return {}
        from airflow_provider_paimon.lineage.openlineage.quality import quality_input_facets

        return quality_input_facets(report)

    def execute(self, context: Context) -> dict[str, Any]:
        result = super().execute(context)
        ti = context.get("ti")
        fails = not result.get("passed", False) and parse_bool(self.fail_on_check_failure, "fail_on_check_failure", True)
        if ti is not None and isinstance(result, dict) and "diff" in result:
            ti.xcom_push(key=summary_key(self.table), value=audit_summary(result, self.table, task_failed=fails))
        if not fails:
            return result
        if ti is not None:
            ti.xcom_push(key=AUDIT_XCOM_KEY, value=result)
        failed = list((result.get("checks") or {}).get("failed") or [])
        failed += [f"expectation {r.get('name')}" for r in (result.get("expectations") or {}).get("results") or []
                   if not r.get("passed") and r.get("on_violation") == "fail"]
        raise PaimonAuditFailedError(
            f"{self.task_id}: checks failed on {self.table} branch {self.branch}: {', '.join(failed) or '?'} "
            f"({result.get('summary')}); do not publish it; nothing was changed"
        )

    def report(self, result: dict[str, Any]) -> None:
        self.log.info("%s", result.get("summary"))
        for rule in (result.get("expectations") or {}).get("results") or []:
            if not rule.get("passed"):
                self.log.warning("expectation %s (%s) violated: %s", rule.get("name"), rule.get("on_violation"),
                                 rule.get("message"))
        for check in (result.get("checks") or {}).get("checks") or []:
            if not check.get("passed"):
                self.log.warning("check %s failed: %s; sample: %s", check.get("name"), check.get("message"),
                                 check.get("sample"))
