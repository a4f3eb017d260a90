"""The original ETL: the (buggy) ``enrich_orders`` job keeps writing main.

One task spark-submits ``dags/jobs/enrich_orders.py --version buggy`` on main, every
``schedule`` (hourly by default; ``None`` in the demo, which triggers it itself). It is
the "pipeline that keeps running" of the branch proposal: ``paimon_data_correction`` repairs the
table in a branch while this DAG still writes main, then swaps main for the branch.

Params: ``warehouse`` (blank: the ``paimon_default`` connection's), ``source_table``,
``table``, ``lineage_url``.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, Param

# The DAGs folder, for correction_tasks: the dag-processor puts it on sys.path, the CLI's
# --local parsing and plain imports may not.
_DAGS_DIR = str(Path(__file__).resolve().parent)
if _DAGS_DIR not in sys.path:
    sys.path.insert(0, _DAGS_DIR)
from correction_tasks import job_path, resolve_warehouse  # noqa: E402

from airflow_provider_paimon.lineage.url import default_url  # noqa: E402
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator  # noqa: E402

JOB_NAME = "enrich_orders.original"

with DAG(
    "paimon_etl_original",
    schedule=os.environ.get("PAIMON_ETL_SCHEDULE") or None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    doc_md=__doc__,
    tags=["paimon", "example"],
    user_defined_macros={"paimon_warehouse": resolve_warehouse},
    params={
        "warehouse": Param(os.environ.get("PAIMON_WAREHOUSE", ""), type="string"),
        "table": Param("db.orders_enriched", type="string"),
        "source_table": Param("db.orders", type="string"),
        "lineage_url": Param(default_url(), type="string"),
    },
) as dag:
    PaimonSparkSubmitOperator(
        task_id="enrich_orders",
        # blank warehouse param: the paimon_default connection's warehouse, and its catalog
        # options (an S3 endpoint and credentials) reach the job's environment, not argv
        paimon_conn_id="{{ '' if params.warehouse else 'paimon_default' }}",
        application=str(job_path("enrich_orders")),
        application_args=[
            "--warehouse", "{{ paimon_warehouse(params.warehouse) }}",
            "--source", "{{ params.source_table }}",
            "--sink", "{{ params.table }}",
            "--version", "buggy",
            "--mode", "batch",
        ],
        lineage_url="{{ params.lineage_url }}",
        # an example: whoever triggers it picks the store (params); a production DAG
        # names it in a paimon_lineage connection instead (docs/security.md)
        allow_location_from_params=True,
        lineage_job=JOB_NAME,
        name=JOB_NAME,
    )
