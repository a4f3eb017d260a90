"""The COMPACT snapshot a compaction commits: one home for its fields, used by the
data compaction's commit (``commit``) and by ``compact_manifest`` alike."""

from __future__ import annotations

import time
from typing import Any

from pypaimon.build_info import full_version as build_full_version
from pypaimon.snapshot.snapshot import Snapshot

COMMIT_KIND = "COMPACT"


def compact_snapshot(latest: Any, base_list: str, base_size: int, delta_list: str, delta_size: int,
                     commit_user: str, commit_identifier: int, properties: dict[str, str] | None,
                     schema_id: int, record_delta: int = 0,
                     changelog: tuple[str | None, int | None, int | None] = (None, None, None)) -> Snapshot:
    """The COMPACT snapshot after ``latest``: same watermark and index; the record count
    changes by ``record_delta`` (0 for append compaction; a primary-key compaction that
    merged versions or dropped retracts changes it); ``changelog`` is the changelog
    manifest list, its size and record count (a ``full-compaction`` changelog producer)."""
    return Snapshot(
        version=3,
        id=latest.id + 1,
        schema_id=schema_id,
        base_manifest_list=base_list,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_list,
        delta_manifest_list_size=delta_size,
        changelog_manifest_list=changelog[0],
        changelog_manifest_list_size=changelog[1],
        changelog_record_count=changelog[2],
        total_record_count=(latest.total_record_count or 0) + record_delta,
        delta_record_count=record_delta,
        commit_user=commit_user,
        writer_version=build_full_version(),
        commit_identifier=commit_identifier,
        commit_kind=COMMIT_KIND,
        time_millis=int(time.time() * 1000),
        watermark=latest.watermark,
        statistics=latest.statistics if schema_id == latest.schema_id else None,  # Java's rule
        next_row_id=latest.next_row_id,
        index_manifest=latest.index_manifest,
        properties=dict(properties) if properties else None,
    )
