"""Consumer progress files, kept in the READ BRANCH's own ``consumer/`` folder.

Paimon stores a streaming consumer's position as ``consumer/consumer-<id>`` holding
``{"nextSnapshot": N}`` (the first snapshot the consumer has not read). Snapshot
expiry (Java's ``ConsumerManager.minNextSnapshot``) keeps every snapshot from the
smallest ``nextSnapshot`` on, so a saved position protects unread data.

A branch has its own snapshots, so its consumers live under
``branch/branch-NAME/consumer/``. pypaimon's stream scan builds its consumer manager
from the table path alone and so records branch progress under main, where expiry of
main would honour it and expiry of the branch would not; this module always passes
the branch.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

from .errors import InvalidArgumentError
from .names import MAIN_BRANCH, is_main

_CONSUMER_ID = re.compile(r"^[A-Za-z0-9_.\-]+$")


def validate_consumer_id(consumer_id: str) -> str:
    """A consumer id becomes a file name: letters, digits, ``_ . -`` only."""
    if (
        not isinstance(consumer_id, str)
        or not _CONSUMER_ID.match(consumer_id)
        or consumer_id in (".", "..")
    ):
        raise InvalidArgumentError(
            f"consumer-id {consumer_id!r} is not valid: use letters, digits, '_', '.' or '-'"
        )
    return consumer_id


def consumer_manager(table: Any) -> Any:
    """pypaimon's ``ConsumerManager`` rooted at ``table``'s own branch."""
    from pypaimon.consumer.consumer_manager import ConsumerManager

    branch = table.current_branch()
    return ConsumerManager(table.file_io, table.table_path, MAIN_BRANCH if is_main(branch) else branch)


def read_next_snapshot(table: Any, consumer_id: str) -> int | None:
    """The saved ``nextSnapshot`` of ``consumer_id`` on this branch, or ``None``."""
    consumer = consumer_manager(table).consumer(validate_consumer_id(consumer_id))
    return None if consumer is None else int(consumer.next_snapshot)


def save_next_snapshot(table: Any, consumer_id: str, next_snapshot: int) -> None:
    """Record that ``consumer_id`` has read every snapshot below ``next_snapshot``."""
    from pypaimon.consumer.consumer import Consumer

    if next_snapshot < 1:
        raise InvalidArgumentError(f"nextSnapshot must be >= 1, got {next_snapshot}")
    manager = consumer_manager(table)
    consumer = Consumer(next_snapshot=int(next_snapshot))
    local = _local_path(manager._consumer_path(validate_consumer_id(consumer_id)))
    if local is None:
        # Object stores and HDFS: overwrite in place, as Paimon Java does; readers
        # (Paimon's and pypaimon's Consumer.fromPath) retry a half-written file.
        manager.reset_consumer(consumer_id, consumer)
        return
    # Local files: a temporary file and an atomic rename, so no reader ever sees a
    # truncated file (expiry reading an empty file would not know the position).
    os.makedirs(os.path.dirname(local), exist_ok=True)
    # Hidden name: listings of ``consumer-*`` (expiry) never see the temporary file.
    tmp = os.path.join(os.path.dirname(local), f".{os.path.basename(local)}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(consumer.to_json())
    os.replace(tmp, local)


def _local_path(path: str) -> str | None:
    """The local file system path of ``path``, or ``None`` for a remote URI."""
    if path.startswith("file:"):
        return "/" + path[len("file:"):].lstrip("/")
    return None if "://" in path else path


def list_consumers(table: Any) -> dict[str, int]:
    """All consumers of this branch: id -> nextSnapshot."""
    return dict(consumer_manager(table).consumers())


def min_next_snapshot(table: Any) -> int | None:
    """The smallest saved ``nextSnapshot`` on this branch (what expiry must keep)."""
    return consumer_manager(table).min_next_snapshot()


def delete_consumer(table: Any, consumer_id: str) -> None:
    consumer_manager(table).delete_consumer(validate_consumer_id(consumer_id))
