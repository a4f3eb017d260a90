"""Example DAG: compact the small files of a list of Paimon append tables on a schedule.

Copy it and adjust the defaults, or keep it and set:

* ``PAIMON_COMPACTION_TABLES``: comma-separated ``db.table`` names (default ``demo.events``);
* ``PAIMON_COMPACTION_SCHEDULE``: a cron expression or preset (default ``@hourly``).

A manual run can override everything through the DAG params (``tables``, ``options``,
``dry_run``). One mapped ``CompactionOperator`` task runs per table, at most two at a time,
so a long list does not flood the Spark cluster. Connections: ``paimon_default`` (the
warehouse) and ``spark_default`` (the Spark master); see docs/operators.md.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG, Param, task

from airflow_provider_paimon.operators.compaction import CompactionOperator

DEFAULT_TABLES = [
    t.strip() for t in os.environ.get("PAIMON_COMPACTION_TABLES", "demo.events").split(",") if t.strip()
]
SCHEDULE = os.environ.get("PAIMON_COMPACTION_SCHEDULE", "@hourly")

with DAG(
    dag_id="paimon_compaction",
    description="Compact small files of Paimon append tables",
    schedule=SCHEDULE,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,  # so params.options arrives as a dict
    default_args={"retries": 1, "retry_delay": timedelta(minutes=5)},
    params={
        "tables": Param(DEFAULT_TABLES, type="array", items={"type": "string"},
                        description="tables to compact, as database.table"),
        "options": Param({}, type="object",
                         description="per-run table option overrides, e.g. {\"target-file-size\": \"128 mb\"}"),
        "dry_run": Param(False, type="boolean", description="plan only, commit nothing"),
    },
    tags=["paimon", "compaction"],
) as dag:

    @task
    def tables_to_compact(params: dict | None = None) -> list[str]:
        """The table list of this run (from params), one mapped compaction per entry."""
        tables = list((params or {}).get("tables") or [])
        if not tables:
            raise ValueError("no tables to compact: set params.tables or PAIMON_COMPACTION_TABLES")
        return tables

    CompactionOperator.partial(
        task_id="compact",
        options="{{ params.options }}",
        dry_run="{{ params.dry_run }}",
        max_active_tis_per_dagrun=2,
    ).expand(table=tables_to_compact())
