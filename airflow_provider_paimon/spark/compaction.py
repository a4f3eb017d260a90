"""Spark side of compaction: rewrite bins on executors.

The driver plans and commits (``airflow_provider_paimon.paimon.compaction``); this
module only fans the rewrite out. Each Spark task gets a few pickled bins, loads the
table once per Python worker through the same catalog options as the driver, reads
the bins' files with pypaimon and writes target-size files, and returns the new
``DataFileMeta`` pickled (a few KB each). The driver then commits one snapshot.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

from ..paimon.catalog import load_table, open_catalog
from ..paimon.compaction.plan import CompactionBin
from ..paimon.compaction.rewrite import FILE_SOURCE_COMPACT, rewrite_files
from .session_info import classic_context, default_parallelism, is_connect, set_job_description

# (warehouse, catalog options, "db.t", branch) -> table, per Python worker process
_TABLES: dict[tuple, Any] = {}


class SparkBinRewriter:
    """A ``BinRewriter`` that rewrites bins in parallel on Spark executors."""

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

    def __call__(self, bins: list[CompactionBin], target: int, prefix: str) -> list[list[Any]]:
        spec = self.spec
        return self.fan_out(
            bins, [b.total_bytes for b in bins], f"rewrite {len(bins)} bins of {spec[2]}",
            lambda slot: _rewrite_slot(spec, target, prefix, slot),
        )

    def fan_out(self, items: list[Any], sizes: list[int], what: str,
                work: Callable[[list[tuple[int, bytes]]], Iterator[tuple[int, bytes]]]) -> list[Any]:
        """Run ``work`` over pickled ``items`` in Spark tasks; the results in item order.

        Biggest items first, dealt round-robin, so tasks get similar amounts of work;
        ``work`` gets one task's ``(index, pickled item)`` list and yields
        ``(index, pickled result)``.
        """
        if not items:
            return []

        order = sorted(range(len(items)), key=lambda i: -sizes[i])
        tasks = min(len(items), self.max_tasks or max(1, default_parallelism(self.spark) * 2))
        slots: list[list[tuple[int, bytes]]] = [[] for _ in range(tasks)]
        for n, i in enumerate(order):
            slots[n % tasks].append((i, pickle.dumps(items[i])))
        set_job_description(self.spark, f"paimon compaction: {what}")
        if is_connect(self.spark):
            results = _fan_out_frames(self.spark, slots, work)
        else:
            results = classic_context(self.spark).parallelize(slots, tasks).flatMap(work).collect()
        by_index = {i: pickle.loads(payload) for i, payload in results}
        missing = [i for i in range(len(items)) if i not in by_index]
        if missing:
            raise RuntimeError(f"Spark returned no result for items {missing} ({what})")
        return [by_index[i] for i in range(len(items))]


def _fan_out_frames(
    spark: Any, slots: list[list[tuple[int, bytes]]],
    work: Callable[[list[tuple[int, bytes]]], Iterator[tuple[int, bytes]]],
) -> list[tuple[int, bytes]]:
    """The fan-out on a Spark Connect session, which has no RDDs: one DataFrame row per
    slot (its pickled items), one partition per row, ``work`` run by ``mapInArrow``."""
    import pyarrow as pa

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                out = list(work(pickle.loads(payload)))
                yield pa.RecordBatch.from_pydict(
                    {"index": [i for i, _ in out], "payload": [p for _, p in out]},
                    schema=pa.schema([("index", pa.int64()), ("payload", pa.binary())]),
                )

    frame = spark.createDataFrame([(pickle.dumps(slot),) for slot in slots], "slot binary")
    rows = frame.repartition(len(slots)).mapInArrow(run, "index long, payload binary").collect()
    return [(int(row["index"]), bytes(row["payload"])) for row in rows]


def _rewrite_slot(
    spec: tuple, target: int, prefix: str, slot: list[tuple[int, bytes]]
) -> Iterator[tuple[int, bytes]]:
    """Executor side: rewrite each bin of one task, yield (bin index, pickled metas)."""
    table = _table(spec)
    for index, payload in slot:
        b: CompactionBin = pickle.loads(payload)
        new_files = rewrite_files(
            table, b.partition, b.bucket, list(b.files), target, FILE_SOURCE_COMPACT, prefix
        )
        yield index, pickle.dumps(new_files)


def _table(spec: tuple) -> Any:
    table = _TABLES.get(spec)
    if table is None:
        warehouse, options, name, branch = spec
        table = load_table(open_catalog(warehouse, dict(options)), name, branch)
        _TABLES[spec] = table
    return table
