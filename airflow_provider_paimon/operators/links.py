"""Extra links from a task instance: the lineage page at its snapshot, and Marquez.

Airflow 3 calls ``get_link`` in the task process when the try ends, with the operator
that ran (its ``last_result`` holds the job's result), and keeps the URL in XCom for
the UI; so the link needs no metadata read at view time. Operators without a
committed snapshot in their result (nothing written, a failed try) get no link.

The URL opens the lineage page (``plugins/lineage_plugin.py``, ``/paimon-lineage/``)
with the drill-down filled in: ``?database=&table=&branch=&snapshot=``. It is relative
to Airflow's ``[api] base_url`` when that is set.

"Marquez" opens the job of the task's Spark run in Marquez's web UI
(``{marquez}/lineage/job/{namespace}/{job}``), when a Marquez web URL is configured:
``$PAIMON_MARQUEZ_URL``, else Airflow's ``[paimon] marquez_url``
(``AIRFLOW__PAIMON__MARQUEZ_URL``). The job is named as the Spark side names it in its
OpenLineage events (``spark.paimon.lineage.job``, else the Spark application name:
``{dag_id}.{task_id}`` by default), in the job namespace the events use
(``spark.paimon.openlineage.namespace``, ``spark.openlineage.namespace``,
``$OPENLINEAGE_NAMESPACE``, ``default``). No URL, OpenLineage turned off for the task
(``spark.paimon.openlineage.enabled=false``) or a URL that is not http(s): no link.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseOperatorLink

from airflow_provider_paimon.paimon.names import parse_table_name
from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.spark.lineage.config import KEY_JOB

log = logging.getLogger(__name__)

#: environment variable holding Marquez's web URL (else Airflow's ``[paimon] marquez_url``)
MARQUEZ_URL_ENV = "PAIMON_MARQUEZ_URL"

#: where the lineage plugin mounts its page (``lineage_plugin.URL_PREFIX``)
LINEAGE_PAGE_PATH = "/paimon-lineage"
# result keys naming the snapshot a job committed, most specific first
_SNAPSHOT_KEYS = ("snapshot_id", "main_snapshot_id", "committed_snapshot_id")


def lineage_page_url(table: str, snapshot_id: int, branch: str | None = None, base_url: str | None = None) -> str:
    """The lineage page opened at ``table`` (``db.t``) snapshot ``snapshot_id``."""
    database, _, name = table.partition(".")
    query = {"database": database, "table": name, "snapshot": str(int(snapshot_id))}
    if branch and branch != "main":
        query["branch"] = branch
    base = (base_url if base_url is not None else _airflow_base_url()).rstrip("/")
    return f"{base}{LINEAGE_PAGE_PATH}/?{urllib.parse.urlencode(query)}"


def committed_snapshot(operator: Any) -> int | None:
    """The snapshot the operator's last run committed, from its result (None: none)."""
    result = getattr(operator, "last_result", None)
    if not isinstance(result, dict):
        return None
    committed = getattr(operator, "ol_committed_snapshot", None)
    if callable(committed):
        value = committed(result)
        if value is not None:
            return int(value)
    for key in _SNAPSHOT_KEYS:
        if isinstance(result.get(key), int) and not isinstance(result.get(key), bool):
            return int(result[key])
    return None


class PaimonLineageLink(BaseOperatorLink):
    """"Paimon lineage": the lineage page at the snapshot this task try committed."""

    name = "Paimon lineage"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        snapshot_id = committed_snapshot(operator)
        table = getattr(operator, "table", None)
        if snapshot_id is None or not isinstance(table, str):
            return ""
        try:
            parse_table_name(table)
        except Exception:  # noqa: BLE001 - an unrendered or bad name: no link, never a failure
            return ""
        outputs = getattr(operator, "output_tables", None)
        branch = None
        if callable(outputs):
            for out_table, out_branch in outputs():
                if out_table == table:
                    branch = out_branch
                    break
        return lineage_page_url(table, snapshot_id, branch)


def marquez_job_url(web_url: str, namespace: str, job: str) -> str:
    """Marquez's page of job ``namespace``/``job`` (its web UI's ``/lineage/job/...`` route)."""
    quote = lambda part: urllib.parse.quote(part, safe="")  # noqa: E731 - names may hold "/" or ":"
    return f"{web_url.rstrip('/')}/lineage/job/{quote(namespace)}/{quote(job)}"


def marquez_web_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The configured Marquez web URL (http/https, credentials dropped), or None."""
    env = os.environ if environ is None else environ
    raw = (env.get(MARQUEZ_URL_ENV) or "").strip()
    if not raw:
        try:
            from airflow.configuration import conf

            raw = (conf.get("paimon", "marquez_url", fallback="") or "").strip()
        except Exception:  # noqa: BLE001 - outside a configured Airflow: env only
            raw = ""
    if not raw:
        return None
    parts = urllib.parse.urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        log.warning("Marquez URL is not an http(s) URL; no Marquez link (set %s to e.g. "
                    "http://marquez-web:3000)", MARQUEZ_URL_ENV)
        return None
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")  # never credentials
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def spark_openlineage_job(operator: Any, environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(namespace, job name) of the operator's Spark run in OpenLineage; None when it is off."""
    from airflow_provider_paimon.lineage.openlineage.config import KEY_ENABLED, KEY_NAMESPACE

    env = os.environ if environ is None else environ
    conf = getattr(operator, "conf", None)
    conf = conf if isinstance(conf, Mapping) else {}
    try:
        if not parse_bool(conf.get(KEY_ENABLED), KEY_ENABLED, True):
            return None
    except Exception:  # noqa: BLE001 - a bad flag: the job's emitter is off too
        return None
    namespace = str(
        conf.get(KEY_NAMESPACE) or conf.get("spark.openlineage.namespace")
        or env.get("OPENLINEAGE_NAMESPACE") or "default"
    )
    job = str(conf.get(KEY_JOB) or getattr(operator, "lineage_job", None) or _application_name(operator) or "")
    return (namespace, job.strip()) if job.strip() else None


def _application_name(operator: Any) -> str | None:
    name = getattr(operator, "application_name", None)
    if callable(name):
        try:
            return str(name())
        except TypeError:  # the Spark-job operators' takes the context (unused for the name)
            return str(name(None))
    dag_id, task_id = getattr(operator, "dag_id", None), getattr(operator, "task_id", None)
    return f"{dag_id}.{task_id}" if dag_id and task_id else None


class MarquezLink(BaseOperatorLink):
    """"Marquez": the task's Spark job in Marquez, when a Marquez web URL is configured."""

    name = "Marquez"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        web = marquez_web_url()
        if web is None:
            return ""
        try:
            job = spark_openlineage_job(operator)
        except Exception:  # noqa: BLE001 - a link is never worth a failure
            return ""
        return "" if job is None else marquez_job_url(web, *job)


def _airflow_base_url() -> str:
    try:
        from airflow.configuration import conf

        return conf.get("api", "base_url", fallback="") or ""
    except Exception:  # noqa: BLE001 - outside a configured Airflow: a relative link
        return ""
