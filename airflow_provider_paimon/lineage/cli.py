"""``paimon-lineage``: the lineage store from a shell (the Paimon lineage proposal's actions and queries).

Human-readable tables by default, ``--json`` for machines. Exit codes scripts can
trust: 0 done (deleting a job without rows is done: it reports 0), 2 bad usage or
argument, 3 store unreachable, 4 store written by a newer version, 1 any other store
error. The URL comes from ``--url``, ``$PAIMON_LINEAGE_URL`` or the default SQLite
file; it is only ever printed with its password masked.

Errors never echo a secret: a usage error does not repeat an argument value that could
be a URL or a password (``--ulr mysql://root:PW@h`` names ``--ulr`` only), a mistyped
URL is masked whatever its shape, and with ``--json`` every error is also printed on
stdout as ``{"error": ..., "exit_code": ...}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NoReturn

from ..job_contract import CATALOG_OPTIONS_ENV, LINEAGE_URL_ENV
from ..paimon.secrets import mask_url
from . import cascade, queries
from .errors import (
    InvalidLineageArgumentError,
    LineageError,
    LineageStoreUnavailableError,
    SchemaVersionError,
)
from .history_events import history_events
from .identity_fill import fill_identities
from .store import LineageStore
from .url import DEFAULT_DATABASE, scrub

_HIDDEN = "<value not shown>"
_COMMAND_LIKE = re.compile(r"^[a-z][a-z-]{0,40}$")


class UsageError(Exception):
    """Bad command-line usage; the message is safe to print (no argument values that
    could be secrets)."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` with a message that cannot leak a secret."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(_safe_usage_message(message), self.format_usage())


def _safe_usage_message(message: str) -> str:
    """argparse's message without argument values that could be a URL or a password.

    ``unrecognized arguments`` lists only option names (their values may be the
    mistyped ``--ulr``'s URL); ``invalid choice`` repeats the word only when it looks
    like a command; anything left that looks like a credential is masked.
    """
    head, sep, rest = message.partition("unrecognized arguments: ")
    if sep:
        shown = [
            token.split("=", 1)[0] + ("=" + _HIDDEN if "=" in token else "")
            if token.startswith("-") else _HIDDEN
            for token in rest.split()
        ]
        message = head + sep + " ".join(shown)
    choice = re.search(r"invalid choice: (?P<value>.*?) \(choose from", message)
    if choice:
        value = choice.group("value").strip("'\"")
        if not _COMMAND_LIKE.match(value):
            message = message[: choice.start("value")] + _HIDDEN + message[choice.end("value"):]
    return mask_url(message)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_TOO_NEW = 0, 1, 2, 3, 4
_BRANCH_MARK = "$branch_"


def _table_arg(text: str) -> tuple[str, str, str | None]:
    """``db.table`` or ``db.table$branch_NAME`` -> (database, table, branch)."""
    name, mark, rest = text.partition(_BRANCH_MARK)
    branch = rest if mark else None
    parts = name.split(".")
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(
            f"table {text!r} must be 'database.table' (or 'database.table$branch_NAME')"
        )
    return parts[0], parts[1], branch


def _snapshot_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"snapshot id {text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"snapshot id must be >= 1, got {value}")
    return value


def _depth_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"depth {text!r} is not an integer") from None
    if not 1 <= value <= queries.MAX_DEPTH:
        raise argparse.ArgumentTypeError(f"depth must be from 1 to {queries.MAX_DEPTH}, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS,
                        help=f"SQLAlchemy URL of the store (default: ${LINEAGE_URL_ENV} or ~/.paimon/lineage.sqlite)")
    common.add_argument("--database", default=argparse.SUPPRESS,
                        help=f"system database / schema on MySQL/PostgreSQL (default: {DEFAULT_DATABASE})")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    parser = _Parser(
        prog="paimon-lineage", parents=[common],
        description="Query and maintain the Paimon lineage store (table and data lineage).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("init", parents=[common], help="create or upgrade the store")
    sub.add_parser("jobs", parents=[common], help="list jobs with the tables they read and write")
    sub.add_parser("tables", parents=[common], help="list tables with the jobs that read and write them")
    graph = sub.add_parser("graph", parents=[common], help="table-level lineage edges")
    graph.add_argument("--job")
    for name, text in (("upstream", "snapshots a snapshot was built from"),
                       ("downstream", "snapshots built from a snapshot"),
                       ("impact", "every downstream snapshot derived from a source snapshot, per table"),
                       ("cascade", "plan the correction of a bad snapshot: affected tables in order, "
                                   "their branch points, bad snapshots and jobs")):
        cmd = sub.add_parser(name, parents=[common], help=text)
        cmd.add_argument("table", type=_table_arg, help="database.table (or database.table$branch_NAME)")
        cmd.add_argument("snapshot", type=_snapshot_arg, help="snapshot id" + (" (the bad one)" if name == "cascade" else ""))
        cmd.add_argument("--branch", help="branch of the table (default main)")
        cmd.add_argument("--depth", type=_depth_arg,
                         default=queries.DEFAULT_IMPACT_DEPTH if name in ("impact", "cascade") else 1,
                         help=("table hops" if name == "cascade" else "hops") + " to follow (default %(default)s)")
        if name == "impact":
            cmd.add_argument("--onwards", action="store_true",
                             help="start from this and every later snapshot of the table")
        cmd.add_argument("--include-retracted", action="store_true",
                         help="also follow lineage of snapshots a rollback or fast-forward removed")
    events = sub.add_parser("events", parents=[common],
                            help="history events: rollbacks, fast-forwards, replace-mains, publishes")
    events.add_argument("table", type=_table_arg, nargs="?", help="database.table (default: every table)")
    events.add_argument("--limit", type=_depth_arg, default=20, help="newest events to list (at most 100)")
    fill = sub.add_parser("fill-identities", parents=[common],
                          help="give rows written before identities their snapshot's identity, read from the "
                               "tables (marks what cannot be told unknown)")
    fill.add_argument("--warehouse", required=True, help="the warehouse the tables of the store live in")
    fill.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                      help="a catalog option (repeatable); secret ones are better in $PAIMON_CATALOG_OPTIONS_JSON")
    fill.add_argument("--table", type=_table_arg, help="only this table (database.table)")
    for name, text in (("delete-table-lineage", "delete the table lineage created by a job"),
                       ("delete-data-lineage", "delete the data lineage created by a job")):
        cmd = sub.add_parser(name, parents=[common], help=text)
        cmd.add_argument("--job", required=True, help="name of the job")
    return parser


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: Any) -> None:
    if not rows:
        print("(no rows)", file=out)
        return
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _run(args: argparse.Namespace, out: Any) -> int:
    as_json = getattr(args, "json", False)
    store = LineageStore.from_url(
        getattr(args, "url", None), getattr(args, "database", DEFAULT_DATABASE),
        create=args.command == "init",
    )
    with store:
        cmd = args.command
        if cmd == "init":
            result: Any = {"url": store.url, "database": store.database, "schema_version": store.schema_version}
            text = [("url", store.url), ("database", store.database), ("schema version", store.schema_version)]
            return _emit(as_json, result, ("item", "value"), text, out)
        if cmd in ("delete-table-lineage", "delete-data-lineage"):
            deleted = (store.delete_table_lineage if cmd == "delete-table-lineage" else store.delete_data_lineage)(args.job)
            if as_json:
                print(json.dumps({"job": args.job, "deleted": deleted}), file=out)
            else:
                print(f"deleted {deleted} row(s) of job {args.job!r}", file=out)
            return EXIT_OK
        if cmd in ("jobs", "tables", "graph"):
            graph = queries.table_graph(store, job=getattr(args, "job", None))
            if cmd == "graph":
                rows: list[tuple[Any, ...]] = [(e.job, e.kind, e.database, e.table, e.branch) for e in graph.edges]
                return _emit(as_json, graph.edges, ("job", "kind", "database", "table", "branch"), rows, out)
            if cmd == "jobs":
                data = [{"job": j,
                         "sources": sorted(f"{e.database}.{e.table}" for e in graph.edges if e.job == j and e.kind == "source"),
                         "sinks": sorted(f"{e.database}.{e.table}" for e in graph.edges if e.job == j and e.kind == "sink")}
                        for j in graph.jobs]
                rows = [(d["job"], ", ".join(d["sources"]), ", ".join(d["sinks"])) for d in data]
                return _emit(as_json, data, ("job", "reads", "writes"), rows, out)
            data = [{"database": db, "table": t, "readers": graph.readers(db, t), "writers": graph.writers(db, t)}
                    for db, t in graph.tables]
            rows = [(d["database"], d["table"], ", ".join(d["readers"]), ", ".join(d["writers"])) for d in data]
            return _emit(as_json, data, ("database", "table", "read by", "written by"), rows, out)
        if cmd == "events":
            db, tbl = (args.table[0], args.table[1]) if args.table else (None, None)
            found = history_events(store, db, tbl, limit=args.limit)
            rows = [(e.event_id, e.create_time.isoformat(timespec="seconds"), e.kind, f"{e.database}.{e.table}",
                     e.branch, _event_summary(e.detail)) for e in found]
            return _emit(as_json, [e.to_dict() for e in found], ("event", "time", "kind", "table", "branch", "what"),
                         rows, out)
        if cmd == "fill-identities":
            counts = _fill(store, args)
            rows = [(k, v) for k, v in counts.items()]
            return _emit(as_json, counts, ("outcome", "rows"), rows, out)
        database, table, branch = args.table
        branch = args.branch or branch
        retracted = args.include_retracted
        if cmd == "cascade":
            plan = cascade.plan_cascade(store, database, table, args.snapshot, branch=branch, depth=args.depth,
                                        include_retracted=retracted)
            rows = [(n, t.name, "(empty)" if t.branch_point is None else t.branch_point, _ranges(t.bad_snapshots),
                     ", ".join(t.jobs), ", ".join(t.upstreams)) for n, t in enumerate(plan.tables, start=1)]
            _warn_truncated(plan.truncated_reason)
            return _emit(as_json, plan.to_dict(), ("order", "table", "branch point", "bad snapshots", "jobs", "after"),
                         rows, out)
        if cmd == "impact":
            report = queries.impact(store, database, table, args.snapshot, branch=branch,
                                    depth=args.depth, onwards=args.onwards, include_retracted=retracted)
            rows = [(t.database, t.table, t.branch, ", ".join(map(str, t.snapshot_ids)), ", ".join(t.jobs), t.min_depth)
                    for t in report.tables]
            _warn_truncated(report.truncated_reason)
            return _emit(as_json, report, ("database", "table", "branch", "snapshots", "jobs", "depth"), rows, out)
        result = queries.walk_bounded(store, cmd, database, table, args.snapshot, branch=branch, depth=args.depth,
                                      include_retracted=retracted)
        nodes = result.nodes
        _warn_truncated(result.reason)
        rows = [(n.depth, n.database, n.table, n.branch, str(n.snapshot_id) + (" (retracted)" if n.retracted else ""),
                 n.job, n.barrier_id, (n.identity or "unknown")[:12]) for n in nodes]
        return _emit(as_json, nodes, ("depth", "database", "table", "branch", "snapshot", "job", "barrier", "commit"),
                     rows, out)


def _event_summary(detail: dict[str, Any]) -> str:
    """One line of an event's detail for the text table."""
    parts = []
    if "removed" in detail:
        parts.append("removed " + (_ranges([r["snapshot_id"] for r in detail["removed"]]) or "none"))
    if "target_snapshot_id" in detail:
        parts.append(f"target {detail['target_snapshot_id']}")
    if "branch" in detail:
        parts.append(f"from branch {detail['branch']}")
    if "main_snapshot_id" in detail:
        parts.append(f"main now {detail['main_snapshot_id']}")
    if "tables" in detail:
        parts.append("with " + ", ".join(t["table"] for t in detail["tables"]))
    return "; ".join(parts)


def _fill(store: LineageStore, args: argparse.Namespace) -> dict[str, int]:
    """``fill-identities``: open the tables in the warehouse and check the rows not checked yet."""
    import os

    from ..paimon.catalog import load_table, open_catalog

    options: dict[str, str] = json.loads(os.environ.get(CATALOG_OPTIONS_ENV) or "{}")
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidLineageArgumentError("--option must be KEY=VALUE (a catalog option)")
        options[key.strip()] = value
    catalog = open_catalog(args.warehouse, options)
    db, tbl = (args.table[0], args.table[1]) if args.table else (None, None)
    return fill_identities(store, lambda d, t: load_table(catalog, f"{d}.{t}"), database=db, table=tbl)


def _ranges(ids: Sequence[int]) -> str:
    """``1, 2, 3, 7`` as ``1-3, 7`` (a streaming table can have thousands of bad snapshots)."""
    parts: list[str] = []
    for i, value in enumerate(ids):
        if i and value == ids[i - 1] + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{value}"
        else:
            parts.append(str(value))
    return ", ".join(parts)


def _warn_truncated(reason: str | None) -> None:
    """A walk cut short by its budget or depth says so on stderr (stdout stays parseable)."""
    if reason:
        print(f"paimon-lineage: warning: result truncated: {reason}", file=sys.stderr)


def _emit(as_json: bool, data: Any, headers: Sequence[str], rows: Sequence[Sequence[Any]], out: Any) -> int:
    if as_json:
        print(json.dumps(_plain(data), indent=None, sort_keys=True), file=out)
    else:
        _print_table(headers, rows, out)
    return EXIT_OK


def _fail(message: str, code: int, as_json: bool, usage: str = "") -> int:
    """Report an error: on stderr always, and as a JSON object on stdout with ``--json``."""
    if usage:
        print(usage.rstrip(), file=sys.stderr)
    print(f"paimon-lineage: error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": message, "exit_code": code}, sort_keys=True), file=sys.stdout)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as err:
        return _fail(str(err), EXIT_USAGE, as_json, err.usage)
    except SystemExit as stop:  # argparse: --help (0)
        return int(stop.code or 0)
    url = getattr(args, "url", None)

    def safe(err: BaseException) -> str:
        return scrub(str(err), url) if url else mask_url(str(err))

    try:
        return _run(args, sys.stdout)
    except InvalidLineageArgumentError as err:
        return _fail(safe(err), EXIT_USAGE, as_json)
    except LineageStoreUnavailableError as err:
        return _fail(safe(err), EXIT_UNREACHABLE, as_json)
    except SchemaVersionError as err:
        return _fail(safe(err), EXIT_TOO_NEW, as_json)
    except LineageError as err:
        return _fail(safe(err), EXIT_ERROR, as_json)
    except Exception as err:  # noqa: BLE001 - no raw traceback (it could show the URL)
        return _fail(f"{type(err).__name__}: {safe(err)}", EXIT_ERROR, as_json)


if __name__ == "__main__":
    sys.exit(main())
