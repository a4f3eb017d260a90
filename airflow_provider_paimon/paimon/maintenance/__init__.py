"""Table maintenance: snapshot expiry, orphan-file cleanup, rollback and tag expiry,
safe for every branch.

All take a pypaimon table (see ``paimon.catalog.load_table``), import neither Spark
nor Airflow, and return a result dict. The rule they share (DESIGN.md "What a table
still needs"): a file is deleted only when no retained snapshot and no tag of any
branch, and no pending branch operation, still needs it.
"""

from __future__ import annotations

from .expire import expire_snapshots
from .orphans import remove_orphan_files
from .rollback import rollback
from .tags import expire_tags

__all__ = ["expire_snapshots", "expire_tags", "remove_orphan_files", "rollback"]
