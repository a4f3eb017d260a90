"""Airflow's secrets masker hears every secret the package knows: the one place that arms it.

The package keeps one registry of secrets known by origin (``paimon/secrets.py``):
whoever reads a connection's password, a secret catalog option, an OpenLineage API key
registers the whole value there. ``arm_airflow_masker`` subscribes Airflow's
``mask_secret`` to that registry once per process, so each of those values is also
redacted from task logs, the rendered fields Airflow stores and the supervisor's
output. Every package of the Airflow layer (``hooks``, ``operators``, ``sensors``,
``triggers``) calls it from its ``__init__``, so importing any hook, operator, sensor
or trigger arms it; calling it again does nothing.

Arming also registers the secrets of Airflow's own OpenLineage transport
configuration (``[openlineage] transport``, ``OPENLINEAGE_URL`` / ``OPENLINEAGE_API_KEY``):
a task's log can carry a failed send's message that names the transport URL.

``register_value`` is how the Airflow layer registers a value whose origin makes it
secret (a connection extra, a secret-named option) but which may be a flag: booleans
and short numbers are left out, since masking every ``true`` or ``8`` in every log
would hide nothing and ruin the logs. Such values are still ``***`` wherever the
policy masks a mapping by its key.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from typing import Any

from airflow_provider_paimon.paimon.secrets import (
    on_secret_registered,
    register_secret,
    register_url_secrets,
    secret_values,
)

__all__ = ["arm_airflow_masker", "is_flag_value", "register_value", "register_values"]

_armed = False
_arm_lock = threading.Lock()
#: values that are settings, not credentials, whatever key holds them
_FLAG = re.compile(r"(?i)(true|false|yes|no|on|off|none|null|-?\d{1,7}(\.\d+)?)")


def _to_airflow(value: str) -> None:
    from airflow.sdk.log import mask_secret

    mask_secret(value)


def arm_airflow_masker() -> None:
    """Subscribe Airflow's ``mask_secret`` to the package's secret registry (once)."""
    global _armed
    with _arm_lock:
        if _armed:
            return
        _armed = True
    on_secret_registered(_to_airflow)
    register_openlineage_config_secrets()


def is_flag_value(value: Any) -> bool:
    """True for a boolean word or a short number: a setting, never worth masking everywhere."""
    return value is None or isinstance(value, bool) or bool(_FLAG.fullmatch(str(value).strip()))


def register_value(value: Any) -> None:
    """Register a value known secret by its origin, by its whole value (flags excepted),
    and the credentials inside it when it is a URL."""
    if value is None or is_flag_value(value):
        return
    register_secret(str(value))
    register_url_secrets(str(value))


def register_values(values: Iterable[Any]) -> None:
    """``register_value`` for each of ``values``."""
    for value in values:
        register_value(value)


def register_openlineage_config_secrets() -> None:
    """The secrets of Airflow's OpenLineage transport (API keys, URL passwords, headers)."""
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_ENDPOINT"):
        register_url_secrets(os.environ.get(name) or "")
    if os.environ.get("OPENLINEAGE_API_KEY"):
        register_value(os.environ["OPENLINEAGE_API_KEY"])
    try:
        from airflow.configuration import conf

        raw = conf.get("openlineage", "transport", fallback="") or ""
    except Exception:  # noqa: BLE001 - no Airflow configuration here: nothing to read
        return
    if not raw.strip():
        return
    try:
        transport = json.loads(raw)
    except ValueError:
        register_url_secrets(raw)  # not JSON: whatever credentials the second net sees
        return
    if isinstance(transport, dict):
        register_values(secret_values(transport))
