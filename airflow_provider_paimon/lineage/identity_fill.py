"""The identity migration: fill the identity of rows written before identities existed.

Schema version 5 adds the identity columns with NULL (not checked) for existing rows:
only the tables' own snapshot files can say which commit a row meant, and the store
does not know where the tables live. ``fill_identities`` (``paimon-lineage
fill-identities --warehouse W``) reads them, per table and branch, and for each row not
checked yet decides, never guessing:

* **filled**: the snapshot exists and its commit is not newer than the row (a row is
  recorded after the commit it names, so a row older than the commit under that id now
  cannot be about it): the row gets that commit's identity;
* **retracted** (identity ``unknown``): the commit under that id now is newer than the
  row (a rollback reused the id), or the id is above the branch's latest snapshot (a
  rollback or fast-forward removed it): the snapshot the row names no longer exists;
* **unknown**: the snapshot expired (below the earliest), or the table or branch is
  gone or cannot be read: the row stays as it was, marked ``unknown``; walks still
  follow it by id among other unknown rows, never to a known commit.

Rows are read and updated in pages (keyset on the primary key), so memory does not
grow with the store; running it again only looks at rows still not checked.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import timezone
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..paimon.snapshot_identity import SnapshotIdentity, identity_of
from ..paimon.snapshots import TableLayout, earliest_snapshot_id, latest_snapshot_id
from . import schema
from .store import identity_columns

if TYPE_CHECKING:
    from .store import LineageStore

log = logging.getLogger(__name__)
PAGE = 1000


class _TableState:
    """One table branch's snapshots, read lazily (one file per id asked)."""

    def __init__(self, layout: Any, branch: str | None) -> None:
        self.layout = layout
        self.branch = branch
        self.latest = latest_snapshot_id(layout, branch)
        self.earliest = earliest_snapshot_id(layout, branch)
        self._ids: dict[int, SnapshotIdentity | None] = {}

    def identity(self, snapshot_id: int) -> SnapshotIdentity | None:
        if snapshot_id not in self._ids:
            self._ids[snapshot_id] = identity_of(self.layout, self.branch, snapshot_id)
        return self._ids[snapshot_id]


def fill_identities(store: LineageStore, open_table: Callable[[str, str], Any], *,
                    database: str | None = None, table: str | None = None) -> dict[str, int]:
    """Check every not-yet-checked snapshot row against its table; return counts per outcome.

    ``open_table(database, table)`` returns the pypaimon table (main) or raises when it
    does not exist or cannot be read.
    """
    counts = {"filled": 0, "retracted": 0, "unknown": 0}
    states: dict[tuple[str, str, str], _TableState | None] = {}

    def state(db: str, tbl: str, br: str) -> _TableState | None:
        key = (db, tbl, br)
        if key not in states:
            try:
                layout = TableLayout.of(open_table(db, tbl))
                branch = None if br == "main" else br
                states[key] = None if branch is not None and not layout.branch_exists(branch) else _TableState(
                    layout, branch)
            except Exception as err:  # noqa: BLE001 - a table that is gone or unreadable: unknown
                log.info("identities of %s.%s (%s) cannot be read: %s", db, tbl, br, err)
                states[key] = None
        return states[key]

    for t in (schema.sink_snapshot_lineage, schema.source_snapshot_lineage):
        keys = [c.name for c in t.primary_key.columns]
        after: tuple | None = None
        while True:
            conds: list[Any] = [t.c.identity_status.is_(None)]
            if database is not None:
                conds.append(t.c.database == database)
            if table is not None:
                conds.append(t.c["table"] == table)
            if after is not None:
                conds.append(sa.tuple_(*(t.c[k] for k in keys)) > sa.tuple_(*after))
            stmt = (sa.select(*(t.c[k] for k in keys), t.c.branch, t.c.snapshot_id, t.c.create_time)
                    .where(*conds).order_by(*(t.c[k] for k in keys)).limit(PAGE))
            rows = store.run("read rows to check", functools.partial(_read, stmt))
            if not rows:
                break
            updates = []
            for row in rows:
                pk = tuple(row[: len(keys)])
                br, sid, created = row[len(keys)], row[len(keys) + 1], row[len(keys) + 2]
                outcome, identity = _classify(state(pk[2], pk[3], br), sid, created)
                counts[outcome] += 1
                updates.append((pk, outcome, identity))
            store.run("fill identities", functools.partial(_apply, table=t, keys=keys, updates=updates), write=True)
            after = tuple(rows[-1][: len(keys)])
    return counts


def _classify(table: _TableState | None, snapshot_id: Any, created: Any) -> tuple[str, SnapshotIdentity | None]:
    if table is None or not isinstance(snapshot_id, int):
        return "unknown", None
    identity = table.identity(snapshot_id)
    if identity is None:
        if table.latest is None or snapshot_id > table.latest:
            return "retracted", None
        return "unknown", None  # expired (below the earliest) or a gap: cannot tell
    recorded = int(created.replace(tzinfo=timezone.utc).timestamp() * 1000) if created is not None else None
    if recorded is not None and recorded < identity.time_millis:
        return "retracted", None  # recorded before this commit existed: it named an earlier one
    return "filled", identity


def _read(stmt: sa.Select, conn: sa.Connection) -> list[Any]:
    return list(conn.execute(stmt).all())


def _apply(conn: sa.Connection, *, table: sa.Table, keys: list[str], updates: list[tuple]) -> int:
    from datetime import datetime

    t = table
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    for pk, outcome, identity in updates:
        where = [t.c[k] == v for k, v in zip(keys, pk, strict=True)]
        values: dict[str, Any] = (identity_columns(identity, schema.FILLED) if outcome == "filled"
                                  else {"identity_status": schema.UNKNOWN})
        if outcome == "retracted":
            values.update(retracted_at=now, retracted_by="identity migration: the snapshot no longer exists")
        conn.execute(sa.update(t).where(*where, t.c.identity_status.is_(None)).values(**values))
    return len(updates)
