"""PaimonPartitionRelayOperator: a snapshot watcher's commits as partitioned asset events.

``PaimonSnapshotTrigger(partition_keys=True)`` sees every writer's commits (pypaimon,
Paimon Java, a streaming job) and lists the partitions each snapshot changed. Airflow
3.3 stores a watcher's events without a partition key, and a plain event never queues a
DAG on ``PartitionedAssetTimetable``. This operator closes the gap: in a small DAG
scheduled plainly on the watched asset, it reads the triggering events and records one
partitioned event per partition they name, on the same asset (or ``target``); the
partition-aware consumers then run once per partition. A partitioned event never
queues a plain DAG, so the relay does not wake itself.

Commits whose snapshot says its task reports its own partitions (property
``airflow.asset_partitions=reported``: a ``PaimonSparkSubmitOperator`` with
``asset_partitions=True``) are skipped: their partitions are announced once, by that task.

The relay is at-least-once, as the watcher is: a snapshot redelivered after a
triggerer crash is relayed again, and its partitions' consumers run again.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.asset_partitions import emit_partition_events
from airflow_provider_paimon.paimon.commit_properties import (
    ASSET_PARTITIONS,
    ASSET_PARTITIONS_REPORTED,
)


class PaimonPartitionRelayOperator(BaseOperator):
    """Re-emit the triggering events of ``source`` as one partitioned event per partition.

    :param source: the asset whose ``PaimonSnapshotTrigger(partition_keys=True)`` watcher
        events scheduled this DAG (``schedule=[source]``).
    :param target: the asset to emit the partitioned events on (default: ``source``).

    Returns (XCom) ``{"partition_keys": [...], "snapshot_ids": [...relayed],
    "skipped_snapshot_ids": [...reported by their own task]}``. Events of ``source``
    without a snapshot payload (an operator's plain event) are ignored; a watcher event
    without ``partition_keys`` fails the task (its watcher lacks ``partition_keys=True``).
    """

    ui_color = "#c8e6f5"

    def __init__(self, *, source: Any, target: Any | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, asset in (("source", source), ("target", target)):
            if asset is not None and not getattr(asset, "uri", None):
                raise ValueError(f"{self.task_id}: {name} must be an Asset (e.g. asset_for(...)); got {asset!r}")
        self.source = source
        self.target = target if target is not None else source

    def execute(self, context: Any) -> dict[str, Any]:
        events = (context.get("triggering_asset_events") or {}).get(self.source) or []
        keys: list[str] = []
        relayed: list[int] = []
        skipped: list[int] = []
        for event in events:
            payload = (getattr(event, "extra", None) or {}).get("payload")
            if not isinstance(payload, dict) or "snapshot_id" not in payload:
                continue  # not a watcher's event
            if "partition_keys" not in payload:
                raise AirflowFailException(
                    f"the watcher event of snapshot {payload['snapshot_id']} of {self.source.uri} lists no "
                    "partitions: give its PaimonSnapshotTrigger partition_keys=True"
                )
            properties = payload.get("properties") or {}
            if properties.get(ASSET_PARTITIONS) == ASSET_PARTITIONS_REPORTED:
                skipped.append(int(payload["snapshot_id"]))
                continue
            relayed.append(int(payload["snapshot_id"]))
            keys.extend(k for k in payload["partition_keys"] if k not in keys)
        extra = {"paimon": {"relayed_from": self.source.uri, "snapshot_ids": relayed}}
        emitted = emit_partition_events(self, context, self.target, keys, extra)
        self.log.info("relayed snapshots %s as partitions %s; skipped %s (reported by their task)",
                      relayed, emitted, skipped)
        return {"partition_keys": emitted, "snapshot_ids": relayed, "skipped_snapshot_ids": skipped}
