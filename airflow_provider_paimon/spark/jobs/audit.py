"""Job entry point: audit a branch before publishing it (write-audit-publish).

``launcher.py audit --warehouse W --table db.t --branch B [--base main]
[--check NAME=SQL]... [--expectations JSON] [--limit-partitions N] [--dict-partitions N]
[--sample-rows N]``

With ``--expectations`` (a JSON list of rules, ``spark/branch/expectations.py``) the
job first applies them to the branch (``apply_expectations``: ``drop`` rules move
violating rows to the quarantine branch), then reads the branch and its base with
``read_table`` and prints ``PAIMON_RESULT {json}`` with ``passed``, ``summary``,
``diff`` (``BranchDiff.to_dict``), ``checks`` (``CheckReport.to_dict`` or null) and
``expectations`` (``ExpectationReport.to_dict`` or null). A failed check or ``fail``
rule is a *result* (exit 0, ``passed: false``), so the operator can put the report in
XCom before failing the task; bad input (unknown table or branch, a check that is not
a query, a bad rule) exits 2 with ``PAIMON_ERROR``. Only ``drop`` rules write (to the
branch being audited and its quarantine branch); checks run as subqueries, which
cannot hold a command. Only SQL checks travel on a command line; Python callables are
for ``run_checks`` in the caller's own session.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from ...paimon.errors import InvalidArgumentError
from ..branch.diff import audit_branch, sql_query
from ..branch.expectations import parse_expectations
from ..branch.quarantine import apply_expectations
from .common import ArgumentError, catalog_options, job_spark_session, new_parser, run_job

log = logging.getLogger("airflow_provider_paimon.jobs.audit")


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("audit", "Diff a Paimon branch against its base and run data checks on it.")
    parser.add_argument("--branch", required=True, help="branch to audit")
    parser.add_argument("--base", default="main", help="what the branch would replace (default: main)")
    parser.add_argument(
        "--check", action="append", default=[], metavar="NAME=SQL",
        help="violation query that must return no rows, over {branch_rows} and {base_rows} (repeatable)",
    )
    parser.add_argument(
        "--expectations", default=None, metavar="JSON",
        help="expectation rules to apply first, a JSON list (spark/branch/expectations.py)",
    )
    parser.add_argument("--limit-partitions", type=int, default=1000,
                        help="changed partitions kept in the diff (most changed first)")
    parser.add_argument("--dict-partitions", type=int, default=20,
                        help="changed partitions in the printed result (keeps XCom small)")
    parser.add_argument("--sample-rows", type=int, default=5, help="violating rows kept per failed check")
    return parser


def parse_checks(pairs: list[str]) -> dict[str, str]:
    """``["name=SELECT ..."]`` -> ``{"name": "SELECT ..."}`` (the SQL may contain ``=``)."""
    checks: dict[str, str] = {}
    for pair in pairs:
        name, sep, sql = pair.partition("=")
        if not sep or not name.strip() or not sql.strip():
            raise ArgumentError(f"--check {pair[:60]!r} must be NAME=SQL")
        if name.strip() in checks:
            raise ArgumentError(f"--check name {name.strip()!r} given twice")
        checks[name.strip()] = sql
    return checks


def parse_expectation_arg(text: str | None) -> tuple[Any, ...]:
    """The rules of ``--expectations`` (a JSON list), checked; () when not given."""
    if text is None:
        return ()
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise ArgumentError(f"--expectations is not JSON: {err}") from None
    try:
        return parse_expectations(raw)
    except InvalidArgumentError as err:
        raise ArgumentError(f"--expectations: {err}") from None


def run(args: argparse.Namespace, spark: Any = None) -> dict[str, Any]:
    """Audit as ``args`` say and return the result dict."""
    for flag in ("limit_partitions", "dict_partitions", "sample_rows"):
        if getattr(args, flag) < 0:
            raise ArgumentError(f"--{flag.replace('_', '-')} must not be negative, got {getattr(args, flag)}")
    checks = parse_checks(args.check)
    for name, sql in checks.items():
        sql_query(sql, name)  # refused before Spark starts
    rules = parse_expectation_arg(getattr(args, "expectations", None))
    options = {**catalog_options(args), "warehouse": args.warehouse}
    session = spark or job_spark_session("paimon-audit")
    expectations = None
    if rules:
        expectations = apply_expectations(session, args.table, args.branch, rules, base=args.base,
                                          options=options, sample_rows=args.sample_rows)
    audit = audit_branch(
        session, args.table, args.branch, checks or None, base=args.base,
        options=options, limit_partitions=args.limit_partitions, sample_rows=args.sample_rows,
    )
    log.info("%s", audit.summary())
    result = {"table": args.table, "branch": args.branch, "base": args.base, **audit.to_dict(args.dict_partitions)}
    if expectations is not None:
        result["expectations"] = expectations.to_dict()
        result["passed"] = bool(result["passed"]) and expectations.passed
        result["summary"] = f"{result['summary']}; {expectations.summary()}"
    else:
        result["expectations"] = None
    return result


def main(argv: list[str]) -> int:
    def body() -> dict[str, Any]:
        return run(build_parser().parse_args(argv))

    return run_job(body)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
