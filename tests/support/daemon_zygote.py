"""Test-only: the suite's PySpark Python processes forked from one preloaded process.

Why: every JVM the suite starts (a spark-submit, a streaming job that a fault kills, a
short session, the shared Spark Connect server's sessions) starts its own Python
processes, one daemon per kind of work (creating the source, planning, writing,
committing, the tasks, the streaming sink) plus plain workers (the streaming source),
and the first worker of each kind imports pyarrow, pandas, polars and pypaimon: ~2-3
CPU-s per kind, ~15 of the ~28 CPU-s a fresh JVM that writes and reads a table cost
(2026-11-27 profile). Preloading those libraries in the daemon (``spark/worker_preload.py``)
pays only in a long-lived session: a short JVM's daemon forks one worker. This module
imports them ONCE per test run, in a process (the zygote) that forks every such Python
process instead. ``benchmarks/daemon_zygote.py`` measures it on a short job.

How: the suite's ``sitecustomize`` (``worker_preload_env``; the Connect server's own,
after it hid the package) calls ``handoff_if_spark`` in every Python process it starts.
A process started as exactly ``python -m pyspark.<module> ...`` (or the preload daemon
module) sends its stdin/stdout/stderr, environment, working folder, ``sys.path``, import
finders and arguments to the zygote over a Unix socket; the zygote forks a child that
takes them over and runs the same module as ``__main__``: pyspark's own code (the
daemon's manager, the worker's main), only with the imports already done. The process
Spark started stays as a stand-in: it forwards SIGTERM/SIGINT/SIGHUP to the child and
ends as the child ended (its exit code, or killed by the same signal: the zygote, its
parent, reports it), so Spark sees its Python process behave as before (its stdout
carries the daemon's port; closing its stdin stops the daemon; killing the job's process
group leaves the daemon to stop on stdin's end, as it does without the zygote since
pyspark's daemon runs in a group of its own).

Refused (the process then starts as it would have, and says nothing): interpreter
flags, another Python installation (``sys.prefix``), another hash seed
(``PYTHONHASHSEED``), a zygote that is gone. The child joins the stand-in's cgroups, so
per-test CPU (cpu_accounting) and any memory limit still count it where Spark started
it. The zygote logs each child and refusal to ``zygote.log`` beside the suite's site
folder.

``PAIMON_TEST_DAEMON_ZYGOTE=0`` runs the suite without it (so does
``PAIMON_TEST_WORKER_PRELOAD=0``: no site folder, no ``sitecustomize`` to hand over). This file is copied next to
the preload module (``paimon_test_zygote``) and runs as the zygote's script: the
standard library only at the top, nothing of the package.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys

#: the zygote's socket; set in the environment the suite's processes inherit
SOCKET_ENV = "PAIMON_TEST_DAEMON_ZYGOTE_SOCKET"
#: the module the suite's sessions name as ``spark.python.daemon.module``
PRELOAD_DAEMON_MODULE = "paimon_worker_preload"
#: what the zygote imports beyond the preload module's default list: every pyspark module
#: Spark 4.3 runs as ``python -m`` for the ``paimon`` source (daemons and plain workers)
EXTRA_MODULES = (
    "pyspark.daemon",
    "pyspark.sql.worker.lookup_data_sources",
    "pyspark.sql.worker.data_source_pushdown_filters",
    "pyspark.sql.worker.python_streaming_sink_runner",
    "pyspark.sql.streaming.python_streaming_source_runner",
)
_HEADER = struct.Struct("!I")
#: seconds either side waits for the other during a handoff (the zygote answers in ms)
HANDSHAKE_TIMEOUT = 60.0


def _served_args(cmdline: list[str]) -> list[str] | None:
    """What follows ``-m`` in ``python -m MODULE ...`` when the zygote serves MODULE, else None."""
    if cmdline[1:2] != ["-m"]:  # ``python -m ...`` exactly: no interpreter flags to carry over
        return None
    args = cmdline[2:]
    if args and (args[0].startswith("pyspark.") or args[0] == PRELOAD_DAEMON_MODULE):
        return args
    return None


def _finder_name(finder: object) -> str:
    """A ``sys.meta_path`` entry by name (finders are classes or instances)."""
    kind = finder if isinstance(finder, type) else type(finder)
    return f"{kind.__module__}.{kind.__qualname__}"


def _send(sock: socket.socket, payload: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(payload).encode()
    if fds:
        socket.send_fds(sock, [_HEADER.pack(len(data))], fds)
    else:
        sock.sendall(_HEADER.pack(len(data)))
    sock.sendall(data)


def _receive(sock: socket.socket, with_fds: int = 0) -> tuple[dict, list[int]]:
    fds: list[int] = []
    if with_fds:
        head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, with_fds)
    else:
        head = sock.recv(_HEADER.size, socket.MSG_WAITALL)
    if len(head) != _HEADER.size:
        raise EOFError("the other side closed the connection")
    (size,) = _HEADER.unpack(head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the other side closed the connection")
        data += chunk
    return json.loads(data), fds


# --- the stand-in: the process Spark started -------------------------------------------


def handoff_if_spark() -> None:
    """In a ``python -m pyspark.*`` process of the suite: let the zygote run it and exit
    with its code (never returns then). Anywhere else, or when refused, returns at once."""
    path = os.environ.get(SOCKET_ENV)
    args = _served_args(list(getattr(sys, "orig_argv", []))) if path else None
    if not args:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        sock.connect(path)
        request = {"prefix": sys.prefix, "env": dict(os.environ), "cwd": os.getcwd(),
                   "path": sys.path, "args": args, "stand_in": os.getpid(),
                   "safe_path": bool(getattr(sys.flags, "safe_path", False)),
                   "meta_path": [_finder_name(f) for f in sys.meta_path]}
        _send(sock, request, [0, 1, 2])
    except (OSError, ValueError):
        sock.close()
        return  # no zygote (any more): start as usual
    try:
        reply, _ = _receive(sock)
    except (OSError, EOFError, ValueError) as err:
        # the zygote had the request and may have started the child: running the module
        # here as well would put two daemons on Spark's pipes, so this process fails
        print(f"daemon zygote: no answer from {path} ({err}); not starting", file=sys.stderr, flush=True)
        os._exit(1)
    if "pid" not in reply:
        sock.close()
        return  # refused: it started nothing
    sock.settimeout(None)
    _stand_in(sock, int(reply["pid"]))


def _stand_in(sock: socket.socket, pid: int) -> None:
    """Forward signals to the child ``pid``; end as it ended (its exit code, or killed by
    the same signal), which the zygote, its parent, reports."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda n, _f: _forward(pid, n))
    for fd in (0, 1, 2):  # the child has them: Spark's pipes close when IT ends
        with contextlib.suppress(OSError):
            os.close(fd)
    try:  # a signal's handler runs and the read resumes (PEP 475)
        code = int(_receive(sock)[0]["exit"])
    except (OSError, EOFError, ValueError):  # the zygote is gone: wait for the child itself
        _wait_for(pid)
        os._exit(1)
    if code < 0:  # killed by a signal: so is this process
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's handler cannot be set (nor needs to)
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def _wait_for(pid: int) -> None:
    with contextlib.suppress(OSError):
        pidfd = os.pidfd_open(pid)
        select.select([pidfd], [], [])


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


# --- the zygote ------------------------------------------------------------------------


def serve(path: str) -> None:
    """Preload, listen on ``path``, fork a child per request; stop when stdin closes."""
    import paimon_worker_preload

    global _PRELOADED_ONLY
    names = paimon_worker_preload.modules_to_preload("pyspark.worker") + list(EXTRA_MODULES)
    before = _modules_with_parents(names)
    failed = paimon_worker_preload.preload(names)  # then gc.freeze()
    _PRELOADED_ONLY = frozenset(sys.modules) - before
    _log(f"imported {len(names) - len(failed)} modules" + (f", skipped {sorted(failed)}" if failed else ""))
    wake_read, wake_write = os.pipe()  # SIGCHLD wakes the loop through it
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda _n, _f: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    _log(f"listening on {path}")
    children: dict[int, socket.socket] = {}  # pid -> its stand-in's connection
    while True:
        ready, _, _ = select.select([listener, sys.stdin, wake_read], [], [])
        if wake_read in ready:
            with contextlib.suppress(OSError):
                os.read(wake_read, 4096)
        _report_exits(children)
        if sys.stdin in ready:  # the suite ended
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            return
        if listener in ready:
            conn, _ = listener.accept()
            conn.settimeout(HANDSHAKE_TIMEOUT)  # one stalled client must not hold up the others
            pid = None
            with contextlib.suppress(OSError, EOFError, ValueError):
                pid = _serve_one(conn, listener, [wake_read, wake_write, *children.values()])
            if pid is None:
                conn.close()
            else:
                children[pid] = conn


def _report_exits(children: dict[int, socket.socket]) -> None:
    """Tell the stand-in of every child that ended how it ended (exit code, or minus the
    signal that killed it, as ``subprocess`` reports it)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):
                _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
            conn.close()


#: modules in ``sys.modules`` only because the zygote preloaded them (not because their
#: parent packages import them): a child runs such a module as ``__main__`` from scratch
_PRELOADED_ONLY: frozenset[str] = frozenset()


def _modules_with_parents(names: list[str]) -> frozenset[str]:
    """``sys.modules`` after importing the parent packages of ``names``: what a plain
    ``python -m`` of one of them has loaded before it runs the module."""
    for name in names:
        with contextlib.suppress(Exception):
            if "." in name:
                __import__(name.rpartition(".")[0])
    return frozenset(sys.modules)


def _log(line: str) -> None:
    """One line on the zygote's stderr (``zygote.log`` in the suite)."""
    print(f"zygote: {line}", file=sys.stderr, flush=True)


def _refusal(request: dict) -> str | None:
    if request.get("prefix") != sys.prefix:
        return "another Python installation"
    seed = request.get("env", {}).get("PYTHONHASHSEED")
    if seed is not None and seed != os.environ.get("PYTHONHASHSEED"):
        return "another hash seed"
    return None


def _serve_one(conn: socket.socket, listener: socket.socket, zygote_only: list) -> int | None:
    """Answer one request: the pid of the child that runs it, or None (refused).
    ``zygote_only``: descriptors and sockets the child must not keep."""
    request, fds = _receive(conn, with_fds=3)
    try:
        reason = _refusal(request) if len(fds) == 3 else "no standard streams"
        if reason:
            _log(f"refused python -m {' '.join(request.get('args', []))} (stand-in {request.get('stand_in')}): {reason}")
            _send(conn, {"refused": reason})
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener.close()
            conn.close()
            for item in zygote_only:
                with contextlib.suppress(OSError):
                    item.close() if isinstance(item, socket.socket) else os.close(item)
            _become(request, fds)  # never returns
        _log(f"pid {pid} runs python -m {' '.join(request['args'])} (stand-in {request['stand_in']})")
        _send(conn, {"pid": pid})
        return pid
    finally:
        for fd in fds:
            os.close(fd)


def exit_status(exc: SystemExit) -> int:
    """The status a process ends with when ``exc`` leaves its main module, as Python's
    own: None is 0, an int is itself, anything else is printed to stderr and is 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _become(request: dict, fds: list[int]) -> None:
    """In the forked child: take over the stand-in's streams, environment and cgroups,
    then run its module as ``__main__`` and exit with its code."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # a process group of its own (pyspark's daemon makes one anyway): a worker that
        # kills its own group (the streaming fault does) must not take the zygote with it
        os.setpgid(0, 0)
        _join_cgroups(int(request["stand_in"]))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        # ``python -m`` puts the working folder first on the path after site ran
        sys.path[:] = request["path"] if request.get("safe_path") else [request["cwd"], *request["path"]]
        # finders the stand-in's startup dropped (the Connect server's workers hide the
        # package's editable install: they must import what the client ships)
        kept = set(request.get("meta_path", []))
        sys.meta_path[:] = [f for f in sys.meta_path if _finder_name(f) in kept]
        module, *rest = request["args"]
        import runpy

        if module in _PRELOADED_ONLY:
            del sys.modules[module]  # as in a plain ``-m``: the module runs only as __main__
        sys.argv = [module, *rest]
        code = 0
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exit_status(exc)
    except BaseException:  # noqa: BLE001 - report, as Python would, then exit with 1
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _join_cgroups(stand_in: int) -> None:
    """Move this process into the stand-in's cgroups (v1 hierarchies under
    /sys/fs/cgroup, where writable): its CPU and memory count where Spark started it."""
    with contextlib.suppress(OSError), open(f"/proc/{stand_in}/cgroup") as lines:
        for line in lines:
            _, controllers, group = line.rstrip("\n").split(":", 2)
            for controller in filter(None, controllers.split(",")):
                procs = os.path.join("/sys/fs/cgroup", controller, group.lstrip("/"), "cgroup.procs")
                with contextlib.suppress(OSError), open(procs, "w") as out:
                    out.write(str(os.getpid()))


if __name__ == "__main__":
    serve(sys.argv[1])
