"""The suite's on/off environment switches (``PAIMON_TEST_JVM_ARCHIVE``,
``PAIMON_TEST_WORKER_PRELOAD``, ``PAIMON_TEST_DAEMON_ZYGOTE``, ``PAIMON_MARKER_GUARD``), read one way: ``1`` is on, ``0``
is off, unset is the switch's default, and anything else stops the run with an error
naming the switch. A typo (``false``, ``off``, ``no``) must not quietly mean "on": flags
fail closed.
"""

from __future__ import annotations

import os

_VALUES = {"1": True, "0": False}


class SwitchError(ValueError):
    """An environment switch holds something other than 0 or 1."""


def switch(name: str, default: bool) -> bool:
    """``name``'s value as a bool (``default`` when unset); raises ``SwitchError`` for any
    value but ``0`` or ``1`` (surrounding blanks ignored)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return _VALUES[raw.strip()]
    except KeyError:
        raise SwitchError(
            f"{name}={raw!r} is not a switch value: set {name}=1 (on) or {name}=0 (off), "
            f"or unset it for the default ({'on' if default else 'off'})"
        ) from None
