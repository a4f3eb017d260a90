"""Put the Airflow task's OpenLineage identity into the Spark conf of a Paimon job.

The Spark side (``lineage/openlineage``) turns ``spark.openlineage.parent*`` and
``spark.openlineage.rootParent*`` into the ``parent`` run facet, so the Spark run nests
under the Airflow task in Marquez. The values must be exactly the ones Airflow's
OpenLineage provider uses for the task's own events (its run id is derived from the
task instance), so we call the provider's helpers instead of computing them.

Unlike ``SparkSubmitOperator`` (opt-in through ``[openlineage]
spark_inject_parent_job_info``), Paimon operators inject the parent job info by default:
the keys are harmless when nothing emits, and the link is the point of our Spark-side
events. The transport (URL, API key) is injected only when ``[openlineage]
spark_inject_transport_info = True``, as Airflow does. The transport's secrets (an
API key, a header, the password of its URL) are registered by origin, by their whole
value, the moment they are injected, so Airflow's masker hides them in task logs;
``PaimonSparkJobHook`` keeps every ``spark.openlineage.transport.*`` key off the
spark-submit command line (it reaches the job through a private properties file). Keys
the user already set are never overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.common.secret_masking import register_values
from airflow_provider_paimon.paimon.secrets import secret_values

log = logging.getLogger(__name__)

__all__ = ["PARENT_KEYS", "ROOT_KEYS", "inject_openlineage_spark_conf"]

PARENT_KEYS = (
    "spark.openlineage.parentJobNamespace",
    "spark.openlineage.parentJobName",
    "spark.openlineage.parentRunId",
)
ROOT_KEYS = (
    "spark.openlineage.rootParentJobNamespace",
    "spark.openlineage.rootParentJobName",
    "spark.openlineage.rootParentRunId",
)


def _airflow_conf_flag(key: str, default: bool) -> bool:
    try:
        from airflow.configuration import conf
    except ImportError:  # pragma: no cover - always there inside Airflow
        return default
    return conf.getboolean("openlineage", key, fallback=default)


def inject_openlineage_spark_conf(
    conf: Mapping[str, Any] | None,
    context: Any,
    *,
    parent: bool | None = None,
    transport: bool | None = None,
) -> dict[str, Any]:
    """Return ``conf`` plus the OpenLineage parent/root (and, if asked, transport) keys.

    :param conf: the operator's Spark conf (not modified).
    :param context: the task's Airflow context (needs ``ti``).
    :param parent: inject ``spark.openlineage.parent*``/``root*``; default: yes, unless
        ``[openlineage] disabled`` is set.
    :param transport: inject ``spark.openlineage.transport.*``; default ``[openlineage]
        spark_inject_transport_info``.

    Never raises: lineage must not fail a job (a problem is logged and the conf is
    returned as it was).
    """
    result: dict[str, Any] = dict(conf or {})
    if parent is None:
        parent = not _airflow_conf_flag("disabled", False)
    if transport is None:
        transport = _airflow_conf_flag("spark_inject_transport_info", False)
    if not parent and not transport:
        return result
    try:
        from airflow.providers.openlineage.utils.spark import (
            inject_parent_job_information_into_spark_properties,
            inject_transport_information_into_spark_properties,
        )
    except ImportError:
        log.info("apache-airflow-providers-openlineage is not installed: no OpenLineage parent job info for Spark")
        return result
    if parent:
        try:
            result = inject_parent_job_information_into_spark_properties(result, context)
        except Exception as err:  # noqa: BLE001 - lineage never fails the task
            log.warning("could not inject OpenLineage parent job info into the Spark conf: %s", err)
    if transport:
        try:
            result = inject_transport_information_into_spark_properties(result, context)
        except Exception as err:  # noqa: BLE001
            log.warning("could not inject OpenLineage transport info into the Spark conf: %s", err)
        _mask_secret_values(result)
    return result


def _mask_secret_values(conf: Mapping[str, Any]) -> None:
    """Register transport secrets (API keys, headers, URL passwords) by origin."""
    register_values(
        secret_values({k: v for k, v in conf.items() if str(k).startswith("spark.openlineage.transport")})
    )
