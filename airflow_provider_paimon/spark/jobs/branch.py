"""Job entry point for branch operations: ``launcher.py branch COMMAND ARGS``.

Commands: ``create``, ``delete``, ``rename``, ``fast-forward``, ``replace-main``,
``list``. They change only metadata files, so no SparkSession is created; the job
may still be launched by spark-submit (the Airflow operators do that), which only
costs the JVM start. Prints ``PAIMON_RESULT {json}``; errors follow ``common.run_job``.

Lineage: with a lineage store in ``$PAIMON_LINEAGE_URL`` (the operators put it there,
never on the command line), ``replace-main`` and ``fast-forward`` record that main's
new snapshot is the branch's snapshot (``lineage/branch_links.py``), so upstream and
impact queries follow the replacement. The result then has a ``lineage`` entry. If the
store cannot be written the job fails (exit 1) after the branch operation: a rerun
does not redo the operation (it is already done) and records the link.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from .common import ArgumentError, catalog_options, new_parser, run_job

COMMANDS = ("create", "delete", "rename", "fast-forward", "replace-main", "list")
LINKED = ("fast-forward", "replace-main")  # commands whose result main reads from a branch


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
    if command in LINKED:
        parser.add_argument("--lineage-database", default=None,
                            help="lineage system database (store URL in $PAIMON_LINEAGE_URL)")
    return parser


def _record_link(command: str, args: argparse.Namespace, result: dict[str, Any]) -> dict[str, Any] | None:
    """Link main's snapshot to the branch snapshot it reads, when a store is configured."""
    from ...lineage.url import DEFAULT_DATABASE, ENV_URL

    url = os.environ.get(ENV_URL)
    if not url:
        return None
    branch_snapshot = result.get("branch_snapshot_id", result.get("main_snapshot_id"))
    main_snapshot = result.get("main_snapshot_id")
    if branch_snapshot is None or main_snapshot is None:
        return None
    from ...lineage.branch_links import record_branch_link
    from ...lineage.store import LineageStore

    database, table = args.table.split(".", 1)
    try:
        with LineageStore.from_url(url, args.lineage_database or DEFAULT_DATABASE) as store:
            link = record_branch_link(store, command, database, table, args.branch, branch_snapshot, main_snapshot)
    except Exception as err:  # noqa: BLE001 - reported with what was done, and how to finish
        raise RuntimeError(
            f"{command} of {args.table} to branch {args.branch!r} is done (main snapshot "
            f"{main_snapshot}), but its lineage link could not be recorded: {err}; rerun the "
            f"task: the {command} is not repeated and the link is recorded"
        ) from None
    return link.to_dict()


def _table(args: argparse.Namespace) -> Any:
    from ...paimon.catalog import load_table, open_catalog

    catalog = open_catalog(args.warehouse, catalog_options(args))
    return load_table(catalog, args.table)


def _body(command: str, argv: list[str]) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from ...paimon import branch as ops
        from ...paimon.commit_properties import commit_properties

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
                # the Airflow run (AIRFLOW_CTX_* of this driver); no SparkContext here
                snapshot_properties=commit_properties(),
            )
        else:
            result = {"branches": [b.to_dict() for b in ops.list_branches(table)]}
        if command in LINKED:
            link = _record_link(command, args, result)
            if link is not None:
                result = {**result, "lineage": link}
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
