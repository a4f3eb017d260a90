"""Job entry point for branch operations: ``launcher.py branch COMMAND ARGS``.

Commands: ``create``, ``delete``, ``rename``, ``fast-forward``, ``replace-main``,
``list``. They change only metadata files, so no SparkSession is created; the job
may still be launched by spark-submit (the Airflow operators do that), which only
costs the JVM start. Prints ``PAIMON_RESULT {json}``; errors follow ``common.run_job``.

Lineage: with a lineage store in ``$PAIMON_LINEAGE_URL`` (the operators put it there,
never on the command line), ``replace-main`` and ``fast-forward`` record that main's
new snapshot is the branch's snapshot (``lineage/branch_links.py``), so upstream and
impact queries follow the replacement, with both snapshots' identities read from their
files. A fast-forward also retracts the lineage of main's snapshots it removed or
replaced (their ids now hold the branch's commits) and links every snapshot it copied
(``lineage/history_events.py``). The result then has a ``lineage`` entry. If the
store cannot be written the job fails (exit 1) after the branch operation: a rerun
does not redo the operation (it is already done) and records the link (a rerun of a
fast-forward no longer knows old main's identities: rows recorded before the
fast-forward under the copied ids are still retracted, by time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from ...job_contract import LINEAGE_URL_ENV
from ...lineage.url import DEFAULT_DATABASE
from ...paimon.commit_properties import commit_properties
from ...paimon.snapshot_identity import identity_of
from ...paimon.snapshots import TableLayout, earliest_snapshot_id, snapshot_ids
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


def lineage_url() -> str | None:
    """The lineage store the operator passed (never on the command line), or None."""
    return os.environ.get(LINEAGE_URL_ENV) or None


def main_identities(table: Any, low: int | None) -> dict[int, Any]:
    """{id: identity} of main's snapshots from ``low`` on (all when None), read from their files."""
    layout = TableLayout.of(table)
    return {sid: identity_of(layout, None, sid) for sid in snapshot_ids(layout, None) if low is None or sid >= low}


def _record_link(command: str, args: argparse.Namespace, result: dict[str, Any], table: Any,
                 before: dict[int, Any] | None, started: int) -> dict[str, Any] | None:
    """Link main's snapshot to the branch snapshot it reads, when a store is configured."""
    url = lineage_url()
    if not url:
        return None
    branch_snapshot = result.get("branch_snapshot_id", result.get("main_snapshot_id"))
    main_snapshot = result.get("main_snapshot_id")
    if branch_snapshot is None or main_snapshot is None:
        return None
    from ...lineage.branch_links import record_branch_link
    from ...lineage.history_events import record_event, record_fast_forward
    from ...lineage.store import LineageStore

    database, name = args.table.split(".", 1)
    layout = TableLayout.of(table)
    try:
        with LineageStore.from_url(url, args.lineage_database or DEFAULT_DATABASE) as store:
            if command == "fast-forward":
                point = int(result["branch_point_snapshot_id"])
                copied = {sid: identity_of(layout, None, sid) for sid in range(point, int(main_snapshot) + 1)}
                recorded = record_fast_forward(store, database, name, args.branch, result, copied,
                                               before or {}, started)
                return {**recorded["links"][-1], "retracted_rows": recorded["retracted_rows"],
                        "event_id": recorded["event_id"]} if recorded["links"] else recorded
            link = record_branch_link(
                store, command, database, name, args.branch, branch_snapshot, main_snapshot,
                branch_identity=identity_of(layout, args.branch, int(branch_snapshot)),
                main_identity=identity_of(layout, None, int(main_snapshot)))
            record_event(store, "replace-main", database, name, "main", {
                "branch": args.branch, "branch_snapshot_id": branch_snapshot, "main_snapshot_id": main_snapshot,
                "branch_identity": link.to_dict().get("source_identity"),
                "main_identity": link.to_dict().get("sink_identity")},
                key=f"{args.branch}@{branch_snapshot}->{main_snapshot}:{link.to_dict().get('sink_identity')}")
    except Exception as err:  # noqa: BLE001 - reported with what was done, and how to finish
        raise RuntimeError(
            f"{command} of {args.table} to branch {args.branch!r} is done (main snapshot "
            f"{main_snapshot}), but its lineage link could not be recorded: {err}; rerun the "
            f"task: the {command} is not repeated and the link is recorded"
        ) from None
    return link.to_dict()


def _before_fast_forward(table: Any, branch: str) -> dict[int, Any] | None:
    """Old main's identities from the branch point on (what a fast-forward replaces), when a
    store will record it; None otherwise (or when the branch has no snapshot: the
    fast-forward refuses it)."""
    if not lineage_url():
        return None

    point = earliest_snapshot_id(TableLayout.of(table), branch)
    return None if point is None else main_identities(table, point)


def _table(args: argparse.Namespace) -> Any:
    from ...paimon.catalog import load_table, open_catalog

    catalog = open_catalog(args.warehouse, catalog_options(args))
    return load_table(catalog, args.table)


def _body(command: str, argv: list[str]) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from ...paimon import branch as ops

        args = _parser(command).parse_args(argv)
        table = _table(args)
        before: dict[int, Any] | None = None
        started = int(time.time() * 1000)
        if command == "create":
            result = ops.create_branch(table, args.branch, tag=args.tag, snapshot_id=args.snapshot_id)
        elif command == "delete":
            result = ops.delete_branch(table, args.branch)
        elif command == "rename":
            result = ops.rename_branch(table, args.branch, args.new_name)
        elif command == "fast-forward":
            started = int(time.time() * 1000)
            before = _before_fast_forward(table, args.branch)
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
            link = _record_link(command, args, result, table, before, started)
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
