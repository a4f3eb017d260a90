"""Paimon partitions as Airflow asset partitions: the operators' side.

An operator with ``asset_partitions=True`` finds the ``paimon://`` outlets naming a
table of its warehouse (``outlet_tables``), notes each table's latest snapshot before
its job runs, and afterwards reads the partitions its own commits changed
(``PartitionTarget.partitions_committed``). What sensors share (the argument check,
one event per key, a table's asset) is in ``common/asset_partitions.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_paimon.common.asset_partitions import naming_options
from airflow_provider_paimon.paimon.commit_properties import snapshots_of_run
from airflow_provider_paimon.paimon.partition_keys import changed_partition_keys
from airflow_provider_paimon.paimon.snapshots import TableLayout

__all__ = ["PartitionTarget", "outlet_tables", "own_warehouse_hook"]


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
        table = self.hook.get_table(self.table, self.branch)
        docs = list(snapshots_of_run(TableLayout.of(table), self.branch, wanted, after=self.start_snapshot))
        docs.reverse()
        return changed_partition_keys(table, docs, self.branch), [int(d["id"]) for d in docs]


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

    naming = naming_options(hook)
    targets = []
    for asset in assets:
        ref = parse_asset_uri(asset.uri)
        if asset_uri(hook.warehouse, ref.table_name, ref.branch, naming) != asset.uri:
            continue
        start = hook.get_latest_snapshot_id(ref.table_name, ref.branch)
        targets.append(PartitionTarget(asset, ref.table_name, ref.branch, start, hook))
    return targets
