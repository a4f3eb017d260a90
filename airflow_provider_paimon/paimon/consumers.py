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

import re
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


def consumer_dir(table: Any) -> str:
    """The ``consumer/`` folder of ``table``'s branch (for messages and tests)."""
    return consumer_manager(table)._consumer_directory()


def read_next_snapshot(table: Any, consumer_id: str) -> int | None:
    """The saved ``nextSnapshot`` of ``consumer_id`` on this branch, or ``None``."""
    consumer = consumer_manager(table).consumer(validate_consumer_id(consumer_id))
    return None if consumer is None else int(consumer.next_snapshot)


def save_next_snapshot(table: Any, consumer_id: str, next_snapshot: int) -> None:
    """Record that ``consumer_id`` has read every snapshot below ``next_snapshot``."""
    from pypaimon.consumer.consumer import Consumer

    if next_snapshot < 1:
        raise InvalidArgumentError(f"nextSnapshot must be >= 1, got {next_snapshot}")
    consumer_manager(table).reset_consumer(
        validate_consumer_id(consumer_id), Consumer(next_snapshot=int(next_snapshot))
    )


def list_consumers(table: Any) -> dict[str, int]:
    """All consumers of this branch: id -> nextSnapshot."""
    return dict(consumer_manager(table).consumers())


def min_next_snapshot(table: Any) -> int | None:
    """The smallest saved ``nextSnapshot`` on this branch (what expiry must keep)."""
    return consumer_manager(table).min_next_snapshot()


def delete_consumer(table: Any, consumer_id: str) -> None:
    consumer_manager(table).delete_consumer(validate_consumer_id(consumer_id))
