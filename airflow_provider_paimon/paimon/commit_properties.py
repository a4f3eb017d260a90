"""Which Airflow run and Spark application made a snapshot: its ``properties``.

Every commit this package makes (the ``paimon`` data source's batch and streaming
writers, ``write_table``, compaction) puts these keys in the snapshot's
``properties`` map (Paimon's ``Snapshot.properties``, free-form string pairs that
Paimon Java and pypaimon keep and ignore), so a snapshot names the run behind it:

=====================  ======================================================
``airflow.dag_id``     ``$AIRFLOW_CTX_DAG_ID``
``airflow.run_id``     ``$AIRFLOW_CTX_DAG_RUN_ID``
``airflow.task_id``    ``$AIRFLOW_CTX_TASK_ID``
``airflow.try_number`` ``$AIRFLOW_CTX_TRY_NUMBER``
``airflow.map_index``  ``$AIRFLOW_CTX_MAP_INDEX`` (mapped tasks only)
``spark.app.id``       the Spark application that committed
``airflow.asset_partitions``  ``$PAIMON_ASSET_PARTITIONS``: ``reported`` when the
                       task emits its own partitioned asset events for its commits
                       (``asset_partitions=True``), so a watcher's relay skips them
=====================  ======================================================

Where the values come from: Airflow's task runner exports ``AIRFLOW_CTX_*`` into the
task process's environment before ``execute``; spark-submit and everything it starts
inherit it, and our operators also put them (plus the map index, which Airflow does
not export) into the job's environment explicitly (``airflow_env``). Outside Airflow
none is set and a snapshot gets only ``spark.app.id`` (or nothing). Keys are written
only when their value is known and non-blank; nothing here ever fails a commit.

No Airflow or Spark import: the Spark side reads the environment, the Airflow side
builds it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_paimon.job_contract import ASSET_PARTITIONS_ENV

from .snapshots import latest_snapshot_id, read_snapshot

DAG_ID = "airflow.dag_id"
RUN_ID = "airflow.run_id"
TASK_ID = "airflow.task_id"
TRY_NUMBER = "airflow.try_number"
MAP_INDEX = "airflow.map_index"
SPARK_APP_ID = "spark.app.id"
ASSET_PARTITIONS = "airflow.asset_partitions"
#: the one value of the environment variable behind ``ASSET_PARTITIONS``
#: (``job_contract.ASSET_PARTITIONS_ENV``)
ASSET_PARTITIONS_REPORTED = "reported"

#: environment variable -> snapshot property
ENV_KEYS: dict[str, str] = {
    "AIRFLOW_CTX_DAG_ID": DAG_ID,
    "AIRFLOW_CTX_DAG_RUN_ID": RUN_ID,
    "AIRFLOW_CTX_TASK_ID": TASK_ID,
    "AIRFLOW_CTX_TRY_NUMBER": TRY_NUMBER,
    "AIRFLOW_CTX_MAP_INDEX": MAP_INDEX,
    ASSET_PARTITIONS_ENV: ASSET_PARTITIONS,
}
#: every key this module writes (a copied snapshot drops them before naming its own run)
RUN_KEYS = frozenset({*ENV_KEYS.values(), SPARK_APP_ID})
# Longer values are cut: a property is metadata, never a payload.
MAX_VALUE_CHARS = 1000


def airflow_properties(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``airflow.*`` properties from ``environ`` (default ``os.environ``); ``{}`` outside Airflow.

    Without a dag id the other variables do not name a run, so nothing is returned.
    """
    env = os.environ if environ is None else environ
    out = {prop: _clean(env.get(var)) for var, prop in ENV_KEYS.items()}
    out = {k: v for k, v in out.items() if v}
    if MAP_INDEX in out and out[MAP_INDEX] == "-1":  # -1: the task is not mapped
        del out[MAP_INDEX]
    return out if DAG_ID in out else {}


def commit_properties(
    environ: Mapping[str, str] | None = None, *, spark_app_id: str | None = None
) -> dict[str, str]:
    """Everything a commit of this process should carry: Airflow context and Spark app id."""
    out = airflow_properties(environ)
    app_id = _clean(spark_app_id)
    if app_id:
        out[SPARK_APP_ID] = app_id
    return out


def airflow_env(
    dag_id: str, run_id: str, task_id: str, try_number: int | str | None = None,
    map_index: int | str | None = None,
) -> dict[str, str]:
    """``AIRFLOW_CTX_*`` variables naming one task try (for a job's environment)."""
    values = {
        "AIRFLOW_CTX_DAG_ID": dag_id,
        "AIRFLOW_CTX_DAG_RUN_ID": run_id,
        "AIRFLOW_CTX_TASK_ID": task_id,
        "AIRFLOW_CTX_TRY_NUMBER": try_number,
        "AIRFLOW_CTX_MAP_INDEX": map_index,
    }
    return {k: str(v) for k, v in values.items() if v is not None and str(v).strip()}


@dataclass(frozen=True)
class RunRef:
    """The Airflow task try named by a snapshot's properties."""

    dag_id: str
    run_id: str | None = None
    task_id: str | None = None
    try_number: int | None = None
    map_index: int | None = None
    spark_app_id: str | None = None


def run_of(properties: Mapping[str, Any] | None) -> RunRef | None:
    """The run a snapshot's ``properties`` name, or None (not written from Airflow)."""
    props = dict(properties or {})
    dag_id = _clean(props.get(DAG_ID))
    if not dag_id:
        return None
    return RunRef(
        dag_id=dag_id,
        run_id=_clean(props.get(RUN_ID)) or None,
        task_id=_clean(props.get(TASK_ID)) or None,
        try_number=_int(props.get(TRY_NUMBER)),
        map_index=_int(props.get(MAP_INDEX)),
        spark_app_id=_clean(props.get(SPARK_APP_ID)) or None,
    )


def snapshots_of_run(
    layout: Any, branch: str | None, wanted: Mapping[str, str], *, after: int | None = None,
    limit: int = 1000,
) -> Iterator[dict[str, Any]]:
    """The snapshots of ``branch`` whose properties hold every ``wanted`` pair, newest first.

    Scans back from the latest snapshot, no further than ``after`` (exclusive: the
    latest snapshot before the run started) and at most ``limit`` snapshots, so the cost
    is what the run committed, not the branch's history. ``wanted`` empty: none.
    ``layout`` is a ``snapshots.TableLayout``.
    """
    if not wanted:
        return
    latest = latest_snapshot_id(layout, branch)
    if latest is None:
        return
    lowest = max(0, latest - limit, after or 0)
    for snapshot_id in range(latest, lowest, -1):
        doc = read_snapshot(layout, branch, snapshot_id)
        props = (doc or {}).get("properties") or {}
        if doc is not None and all(props.get(key) == value for key, value in wanted.items()):
            yield doc


def _clean(value: Any) -> str:
    if value is None:
        return ""
    return str(value).strip()[:MAX_VALUE_CHARS]


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
