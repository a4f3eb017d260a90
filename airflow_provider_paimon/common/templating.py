"""Whether an operator argument still holds a Jinja template: the one rule every operator uses.

Operators check literal arguments when the DAG is parsed (a mistake fails at once) and
templated ones after rendering, at execute. A value is templated when a string anywhere
in it (dict keys and values, list items) holds ``{{`` or ``{%``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_templated(value: Any) -> bool:
    """True when a Jinja template hides anywhere in ``value`` (checked again once rendered)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(is_templated(k) or is_templated(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_templated(v) for v in value)
    return False
