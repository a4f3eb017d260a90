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
from .compaction import _table


class SparkUnitRewriter:
    """A ``UnitRewriter`` that merges the units in parallel on Spark executors."""

    def __init__(
        self,
        spark: Any,
        warehouse: str,
        table: str,
        branch: str | None = None,
        catalog_options: dict[str, str] | None = None,
        max_tasks: int | None = None,
    ) -> None:
        self.spark = spark
        self.spec = (warehouse, tuple(sorted((catalog_options or {}).items())), table, branch)
        self.max_tasks = max_tasks

    def __call__(self, units: list[LsmUnit], target: int, prefix: str) -> list[list[Any]]:
        if not units:
            return []
        sc = self.spark.sparkContext
        order = sorted(range(len(units)), key=lambda i: -sum(f.file_size for f in units[i].files))
        tasks = min(len(units), self.max_tasks or max(1, sc.defaultParallelism * 2))
        slots: list[list[tuple[int, bytes]]] = [[] for _ in range(tasks)]
        for n, i in enumerate(order):
            slots[n % tasks].append((i, pickle.dumps(units[i])))
        spec = self.spec
        sc.setJobDescription(f"paimon compaction: merge {len(units)} buckets of {spec[2]}")
        results = (
            sc.parallelize(slots, tasks)
            .flatMap(lambda slot: _merge_slot(spec, target, prefix, slot))
            .collect()
        )
        by_index = {i: pickle.loads(payload) for i, payload in results}
        missing = [i for i in range(len(units)) if i not in by_index]
        if missing:
            raise RuntimeError(f"Spark returned no result for units {missing}")
        return [by_index[i] for i in range(len(units))]


def _merge_slot(spec: tuple, target: int, prefix: str, slot: list[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """Executor side: merge each unit of one task, yield (unit index, pickled metas)."""
    table = _table(spec)
    for index, payload in slot:
        u: LsmUnit = pickle.loads(payload)
        new_files = rewrite_unit(table, u.partition, u.bucket, list(u.files), u.output_level,
                                 u.drop_delete, target, prefix, list(u.older_files))
        yield index, pickle.dumps(new_files)
