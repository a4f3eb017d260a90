"""Run the ``paimon`` data source's write tasks over a DataFrame without the sink API.

Callers that commit themselves (``foreach_batch_writer`` on tables ``write_table``
cannot write, ``delete_rows``, ``write_changes``) need the data source's task code
(``PaimonWriter.write``: type conversion, row-kind checks, pypaimon's writer for
buckets and primary keys) and then the driver-side commit of their choice. Spark's
``mapInArrow`` runs one task per partition of the DataFrame; each returns its pickled
``TaskCommit`` (a few KB), and nothing is committed here.

If the Spark job fails, the files of tasks that did finish are deleted (the data
source's ``abort``: their messages are not known to the driver, so it sweeps the
write's file prefix); a failed task deletes its own files before it fails.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .writer import PaimonWriter, TaskCommit

_COLUMN = "task_commit"


def run_write_tasks(df: Any, writer: PaimonWriter) -> list[TaskCommit]:
    """``writer.write`` on every partition of ``df``; the tasks' commits (nothing committed)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        done = writer.write(batches)
        yield pa.RecordBatch.from_pydict({_COLUMN: [pickle.dumps(done)]})

    try:
        rows = df.mapInArrow(task, f"{_COLUMN} binary").collect()
    except BaseException:
        writer.abort([])  # sweeps the files of tasks that finished before the failure
        raise
    return [pickle.loads(row[_COLUMN]) for row in rows]
