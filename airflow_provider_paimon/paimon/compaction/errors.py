"""Errors specific to compaction (all ``PaimonError``s, so jobs exit 2 on them)."""

from __future__ import annotations

from ..errors import ConcurrentModificationError, InvalidArgumentError, PaimonError


class NotCompactableError(InvalidArgumentError):
    """The table is of a kind this compaction does not handle (primary keys, ...)."""


class PartitionNotFoundError(PaimonError, LookupError):
    """A requested partition does not exist in the table (or branch)."""


class CompactionConflictError(ConcurrentModificationError):
    """A file the compaction wanted to remove is gone: another commit removed it first.

    Raised before anything is written for the commit, so no snapshot exists for the
    failed attempt; the caller deletes the attempt's rewritten files and re-plans.
    """


class RowCountMismatchError(PaimonError):
    """Rewritten files do not hold exactly the rows of the files they replace."""
