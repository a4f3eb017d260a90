"""Job entry point for table maintenance: ``launcher.py maintenance COMMAND ARGS``.

Commands (``paimon.maintenance``, metadata and file deletes only, no SparkSession):

- ``expire-snapshots [--branch B] [--retain-max N] [--retain-min N]
  [--older-than AGE] [--max-deletes N] [--dry-run]``
- ``remove-orphan-files [--older-than AGE] [--dry-run]``
- ``rollback (--snapshot-id N | --tag T) [--branch B] [--as-latest]``
- ``expire-tags [--branch B] [--dry-run]``

``AGE`` is a duration (seconds, or Paimon's ``1 h`` / ``30 min``) meaning "that long
ago". With a lineage store in ``$PAIMON_LINEAGE_URL`` (never on the command line)
``rollback`` records the history event (``lineage.history_events.record_rollback``):
the removed snapshots' lineage is retracted, a rollback as latest links the new snapshot
to its target; the result then has a ``lineage`` entry. A store that cannot be written
fails the job after the rollback; a rerun does not roll back again and records it. Prints ``PAIMON_RESULT {json}``: the operation's result dict plus ``command``,
``table``, ``duration_s``; a list of files or snapshot ids longer than ``MAX_LISTED``
is cut (``deleted_files_listed`` says how many are shown; ``deleted_file_count`` stays
the total) so the result stays a small XCom. Errors follow ``common.run_job``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from ...lineage.url import DEFAULT_DATABASE
from ...paimon.durations import parse_duration
from ...paimon.snapshot_identity import identity_of
from ...paimon.snapshots import TableLayout, snapshot_ids
from .branch import lineage_url
from .common import ArgumentError, catalog_options, new_parser, run_job

COMMANDS = ("expire-snapshots", "remove-orphan-files", "rollback", "expire-tags")
#: longest list of file names a result carries (the count is always complete)
MAX_LISTED = 200


def _parser(command: str) -> argparse.ArgumentParser:
    parser = new_parser(f"maintenance {command}", f"{command} on a Paimon table")
    if command != "remove-orphan-files":
        parser.add_argument("--branch", help="branch (default: main)")
    if command == "expire-snapshots":
        parser.add_argument("--retain-max", type=int)
        parser.add_argument("--retain-min", type=int)
        parser.add_argument("--max-deletes", type=int)
    if command in ("expire-snapshots", "remove-orphan-files"):
        parser.add_argument("--older-than", help="age: seconds or a Paimon duration ('1 h')")
    if command == "rollback":
        parser.add_argument("--snapshot-id", type=int)
        parser.add_argument("--tag")
        parser.add_argument("--as-latest", action="store_true")
        parser.add_argument("--lineage-database", default=None,
                            help="lineage system database (store URL in $PAIMON_LINEAGE_URL)")
    else:
        parser.add_argument("--dry-run", action="store_true")
    return parser


def _age(text: str | None) -> Any:
    return None if text is None else parse_duration(text, "--older-than")


def _run(command: str, table: Any, args: argparse.Namespace) -> dict[str, Any]:
    from ...paimon import maintenance as ops

    if command == "expire-snapshots":
        return ops.expire_snapshots(
            table, branch=args.branch, retain_max=args.retain_max, retain_min=args.retain_min,
            older_than=_age(args.older_than), max_deletes=args.max_deletes, dry_run=args.dry_run,
        )
    if command == "remove-orphan-files":
        return ops.remove_orphan_files(table, older_than=_age(args.older_than), dry_run=args.dry_run)
    if command == "rollback":
        return ops.rollback(table, snapshot_id=args.snapshot_id, tag=args.tag, branch=args.branch,
                            as_latest=args.as_latest)
    return ops.expire_tags(table, branch=args.branch, dry_run=args.dry_run)


def _record_rollback(args: argparse.Namespace, table: Any, result: dict[str, Any]) -> dict[str, Any] | None:
    """Record the rollback in the lineage store, when one is configured."""
    url = lineage_url()
    if not url:
        return None
    from ...lineage.history_events import record_rollback
    from ...lineage.store import LineageStore

    layout = TableLayout.of(table)
    branch = None if result.get("branch") in (None, "main") else str(result["branch"])
    target = int(result["target_snapshot_id"])
    live = {sid: identity_of(layout, branch, sid) for sid in snapshot_ids(layout, branch) if sid > target}
    database, name = args.table.split(".", 1)
    try:
        with LineageStore.from_url(url, args.lineage_database or DEFAULT_DATABASE) as store:
            return record_rollback(store, database, name, result, live)
    except Exception as err:  # noqa: BLE001 - reported with what was done, and how to finish
        raise RuntimeError(
            f"the rollback of {args.table} to snapshot {target} is done, but its lineage could not be "
            f"recorded: {err}; rerun the task: the rollback is not repeated and its lineage is recorded"
        ) from None


def trim_lists(result: dict[str, Any], limit: int = MAX_LISTED) -> dict[str, Any]:
    """Cut long lists of files and ids (``deleted_files``, ``expired_snapshot_ids``) to ``limit`` entries."""
    out = dict(result)
    for key, value in result.items():
        if key.endswith(("_files", "_ids")) and isinstance(value, list) and len(value) > limit:
            out[key] = value[:limit]
            out[f"{key}_listed"] = limit
    return out


def _body(command: str, argv: list[str]) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from ...paimon.catalog import load_table, open_catalog

        args = _parser(command).parse_args(argv)
        started = time.monotonic()
        table = load_table(open_catalog(args.warehouse, catalog_options(args)), args.table)
        result = _run(command, table, args)
        if command == "rollback":
            lineage = _record_rollback(args, table, result)
            result.pop("removed_snapshots", None)  # ids are in removed_snapshot_ids (a small XCom)
            if lineage is not None:
                result["lineage"] = lineage
        out = {"command": command, "table": args.table, **trim_lists(result)}
        out["duration_s"] = round(time.monotonic() - started, 3)
        return out

    return body


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        def bad() -> dict[str, Any]:
            raise ArgumentError(f"maintenance: first argument must be a command ({', '.join(COMMANDS)})")

        return run_job(bad)
    return run_job(_body(argv[0], argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
