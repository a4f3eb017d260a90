"""A paimon -> paimon streaming query in its own process, for the kill tests.

Run as ``python stream_job.py WAREHOUSE CHECKPOINT [SOURCE_OPTIONS_JSON]``. It drains the
source with ``availableNow`` (one source snapshot per micro-batch) into ``db.dst``. The test
sets ``PAIMON_STREAMING_FAULT`` to have the sink SIGKILL this whole process group
(driver, JVM, Python workers) at a chosen point of a chosen batch.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def drain(spark, warehouse: str, checkpoint: str, options: dict[str, str] | None = None,
          sink: str = "db.dst", sink_options: dict[str, str] | None = None,
          source_options: dict[str, str] | None = None) -> None:
    """The query: db.src -> db.dst, one source snapshot per micro-batch, availableNow.

    The kill test also runs it in its own session for the clean restart. ``options``:
    catalog options (the S3 tests' endpoint and credentials); ``sink_options``: the
    sink's own (per-query table options such as ``write-only``); ``source_options`` the
    source's (``read.changelog`` for a primary-key source).
    """
    df = (
        spark.readStream.format("paimon")
        .options(**(options or {}))
        .option("warehouse", warehouse)
        .option("table", "db.src")
        .option("scan.mode", "from-snapshot")
        .option("scan.snapshot-id", "1")
        .option("max-snapshots-per-trigger", "1")
        .options(**(source_options or {}))
        .load()
    )
    query = (
        df.writeStream.format("paimon")
        .options(**(options or {}))
        .option("warehouse", warehouse)
        .options(**(sink_options or {}))
        .option("table", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    exception = query.exception()
    if exception is not None:
        raise exception


def main(warehouse: str, checkpoint: str, source_options: str = "{}") -> int:
    import json

    from airflow_provider_paimon.spark.datasource.streaming_writer import FAULT_GROUP_ENV
    from airflow_provider_paimon.spark.session import local_session

    os.environ[FAULT_GROUP_ENV] = str(os.getpgrp())  # inherited by the JVM and its workers
    spark = local_session(
        "paimon-stream-kill-test",
        master="local[1]",  # the data is tiny: one task slot starts fewer Python workers
        conf={"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m"},
    )
    drain(spark, warehouse, checkpoint, source_options=json.loads(source_options))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
