"""History events are lineage: what a rollback, fast-forward, replace-main or publish removed,
and what the new snapshots derive from.

Paimon reuses snapshot ids after a destructive rollback and rewrites main on
fast-forward; replace-main, rollback-as-latest and fast-forward make snapshots whose
rows come from another snapshot. The store keeps both halves:

* **Retraction.** Rows of snapshots that no longer exist (removed by the event) stay
  for audit but get ``retracted_at``/``retracted_by``; walks, the catch-up check and
  cascade plans skip them unless asked (``include_retracted``). Only rows of the removed
  commits are retracted: a row whose recorded identity is the commit the id holds now
  (a fast-forward's copy), or that was recorded after the event (a new commit that took
  the id again), is kept. Retracting twice changes nothing (the first time stays).
* **Links.** The new snapshot's rows come from another snapshot: recorded as one
  barrier of a job of its own (``paimon.replace_main``, ``paimon.fast_forward``,
  ``paimon.rollback``): source = where the rows come from, sink = the new snapshot,
  both with identities (``branch_links``). A fast-forward links every snapshot it
  copied onto main, so each of main's snapshots leads to the branch commit it is.
* **Events.** One ``lineage_event`` row per operation (``kind``, table, branch, time,
  ``detail`` JSON: the removed snapshots with identities, the links, the target).

Idempotent: recording the same operation again (a retried task) adds no second link,
retracts nothing more and adds no second event (an event with the same ``detail`` on the
same table is found first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..paimon.snapshot_identity import SnapshotIdentity
from . import schema
from .branch_links import FAST_FORWARD_JOB, ROLLBACK_JOB, record_link
from .entities import check_branch, check_name

if TYPE_CHECKING:
    from .store import LineageStore

EVENT_KINDS = ("rollback", "fast-forward", "replace-main", "publish")
#: Snapshot ids per retraction statement.
_CHUNK = 500


@dataclass(frozen=True)
class HistoryEvent:
    """One recorded history event (``lineage_event``)."""

    event_id: int
    kind: str
    database: str
    table: str
    branch: str
    create_time: datetime
    key: str
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "kind": self.kind, "database": self.database, "table": self.table,
                "branch": self.branch, "create_time": self.create_time.isoformat(), "key": self.key,
                "detail": self.detail}


def identity_dict(identity: SnapshotIdentity | None) -> dict[str, Any] | None:
    return None if identity is None else {**identity.to_dict(), "digest": identity.digest}


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def retract(
    store: LineageStore,
    database: str,
    table: str,
    branch: str,
    removed: Iterable[int] = (),
    *,
    above: int | None = None,
    keep: Mapping[int, SnapshotIdentity | None] | None = None,
    before_millis: int,
    by: str,
) -> int:
    """Mark rows of removed snapshots retracted; return how many rows changed.

    ``removed``: the snapshot ids of ``database.table`` on ``branch`` whose commits are
    gone; ``above``: every id above it too (a destructive rollback to ``above``).
    ``keep[id]``: the commit that id holds now (a fast-forward's copy, a commit made
    after the rollback), whose rows stay live. Rows without an identity stay live when
    recorded at or after ``before_millis`` (the event's start), rows with one when their
    commit is that new; rows already retracted keep their first retraction.
    """
    check_name("database", database)
    check_name("table", table)
    branch = check_branch(branch)
    keep = dict(keep or {})
    ids = sorted({int(i) for i in removed} | {i for i in keep if above is not None and i > above})
    cutoff = datetime.fromtimestamp(before_millis / 1000, timezone.utc).replace(tzinfo=None)
    now = _now()

    def run(conn: sa.Connection) -> int:
        changed = 0
        for t in (schema.sink_snapshot_lineage, schema.source_snapshot_lineage):
            base = [t.c.database == database, t.c["table"] == table, t.c.branch == branch, t.c.retracted_at.is_(None)]
            older = sa.or_(sa.and_(t.c.snapshot_identity.is_(None), t.c.create_time < cutoff),
                           sa.and_(t.c.snapshot_identity.is_not(None), t.c.commit_time < before_millis))
            if above is not None:  # every id above, but those that hold a live commit now
                stmt = (sa.update(t).where(*base, t.c.snapshot_id > above, t.c.snapshot_id.not_in(sorted(keep) or [-1]),
                                           older)
                        .values(retracted_at=now, retracted_by=by[:255]))
                changed += conn.execute(stmt).rowcount
            plain = [i for i in ids if keep.get(i) is None]
            for i in range(0, len(plain), _CHUNK):
                stmt = (sa.update(t).where(*base, t.c.snapshot_id.in_(plain[i:i + _CHUNK]), older)
                        .values(retracted_at=now, retracted_by=by[:255]))
                changed += conn.execute(stmt).rowcount
            for sid in ids:
                now_is = keep.get(sid)
                if now_is is None:
                    continue
                other = sa.or_(t.c.snapshot_identity.is_(None), t.c.snapshot_identity != now_is.digest)
                stmt = (sa.update(t).where(*base, t.c.snapshot_id == sid, other, older)
                        .values(retracted_at=now, retracted_by=by[:255]))
                changed += conn.execute(stmt).rowcount
        return changed

    return store.run(f"retract lineage of {database}.{table}", run, write=True)


def record_event(store: LineageStore, kind: str, database: str, table: str, branch: str,
                 detail: Mapping[str, Any], key: str) -> HistoryEvent:
    """Add one ``lineage_event`` row, unless the same operation (kind, table, ``key``) is there.

    ``key`` names the operation (e.g. the new snapshot's identity): a retried task that
    records it again finds the first row and adds none.
    """
    if kind not in EVENT_KINDS:
        raise ValueError(f"event kind must be one of {', '.join(EVENT_KINDS)}, got {kind!r}")
    check_name("database", database)
    check_name("table", table)
    branch = check_branch(branch)
    text = json.dumps(dict(detail), sort_keys=True, default=str)
    key = str(key)[:255]
    t = schema.lineage_event
    where = [t.c.kind == kind, t.c.database == database, t.c["table"] == table, t.c.branch == branch,
             t.c.event_key == key]

    def run(conn: sa.Connection) -> HistoryEvent:
        same = conn.execute(sa.select(t).where(*where).limit(1)).first()
        if same is None:
            conn.execute(t.insert().values(kind=kind, database=database, table=table, branch=branch,
                                           create_time=_now(), event_key=key, detail=text))
            same = conn.execute(sa.select(t).where(*where).order_by(t.c.event_id.desc()).limit(1)).one()
        return _event(same)

    return store.run(f"record {kind} of {database}.{table}", run, write=True)


def history_events(store: LineageStore, database: str | None = None, table: str | None = None, *,
                   limit: int = 100) -> list[HistoryEvent]:
    """The newest recorded events (of one table when given), newest first."""
    t = schema.lineage_event
    conds = []
    if database is not None:
        conds.append(t.c.database == check_name("database", database))
    if table is not None:
        conds.append(t.c["table"] == check_name("table", table))
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise ValueError(f"limit must be an integer from 1 to 10000, got {limit!r}")
    stmt = sa.select(t).where(*conds).order_by(t.c.event_id.desc()).limit(limit)
    return [_event(r) for r in store.run("read history events", lambda c: c.execute(stmt).all())]


def _event(row: Any) -> HistoryEvent:
    created = row.create_time.replace(tzinfo=timezone.utc) if row.create_time.tzinfo is None else row.create_time
    return HistoryEvent(int(row.event_id), row.kind, row.database, row.table, row.branch, created,
                        row.event_key, json.loads(row.detail))


# -- the operations ------------------------------------------------------------------------


def _ids_with(snapshots: Iterable[Mapping[str, Any]]) -> dict[int, SnapshotIdentity | None]:
    return {int(s["snapshot_id"]): SnapshotIdentity.from_fields(s.get("commit_user"), s.get("commit_identifier"),
                                                                 s.get("time_millis"))
            for s in snapshots}


def record_rollback(store: LineageStore, database: str, table: str, result: Mapping[str, Any],
                    live: Mapping[int, SnapshotIdentity | None]) -> dict[str, Any]:
    """Record what ``paimon.maintenance.rollback`` did (its result dict).

    Destructive: the rows of every snapshot above the target are retracted, but those
    of the commits ``live`` says the ids above hold now ({id: identity}, read after the
    rollback: a rerun finds the commits made since, which stay). As latest: the new
    snapshot is linked to the target it reads as (job ``paimon.rollback``). Returns a
    summary.
    """

    branch = str(result.get("branch") or "main")
    started = int(result["started_millis"])
    removed = _ids_with(result.get("removed_snapshots") or [])
    target_id = int(result["target_snapshot_id"])
    detail: dict[str, Any] = {
        "target_snapshot_id": target_id, "tag": result.get("tag"), "as_latest": bool(result.get("as_latest")),
        "target_identity": result.get("target_identity"),
        "removed": [{"snapshot_id": i, "identity": identity_dict(ident)} for i, ident in sorted(removed.items())],
    }
    out: dict[str, Any] = {"retracted_rows": 0, "link": None}
    if not result.get("as_latest"):
        out["retracted_rows"] = retract(
            store, database, table, branch, removed, above=target_id, keep=dict(live), before_millis=started,
            by=f"rollback of {database}.{table} to snapshot {target_id}")
    new = result.get("new_identity")
    if result.get("as_latest") and new is not None:
        link = record_link(store, ROLLBACK_JOB, database, table, branch, target_id,
                           _identity(result.get("target_identity")), branch, int(result["snapshot_id"]),
                           _identity(new))
        out["link"] = link.to_dict()
        detail["new"] = {"snapshot_id": int(result["snapshot_id"]), "identity": new}
    target = _identity(result.get("target_identity"))
    # one event per rollback: a rerun finds the same target, and (as latest) the same new commit
    made = _identity(new)
    new_key = (made.digest if made is not None else "") if result.get("as_latest") else "destructive"
    event = record_event(store, "rollback", database, table, branch, detail,
                         key=f"{target_id}:{target.digest if target else '?'}:{new_key}")
    out["event_id"] = event.event_id
    return out


def record_fast_forward(store: LineageStore, database: str, table: str, branch: str, result: Mapping[str, Any],
                        copied: Mapping[int, SnapshotIdentity | None], replaced: Mapping[int, SnapshotIdentity | None],
                        started_millis: int) -> dict[str, Any]:
    """Record a fast-forward of main to ``branch``: main's removed and replaced snapshots are
    retracted, and each snapshot copied onto main is linked to the branch's.

    ``copied``: {id: identity} of main's snapshots that are the branch's now (from the
    branch point on); ``replaced``: {id: identity} of old main's snapshots from the
    branch point on (read before the fast-forward; None where unknown).
    """

    keep = {i: ident for i, ident in copied.items() if ident is not None}
    gone = set(replaced) | set(result.get("removed_snapshot_ids") or [])
    point = result.get("branch_point_snapshot_id")
    retracted = retract(store, database, table, "main", sorted(gone), keep=keep, before_millis=started_millis,
                        by=f"fast-forward of {database}.{table} to branch {branch}")
    links = []
    for sid in sorted(copied):
        if point is not None and sid == int(point):
            continue  # the branch point: the same commit on both before and after
        links.append(record_link(store, FAST_FORWARD_JOB, database, table, branch, sid, copied[sid],
                                 "main", sid, copied[sid]).to_dict())
    detail = {"branch": branch, "branch_point_snapshot_id": point,
              "main_snapshot_id": result.get("main_snapshot_id"),
              "previous_main_snapshot_id": result.get("previous_main_snapshot_id"),
              "replaced": [{"snapshot_id": i, "identity": identity_dict(v)} for i, v in sorted(replaced.items())],
              "copied": sorted(copied)}
    top = copied.get(int(result["main_snapshot_id"])) if result.get("main_snapshot_id") is not None else None
    event = record_event(store, "fast-forward", database, table, "main", detail,
                         key=f"{branch}@{result.get('main_snapshot_id')}:{top.digest if top else '?'}")
    return {"retracted_rows": retracted, "links": links, "event_id": event.event_id}


def _identity(value: Any) -> SnapshotIdentity | None:
    if isinstance(value, SnapshotIdentity) or value is None:
        return value
    return SnapshotIdentity.from_fields(value.get("commit_user"), value.get("commit_identifier"),
                                        value.get("time_millis"))
