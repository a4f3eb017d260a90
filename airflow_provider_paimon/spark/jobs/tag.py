"""Job entry point for tag operations: ``launcher.py tag create|delete|rename|list ARGS``.

Metadata only (no SparkSession). Prints ``PAIMON_RESULT {json}``; errors follow
``common.run_job``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .common import ArgumentError, catalog_options, new_parser, run_job

COMMANDS = ("create", "delete", "rename", "list")


def _parser(command: str) -> argparse.ArgumentParser:
    parser = new_parser(f"tag {command}", f"tag {command} on a Paimon table")
    if command != "list":
        parser.add_argument("--tag", required=True)
    parser.add_argument("--branch", help="branch (default: main)")
    if command == "create":
        parser.add_argument("--snapshot-id", type=int, help="snapshot to tag (default: latest)")
        parser.add_argument("--time-retained", help="retention: seconds or a Paimon duration ('7 d')")
    if command == "rename":
        parser.add_argument("--new-name", required=True)
    return parser


def _body(command: str, argv: list[str]) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from ...paimon import tag as ops
        from ...paimon.catalog import load_table, open_catalog

        args = _parser(command).parse_args(argv)
        table = load_table(open_catalog(args.warehouse, catalog_options(args)), args.table)
        if command == "create":
            result = ops.create_tag(table, args.tag, branch=args.branch, snapshot_id=args.snapshot_id,
                                    time_retained=args.time_retained)
        elif command == "rename":
            result = ops.rename_tag(table, args.tag, args.new_name, branch=args.branch)
        elif command == "delete":
            result = ops.delete_tag(table, args.tag, branch=args.branch)
        else:
            result = {
                "branch": args.branch or "main",
                "tags": [t.to_dict() for t in ops.list_tags(table, branch=args.branch)],
            }
        return {"command": command, "table": args.table, **result}

    return body


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        def bad() -> dict[str, Any]:
            raise ArgumentError(f"tag: first argument must be a command ({', '.join(COMMANDS)})")

        return run_job(bad)
    return run_job(_body(argv[0], argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
