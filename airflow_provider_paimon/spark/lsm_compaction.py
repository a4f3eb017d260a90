"""Spark side of primary-key compaction: merge each bucket's unit on an executor.

The driver plans and commits (``airflow_provider_paimon.paimon.lsm.compact``); this
module only fans the merge out, as ``spark.compaction`` does for the append
compaction's bins: each task gets a few pickled units (biggest first, dealt round
robin), loads the table once per Python worker, merges each unit's files
(``paimon.lsm.rewrite.rewrite_unit``) and returns the new ``DataFileMeta`` pickled.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from ..paimon.lsm.compact import LsmUnit
from ..paimon.lsm.rewrite import rewrite_unit
from .compaction import SparkBinRewriter, _table


class SparkUnitRewriter(SparkBinRewriter):
    """A ``UnitRewriter`` that merges the units in parallel on Spark executors."""

    def __call__(self, units: list[LsmUnit], target: int, prefix: str) -> list[list[Any]]:  # type: ignore[override]
        spec = self.spec
        return self.fan_out(
            units, [sum(f.file_size for f in u.files) for u in units],
            f"merge {len(units)} buckets of {spec[2]}",
            lambda slot: _merge_slot(spec, target, prefix, slot),
        )


def _merge_slot(spec: tuple, target: int, prefix: str, slot: list[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """Executor side: merge each unit of one task, yield (unit index, pickled metas)."""
    table = _table(spec)
    for index, payload in slot:
        u: LsmUnit = pickle.loads(payload)
        new_files = rewrite_unit(table, u.partition, u.bucket, list(u.files), u.output_level,
                                 u.drop_delete, target, prefix, list(u.older_files), u.changelog)
        yield index, pickle.dumps(new_files)
