"""Exactly-once streaming with ``write_table``'s files: a ``foreachBatch`` function.

``df.writeStream.foreachBatch(foreach_batch_writer("db.t", warehouse=..., checkpoint_location=...))``
writes each micro-batch with Spark's Parquet writer (``write.write_files``) and
commits it through the ``paimon`` streaming sink's own commit
(``PaimonStreamWriter.commit``), so the guarantees are the sink's, not a copy of them:

- the commit user is kept under ``checkpoint_location`` (``paimon-sink/sink.json``,
  shared with nothing else) and the commit identifier is the micro-batch id, so a
  batch Spark replays after a crash is recognised as committed and not committed
  again (it is not even written: the check runs before Spark writes a file);
- the batch's files are listed in ``paimon-sink/pending-<batch>`` before the commit,
  so files of an attempt killed before its commit are deleted when the batch is
  replayed;
- a ``spark.paimon.branch.<db>.<table>`` redirect in the query's session conf picks
  the branch, as for the sink;
- ``precommit-compact``, the lineage store check and the commit event per batch
  (``StreamCommitEvent`` with the batch id, which lineage capture pairs with the
  query's progress) are the sink's;
- so is what follows each commit: the table's snapshot expiry and the stream's own
  background compaction (``paimon.compaction.after_commit``: COMPACT snapshots under
  ``<commit user>-compact``, job records in ``paimon-sink/compact-pending-*.json`` so a
  killed job's files are cleaned up on restart; the worker thread runs in this
  driver). ``options`` override the table's (``compaction.min.file-num``, ...);
  ``write-only=true`` turns both off.

``checkpoint_location`` should be the query's own ``checkpointLocation`` (the state
goes in its ``paimon-sink/`` folder, as the sink's does); it must not change while the
query keeps its checkpoint. Append only: the sink's rules (``outputMode('append')``).

Tables ``write_table`` cannot write (primary keys, fixed buckets, ...) are written by
the ``paimon`` data source's own write tasks (``datasource.task_write``) and committed
the same way, so a CDC stream into a primary-key table (row kinds through its
``rowkind.field``) keeps the same exactly-once guarantees.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.paimon.commit_properties import commit_properties
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.session_info import app_id

from ..connect_carry import carried
from ..datasource.streaming_writer import create_stream_writer, last_committed_snapshot
from ..datasource.task_write import run_write_tasks
from ..session_info import CONNECT_MODE_ENV
from .write import routed_events, unsupported_reason, write_files, write_options

log = logging.getLogger(__name__)


class ForeachBatchWriter:
    """The driver-side callable ``(df, batch_id)`` for ``foreachBatch``."""

    def __init__(
        self,
        table: str,
        *,
        checkpoint_location: str,
        warehouse: str | None = None,
        branch: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if not str(checkpoint_location or "").strip():
            raise InvalidArgumentError(
                "foreach_batch_writer needs checkpoint_location (the query's checkpointLocation): "
                "it keeps the commit user there, which makes replayed batches exactly-once"
            )
        self._args: dict[str, Any] = {
            "table": table, "warehouse": warehouse, "branch": branch, "options": options,
            "extra": {"checkpointlocation": str(checkpoint_location)},
        }
        # checked now (bad options, a branch contradicting the active session's redirect)
        self.opts = write_options(**self._args)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # A Connect client pickles the function for the server's foreachBatch runner,
        # which does not get the session's Python artifacts: the package goes inside.
        import os

        if not os.environ.get(CONNECT_MODE_ENV):
            return super().__reduce_ex__(protocol)
        return carried(self)

    def __call__(self, df: Any, batch_id: int) -> None:

        # the branch as the query's session redirects it now (the sink's checkpoint
        # state refuses a branch other than the one its earlier batches committed to)
        opts = write_options(**self._args, spark=df.sparkSession)
        # the Airflow run (this driver's AIRFLOW_CTX_*) and the Spark app on each snapshot
        properties = commit_properties(spark_app_id=app_id(df.sparkSession))
        sink = create_stream_writer(opts, df.schema, overwrite=False, snapshot_properties=properties)
        table = sink._task_writer()._table()
        batch_id = int(batch_id)
        spark = df.sparkSession
        with routed_events(spark):
            done = last_committed_snapshot(table, sink.commit_user)
            if done is not None and done.commit_identifier >= batch_id:
                sink.commit([], batch_id)  # a replay: the sink drops it and republishes its event
                return
            tasks: list[Any]
            if unsupported_reason(table) is None:
                tasks = [write_files(spark, df, table, sink.plan)]
            else:  # primary keys, buckets...: the data source's own write tasks

                tasks = list(run_write_tasks(df, sink._task_writer()))
            sink.commit(tasks, batch_id)  # expires as the streaming sink does


def foreach_batch_writer(
    table: str,
    *,
    checkpoint_location: str,
    warehouse: str | None = None,
    branch: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ForeachBatchWriter:
    """The function to pass to ``writeStream.foreachBatch``: each micro-batch -> one snapshot."""
    return ForeachBatchWriter(
        table, checkpoint_location=checkpoint_location, warehouse=warehouse, branch=branch, options=options
    )
