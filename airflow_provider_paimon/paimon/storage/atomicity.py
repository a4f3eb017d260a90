"""Which create-if-absent a warehouse's commits use: the ``commit.atomicity`` option.

A Paimon commit wins snapshot N by creating ``snapshot-N`` only if it is absent. On a
local disk or HDFS a rename does that atomically. Object stores have no atomic rename:
pypaimon's fallback there (exists, write a temporary object, copy+delete it into place)
lets two committers both "win" N, and one commit is silently lost. So the mode is an
explicit, validated setting with a safe default, and an object store that has neither
a conditional write nor a lock configured is refused, never run on the unsafe path.

``commit.atomicity`` (a catalog option; unknown values are an error):

* ``auto`` (default): ``rename`` on local file systems and HDFS, ``conditional-put``
  on ``s3://`` (``s3a``, ``s3n``), ``lock`` when ``commit.lock.url`` is set on another
  object store; any other object store is refused with a message naming the option.
* ``conditional-put``: ``PUT`` with ``If-None-Match: *`` (S3 API; AWS S3 since 2024).
* ``lock``: a lease row in a SQL database (``commit.lock.url``, a SQLAlchemy URL),
  held around "exists? then PUT".
* ``rename``: pypaimon's own behaviour; only atomic where rename is (local, HDFS).
  Choosing it on an object store is allowed (one writer only) and logged as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from ..errors import ConcurrentModificationError, InvalidArgumentError
from ..option_values import parse_bool, parse_int

ATOMICITY = "commit.atomicity"
LOCK_URL = "commit.lock.url"
LOCK_LEASE = "commit.lock.lease-seconds"
LOCK_TIMEOUT = "commit.lock.timeout-seconds"
VERIFY_CONDITIONAL_PUT = "commit.conditional-put.verify"

#: The option keys this module reads (catalog options, never table options).
OPTION_KEYS = (ATOMICITY, LOCK_URL, LOCK_LEASE, LOCK_TIMEOUT, VERIFY_CONDITIONAL_PUT)

AUTO, CONDITIONAL_PUT, LOCK, RENAME = "auto", "conditional-put", "lock", "rename"
MODES = (AUTO, CONDITIONAL_PUT, LOCK, RENAME)

#: File systems whose rename is atomic and fails when the target exists.
RENAME_SCHEMES = ("", "file", "hdfs", "viewfs")
#: Object stores that speak the S3 API (conditional PUT through boto3).
S3_SCHEMES = ("s3", "s3a", "s3n")

DEFAULT_LEASE_S = 60
DEFAULT_TIMEOUT_S = 120


class CommitLockTimeoutError(ConcurrentModificationError):
    """The commit lock stayed held by another committer for the whole timeout."""


class CommitAtomicityError(InvalidArgumentError):
    """The warehouse's commits cannot be made safe as configured; nothing was written."""


@dataclass(frozen=True)
class Atomicity:
    """The resolved mode of one warehouse and the settings that mode needs."""

    mode: str
    scheme: str
    lock_url: str | None = field(default=None, repr=False)  # may hold a password
    lease_s: int = DEFAULT_LEASE_S
    timeout_s: int = DEFAULT_TIMEOUT_S
    verify: bool = True

    @property
    def guarded(self) -> bool:
        """True when commits must go through our create-if-absent (not pypaimon's)."""
        return self.mode != RENAME


def scheme_of(path: str) -> str:
    scheme = urlparse(str(path)).scheme.lower()
    return "" if len(scheme) == 1 else scheme  # a Windows drive letter is local


def resolve(warehouse: str, options: Mapping[str, Any] | None) -> Atomicity:
    """The commit mode for ``warehouse`` under ``options``; raises on a bad or unsafe setting."""
    opts = {str(k): v for k, v in (options or {}).items()}
    raw = opts.get(ATOMICITY)
    mode = AUTO if raw is None or not str(raw).strip() else str(raw).strip().lower()
    if mode not in MODES:
        raise CommitAtomicityError(
            f"option {ATOMICITY!r} is {raw!r}; use one of {', '.join(MODES)}"
        )
    scheme = scheme_of(warehouse)
    lock_url = str(opts[LOCK_URL]).strip() if opts.get(LOCK_URL) and str(opts[LOCK_URL]).strip() else None
    lease = parse_int(opts.get(LOCK_LEASE), f"option {LOCK_LEASE!r}", 1, DEFAULT_LEASE_S)
    timeout = parse_int(opts.get(LOCK_TIMEOUT), f"option {LOCK_TIMEOUT!r}", 0, DEFAULT_TIMEOUT_S)
    verify = parse_bool(opts.get(VERIFY_CONDITIONAL_PUT), f"option {VERIFY_CONDITIONAL_PUT!r}", True)
    if mode == AUTO:
        if scheme in RENAME_SCHEMES:
            mode = RENAME
        elif scheme in S3_SCHEMES:
            mode = CONDITIONAL_PUT
        elif lock_url:
            mode = LOCK
        else:
            raise CommitAtomicityError(
                f"warehouse {warehouse!r} is on {scheme}://, an object store without atomic rename, "
                f"and no safe commit is configured: set option {LOCK_URL!r} (a SQLAlchemy URL) and "
                f"{ATOMICITY!r}='lock', or {ATOMICITY!r}='rename' if only one writer ever commits"
            )
    if mode == CONDITIONAL_PUT and scheme not in S3_SCHEMES:
        raise CommitAtomicityError(
            f"option {ATOMICITY!r}='conditional-put' works on s3:// warehouses (the S3 API's "
            f"If-None-Match), not on {warehouse!r}; use 'lock' with option {LOCK_URL!r} instead"
        )
    if mode == LOCK and scheme in RENAME_SCHEMES:
        raise CommitAtomicityError(
            f"option {ATOMICITY!r}='lock' is for object stores; {warehouse!r} renames atomically "
            f"already: use 'auto' (or 'rename')"
        )
    if mode == LOCK and not lock_url:
        raise CommitAtomicityError(
            f"option {ATOMICITY!r}='lock' needs option {LOCK_URL!r}: a SQLAlchemy URL of the "
            "database that holds the commit locks (e.g. the lineage store's)"
        )
    return Atomicity(
        mode=mode,
        scheme=scheme,
        lock_url=lock_url if mode == LOCK else None,
        lease_s=int(lease or DEFAULT_LEASE_S),
        timeout_s=int(timeout if timeout is not None else DEFAULT_TIMEOUT_S),
        verify=verify,
    )
