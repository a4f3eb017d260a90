"""What makes a snapshot unique, read from the snapshot itself.

A snapshot id is not an identity: Paimon's destructive rollback deletes the newer
snapshots and the next commit takes their ids again, fast-forward rewrites main from
the branch point on, and replace-main adds a snapshot whose rows are a branch's. What
does not repeat is the commit itself: its ``commitUser`` (one per writer), its
``commitIdentifier`` (the streaming checkpoint / micro-batch id, or Long.MAX for a
batch commit) and its ``timeMillis``. Every Paimon snapshot file carries the three
(Java and pypaimon write them as required fields), so the identity of a snapshot is
read from the file, never guessed from its id.

Copies keep the identity: a branch's first snapshot is a copy of the snapshot it was
made from, and fast-forward copies the branch's snapshot files onto main, so the same
commit seen on two branches is one identity ("the same content"). Replace-main and
rollback-as-latest write a new snapshot (new ``timeMillis``): a new identity, whose
content comes from another snapshot (the lineage store records that link).

``digest`` is the fixed-width key the lineage store indexes and compares.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .snapshots import read_snapshot

#: Length of ``SnapshotIdentity.digest`` (hex characters).
DIGEST_LENGTH = 40


@dataclass(frozen=True)
class SnapshotIdentity:
    """A commit: who (``commit_user``), which of its commits (``commit_identifier``), when."""

    commit_user: str
    commit_identifier: int
    time_millis: int

    @property
    def digest(self) -> str:
        """SHA-1 of the three fields (hex, ``DIGEST_LENGTH`` characters): the store's key."""
        text = f"{self.commit_user}\n{self.commit_identifier}\n{self.time_millis}"
        return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"commit_user": self.commit_user, "commit_identifier": self.commit_identifier,
                "time_millis": self.time_millis}

    @classmethod
    def from_fields(cls, commit_user: Any, commit_identifier: Any, time_millis: Any) -> SnapshotIdentity | None:
        """From the three values, or ``None`` when any is missing or not of its type."""
        if not isinstance(commit_user, str) or not commit_user:
            return None
        try:
            ident, millis = int(commit_identifier), int(time_millis)
        except (TypeError, ValueError):
            return None
        if isinstance(commit_identifier, bool) or isinstance(time_millis, bool):
            return None
        return cls(commit_user, ident, millis)

    @classmethod
    def of(cls, snapshot: Any) -> SnapshotIdentity | None:
        """The identity of a pypaimon ``Snapshot`` or a snapshot JSON document (``None``: unreadable)."""
        if snapshot is None:
            return None
        if isinstance(snapshot, dict):
            return cls.from_fields(snapshot.get("commitUser"), snapshot.get("commitIdentifier"),
                                   snapshot.get("timeMillis"))
        return cls.from_fields(getattr(snapshot, "commit_user", None), getattr(snapshot, "commit_identifier", None),
                               getattr(snapshot, "time_millis", None))


def identity_of(layout: Any, branch: str | None, snapshot_id: int) -> SnapshotIdentity | None:
    """The identity of snapshot ``snapshot_id`` of ``branch`` in a ``TableLayout``; ``None`` if gone."""
    try:
        return SnapshotIdentity.of(read_snapshot(layout, branch, snapshot_id))
    except ValueError:  # not JSON: no identity rather than a failed caller
        return None


def table_identity(table: Any, snapshot_id: int) -> SnapshotIdentity | None:
    """The identity of snapshot ``snapshot_id`` of a pypaimon table (on its branch); ``None`` if gone."""
    try:
        snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    except Exception:  # noqa: BLE001 - a missing or unreadable file: no identity
        return None
    return SnapshotIdentity.of(snapshot)
