"""Fault injection for the multi-step branch operations.

Fast-forward and replace-main change several files. To prove that a kill between any
two of them leaves the table readable (as old or new main) and that a rerun finishes
the job, every step calls :func:`check` with a named point, e.g.
``"replace_main.after_switch"``. Tests arm one point:

* in-process: ``faults.set_fault("replace_main.after_switch")`` makes :func:`check`
  raise :class:`InjectedFault` there;
* in a subprocess: ``PAIMON_FAULT=replace_main.after_switch`` (read at each check) and
  ``PAIMON_FAULT_MODE=kill`` make the process SIGKILL itself at that point, the
  closest thing to a pulled plug that a test can produce.

Unarmed, :func:`check` is a variable test and an environment read, and it records
nothing: a long-running job passes these points forever, so a list of them would only
grow. Points are recorded while a fault is armed (in-process or through the
environment) or after :func:`record_points` (tests that enumerate the steps).
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "PAIMON_FAULT"
FAULT_MODE_ENV = "PAIMON_FAULT_MODE"

_armed: str | None = None
_recording = False
_seen: list[str] = []


class InjectedFault(RuntimeError):  # noqa: N818 - it is a test signal, not an error class
    """Raised at an armed fault point (deliberately not a PaimonError)."""


def set_fault(point: str | None) -> None:
    """Arm ``point`` (or disarm with ``None``) for this process."""
    global _armed
    _armed = point


def clear() -> None:
    """Disarm, stop recording and forget the points seen so far."""
    global _recording
    set_fault(None)
    _recording = False
    _seen.clear()


def record_points() -> None:
    """Record every point passed from now on, armed or not (until :func:`clear`)."""
    global _recording
    _recording = True


def seen_points() -> list[str]:
    """Points recorded since the last :func:`clear` (tests use it to enumerate steps)."""
    return list(_seen)


def check(point: str) -> None:
    """Fail here if ``point`` is armed; record it only when a test asked for that."""
    target = _armed or os.environ.get(FAULT_ENV)
    if target is None and not _recording:
        return
    _seen.append(point)
    if target != point:
        return
    if os.environ.get(FAULT_MODE_ENV) == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise InjectedFault(f"injected fault at {point}")
