"""Job entry point: compact a Paimon table (or a branch of it) with Spark.

``launcher.py compact --warehouse W --table db.t [--branch B]
[--partition k=v,k2=v2]... [--where EXPR] [--option k=v]... [--dry-run]
[--max-retries N] [--mode full|minor] [--manifests-only]``

Append tables: small files merged into target-size files (``paimon.compaction``).
Primary-key tables: each bucket's LSM tree merged (``paimon.lsm``), ``--mode full``
(default: every sorted run into one at the top level) or ``minor`` (Paimon's universal
picker); ``--option`` takes ``num-sorted-run.compaction-trigger``, ``num-levels``,
``compaction.max-size-amplification-percent``, ``compaction.size-ratio``,
``target-file-size``.

``--manifests-only`` runs Paimon's ``compact_manifest`` instead
(``paimon/compaction/manifest_compaction.py``: the manifests are fully compacted into
one COMPACT snapshot, no data file is touched, no Spark work); its result has
``operation: compact_manifest``, ``committed``, ``snapshot_id``, ``manifests_before``,
``manifests_after``, ``entries_before``, ``entries_after`` and ``message``.

Prints ``PAIMON_RESULT {json}`` with ``files_before``, ``bytes_before``,
``files_after``, ``bytes_after``, ``snapshot_id`` (null when nothing was committed),
``committed``, ``duration_s``, ``bins``, ``message`` (and ``plan`` on a dry run),
``expired`` (what the expiry after the commit removed, as the writers expire: the
table's ``snapshot.*`` retention unless ``write-only=true``; null when nothing went).
Bad input (unknown table, branch or partition, a table kind neither compaction
handles, nonsensical options, a ``--where`` outside the whitelist of ``paimon/predicates.py``) exits 2 with ``PAIMON_ERROR <message>`` before anything is written.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from airflow_provider_paimon.paimon.commit_properties import commit_properties
from airflow_provider_paimon.paimon.manifests import MergeOptions
from airflow_provider_paimon.spark.session_info import app_id

from ...paimon.catalog import load_table, open_catalog
from ...paimon.compaction.manifest_compaction import compact_manifest, preview
from ...paimon.compaction.options import CompactionOptions
from ...paimon.compaction.plan import check_compactable, partition_spec_filter
from ...paimon.compaction.runner import compact
from ...paimon.errors import InvalidArgumentError
from ...paimon.lsm.compact import check_lsm_compactable
from ...paimon.lsm.options import LsmOptions, check_mode
from ...paimon.partitions import split_partition_text
from ...paimon.predicates import table_partition_types, where_filter
from ..compaction import SparkBinRewriter
from ..lsm_compaction import SparkUnitRewriter
from .common import (
    ArgumentError,
    catalog_options,
    job_spark_session,
    new_parser,
    parse_key_values,
    run_job,
)

log = logging.getLogger("airflow_provider_paimon.jobs.compact")


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("compact", "Merge small files of a Paimon append table, or the LSM tree of a "
                        "primary-key table.")
    parser.add_argument("--branch", default=None, help="branch to compact (default: main)")
    parser.add_argument(
        "--partition", action="append", default=[], metavar="K=V[,K2=V2]",
        help="compact only this partition (repeatable; partitions are OR-ed)",
    )
    parser.add_argument(
        "--where", default=None, metavar="EXPR",
        help="predicate on partition columns selecting partitions to compact: comparisons "
        "with literals, IN, BETWEEN, IS [NOT] NULL, AND/OR/NOT (no functions or subqueries)",
    )
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE",
        help="override a table option for this run (target-file-size, "
        "compaction.small-file-ratio, compaction.min.file-num, source.split.open-file-cost; "
        "write-only, snapshot.num-retained.min/max, snapshot.time-retained, "
        "snapshot.expire.limit for the expiry after the commit)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, commit nothing")
    parser.add_argument("--max-retries", type=int, default=3,
                        help="re-plans after a conflicting concurrent commit (default 3)")
    parser.add_argument("--mode", default=None,
                        help="primary-key tables: full (default) or minor (universal compaction)")
    parser.add_argument("--max-tasks", type=int, default=None,
                        help="Spark tasks for the rewrite (default: 2 x default parallelism)")
    parser.add_argument(
        "--manifests-only", action="store_true",
        help="compact only the table's manifests (Paimon's compact_manifest): no data file "
        "is read or written; any table type; no --partition/--where",
    )
    return parser


def run_manifests_only(args: argparse.Namespace, overrides: dict[str, str]) -> dict[str, Any]:
    """``--manifests-only``: Paimon's ``compact_manifest`` (no Spark work, no data file)."""
    import time

    if args.partition or args.where:
        raise ArgumentError(
            "--manifests-only compacts the whole manifest list (as Paimon's compact_manifest "
            "does); leave out --partition and --where"
        )
    unknown = sorted(k for k in overrides if not k.startswith("manifest."))
    if unknown:
        raise ArgumentError(
            f"--manifests-only takes only manifest.* options, got {', '.join(unknown)}"
        )
    table = load_table(open_catalog(args.warehouse, catalog_options(args)), args.table, args.branch)
    options = MergeOptions.of_table(table, overrides)
    started = time.monotonic()
    if args.dry_run:
        out = preview(table, options).to_dict()
    else:
        out = compact_manifest(table, options=options, properties=commit_properties()).to_dict()
    out.update({"dry_run": bool(args.dry_run), "duration_s": round(time.monotonic() - started, 3)})
    return out


def run(args: argparse.Namespace, spark: Any = None) -> dict[str, Any]:
    """Compact as ``args`` say and return the result dict."""
    if args.max_retries < 0:
        raise ArgumentError(f"--max-retries must not be negative, got {args.max_retries}")
    if args.max_tasks is not None and args.max_tasks < 1:
        raise ArgumentError(f"--max-tasks must be at least 1, got {args.max_tasks}")
    if args.partition and args.where:
        raise ArgumentError("give either --partition or --where, not both")
    overrides = parse_key_values(args.option, "option")
    if args.manifests_only:
        result = run_manifests_only(args, overrides)
        result.update({"table": args.table, "branch": args.branch or "main"})
        log.info("%s", result["message"])
        return result
    cat_options = catalog_options(args)
    table = load_table(open_catalog(args.warehouse, cat_options), args.table, args.branch)
    primary_keys = bool(table.is_primary_key_table)
    if primary_keys:
        mode = check_mode(args.mode or "full")
        check_lsm_compactable(table)
        LsmOptions.from_table(table, overrides)  # bad values refused before Spark starts
    else:
        if args.mode is not None:
            raise ArgumentError(
                f"--mode is for primary-key tables; {args.table} is an append table (drop --mode)"
            )
        mode = "full"
        check_compactable(table)
    options = CompactionOptions.from_table(table, overrides)

    partition_filter = None
    if args.partition:
        specs = [split_partition_text(p) for p in args.partition]
        partition_filter = partition_spec_filter(table, specs)
    if args.where is not None:
        if not args.where.strip():
            raise InvalidArgumentError("--where must not be blank")
        # parsed against a whitelist and evaluated in Python: the text never reaches Spark SQL
        partition_filter = where_filter(args.where, table_partition_types(table))
    spark = spark or job_spark_session("paimon-compact")

    rewriter = SparkBinRewriter(spark, args.warehouse, args.table, args.branch, cat_options,
                                max_tasks=args.max_tasks)
    units = SparkUnitRewriter(spark, args.warehouse, args.table, args.branch, cat_options,
                              max_tasks=args.max_tasks) if primary_keys else None

    result = compact(
        table, options, rewriter=rewriter, partition_filter=partition_filter,
        dry_run=args.dry_run, max_retries=args.max_retries, run_options=overrides,
        snapshot_properties=commit_properties(spark_app_id=app_id(spark)),
        mode=mode, unit_rewriter=units,
    ).to_dict()
    result.update({"table": args.table, "branch": args.branch or "main"})
    if args.dry_run and result.get("plan"):
        log.info("compaction plan:\n%s", json.dumps(result["plan"], indent=2, default=str))
    log.info("%s", result["message"])
    return result


def main(argv: list[str]) -> int:
    def body() -> dict[str, Any]:
        return run(build_parser().parse_args(argv))

    return run_job(body)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
