"""Schema changes on main or on a branch (``alter_table``), validated as a whole first.

No Spark or Airflow here: the operator and the Spark writer call into this package.
"""

from __future__ import annotations

from .alter import alter_table, check_alter
from .changes import OPS, Change, SchemaChangeError, parse_changes
from .widening import is_widening

__all__ = ["OPS", "Change", "SchemaChangeError", "alter_table", "check_alter", "is_widening", "parse_changes"]
