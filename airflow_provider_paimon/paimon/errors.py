"""Errors raised by table operations.

Every error names what is wrong and how to fix it; callers (the Spark jobs, the
operators, the CLI) print ``str(error)`` as is. All derive from ``PaimonError`` so a
job entry point can turn any of them into a clean non-zero exit.
"""


class PaimonError(Exception):
    """Base class of the errors this package raises for Paimon tables."""


class InvalidArgumentError(PaimonError, ValueError):
    """An argument is malformed (bad table name, negative size, ...)."""


class InvalidNameError(InvalidArgumentError):
    """A branch or tag name that Paimon does not allow."""


class TableNotFoundError(PaimonError, LookupError):
    """The database or table does not exist in the warehouse."""


class BranchNotFoundError(PaimonError, LookupError):
    """The branch does not exist on the table."""


class TagNotFoundError(PaimonError, LookupError):
    """The tag does not exist on the table (or branch)."""


class SnapshotNotFoundError(PaimonError, LookupError):
    """The snapshot does not exist (never written, or expired)."""


class AlreadyExistsError(PaimonError):
    """A branch, tag or table that should be new already exists."""


class ConcurrentModificationError(PaimonError):
    """Another writer changed the table while an operation was running."""
