"""Retry what is transient: deadlocks, lock timeouts, a busy SQLite file, lost connections.

Many jobs write lineage at once (the Paimon lineage proposal's first requirement). Databases resolve
write conflicts by failing one side (MySQL deadlock 1213, PostgreSQL 40P01/40001,
SQLite "database is locked"); that failure must not reach the job. Every store write
is an idempotent upsert run in one transaction, so running it again is safe.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import exc

from airflow_provider_paimon.paimon.errors import PaimonError

from .errors import LineageStoreUnavailableError

log = logging.getLogger(__name__)
T = TypeVar("T")

# MySQL/MariaDB error codes: lock wait timeout, deadlock, too many connections, can't
# connect, server gone away, lost connection, connection killed, client timeout.
_MYSQL_TRANSIENT = {1205, 1213, 1040, 2003, 2006, 2013, 1927, 4031}
# PostgreSQL SQLSTATEs: serialization failure, deadlock, lock not available, shutdown,
# cannot connect now, too many connections, connection exceptions.
_PG_TRANSIENT = {"40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300"}
_SQLITE_TRANSIENT = ("database is locked", "database table is locked", "busy")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry: exponential backoff with jitter."""

    attempts: int = 8
    base_delay: float = 0.02
    max_delay: float = 1.0

    def delay(self, attempt: int) -> float:
        """Seconds to sleep before retry number ``attempt`` (1-based)."""
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.5)


def is_transient(err: BaseException) -> bool:
    """Whether running the same transaction again may succeed."""
    if not isinstance(err, exc.DBAPIError):
        return False
    if err.connection_invalidated:
        return True
    orig = err.orig
    if orig is None:
        return False
    module = type(orig).__module__
    if module.startswith("pymysql"):
        code = orig.args[0] if getattr(orig, "args", None) else None
        return code in _MYSQL_TRANSIENT
    if module.startswith("psycopg"):
        code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
        if code is None:  # no SQLSTATE: the connection itself failed
            return isinstance(err, exc.OperationalError)
        return code in _PG_TRANSIENT or code.startswith("08")
    if module.startswith("sqlite3"):
        text = str(orig).lower()
        return any(marker in text for marker in _SQLITE_TRANSIENT)
    return False


def with_retry(fn: Callable[[], T], policy: RetryPolicy, what: str) -> T:
    """Run ``fn``; on a transient error sleep and run it again, up to ``policy.attempts``."""
    attempt = 1
    while True:
        try:
            return fn()
        except exc.DBAPIError as err:
            if attempt >= policy.attempts or not is_transient(err):
                raise
            pause = policy.delay(attempt)
            # The driver's message is not logged: it may quote parameters.
            log.debug("%s: transient %s, retry %d in %.3fs", what, type(err.orig).__name__, attempt, pause)
            time.sleep(pause)
            attempt += 1


# Errors that a later poll (a sensor's next poke, a trigger's next loop) can outlive:
# connection refused/reset, timeouts, a database that is restarting. Auth failures and
# unknown databases need a person, so they are permanent.
_PERMANENT_DB_CODES = {1044, 1045, 1049, 1698}  # MySQL: access denied, unknown database
_PERMANENT_TEXT = ("access denied", "authentication failed", "password authentication",
                   "does not exist", "unknown database")


def outlasts_a_poll(error: BaseException) -> bool:
    """Whether ``error`` may be gone by the next poll of a wait, or is permanent.

    Wider than ``is_transient`` (which decides whether to rerun one transaction right
    away): any connection or timeout error may pass while a sensor waits. Our own
    ``PaimonError``s are permanent (bad names, unknown table/branch/job/consumer), as
    are configuration errors (a malformed store URL, a missing driver), except the
    store's own "cannot reach the server", unless the server said "access denied" or
    "unknown database".
    """
    if isinstance(error, LineageStoreUnavailableError):
        return not any(t in str(error).lower() for t in _PERMANENT_TEXT)
    if isinstance(error, (PaimonError, ValueError, TypeError, KeyError, ImportError)):
        return False
    if isinstance(error, (exc.ArgumentError, exc.NoSuchModuleError)):
        return False
    if isinstance(error, exc.DBAPIError):
        orig = getattr(error, "orig", None)
        args = getattr(orig, "args", ()) or ()
        if args and isinstance(args[0], int) and args[0] in _PERMANENT_DB_CODES:
            return False
        if any(t in str(orig or error).lower() for t in _PERMANENT_TEXT):
            return False
        return isinstance(error, (exc.OperationalError, exc.InterfaceError))
    if isinstance(error, exc.TimeoutError):
        return True
    return isinstance(error, (OSError, TimeoutError, ConnectionError))
