"""Storage-specific safety: commits that stay atomic on object storage (``commit.atomicity``)."""

from .atomicity import (
    ATOMICITY,
    LOCK_LEASE,
    LOCK_TIMEOUT,
    LOCK_URL,
    MODES,
    Atomicity,
    CommitAtomicityError,
    resolve,
)
from .commit_file_io import CommitSafeFileIO, create_if_absent, guard
from .sql_lock import CommitLockTimeoutError

__all__ = [
    "ATOMICITY",
    "LOCK_LEASE",
    "LOCK_TIMEOUT",
    "LOCK_URL",
    "MODES",
    "Atomicity",
    "CommitAtomicityError",
    "CommitLockTimeoutError",
    "CommitSafeFileIO",
    "create_if_absent",
    "guard",
    "resolve",
]
