"""A correction must publish in time: an Airflow deadline alert for Paimon DAGs.

A correction DAG that stalls (a job that never catches up, an approval nobody gives)
leaves main wrong for as long as it waits. ``publish_deadline("6 h")`` is a
``DeadlineAlert`` (Airflow 3.1+) for the DAG: if a run has not finished within that
time of being queued, Airflow calls the callback, by default
``notify_missed_publish``, which logs an error naming the DAG run in the triggerer's
log; pass your own (e.g. ``AsyncCallback(SlackWebhookNotifier, kwargs=...)``) to tell
people where they look.

    with DAG("paimon_data_correction", deadline=publish_deadline("6 h"), ...):

The example correction DAGs take the time from ``$PAIMON_PUBLISH_DEADLINE`` (unset: no
deadline).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from airflow.sdk.definitions.callback import AsyncCallback, Callback
from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference

from airflow_provider_paimon.paimon.durations import duration_text, parse_duration

log = logging.getLogger(__name__)

#: environment variable the example DAGs read their deadline from
DEADLINE_ENV = "PAIMON_PUBLISH_DEADLINE"


async def notify_missed_publish(context: Any = None, **kwargs: Any) -> None:
    """Default callback: an ERROR line naming the DAG run that did not publish in time
    (and ``marker``, a file to touch, for tests and simple integrations)."""
    dag_run = (context or {}).get("dag_run") if isinstance(context, dict) else None
    dag_run = dag_run if isinstance(dag_run, dict) else {}  # the scheduler sends the run as JSON
    name = dag_run.get("dag_id") or kwargs.get("dag_id") or "a Paimon DAG"
    run_id = dag_run.get("dag_run_id") or dag_run.get("run_id") or kwargs.get("run_id") or "?"
    log.error("Paimon: %s run %s did not publish within %s; main is not corrected yet",
              name, run_id, kwargs.get("within", "its deadline"))
    marker = kwargs.get("marker")
    if marker:
        with open(marker, "a", encoding="utf-8") as out:
            out.write(f"{name} {run_id}\n")


def publish_deadline(within: Any, *, callback: Callback | None = None, marker: str | None = None) -> DeadlineAlert:
    """A deadline alert: the run must finish within ``within`` (a ``timedelta``, seconds
    or ``'6 h'``) of being queued, else ``callback`` runs (default ``notify_missed_publish``)."""
    interval = parse_duration(within, "publish deadline", allow_zero=False)
    if callback is None:
        kwargs: dict[str, Any] = {"within": duration_text(interval)}
        if marker:
            kwargs["marker"] = marker
        callback = AsyncCallback(notify_missed_publish, kwargs=kwargs)
    return DeadlineAlert(reference=DeadlineReference.DAGRUN_QUEUED_AT, interval=interval,
                         callback=callback, name="paimon-publish")


def deadline_from_env(environ: Any = None) -> DeadlineAlert | None:
    """``publish_deadline($PAIMON_PUBLISH_DEADLINE)``, or None when it is unset or blank."""
    value = (environ if environ is not None else os.environ).get(DEADLINE_ENV, "").strip()
    if not value:
        return None
    try:
        return publish_deadline(value)
    except Exception as err:  # noqa: BLE001 - a DAG parse error naming the variable
        raise ValueError(f"${DEADLINE_ENV}={value!r}: {err}") from None
