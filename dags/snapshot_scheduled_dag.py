"""Example DAG: run once for every new snapshot of a Paimon table, whoever committed it.

A streaming job, a user's Spark job, pypaimon or Paimon Java writes the table; the
triggerer's ``PaimonSnapshotTrigger`` sees each new APPEND or OVERWRITE snapshot (not
COMPACT) and records an event on the table's ``paimon://`` asset, the same asset our
operators update; this DAG runs for it. Each run reads the snapshot from the triggering
asset event (``extra["payload"]``: ``snapshot_id``, ``commit_kind``, ``commit_user``,
record counts, ``time``...).

Copy it and adjust, or set:

* ``PAIMON_WATCH_WAREHOUSE``: the warehouse URI, no credentials (default ``/data/warehouse``);
* ``PAIMON_WATCH_TABLE``: ``db.table`` (default ``demo.events``);
* ``PAIMON_WATCH_BRANCH``: a branch to watch instead of main (default: main);
* ``PAIMON_WATCH_CONSUMER``: the Paimon consumer id keeping the watcher's position
  (default ``airflow-snapshot-scheduled``);
* ``PAIMON_WATCH_CONN_ID``: a ``paimon`` connection with the catalog's credentials, if any;
* ``PAIMON_WATCH_POLL_SECONDS``: how often the table is looked at (default 30).

The watcher's position lives in the table (``consumer/consumer-<id>``), so a restarted
triggerer goes on where it stopped; delete that consumer when you remove this DAG, or it
keeps the table's snapshots from expiring. Two notes for the task you write:

* Airflow folds the events that arrive before the scheduler creates the next run into
  that one run, so read every event in ``triggering_asset_events``, not just the first;
* a snapshot can, rarely, arrive twice (the triggerer died between storing its event
  and saving the position): key what you write by ``snapshot_id`` so a repeat is harmless.

See docs/assets.md.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, AssetWatcher, task

from airflow_provider_paimon.assets import asset_for
from airflow_provider_paimon.triggers.snapshot import PaimonSnapshotTrigger

WAREHOUSE = os.environ.get("PAIMON_WATCH_WAREHOUSE", "/data/warehouse")
TABLE = os.environ.get("PAIMON_WATCH_TABLE", "demo.events")
BRANCH = os.environ.get("PAIMON_WATCH_BRANCH") or None
CONSUMER = os.environ.get("PAIMON_WATCH_CONSUMER", "airflow-snapshot-scheduled")
CONN_ID = os.environ.get("PAIMON_WATCH_CONN_ID") or None
POLL_SECONDS = float(os.environ.get("PAIMON_WATCH_POLL_SECONDS", "30"))

# The table's asset (paimon://...), with a watcher: the same asset CompactionOperator
# and the branch operators emit, so their runs and other writers' commits both land here.
TABLE_ASSET = asset_for(
    WAREHOUSE,
    TABLE,
    BRANCH,
    watchers=[
        AssetWatcher(
            name=f"{CONSUMER}-snapshots",
            trigger=PaimonSnapshotTrigger(
                table=TABLE,
                branch=BRANCH,
                consumer_id=CONSUMER,
                commit_kinds=["APPEND", "OVERWRITE"],
                warehouse=WAREHOUSE,
                paimon_conn_id=CONN_ID,
                poll_interval=POLL_SECONDS,
            ),
        )
    ],
)

with DAG(
    dag_id="paimon_snapshot_scheduled",
    description="Runs for each new APPEND/OVERWRITE snapshot of a Paimon table",
    schedule=[TABLE_ASSET],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["paimon", "example"],
):

    @task
    def handle_snapshot(*, triggering_asset_events=None) -> list[dict]:
        """Log (and return) the snapshots behind this run, one per watcher event.

        Events that came from an operator's outlet (no ``payload``) are listed as such.
        """
        handled = []
        for asset, events in (triggering_asset_events or {}).items():
            for event in events:
                payload = (event.extra or {}).get("payload")
                if not payload:
                    print(f"{asset.uri}: updated by a task (no snapshot details)")
                    continue
                print(
                    f"{payload['table']}@{payload['branch']}: snapshot {payload['snapshot_id']} "
                    f"{payload['commit_kind']} by {payload['commit_user']}, "
                    f"{payload['delta_record_count']} rows changed, "
                    f"{payload['total_record_count']} in total, at {payload['time']}"
                )
                handled.append(payload)
        return handled

    handle_snapshot()
