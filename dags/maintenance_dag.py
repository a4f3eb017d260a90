"""Example DAG: keep a table that a streaming job writes into small and fast.

A streaming job commits a snapshot per micro-batch (1,440 a day at one a minute) and
its small files pile up. Once a day (adjust the schedule) this DAG:

0. ``preflight``: checks every task below against the table (``PaimonPreflightOperator``):
   a bad param (an unknown table, ``orphan_older_than`` under an hour, a misspelt
   flag) fails here, before the compaction has changed anything;
1. ``compact``: merges the small files (``CompactionOperator``, one COMPACT snapshot;
   a compaction that removed many files also folds their DELETE entries out of the
   manifests). With ``params.manifests_only`` it compacts only the table's manifests
   instead (Paimon's ``compact_manifest``: no data file is touched, any table type), for
   tables whose files are fine but whose metadata grew (docs/metadata.md);
2. ``expire_snapshots``: expires old snapshots (``ExpireSnapshotsOperator``): the
   small files the compaction replaced go with the last snapshot that read them;
3. ``remove_orphans``: deletes files nothing references, e.g. of writes that failed
   (``RemoveOrphanFilesOperator``, files older than a day by default);
4. ``expire_tags`` (when ``params.expire_tags``): deletes tags whose
   ``time_retained`` has passed (``ExpireTagsOperator``).

The streaming job keeps running: every step is safe beside a writer (compaction
retries on a conflicting commit; expiry never deletes what a retained snapshot, tag,
branch or consumer needs; orphan cleanup only touches files older than its safety age).

Copy it and adjust the defaults, or set ``PAIMON_MAINTENANCE_TABLE`` (``db.table``,
default ``demo.events``) and ``PAIMON_MAINTENANCE_SCHEDULE`` (default ``@daily``). A
manual run can override every setting through the params; ``dry_run`` reports what
each step would do and changes nothing. Connections: ``paimon_default`` (or the
``warehouse`` param) and ``spark_default``; see docs/maintenance.md.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG, Param, task

from airflow_provider_paimon.operators.compaction import CompactionOperator
from airflow_provider_paimon.operators.maintenance import (
    ExpireSnapshotsOperator,
    ExpireTagsOperator,
    RemoveOrphanFilesOperator,
)
from airflow_provider_paimon.operators.preflight import PaimonPreflightOperator

TABLE = os.environ.get("PAIMON_MAINTENANCE_TABLE", "demo.events")
SCHEDULE = os.environ.get("PAIMON_MAINTENANCE_SCHEDULE", "@daily")
COMMON = {"table": "{{ params.table }}", "warehouse": "{{ params.warehouse }}"}

with DAG(
    dag_id="paimon_maintenance",
    description="Compact, expire snapshots, remove orphan files and expire tags of a Paimon table",
    schedule=SCHEDULE,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,  # numbers and booleans reach the operators as such
    # allow_location_from_params: this example lets whoever triggers it pick the warehouse
    # (params); a production DAG names it in the paimon connection instead (docs/security.md)
    default_args={"retries": 1, "retry_delay": timedelta(minutes=5), "allow_location_from_params": True},
    params={
        "table": Param(TABLE, type="string", description="the table, as database.table"),
        "warehouse": Param("", type="string", description="warehouse path/URI; blank: paimon_default's"),
        "retain_min": Param(10, type="integer", minimum=1,
                            description="always keep the newest N snapshots (Paimon's default 10)"),
        "retain_max": Param(None, type=["null", "integer"], minimum=1,
                            description="keep at most N snapshots whatever their age (blank: unlimited)"),
        "older_than": Param("1 h", type="string",
                            description="expire only snapshots older than this ('1 h', '30 min', seconds)"),
        "max_deletes": Param(None, type=["null", "integer"], minimum=1,
                             description="expire at most N snapshots per run (blank: the table's "
                                         "snapshot.expire.limit, default 10)"),
        "orphan_older_than": Param("1 d", type="string",
                                   description="remove unreferenced files older than this (at least 1 h)"),
        "expire_tags": Param(True, type="boolean", description="also delete tags whose time_retained passed"),
        "dry_run": Param(False, type="boolean", description="report what each step would do, change nothing"),
        "manifests_only": Param(False, type="boolean",
                                description="compact only the manifests (compact_manifest), not the data files"),
    },
    tags=["paimon", "maintenance"],
) as dag:
    preflight = PaimonPreflightOperator(task_id="preflight", retries=0)
    compact = CompactionOperator(
        task_id="compact", dry_run="{{ params.dry_run }}", manifests_only="{{ params.manifests_only }}", **COMMON
    )
    expire = ExpireSnapshotsOperator(
        task_id="expire_snapshots",
        retain_min="{{ params.retain_min }}",
        retain_max="{{ params.retain_max }}",
        older_than="{{ params.older_than }}",
        max_deletes="{{ params.max_deletes }}",
        dry_run="{{ params.dry_run }}",
        **COMMON,
    )
    orphans = RemoveOrphanFilesOperator(
        task_id="remove_orphans",
        older_than="{{ params.orphan_older_than }}",
        dry_run="{{ params.dry_run }}",
        **COMMON,
    )

    @task.short_circuit(ignore_downstream_trigger_rules=False)
    def tags_wanted(params: dict | None = None) -> bool:
        """Skip ``expire_tags`` unless ``params.expire_tags``."""
        return bool((params or {}).get("expire_tags"))

    expire_tags = ExpireTagsOperator(task_id="expire_tags", dry_run="{{ params.dry_run }}", **COMMON)

    preflight >> compact >> expire >> orphans >> tags_wanted() >> expire_tags
