"""Expire snapshots after a writer's commit, as Paimon's own writers do.

Paimon's writers (Flink sinks, Spark writes) expire snapshots of the branch they
committed to right after each successful commit, with the table's retention
(``snapshot.num-retained.min`` / ``.max``, ``snapshot.time-retained``,
``snapshot.expire.limit``), unless ``write-only`` is true (then a separate job does
it). The ``paimon`` Spark source's batch writer and streaming sink call
:func:`expire_after_commit` for the same; a future native writer can call it too.

What it promises the writer:

- **cheap when nothing expires**: two hints and at most one snapshot file are read
  (``nothing_to_expire``) before any manifest;
- **bounded**: at most ``snapshot.expire.limit`` snapshots per commit, and planning
  gives up (table unchanged) after ``snapshot.expire.execution-time-bound`` (default
  5 s; a caller's ``time_bound_s`` wins);
- **never in the way**: while another expiry (``.expire-op.json``) or a branch
  operation (``.branch-op.json``) is pending on the branch it skips with an INFO log;
  it never waits for a lock;
- **never fails the write**: the commit has already landed; any failure is logged as
  a warning naming the table and the fix, and ``None`` is returned.

Which snapshots and files go is ``expire_snapshots``'s rule (Paimon's range, our
cross-branch "what a table still needs"), so a writer's expiry is exactly what
``expire_snapshots`` with the table's options would do at that moment.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from .. import fileops
from ..branch._common import latest_schema_options
from ..errors import ConcurrentModificationError
from ..snapshots import TableLayout, earliest_snapshot_id, latest_snapshot_id, read_snapshot
from .expire import expire_planned, journal_path
from .options import (
    DEFAULT_EXPIRE_TIME_BOUND_MS,
    EXPIRE_TIME_BOUND,
    Retention,
    writer_retention,
    writer_time_bound_ms,
)
from .references import TimeBoundExceeded, branches_in_use

log = logging.getLogger(__name__)

#: Longest a writer's expiry may spend planning before it gives up for this commit,
#: unless the table option ``snapshot.expire.execution-time-bound`` says otherwise.
DEFAULT_TIME_BOUND_S = DEFAULT_EXPIRE_TIME_BOUND_MS / 1000


def branch_key(branch: str | None) -> str | None:
    """``None`` for main (however it is spelled), else the branch name."""
    return None if branch in (None, "", "main") else str(branch)


def effective_options(layout: TableLayout, branch: str | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The branch's table options with the write's own options on top (Paimon's dynamic options)."""
    merged = latest_schema_options(layout, branch_key(branch))
    merged.update({str(k).lower(): v for k, v in dict(options or {}).items()})
    return merged


def check_write_options(table: Any, *, branch: str | None, options: Mapping[str, Any] | None) -> Retention | None:
    """Validate ``write-only`` and the retention options before a write writes anything.

    Raises ``InvalidArgumentError`` naming the option and the accepted values; returns
    the settings the commit will use (``None``: ``write-only`` is on).
    """
    layout = TableLayout.of(table)
    return writer_retention(effective_options(layout, branch, options))


def nothing_to_expire(layout: TableLayout, branch: str | None, settings: Retention) -> bool:
    """True when Paimon's rule cannot expire anything on ``branch`` now.

    Reads the two hints (checked as ``snapshots`` does) and at most the earliest
    snapshot: the range is empty when no more than ``retain_min`` snapshots exist, or
    when none is beyond ``retain_max`` and the earliest is younger than
    ``time-retained`` (ids grow with time, so every later one is younger too).
    Consumers only shorten the range, so they cannot make this answer wrong.
    """
    latest = latest_snapshot_id(layout, branch)
    earliest = earliest_snapshot_id(layout, branch)
    if latest is None or earliest is None or latest - earliest + 1 <= settings.retain_min:
        return True
    if earliest < latest - settings.retain_max + 1:
        return False
    doc = read_snapshot(layout, branch, earliest)
    return doc is not None and settings.older_than_ms <= int(doc.get("timeMillis", 0))


def table_name(table: Any) -> str:
    ident = getattr(table, "identifier", None)
    try:
        return str(ident.get_full_name()) if ident is not None else str(table.table_path)
    except Exception:  # noqa: BLE001 - the name is for log lines only
        return str(getattr(table, "table_path", "?"))


def expire_after_commit(
    table: Any,
    *,
    branch: str | None = None,
    options: Mapping[str, Any] | None = None,
    time_bound_s: float | None = None,
) -> dict[str, Any] | None:
    """Apply the table's retention to ``branch`` after a commit to it.

    ``table``: the table the writer committed with (any branch); ``options``: the
    write's own options (``write-only``, ``snapshot.*``), over the branch's table
    options. ``time_bound_s``: how long planning may take before it gives up; default
    the option ``snapshot.expire.execution-time-bound`` (5 s when unset). Returns
    ``expire_snapshots``'s result when it ran, ``None`` when it was
    off, had nothing to do, was skipped or failed (logged; never raised).
    """
    br = branch_key(branch)
    where = f"{table_name(table)} (branch {br or 'main'})"
    try:
        layout = TableLayout.of(table)
        merged = effective_options(layout, br, options)
        settings = writer_retention(merged)
        if settings is None or nothing_to_expire(layout, br, settings):
            return None
        if time_bound_s is None:
            time_bound_s = writer_time_bound_ms(merged) / 1000
        if fileops.exists(layout.file_io, journal_path(layout)):
            log.info("paimon: not expiring snapshots of %s after this commit: another expiry is "
                     "in progress (or was killed: run expire_snapshots to finish it)", where)
            return None
        busy = branches_in_use(layout).get(br or "main")
        if busy:
            log.info("paimon: not expiring snapshots of %s after this commit: %s; it runs again "
                     "after a later commit", where, busy)
            return None
        started = time.monotonic()
        result = expire_planned(table, layout, br, settings, deadline=started + time_bound_s,
                                finish_pending_run=False, shared_cache=True)
    except TimeBoundExceeded:
        log.warning(
            "paimon: expiring snapshots of %s after this commit took longer than %.3g s and "
            "was skipped (nothing changed); too many snapshots are retained for the writer to expire "
            "them: set table option write-only=true and schedule expire_snapshots "
            "(ExpireSnapshotsOperator) instead, or raise table option %s", where, time_bound_s,
            EXPIRE_TIME_BOUND,
        )
        return None
    except ConcurrentModificationError as err:
        log.info("paimon: not expiring snapshots of %s after this commit: %s", where, err)
        return None
    except Exception as err:  # noqa: BLE001 - the write is committed; expiry must not fail it
        log.warning(
            "paimon: the commit to %s succeeded, but expiring its old snapshots failed (%s: %s); "
            "run expire_snapshots (ExpireSnapshotsOperator) on it to retry, or set write-only=true "
            "to leave expiry to that job", where, type(err).__name__, err,
        )
        return None
    if result["expired_snapshot_ids"]:
        ids = result["expired_snapshot_ids"]
        log.info(
            "paimon: expired snapshots %s-%s of %s after the commit (%s): %d file(s), %d byte(s) "
            "deleted in %.0f ms", ids[0], ids[-1], where, result["stopped_because"],
            result["deleted_file_count"], result["deleted_bytes"], (time.monotonic() - started) * 1000,
        )
    return result
