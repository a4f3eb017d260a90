"""Paimon partitions as Airflow asset partitions: what sensors and operators share.

Airflow 3.2+ gives an asset event a ``partition_key``; a DAG on
``PartitionedAssetTimetable`` gets one run per key (through its partition mapper).
Airflow's model is one key per event: ``outlet_events[asset].add_partitions([...])``
records one event per key. Partitioned and plain events do not mix: a partitioned
event never queues a DAG scheduled the plain way (``schedule=[asset]``), and a plain
event never queues a partition-aware one. So emitting keys is a choice per task,
``asset_partitions=True``, never a silent change to what existing DAGs receive.

Keys are Paimon's partition folder names (``dt=2026-11-03/region=eu``,
``paimon/partition_keys.py``), read from what the task's own commits changed; this
module only hands them to Airflow. An event never fails a task that did its work: a
key Airflow cannot store (over 250 characters) is logged as an error and left out.
The hook that reads a table is always passed in (sensors and operators each have
theirs); finding the tables an operator's commits changed is the operators' side
(``operators/asset_partitions.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_paimon.job_contract import ASSET_PARTITIONS_ENV
from airflow_provider_paimon.paimon.commit_properties import ASSET_PARTITIONS_REPORTED
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.option_values import parse_bool
from airflow_provider_paimon.paimon.partition_keys import MAX_KEY_LENGTH

log = logging.getLogger(__name__)

__all__ = [
    "announce_partition",
    "check_asset_partitions",
    "emit_partition_events",
    "naming_options",
    "paimon_outlets",
    "table_asset",
    "try_partition_env",
]


def check_asset_partitions(value: Any, task_id: str) -> bool:
    """The ``asset_partitions`` argument, read by the package's one boolean parser (the
    same words as every flag: ``True``/``"true"``/``"yes"``...); anything else fails closed."""
    try:
        return parse_bool(value, "asset_partitions")
    except InvalidArgumentError as err:
        raise ValueError(
            f"{task_id}: {err} (True: one partitioned asset event per Paimon partition changed; "
            "False: plain asset events)"
        ) from None


def try_partition_env() -> dict[str, str]:
    """Environment telling the job's commits that this task reports their partitions
    (snapshot property ``airflow.asset_partitions=reported``): a watcher's relay
    (``PaimonPartitionRelayOperator``) skips such commits, so no partition is announced twice."""
    return {ASSET_PARTITIONS_ENV: ASSET_PARTITIONS_REPORTED}


def emit_partition_events(
    task: Any,
    context: Mapping[str, Any],
    asset: Any,
    keys: Iterable[str],
    extra: Mapping[str, Any] | None = None,
) -> list[str]:
    """One partitioned event of ``asset`` per key in ``keys`` when ``task`` succeeds.

    ``asset`` joins the task's ``outlets`` if it is not there (Airflow stores events only
    for outlets), and each key goes to ``outlet_events[asset].add_partitions``. Returns
    the keys recorded; none (no keys, or no ``outlet_events`` in ``context``) leaves the
    outlets as they are.
    """
    wanted: list[str] = []
    for key in keys:
        key = str(key)
        if not key.strip() or key in wanted:
            continue
        if len(key) > MAX_KEY_LENGTH:
            log.error(
                "partition %r of %s is longer than the %d characters Airflow stores in a "
                "partition key: no asset event for it", key, asset.uri, MAX_KEY_LENGTH,
            )
            continue
        wanted.append(key)
    events = context.get("outlet_events") if context else None
    if not wanted or events is None:
        if wanted:
            log.info("no outlet_events in this context: partitions %s of %s not emitted", wanted, asset.uri)
        return []
    outlets = list(getattr(task, "outlets", None) or [])
    if asset.uri not in {getattr(o, "uri", None) for o in outlets}:
        task.outlets = [*outlets, asset]
    accessor = events[asset]
    if extra:
        accessor.extra.update(dict(extra))
    accessor.add_partitions(wanted)
    log.info("asset %s: one event per partition %s", asset.uri, wanted)
    return wanted


def paimon_outlets(outlets: Iterable[Any] | None) -> list[Any]:
    """The ``paimon://`` assets among ``outlets``."""
    return [o for o in outlets or () if str(getattr(o, "uri", "") or "").startswith("paimon://")]


def naming_options(hook: Any) -> dict[str, str]:
    """The catalog options that take part in a table's asset URI (a REST catalog's)."""
    options = hook.catalog_config.options
    return {k: str(options[k]) for k in ("metastore", "uri") if options.get(k) is not None}


def table_asset(hook: Any, table: str, branch: str | None = None) -> Any:
    """The ``paimon://`` asset of ``table`` (on ``branch``) in ``hook``'s warehouse."""
    from airflow_provider_paimon.assets import asset_for

    return asset_for(hook.warehouse, table, branch, catalog_options=naming_options(hook))


def announce_partition(
    task: Any, context: Mapping[str, Any], hook: Any, table: str, branch: str | None, key: str,
    details: Mapping[str, Any],
) -> list[str]:
    """One partitioned event of ``table``'s asset for partition ``key`` (mark-done, sensors):
    extra ``{"paimon": {"table", "branch", **details}}``."""
    asset = table_asset(hook, table, branch)
    extra = {"paimon": {"table": table, "branch": branch or "main", **details}}
    return emit_partition_events(task, context, asset, [key], extra)
