"""A feed of a branch's new snapshots: "the snapshots after position N, of kinds K".

Event-driven scheduling (``PaimonSnapshotTrigger``) needs one question answered again
and again, by whichever writer made the commits (pypaimon, our Spark data source,
Paimon Java): which snapshots has the branch gained since the last one delivered? The
answer is read from Paimon's own files (``snapshot/snapshot-N``, through
:mod:`.snapshots`), so it sees every writer's commits alike.

Positions are Paimon consumer positions: ``next_snapshot`` is the first snapshot not
delivered yet, exactly the ``nextSnapshot`` a ``consumer/consumer-<id>`` file holds
(see :mod:`.consumers`), so a watcher's position also keeps its undelivered snapshots
from expiring.

A feed never skips silently: if the snapshot at the position has expired (a consumer
that expiry did not honour, or one deleted and re-created by hand), or the branch's
latest id went back below the position (a rollback, a replace-main), it raises
``SnapshotGapError`` naming what happened and how to move on, rather than pretending
nothing happened in between.

Pure metadata reads; no Airflow here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgumentError, PaimonError
from .names import MAIN_BRANCH, is_main
from .snapshots import TableLayout, earliest_snapshot_id, latest_snapshot_id, read_snapshot

#: Paimon's commit kinds (Java ``Snapshot.CommitKind``)
COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")
#: the kinds that change what a reader sees; COMPACT only rewrites files, ANALYZE
#: only adds statistics
DATA_COMMIT_KINDS = ("APPEND", "OVERWRITE")
#: snapshots read per call at most, so a watcher that was down for long catches up in
#: bounded steps
DEFAULT_BATCH = 100


class SnapshotGapError(PaimonError):
    """The feed cannot go on without skipping: snapshots expired before they were
    delivered, or the branch's ids went back below the position."""


def validate_commit_kinds(kinds: Iterable[str] | str | None) -> tuple[str, ...]:
    """Upper-cased, de-duplicated kinds in Paimon's order; unknown or none is an error."""
    if kinds is None:
        return DATA_COMMIT_KINDS
    if isinstance(kinds, str):
        kinds = [kinds]
    wanted = []
    for kind in kinds:
        if not isinstance(kind, str) or kind.strip().upper() not in COMMIT_KINDS:
            raise InvalidArgumentError(
                f"unknown commit kind {kind!r}: choose from {', '.join(COMMIT_KINDS)}"
            )
        wanted.append(kind.strip().upper())
    if not wanted:
        raise InvalidArgumentError(
            f"commit_kinds must name at least one of {', '.join(COMMIT_KINDS)}"
        )
    return tuple(k for k in COMMIT_KINDS if k in wanted)


@dataclass(frozen=True)
class SnapshotEvent:
    """What a downstream DAG wants to know about one new snapshot (plain values)."""

    table: str
    branch: str
    snapshot_id: int
    commit_kind: str
    commit_user: str | None
    commit_identifier: int | None
    time_millis: int
    schema_id: int
    delta_record_count: int | None
    total_record_count: int | None
    changelog_record_count: int | None
    watermark: int | None
    properties: dict[str, str]

    @classmethod
    def from_json(cls, table: str, branch: str | None, doc: dict[str, Any]) -> SnapshotEvent:
        def number(key: str) -> int | None:
            value = doc.get(key)
            return None if value is None else int(value)

        return cls(
            table=table,
            branch=MAIN_BRANCH if is_main(branch) else str(branch),
            snapshot_id=int(doc["id"]),
            commit_kind=str(doc.get("commitKind")),
            commit_user=doc.get("commitUser"),
            commit_identifier=number("commitIdentifier"),
            time_millis=int(doc.get("timeMillis") or 0),
            schema_id=int(doc.get("schemaId") or 0),
            delta_record_count=number("deltaRecordCount"),
            total_record_count=number("totalRecordCount"),
            changelog_record_count=number("changelogRecordCount"),
            watermark=number("watermark"),
            properties={str(k): str(v) for k, v in (doc.get("properties") or {}).items()},
        )

    def to_payload(self) -> dict[str, Any]:
        """JSON-ready dict (the asset event's payload); ``time`` is ISO-8601 UTC."""
        from datetime import datetime, timezone

        out = {
            "table": self.table,
            "branch": self.branch,
            "snapshot_id": self.snapshot_id,
            "commit_kind": self.commit_kind,
            "commit_user": self.commit_user,
            "commit_identifier": self.commit_identifier,
            "time_millis": self.time_millis,
            "time": datetime.fromtimestamp(self.time_millis / 1000, tz=timezone.utc).isoformat(),
            "schema_id": self.schema_id,
            "delta_record_count": self.delta_record_count,
            "total_record_count": self.total_record_count,
            "changelog_record_count": self.changelog_record_count,
            "watermark": self.watermark,
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        return out


@dataclass(frozen=True)
class FeedPage:
    """The snapshots found after a position (every kind), and the position after them."""

    events: tuple[SnapshotEvent, ...]
    next_snapshot: int

    def of_kinds(self, kinds: Iterable[str]) -> list[SnapshotEvent]:
        wanted = set(kinds)
        return [e for e in self.events if e.commit_kind in wanted]


def start_position(layout: TableLayout, branch: str | None, start_snapshot: int | None = None) -> int:
    """Where a new watcher starts: ``start_snapshot`` if given, else after the latest."""
    if start_snapshot is not None:
        if int(start_snapshot) < 1:
            raise InvalidArgumentError(f"start_snapshot must be >= 1, got {start_snapshot}")
        return int(start_snapshot)
    latest = latest_snapshot_id(layout, branch)
    return (latest or 0) + 1


def snapshots_after(
    layout: TableLayout,
    table: str,
    branch: str | None,
    next_snapshot: int,
    limit: int = DEFAULT_BATCH,
) -> FeedPage:
    """Snapshots ``next_snapshot``, ``next_snapshot + 1``, ... of ``branch`` up to its latest.

    Every kind is returned (filter with ``FeedPage.of_kinds``) so that the position moves
    past snapshots nobody wants too. At most ``limit`` snapshots per call. Raises
    ``SnapshotGapError`` when snapshots from ``next_snapshot`` on have expired.
    """
    if next_snapshot < 1:
        raise InvalidArgumentError(f"next_snapshot must be >= 1, got {next_snapshot}")
    if limit < 1:
        raise InvalidArgumentError(f"limit must be >= 1, got {limit}")
    latest = latest_snapshot_id(layout, branch)
    if latest is not None and next_snapshot > latest + 1:
        # Ids went back (a rollback, a replace-main or fast-forward to a shorter branch):
        # commits reusing ids below the position would pass unseen.
        raise SnapshotGapError(
            f"the position (next snapshot {next_snapshot}) of {_where(table, branch)} is past "
            f"its latest snapshot {latest}: the branch was rolled back or replaced (or the "
            f"start was set ahead). Save the consumer position at {latest + 1} to report "
            "only new commits, or lower to report earlier snapshots again"
        )
    if latest is None or next_snapshot > latest:
        return FeedPage((), next_snapshot)
    events: list[SnapshotEvent] = []
    position = next_snapshot
    while position <= latest and len(events) < limit:
        doc = read_snapshot(layout, branch, position)
        if doc is None:
            _raise_if_expired(layout, table, branch, position)
            break  # not there yet (a listing behind the hint): next poll
        events.append(SnapshotEvent.from_json(table, branch, doc))
        position += 1
    return FeedPage(tuple(events), position)


def _raise_if_expired(layout: TableLayout, table: str, branch: str | None, position: int) -> None:
    earliest = earliest_snapshot_id(layout, branch)
    if earliest is not None and position < earliest:
        raise SnapshotGapError(
            f"snapshots {position}..{earliest - 1} of {_where(table, branch)} expired before they were "
            f"delivered (earliest left: {earliest}); their changes cannot be reported. To go "
            "on from the earliest snapshot, save the consumer position at it (or delete the "
            "consumer to start after the latest)"
        )


def _where(table: str, branch: str | None) -> str:
    return table if is_main(branch) else f"{table} branch {branch}"
