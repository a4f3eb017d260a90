"""A pypaimon ``FileIO`` whose ``try_to_write_atomic`` really is create-if-absent.

Every snapshot pypaimon commits (``RenamingSnapshotCommit``), every schema it adds and
the ``LATEST`` hint go through the table's ``file_io.try_to_write_atomic``; so do our
own journals, tags and snapshot switches (``fileops.create_new``). Wrapping the file IO
of the catalogs we open (``catalog.open_catalog``) therefore makes every commit path of
every table loaded through it safe, on the Airflow worker and the Spark driver alike,
without touching pypaimon's commit code. Everything else is forwarded unchanged, the way
pypaimon's own ``CachingFileIO`` wraps a file IO. Local file systems and HDFS keep the
unwrapped file IO (their rename is atomic already).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Mapping
from typing import Any

from pypaimon.common.file_io import FileIO

from .atomicity import CONDITIONAL_PUT, LOCK, RENAME, Atomicity, CommitAtomicityError, resolve
from .conditional_put import S3ConditionalPut

log = logging.getLogger(__name__)

#: Seconds of lease a lock holder must have left before it PUTs.
LEASE_MARGIN_S = 2.0


class AtomicCreate:
    """The create-if-absent of one warehouse: conditional PUT or exists+PUT under a lock."""

    def __init__(self, atomicity: Atomicity, options: Mapping[str, Any]) -> None:
        self.atomicity = atomicity
        self._put = S3ConditionalPut(options, atomicity.verify) if atomicity.mode == CONDITIONAL_PUT else None
        self._lock = None
        if atomicity.mode == LOCK:
            # SQLAlchemy (~0.6 s of CPU to import) only where a lock is configured: every
            # Python worker of a Spark write imports this module
            from .sql_lock import SqlLock

            self._lock = SqlLock(atomicity.lock_url or "", atomicity.lease_s, atomicity.timeout_s)

    def create(self, file_io: FileIO, path: str, text: str) -> bool:
        """Write ``path`` with ``text`` only if absent; ``False`` when it already exists."""
        if self._put is not None:
            return self._put.create(path, text)
        assert self._lock is not None
        folder = path.rstrip("/").rsplit("/", 1)[0]
        with self._lock.hold(folder) as deadline:
            if file_io.exists(path):
                return False
            if time.monotonic() > deadline - LEASE_MARGIN_S:
                raise CommitAtomicityError(
                    f"the commit lock's lease ran out before {path} was written; nothing was "
                    "written: raise option 'commit.lock.lease-seconds'"
                )
            # One PUT: an object appears whole or not at all.
            file_io.overwrite_file_utf8(path, text)
            return True


class CommitSafeFileIO(FileIO):
    """Forwards everything to ``delegate`` except ``try_to_write_atomic``."""

    def __init__(self, delegate: FileIO, atomic: AtomicCreate) -> None:
        self._delegate = delegate
        self.atomic_create = atomic

    @property
    def delegate(self) -> FileIO:
        return self._delegate

    @property
    def properties(self) -> Any:
        return self._delegate.properties

    def try_to_write_atomic(self, path: str, content: str) -> bool:
        # No "is it a directory?" pre-check as pypaimon's has: on an object store a key
        # and a "folder/" prefix never collide, and the check would cost a request.
        return self.atomic_create.create(self._delegate, path, content)

    def __getattr__(self, name: str) -> Any:
        if name in ("_delegate", "atomic_create"):  # during unpickling
            raise AttributeError(name)
        return getattr(self._delegate, name)


def _forwarder(name: str) -> Any:
    def method(self: CommitSafeFileIO, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._delegate, name)(*args, **kwargs)

    method.__name__ = name
    return method


# FileIO's concrete and abstract methods would shadow __getattr__: forward each one,
# so the delegate's own (faster) versions run, as pypaimon's CachingFileIO does.
for _name, _value in list(vars(FileIO).items()):
    if callable(_value) and not _name.startswith("__") and _name not in ("try_to_write_atomic", "get"):
        setattr(CommitSafeFileIO, _name, _forwarder(_name))
CommitSafeFileIO.__abstractmethods__ = frozenset()


def guard(file_io: FileIO, warehouse: str, options: Mapping[str, Any] | None) -> FileIO:
    """``file_io`` with a safe create-if-absent for ``warehouse``; unchanged where rename is atomic.

    Raises ``CommitAtomicityError`` for an unknown mode or an object store without a
    safe one configured, before anything is written.
    """
    if isinstance(file_io, CommitSafeFileIO):
        return file_io
    atomicity = resolve(warehouse, options)
    if atomicity.mode == RENAME:
        if atomicity.scheme not in ("", "file", "hdfs", "viewfs"):
            log.warning(
                "commit.atomicity=rename on %s://: concurrent commits can be lost; only one writer may commit",
                atomicity.scheme,
            )
        return file_io
    # boto3 is needed by the first create-if-absent, not here: executors and readers
    # open tables through this too and must not require it.
    return CommitSafeFileIO(file_io, AtomicCreate(atomicity, options or {}))


def options_of(file_io: Any) -> dict[str, str]:
    """The catalog options a pypaimon file IO was made with (empty if unknown)."""
    props = getattr(file_io, "properties", None)
    if props is None:
        return {}
    to_map = getattr(props, "to_map", None)
    data = to_map() if callable(to_map) else props
    return {str(k): str(v) for k, v in dict(data).items()}


def create_if_absent(file_io: Any, path: str, text: str) -> bool:
    """Create ``path`` only if absent, safely on object storage, whatever ``file_io`` is.

    A file IO from a catalog we opened is already guarded; a bare pypaimon one (a table a
    user loaded with pypaimon directly) is guarded here from its own options, so the same
    ``commit.atomicity`` rules apply (and an unsafe store is refused).
    """
    if not isinstance(file_io, CommitSafeFileIO):
        guarded = _BARE.get(file_io)
        if guarded is None:
            guarded = guard(file_io, path, options_of(file_io))
            _BARE[file_io] = guarded
        file_io = guarded
    return bool(file_io.try_to_write_atomic(path, text))


# Guarded views of bare file IOs, so their boto3 client or lock engine is made once.
_BARE: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
