"""Errors raised by the lineage store.

They derive from ``PaimonError`` so job entry points and the CLI turn any of them into
a clean non-zero exit, and each message names the problem and the fix. Messages carry
the store's URL only in masked form (``mask_url``): a password never reaches a log.
"""

from __future__ import annotations

from ..paimon.errors import InvalidArgumentError, PaimonError


class LineageError(PaimonError):
    """Base class of the lineage store's errors."""


class InvalidLineageArgumentError(LineageError, InvalidArgumentError):
    """A lineage entity, filter or query argument is malformed (blank job, negative id...)."""


class UnsupportedBackendError(InvalidLineageArgumentError):
    """The URL names a database the store does not support (or whose driver is missing)."""


class LineageStoreMissingError(LineageError):
    """The store (SQLite file, MySQL database) does not exist and may not be created here."""


class LineageStoreUnavailableError(LineageError):
    """The store's server cannot be reached (after retrying transient failures)."""


class SchemaVersionError(LineageError):
    """The store was created by a newer version of this package than the one running."""


class ReadOnlyLineageError(LineageError):
    """Something tried to write lineage tables through a read-only path (Spark)."""


class UnknownLineageSnapshotError(InvalidLineageArgumentError):
    """The table or snapshot to plan a cascade from has no lineage in the store."""


class LineageCycleError(LineageError):
    """The affected tables read each other in a cycle, so no correction order exists."""
