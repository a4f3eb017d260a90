"""Storage-specific safety: commits that stay atomic on object storage (``commit.atomicity``)."""

from .atomicity import (
    ATOMICITY,
    LOCK_LEASE,
    LOCK_TIMEOUT,
    LOCK_URL,
    MODES,
    Atomicity,
    CommitAtomicityError,
    CommitLockTimeoutError,
    resolve,
)
from .commit_file_io import CommitSafeFileIO, create_if_absent, guard

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
