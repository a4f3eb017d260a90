"""Example DAGs: run once per new Paimon partition, whoever wrote it; backfill one partition.

A partitioned Paimon table (``dt``, ``region``) is an Airflow asset whose events carry a
partition key, the partition's folder name: ``dt=2026-11-03/region=eu``. Three DAGs:

* ``paimon_partition_consumer`` is scheduled on ``PartitionedAssetTimetable``: Airflow
  makes one run per partition key (``dag_run.partition_key``). Its task reads that
  partition (``parse_partition_key`` gives the spec back) and reports its rows.
* ``paimon_partition_relay``: commits by any writer (a streaming job, pypaimon, Paimon
  Java) are seen by the table's ``PaimonSnapshotTrigger(partition_keys=True)`` watcher.
  Airflow 3.3 stores watcher events without a partition key, so this small DAG,
  scheduled plainly on the table, turns each into one partitioned event per partition
  (``PaimonPartitionRelayOperator``).
* ``paimon_partition_backfill`` (manual): rewrites the partitions given in its
  ``partitions`` param with a Spark job (``dags/jobs/rewrite_partitions.py``) through
  ``PaimonSparkSubmitOperator(asset_partitions=True)``, which emits one partitioned event
  per partition its commit changed, read from the commit itself. A backfill of one
  partition therefore re-runs the consumer for that partition only. Its commits say so
  in their snapshot properties, and the relay skips them (no partition announced twice).

Copy it and adjust, or set:

* ``PAIMON_PARTITIONS_WAREHOUSE``: the warehouse URI, no credentials (default ``/data/warehouse``);
* ``PAIMON_PARTITIONS_TABLE``: ``db.table``, partitioned by ``dt, region`` (default ``demo.orders``);
* ``PAIMON_PARTITIONS_CONSUMER``: the Paimon consumer id keeping the watcher's position
  (default ``airflow-partition-relay``);
* ``PAIMON_PARTITIONS_CONN_ID``: a ``paimon`` connection with the catalog's credentials, if any;
* ``PAIMON_PARTITIONS_POLL_SECONDS``: how often the table is looked at (default 30).

See docs/assets.md, "Paimon partitions as asset partitions".
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, AssetWatcher, Param, PartitionedAssetTimetable, task

from airflow_provider_paimon.assets import asset_for
from airflow_provider_paimon.operators.partition_relay import PaimonPartitionRelayOperator
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.triggers.snapshot import PaimonSnapshotTrigger

WAREHOUSE = os.environ.get("PAIMON_PARTITIONS_WAREHOUSE", "/data/warehouse")
TABLE = os.environ.get("PAIMON_PARTITIONS_TABLE", "demo.orders")
CONSUMER = os.environ.get("PAIMON_PARTITIONS_CONSUMER", "airflow-partition-relay")
CONN_ID = os.environ.get("PAIMON_PARTITIONS_CONN_ID") or None
POLL_SECONDS = float(os.environ.get("PAIMON_PARTITIONS_POLL_SECONDS", "30"))
REWRITE_JOB = Path(__file__).resolve().parent / "jobs" / "rewrite_partitions.py"

ORDERS = asset_for(
    WAREHOUSE,
    TABLE,
    watchers=[
        AssetWatcher(
            name=f"{CONSUMER}-partitions",
            trigger=PaimonSnapshotTrigger(
                table=TABLE,
                consumer_id=CONSUMER,
                warehouse=WAREHOUSE,
                paimon_conn_id=CONN_ID,
                poll_interval=POLL_SECONDS,
                partition_keys=True,  # each event lists the partitions its snapshot changed
            ),
        )
    ],
)

with DAG(
    dag_id="paimon_partition_consumer",
    description="Runs once per new (or rewritten) Paimon partition",
    schedule=PartitionedAssetTimetable(assets=ORDERS),  # IdentityMapper: one run per key
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["paimon", "example", "partitions"],
):

    @task
    def process_partition(*, dag_run=None) -> dict:
        """Read the run's partition (``dt=.../region=...``) and report what it holds."""
        from airflow_provider_paimon.hooks.paimon import PaimonHook
        from airflow_provider_paimon.paimon.partition_keys import partition_values
        from airflow_provider_paimon.paimon.partition_status import partition_status

        key = dag_run.partition_key  # "dt=2026-11-03/region=eu"
        table = PaimonHook.for_task(WAREHOUSE, CONN_ID).get_table(TABLE)
        values = partition_values(table, key)  # {"dt": "2026-11-03", "region": "eu"}, typed
        status = partition_status(table, values)
        print(f"{TABLE} partition {key}: {status.row_count} rows at snapshot {status.snapshot_id}")
        return {"partition_key": key, "partition": status.partition, "rows": status.row_count,
                "snapshot_id": status.snapshot_id}

    process_partition()

with DAG(
    dag_id="paimon_partition_relay",
    description="Watcher events (any writer's commits) -> one partitioned asset event per partition",
    schedule=[ORDERS],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["paimon", "example", "partitions"],
):
    PaimonPartitionRelayOperator(task_id="relay_partitions", source=ORDERS)

with DAG(
    dag_id="paimon_partition_backfill",
    description="Rewrite chosen partitions; their consumers (and only theirs) run again",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["paimon", "example", "partitions"],
    params={
        "partitions": Param(["dt=2026-11-03/region=eu"], type="array", items={"type": "string"},
                            minItems=1, description="partition keys to rewrite, dt=.../region=..."),
        "rows": Param(3, type="integer", minimum=0),
        "version": Param(2, type="integer", minimum=1),
    },
):
    PaimonSparkSubmitOperator(
        task_id="rewrite_partitions",
        application=str(REWRITE_JOB),
        application_args=[
            "--warehouse", WAREHOUSE, "--table", TABLE,
            "--rows", "{{ params.rows }}", "--version", "{{ params.version }}",
            "--partitions-json", "{{ params.partitions | tojson }}",
        ],
        paimon_conn_id=CONN_ID,
        outlets=[ORDERS],
        asset_partitions=True,
    )
