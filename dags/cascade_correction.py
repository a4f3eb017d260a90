"""Cascading correction (issue 17): fix ``ods.raw`` and everything derived from it, as one change.

The pipeline ``ods.raw -> dwd.clean -> ads.mart`` (``dags/jobs/cascade_chain.py``: a
batch ingest of order events, a streaming clean-up into a primary-key table that applies
them as inserts, updates and deletes, a batch mart) wrote a bad batch into ``ods.raw``.
Triggered with that batch's snapshot, this DAG:

1. plans from the lineage store which tables the bad snapshot reached and where each
   must restart (``cascade.plan``);
2. tags and branches each affected table at its last good snapshot (``cascade.branch``,
   one mapped task per table);
3. re-runs each table's job on the branches, upstream first, with the Spark conf
   redirecting every affected table to the correction branch: the ingest re-loads the
   batches from the bad one on (fixed), the streaming clean-up rebuilds ``dwd.clean``
   from the corrected ``ods.raw``, the mart recomputes (``cascade.run_*``), and waits
   until each caught up (``cascade.wait_*``);
4. audits every branch against main (row diff per partition, SQL checks on the mart);
5. publishes all branches as one crash-safe change, keeping each old main as a backup.

Params: ``snapshot_id`` (the first bad snapshot of ``ods.raw``), ``correction`` (the
branch name; ``<correction>_base`` tags the branch points), ``reingest_batches`` (the
ingest batches to load again), ``warehouse``, ``lineage_url``, ``checkpoint_root``. See
docs/branches.md, "Cascading correction".
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, Param

from airflow_provider_paimon.deadlines import deadline_from_env
from airflow_provider_paimon.task_groups.cascade import cascade_correction

DAG_ID = "paimon_cascade_correction"
APP = str(Path(__file__).resolve().parent / "jobs" / "cascade_chain.py")
W = "{{ params.warehouse }}"

with DAG(
    DAG_ID,
    deadline=deadline_from_env(),  # $PAIMON_PUBLISH_DEADLINE, e.g. "6 h" (docs/publish.md)
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    doc_md=__doc__,
    tags=["paimon", "example", "correction"],
    params={
        "snapshot_id": Param(2, type="integer", minimum=1, description="first bad snapshot of ods.raw"),
        "correction": Param("fix", type="string", description="correction branch on every table"),
        "reingest_batches": Param("2,3", type="string", description="ingest batches to load again, fixed"),
        "warehouse": Param("/tmp/paimon-cascade/warehouse", type="string"),
        "lineage_url": Param("sqlite:////tmp/paimon-cascade/lineage.sqlite", type="string"),
        "checkpoint_root": Param("/tmp/paimon-cascade/checkpoints", type="string"),
    },
) as dag:
    cascade_correction(
        table="ods.raw",
        snapshot_id="{{ params.snapshot_id }}",
        correction="{{ params.correction }}",
        warehouse=W,
        lineage_url="{{ params.lineage_url }}",
        # an example: whoever triggers it picks the warehouse and store (params); a
        # production DAG names them in connections instead (docs/security.md)
        allow_location_from_params=True,
        jobs={
            "ods.raw": {
                "application": APP,
                "application_args": ["ingest", "--warehouse", W, "--version", "fixed",
                                     "--batches", "{{ params.reingest_batches }}"],
            },
            "dwd.clean": {
                "application": APP,
                # a checkpoint of its own per correction: the re-run rebuilds the branch
                "application_args": ["clean", "--warehouse", W, "--checkpoint",
                                     "{{ params.checkpoint_root }}/clean/{{ params.correction }}"],
            },
            "ads.mart": {"application": APP, "application_args": ["mart", "--warehouse", W]},
        },
        checks={
            "ads.mart": {
                "revenue_is_plausible": "SELECT * FROM {branch_rows} WHERE revenue_cents < 0 OR revenue_cents > 1000000",
                "every_customer_kept": "SELECT customer FROM {main_rows} EXCEPT SELECT customer FROM {branch_rows}",
            },
        },
        backup_name="before_{{ params.correction }}",
    )
