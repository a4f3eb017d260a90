"""Job entry point for multi-table publishes: ``launcher.py publish COMMAND ARGS``.

Commands:

* ``publish --pair DB.TABLE BRANCH ... [--backup-name NAME]``: replace main of every
  table by its branch under one journal (``paimon/branch/publish_many.py``), in the
  order given. A rerun with the same pairs resumes a killed publish from the journal
  and finishes it; a rerun after it finished changes nothing (``unchanged``).
* ``undo [--table DB.TABLE ...] [--backup-name NAME]``: put every previous main back.
  Without arguments it finishes (or undoes) whatever publish is pending.

The commands take several tables, so the parser has no ``--table`` (unlike the other
families): warehouse and catalog options come as usual (secret ones in
``$PAIMON_CATALOG_OPTIONS_JSON``). With a lineage store in ``$PAIMON_LINEAGE_URL``
(never on the command line) ``publish`` links each table's new main snapshot to its
branch snapshot, as ``branch replace-main`` does. Metadata only, no SparkSession. Prints
``PAIMON_RESULT {json}``; errors follow ``common.run_job``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from ...job_contract import LINEAGE_URL_ENV
from ...lineage.url import DEFAULT_DATABASE
from ...paimon.snapshot_identity import identity_of
from ...paimon.snapshots import TableLayout
from .common import ArgumentError, catalog_options, new_parser, run_job

COMMANDS = ("publish", "undo")


def _parser(command: str) -> argparse.ArgumentParser:
    parser = new_parser(f"publish {command}", f"{command} branches of several Paimon tables", one_table=False)
    parser.add_argument("--backup-name", help="backup branch name, the same on every table")
    parser.add_argument("--journal-path", help="the publish journal (default <warehouse>/_cascade/publish.json)")
    if command == "publish":
        parser.add_argument("--pair", nargs=2, action="append", required=True, metavar=("DB.TABLE", "BRANCH"),
                            help="a table and the branch that replaces its main (repeatable, in order)")
        parser.add_argument("--lineage-database", default=None,
                            help="lineage system database (store URL in $PAIMON_LINEAGE_URL)")
    else:
        parser.add_argument("--table", action="append", default=None, metavar="DB.TABLE",
                            help="a table of the publish to undo (repeatable; none: the pending one)")
    return parser


def _record_links(args: argparse.Namespace, result: dict[str, Any], catalog: Any) -> list[dict[str, Any]] | None:
    """Link each table's main snapshot to the branch snapshot it reads, when a store is set.

    Recorded per table as a replace-main link with both snapshots' identities
    (``lineage/branch_links.py``, idempotent), and the publish as one history event per
    table naming every table of it. A rerun after the publish finished returns every
    table ``unchanged`` with the same snapshots, so it records the links a failed store
    write left out.
    """
    url = os.environ.get(LINEAGE_URL_ENV)
    if not url:
        return None
    from ...lineage.branch_links import record_branch_link
    from ...lineage.history_events import record_event
    from ...lineage.store import LineageStore
    from ...paimon.catalog import load_table

    links = []
    try:
        with LineageStore.from_url(url, args.lineage_database or DEFAULT_DATABASE) as store:
            entries = [e for e in result.get("tables", [])
                       if e.get("branch_snapshot_id") is not None and e.get("main_snapshot_id") is not None]
            for entry in entries:
                database, table = entry["table"].split(".", 1)
                layout = TableLayout.of(load_table(catalog, entry["table"]))
                made = record_branch_link(
                    store, "replace-main", database, table, entry["branch"], entry["branch_snapshot_id"],
                    entry["main_snapshot_id"],
                    branch_identity=identity_of(layout, entry["branch"], int(entry["branch_snapshot_id"])),
                    main_identity=identity_of(layout, None, int(entry["main_snapshot_id"])))
                links.append(made.to_dict())
            published = [{"table": e["table"], "branch": e["branch"], "branch_snapshot_id": e["branch_snapshot_id"],
                          "main_snapshot_id": e["main_snapshot_id"]} for e in entries]
            for entry, link in zip(entries, links, strict=True):
                database, table = entry["table"].split(".", 1)
                record_event(store, "publish", database, table, "main", {"tables": published, "link": link},
                             key=f"{entry['branch']}@{entry['branch_snapshot_id']}->{entry['main_snapshot_id']}:"
                                 f"{link.get('sink_identity')}")
    except Exception as err:  # noqa: BLE001 - reported with what was done, and how to finish
        raise RuntimeError(
            f"the publish of {', '.join(t['table'] for t in result.get('tables', []))} is done, but its "
            f"lineage links could not be recorded: {err}; rerun the task: nothing is published again "
            "and the links are recorded"
        ) from None
    return links


def _body(command: str, argv: list[str]) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        from ...paimon.branch.publish_many import publish_branches, undo_publish
        from ...paimon.catalog import open_catalog

        args = _parser(command).parse_args(argv)
        catalog = open_catalog(args.warehouse, catalog_options(args))
        if command == "publish":
            result = publish_branches(
                catalog, [tuple(p) for p in args.pair],
                backup_name=args.backup_name, journal_path=args.journal_path,
            )
            links = _record_links(args, result, catalog)
            if links is not None:
                result = {**result, "lineage": links}
        else:
            result = undo_publish(catalog, args.table, backup_name=args.backup_name, journal_path=args.journal_path)
        return {"command": command, **result}

    return body


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        def bad() -> dict[str, Any]:
            raise ArgumentError(f"publish: first argument must be a command ({', '.join(COMMANDS)})")

        return run_job(bad)
    return run_job(_body(argv[0], argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
