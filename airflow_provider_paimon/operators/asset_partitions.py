"""Paimon partitions as Airflow asset partitions: the operators' side.

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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_paimon.paimon.partition_keys import MAX_KEY_LENGTH

log = logging.getLogger(__name__)

__all__ = [
    "PartitionTarget",
    "announce_partition",
    "check_asset_partitions",
    "emit_partition_events",
    "outlet_tables",
    "own_warehouse_hook",
    "paimon_outlets",
    "table_asset",
    "try_partition_env",
]


def check_asset_partitions(value: Any, task_id: str) -> bool:
    """The ``asset_partitions`` argument, read by the package's one boolean parser (the
    same words as every flag: ``True``/``"true"``/``"yes"``...); anything else fails closed."""
    from airflow_provider_paimon.paimon.errors import InvalidArgumentError
    from airflow_provider_paimon.paimon.option_values import parse_bool

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
    from airflow_provider_paimon.paimon.commit_properties import (
        ASSET_PARTITIONS_ENV,
        ASSET_PARTITIONS_REPORTED,
    )

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


@dataclass(frozen=True)
class PartitionTarget:
    """A ``paimon://`` outlet of a task: its table and branch, and the latest snapshot
    before the task's job ran (where the scan for the job's commits stops)."""

    asset: Any
    table: str
    branch: str | None
    start_snapshot: int | None
    hook: Any  # a PaimonHook on the outlet's warehouse

    def partitions_committed(self, wanted: Mapping[str, str]) -> tuple[list[str], list[int]]:
        """(partition keys, snapshot ids) of the snapshots after the start whose
        properties hold ``wanted`` (one task try's), oldest first."""
        from airflow_provider_paimon.paimon.commit_properties import snapshots_of_run
        from airflow_provider_paimon.paimon.partition_keys import changed_partition_keys
        from airflow_provider_paimon.paimon.snapshots import TableLayout

        table = self.hook.get_table(self.table, self.branch)
        docs = list(snapshots_of_run(TableLayout.of(table), self.branch, wanted, after=self.start_snapshot))
        docs.reverse()
        return changed_partition_keys(table, docs, self.branch), [int(d["id"]) for d in docs]


def _naming_options(hook: Any) -> dict[str, str]:
    """The catalog options that take part in a table's asset URI (a REST catalog's)."""
    options = hook.catalog_config.options
    return {k: str(options[k]) for k in ("metastore", "uri") if options.get(k) is not None}


def table_asset(hook: Any, table: str, branch: str | None = None) -> Any:
    """The ``paimon://`` asset of ``table`` (on ``branch``) in ``hook``'s warehouse."""
    from airflow_provider_paimon.assets import asset_for

    return asset_for(hook.warehouse, table, branch, catalog_options=_naming_options(hook))


def own_warehouse_hook(asset: Any) -> Any:
    """A ``PaimonHook`` on the warehouse a ``paimon://`` asset names (no connection, so
    no credentials: for a local or credential-free warehouse). A REST catalog's asset
    names a server, not a warehouse: it needs a connection."""
    from airflow_provider_paimon.assets import parse_asset_uri
    from airflow_provider_paimon.hooks.paimon import PaimonHook
    from airflow_provider_paimon.lineage.openlineage.naming import REST_SCHEME

    ref = parse_asset_uri(asset.uri)
    if ref.warehouse.startswith(f"{REST_SCHEME}:"):
        raise ValueError(f"{asset.uri} is a REST catalog's table: name its 'paimon' connection in paimon_conn_id")
    return PaimonHook.for_task(ref.warehouse)


def outlet_tables(hook: Any, assets: Iterable[Any]) -> list[PartitionTarget]:
    """The assets naming a table of ``hook``'s warehouse (as ``asset_for`` names it with
    the connection's catalog options), each with its latest snapshot now."""
    from airflow_provider_paimon.assets import asset_uri, parse_asset_uri

    naming = _naming_options(hook)
    targets = []
    for asset in assets:
        ref = parse_asset_uri(asset.uri)
        if asset_uri(hook.warehouse, ref.table_name, ref.branch, naming) != asset.uri:
            continue
        start = hook.get_latest_snapshot_id(ref.table_name, ref.branch)
        targets.append(PartitionTarget(asset, ref.table_name, ref.branch, start, hook))
    return targets


def announce_partition(
    task: Any, context: Mapping[str, Any], hook: Any, table: str, branch: str | None, key: str,
    details: Mapping[str, Any],
) -> list[str]:
    """One partitioned event of ``table``'s asset for partition ``key`` (mark-done, sensors):
    extra ``{"paimon": {"table", "branch", **details}}``."""
    asset = table_asset(hook, table, branch)
    extra = {"paimon": {"table": table, "branch": branch or "main", **details}}
    return emit_partition_events(task, context, asset, [key], extra)
