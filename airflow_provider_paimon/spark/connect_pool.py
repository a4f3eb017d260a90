"""Reuse Spark Connect server sessions across the jobs one host runs, one job at a time.

Why: each new Connect session gets its own Python workers on the server (its artifacts
are session-scoped), and a new worker costs seconds of imports: the first ``paimon``
write of a new session took 9-36 s where a second write in the same session took
0.6-1.0 s (docs/connect.md, Figures). Attaching each task to a server session that an
earlier task left warm takes that cost once per session instead of once per task.

How, safely:

* **Slots.** A pool is a folder of slots on this host (per OS user, connection, server
  and server-side user: ``SessionPool.key``). A job leases one slot with an exclusive
  ``flock`` for its whole length, so no two jobs use one server session at once; the OS
  drops the lock of a process that dies, even by SIGKILL. When every slot is taken the
  job gets a fresh session of its own (released at its end), as without a pool.
* **Session id.** Each slot's state file (beside its lock) holds the server session id
  (a random uuid4), the server's own id of that session (a new one when the server
  restarted and made a new session of the old id) and a generation. A new id (and
  generation) is taken when the server says the old one is closed or expired
  (``INVALID_HANDLE.SESSION_*``: the lease start probes it, and tries once more on the
  new id), when the server restarted, when the previous holder did not end its lease
  (it was killed: its session is released, which also interrupts whatever it left
  running), when the shipped package changed (the server refuses a changed artifact
  under the same name, and an old zip would stay on the workers' path), or when
  cleaning up after a job failed.
* **No state leaks to the next job.** Each lease reads the session's conf and current
  database when it starts (the snapshot, kept in this process's memory only: the
  server's conf may hold secrets). At the end of each lease, success or failure, the
  job's streaming queries still active are stopped (as releasing its own session did),
  every conf key the job changed, removed or added is set back or unset, temporary
  views are dropped and the current database restored; a job that failed first has its
  running operations interrupted. A lease that does not reach its end (the process is
  killed) leaves its slot marked in use, and the next lease replaces that session, so
  the snapshot needs to outlive no process. What cannot be undone through the client
  (functions or data sources a user's job registered, the server's shared table cache)
  is documented: opt out (``session_reuse: false``) for isolation. The ``paimon``
  source is registered anew by each job with its own conf
  (``session.remote_job_session``), and what this process keeps per session (a Connect
  lineage capture) is dropped when the lease ends.

The URL may carry a token: it is never logged nor written here; the state files hold
only session ids, a generation and the package's name (no conf value). Imports no Airflow.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_paimon.packaging import build_py_files_zip
from airflow_provider_paimon.paimon.errors import InvalidArgumentError

from .lineage import connect_state
from .registration import forget_published
from .session_info import connect_mode

__all__ = [
    "DEFAULT_POOL_SIZE",
    "MAX_POOL_SIZE",
    "STATE_DIR_ENV",
    "Lease",
    "SessionPool",
    "is_session_gone",
    "leased_session",
    "parse_pool_settings",
    "with_session_id",
]

log = logging.getLogger(__name__)

#: slots per (host, OS user, connection, server, server-side user) when the connection
#: does not say (``session_pool_size``): each one holds its Python workers on the server
DEFAULT_POOL_SIZE = 4
MAX_POOL_SIZE = 64
#: where the slots' lock and state files live (default: the temp dir, per OS user)
STATE_DIR_ENV = "PAIMON_CONNECT_SESSION_DIR"
#: what the server says of a session id it has released, timed out or never had
_GONE_CONDITIONS = ("INVALID_HANDLE.SESSION_CLOSED", "INVALID_HANDLE.SESSION_NOT_FOUND",
                    "INVALID_HANDLE.SESSION_CHANGED")


@dataclass(frozen=True)
class SessionPool:
    """The server sessions one kind of job on this host may share.

    ``key`` names what the sessions belong to (connection id, server, server-side user:
    never a token); sessions of different keys are never shared.
    """

    key: str
    size: int = DEFAULT_POOL_SIZE
    directory: str | None = None

    def folder(self) -> Path:
        root = Path(self.directory or os.environ.get(STATE_DIR_ENV) or
                    Path(tempfile.gettempdir()) / f"paimon-connect-sessions-{os.getuid()}")
        digest = hashlib.sha256(self.key.encode()).hexdigest()[:32]
        folder = root / digest
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folder


@dataclass
class Lease:
    """One job's use of a server session."""

    session: Any
    #: the slot leased, or None: every slot was taken, the session is the job's own
    slot: int | None
    generation: int = 0
    #: whether the server session served an earlier job (its Python workers are warm)
    reused: bool = False
    #: the session's conf and current database when the lease started (what its end
    #: puts back); in memory only
    snapshot: dict[str, Any] = field(default_factory=dict)


def parse_pool_settings(extra: dict[str, Any], pool_key: str) -> SessionPool | None:
    """The pool a connection's extra asks for, or None (``session_reuse: false``).

    ``session_reuse`` is true by default and takes a boolean (or "true"/"false");
    ``session_pool_size`` an integer 1..64. Anything else is refused, naming the key:
    a flag that is not understood does not silently choose either way.
    """
    reuse = extra.get("session_reuse", True)
    if isinstance(reuse, str) and reuse.strip().lower() in ("true", "false"):
        reuse = reuse.strip().lower() == "true"
    if not isinstance(reuse, bool):
        raise InvalidArgumentError(
            f"the spark_connect connection's extra session_reuse is {reuse!r}: give true (share warm "
            "server sessions between tasks, the default) or false (a new session per task)")
    size_raw = extra.get("session_pool_size", DEFAULT_POOL_SIZE)
    size: int | None = None
    if isinstance(size_raw, int) and not isinstance(size_raw, bool):
        size = size_raw
    elif isinstance(size_raw, str) and size_raw.strip().isdigit():
        size = int(size_raw.strip())
    if size is None or not 1 <= size <= MAX_POOL_SIZE:
        raise InvalidArgumentError(
            f"the spark_connect connection's extra session_pool_size is {size_raw!r}: give a whole "
            f"number from 1 to {MAX_POOL_SIZE} (server sessions kept per Airflow worker host; "
            f"default {DEFAULT_POOL_SIZE})")
    return SessionPool(pool_key, size) if reuse else None


def with_session_id(url: str, session_id: str) -> str:
    """``url`` (``sc://host:port[/;params]``) attached to the server session ``session_id``."""
    base, sep, params = url.partition("/;")
    if any(p.split("=", 1)[0].strip() == "session_id" for p in params.split(";")):
        raise InvalidArgumentError("the Spark Connect URL already names a session_id: a pooled "
                                   "session cannot be chosen for it (set session_reuse to false)")
    if sep:
        return f"{base}/;{params};session_id={session_id}"
    return f"{url.rstrip('/')}/;session_id={session_id}"


def is_session_gone(err: BaseException) -> bool:
    """Whether ``err`` is the server saying the session id is released or timed out."""
    condition = ""
    for getter in ("getCondition", "getErrorClass"):
        with contextlib.suppress(Exception):
            condition = str(getattr(err, getter)() or "")
            if condition:
                break
    text = condition or str(err)
    return any(c in text for c in _GONE_CONDITIONS)


@contextlib.contextmanager
def leased_session(url: str, pool: SessionPool) -> Iterator[Lease]:
    """A clean Connect session for one job: a pooled server session if a slot is free.

    The session's state when the block starts is put back when it ends (see the module
    doc); the server session stays for the next job. The caller registers the data
    source and sets the job's conf.
    """
    folder = pool.folder()
    slot, fd = _take_slot(folder, pool.size)
    if fd is None:
        log.info("Spark Connect: all %d pooled sessions of this host are in use; this task uses a "
                 "new session of its own", pool.size)
        session = _attach(url, None)
        try:
            yield Lease(session=session, slot=None)
        finally:
            _stop(session, release=True)
        return
    state_path = folder / f"slot-{slot}.json"
    try:
        lease = _begin(url, state_path, slot)
        failed = False
        try:
            yield lease
        except BaseException:
            failed = True
            raise
        finally:
            _end(url, lease, state_path, failed)
    finally:
        os.close(fd)  # drops the lock


def _take_slot(folder: Path, size: int) -> tuple[int, int | None]:
    """(slot, its locked file descriptor), or (-1, None) when every slot is taken."""
    for slot in range(size):
        fd = os.open(folder / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                continue
            raise
        return slot, fd
    return -1, None


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    """Replace the slot's state file whole (a killed writer leaves the old one)."""
    fd, tmp = tempfile.mkstemp(prefix=".slot-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(state, out)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _package_name() -> str:
    """The zip ``register`` ships (its name carries the version and a content hash)."""
    return os.path.basename(build_py_files_zip())


_KILLED = "the previous task on it did not end its lease (killed)"
_PACKAGE_CHANGED = "the package changed"


def _begin(url: str, state_path: Path, slot: int) -> Lease:
    """Attach to the slot's server session (a new one when it cannot be reused)."""
    state = _read_state(state_path)
    package = _package_name()
    why_new = None
    if not state.get("session_id"):
        why_new = "first use of this slot"
    elif state.get("in_use"):
        why_new = _KILLED
    elif state.get("package") != package:
        why_new = _PACKAGE_CHANGED
    if why_new is None:
        session = _attach(url, str(state["session_id"]))
        try:
            snapshot = _snapshot(session)  # the probe: the first call to the server
        except Exception as err:
            _stop(session, release=False)
            if not is_session_gone(err):
                raise
            why_new = "the server closed it (released or idle past its timeout)"
        else:
            if _server_side_id(session) != state.get("server_session"):
                # a restarted server made a new session of the old id (cold, unshipped)
                _stop(session, release=True)
                why_new = "the server restarted"
            else:
                lease = Lease(session, slot, int(state.get("generation", 0)), True, snapshot)
    if why_new is not None:
        if state.get("session_id") and why_new in (_KILLED, _PACKAGE_CHANGED):
            _retire(url, str(state["session_id"]))
        generation = int(state.get("generation", 0)) + 1
        session = _attach(url, str(uuid.uuid4()))
        lease = Lease(session, slot, generation, False, _snapshot(session))
        log.info("Spark Connect: new pooled session for slot %d (generation %d): %s", slot, generation, why_new)
    else:
        log.info("Spark Connect: reusing pooled session %s (slot %d, generation %d)",
                 lease.session.session_id, slot, lease.generation)
    _write_state(state_path, {"session_id": lease.session.session_id, "generation": lease.generation,
                              "server_session": _server_side_id(lease.session), "package": package,
                              "in_use": True})
    return lease


def _end(url: str, lease: Lease, state_path: Path, failed: bool) -> None:
    """Put the session back as the lease found it; retire it when that cannot be done."""
    session = lease.session
    session_id = str(session.session_id)
    _forget_in_process(session)
    if session.is_stopped:  # the job stopped it: its server session is still there
        session = _attach(url, session_id)
    try:
        # nothing the job started goes on in the session: a new session per task ended
        # its streaming queries and operations when it was released, so does a lease
        for query in session.streams.active:
            query.stop()
        if failed:
            session.interruptAll()
        _restore(session, lease.snapshot)
        keep = True
    except Exception as err:  # noqa: BLE001 - the job's outcome stands; the next task starts anew
        log.warning("Spark Connect: cleaning pooled session %s failed (%s); the next task gets a new one",
                    session_id, type(err).__name__)
        keep = False
    state = _read_state(state_path)
    if keep:
        state["in_use"] = False
        _write_state(state_path, state)
        _stop(session, release=False)
    else:
        _stop(session, release=True)
        _write_state(state_path, {"generation": lease.generation})


def _forget_in_process(session: Any) -> None:
    """Drop what this process keeps per server session for the job that ends (its
    lineage capture, its logged redirects): the next job on the session, maybe in this
    same process (``dag.test()``), starts its own. The shipped package stays: the
    server session keeps it."""
    connect_state.drop_capture(session)
    forget_published(session)


def _snapshot(session: Any) -> dict[str, Any]:
    """The session's conf and current database: what the lease's end puts back.

    Kept in memory for the lease only, never written: the server's conf may hold
    secrets (storage keys), which have no business in a file on this host.
    """
    return {"conf": _conf(session), "database": str(session.catalog.currentDatabase())}


def _server_side_id(session: Any) -> str | None:
    """The server's own id of the session (a restarted server gives the same client-side
    id a new one); None when the client does not expose it."""
    value = getattr(getattr(session, "client", None), "_server_session_id", None)
    return str(value) if value else None


def _conf(session: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in session.conf.getAll.items()}


def _restore(session: Any, snapshot: dict[str, Any]) -> None:
    """Conf keys set back or unset, temporary views dropped, current database restored."""
    wanted: dict[str, str] = dict(snapshot.get("conf") or {})
    now = _conf(session)
    for key in sorted(now.keys() - wanted.keys()):
        session.conf.unset(key)
    for key in sorted(k for k, v in wanted.items() if now.get(k) != v):
        session.conf.set(key, wanted[key])  # a key that cannot be set back: the session is retired
    for row in session.sql("SHOW VIEWS").collect():
        if row["isTemporary"] and not row["namespace"]:
            session.catalog.dropTempView(row["viewName"])
    database = snapshot.get("database")
    if database and session.catalog.currentDatabase() != database:
        session.catalog.setCurrentDatabase(database)


def _attach(url: str, session_id: str | None) -> Any:
    """A Connect client on ``url``, attached to ``session_id`` (None: a new session).

    A pooled session is never released when the client stops (``release_session_on_close``
    off), so neither this module's stop nor a job's own ``spark.stop()`` ends it.
    """
    from pyspark.sql.connect.session import SparkSession

    with connect_mode(True):
        session = SparkSession.builder.remote(url if session_id is None else with_session_id(url, session_id)).create()
    if session_id is not None:
        session.release_session_on_close = False
    return session


def _stop(session: Any, release: bool) -> None:
    session.release_session_on_close = release
    try:
        session.stop()
    except Exception as err:  # noqa: BLE001 - best effort, as pyspark's own stop
        log.warning("Spark Connect: stopping a session failed: %s", type(err).__name__)


def _retire(url: str, session_id: str) -> None:
    """Release a pooled server session (interrupts what runs in it); best effort."""
    try:
        session = _attach(url, session_id)
        with contextlib.suppress(Exception):
            session.interruptAll()
        _stop(session, release=True)
    except Exception as err:  # noqa: BLE001 - it times out on the server anyway
        log.warning("Spark Connect: releasing an old pooled session failed: %s", type(err).__name__)
