"""The intent journal of fast-forward and replace-main.

Both operations change several files of ``main``. Before the first change they write
``<table>/.branch-op.json`` (created only if absent, so two operations cannot run at
once), holding the complete plan: every id, file and name they will touch, decided up
front. Each step is idempotent and driven only by that plan, so after a kill the next
run of the same operation reads the journal and finishes it; the journal is removed
last. A different operation while a journal exists is refused, naming the pending one.
"""

from __future__ import annotations

import json
from typing import Any

from .. import fileops
from ..errors import ConcurrentModificationError
from ..snapshots import TableLayout

JOURNAL_NAME = ".branch-op.json"


def journal_path(layout: TableLayout) -> str:
    return f"{layout.table_path}/{JOURNAL_NAME}"


def read_journal(layout: TableLayout) -> dict[str, Any] | None:
    text = fileops.read_text(layout.file_io, journal_path(layout))
    return json.loads(text) if text else None


def resumable_plan(layout: TableLayout, op: str, branch: str) -> dict[str, Any] | None:
    """The plan of an unfinished run of this same operation (``None`` when none is pending).

    Any other pending operation is refused: two multi-step changes must not interleave.
    """
    journal = read_journal(layout)
    if journal is None:
        return None
    if journal.get("op") != op or journal.get("branch") != branch:
        raise ConcurrentModificationError(
            f"another branch operation is pending: {describe(journal)}; rerun it to finish first"
        )
    return journal["plan"]


def pending_operation(table: Any) -> dict[str, Any] | None:
    """The unfinished fast-forward / replace-main of ``table``, if any (else ``None``).

    Writers and readers that want to be strict can refuse to run while one is pending.
    """
    return read_journal(TableLayout.of(table))


def write_journal(layout: TableLayout, doc: dict[str, Any]) -> None:
    if not fileops.create_new(layout.file_io, journal_path(layout), json.dumps(doc, indent=2, sort_keys=True)):
        other = read_journal(layout) or {}
        raise ConcurrentModificationError(
            f"another branch operation is pending on {layout.table_path}: {describe(other)}; "
            "rerun that operation to finish it first"
        )


def remove_journal(layout: TableLayout) -> None:
    fileops.delete_file(layout.file_io, journal_path(layout))


def describe(doc: dict[str, Any]) -> str:
    part = f", part of multi-table publish/undo {doc['publish']}" if doc.get("publish") else ""
    return f"{doc.get('op', '?')} of branch {doc.get('branch', '?')!r} (started {doc.get('started', '?')}{part})"


def refuse_if_pending(layout: TableLayout, branch: str) -> None:
    """Refuse to delete/rename a branch that a pending operation still reads."""
    doc = read_journal(layout)
    if doc and branch in (doc.get("branch"), (doc.get("backup") or {}).get("name")):
        raise ConcurrentModificationError(
            f"branch {branch!r} is used by a pending {describe(doc)}; rerun it to finish first"
        )
