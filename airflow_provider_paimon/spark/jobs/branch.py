"""Job entry point for branch operations: ``launcher.py branch COMMAND ARGS``.

Commands: ``create``, ``delete``, ``rename``, ``fast-forward``, ``replace-main``,
``list``. They change only metadata files, so no SparkSession is created; the job
may still be launched by spark-submit (the Airflow operators do that), which only
costs the JVM start. Prints ``PAIMON_RESULT {json}``; errors follow ``common.run_job``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .common import ArgumentError, catalog_options, new_parser, run_job

COMMANDS = ("create", "delete", "rename", "fast-forward", "replace-main", "list")


def _parser(command: str) -> argparse.ArgumentParser:
    parser = new_parser(f"branch {command}", f"branch {command} of a Paimon table")
    if command != "list":
        parser.add_argument("--branch", required=True)
    if command == "create":
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--tag")
        source.add_argument("--snapshot-id", type=int)
    elif command == "rename":
        parser.add_argument("--new-name", required=True)
    elif command == "replace-main":
        parser.add_argument("--backup-name")
        parser.add_argument("--backup-kind", choices=("branch", "tag"), default="branch")
        parser.add_argument("--no-backup", action="store_true")
    return parser


def _table(args: argparse.Namespace) -> Any:
    from ...paimon.catalog import load_table, open_catalog

    catalog = open_catalog(args.warehouse, catalog_options(args))
    return load_table(catalog, args.table)


def _body(command: str, argv: list[str]) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from ...paimon import branch as ops

        args = _parser(command).parse_args(argv)
        table = _table(args)
        if command == "create":
            result = ops.create_branch(table, args.branch, tag=args.tag, snapshot_id=args.snapshot_id)
        elif command == "delete":
            result = ops.delete_branch(table, args.branch)
        elif command == "rename":
            result = ops.rename_branch(table, args.branch, args.new_name)
        elif command == "fast-forward":
            result = ops.fast_forward(table, args.branch)
        elif command == "replace-main":
            result = ops.replace_main(
                table,
                args.branch,
                backup=not args.no_backup,
                backup_name=args.backup_name,
                backup_kind=args.backup_kind,
            )
        else:
            result = {"branches": [b.to_dict() for b in ops.list_branches(table)]}
        return {"command": command, "table": args.table, **result}

    return body


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        def bad() -> dict[str, Any]:
            raise ArgumentError(f"branch: first argument must be a command ({', '.join(COMMANDS)})")

        return run_job(bad)
    return run_job(_body(argv[0], argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
