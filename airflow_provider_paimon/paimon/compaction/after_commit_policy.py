"""What compaction after a commit decides and says, for append and primary-key streams
alike (``after_commit`` runs append tables' streams, ``lsm.after_commit`` primary-key
tables'): the ``write-only`` rule, the decision a call returns, and the warning when it
fails after the commit has landed."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..option_values import parse_bool
from .options import _table_option_map
from .scan import table_name

# the warning keeps the logger it always had (log filters name it)
log = logging.getLogger("airflow_provider_paimon.paimon.compaction.after_commit")

WRITE_ONLY = "write-only"


@dataclass
class Decision:
    """What one call did (returned for tests and logs)."""

    # "off", "not-compactable", "busy", "nothing", "submitted", "refused"; primary keys
    # also "compacted" (the commit waited for it: first-row, full compaction)
    action: str
    bins: int = 0
    files: int = 0
    small_files: int = 0
    level0_files: int = 0  # primary-key tables: level-0 files after the decision


def write_only(table: Any, options: Mapping[str, Any] | None) -> bool:
    """``write-only`` from the query's options, else the table's (Paimon's rule)."""
    merged = {str(k).lower(): v for k, v in _table_option_map(table).items()}
    merged.update({str(k).lower(): v for k, v in dict(options or {}).items()})
    return parse_bool(merged.get(WRITE_ONLY), f"option {WRITE_ONLY!r}", False)


def warn_after_commit(table: Any, doing: str, err: BaseException) -> None:
    """The warning when compaction after a landed commit fails (the write stands)."""
    log.warning(
        "paimon: the commit to %s succeeded, but %s failed (%s: %s); the next commit tries "
        "again (set write-only=true and schedule CompactionOperator to compact it separately)",
        table_name(table), doing, type(err).__name__, err,
    )
