"""The streaming sink expires snapshots after each micro-batch (as Paimon's sinks do)
and stays exactly-once across a SIGKILL between a batch's commit and its expiry.

``db.dst`` keeps at most 2 snapshots (``snapshot.num-retained.max``). The first run
is killed right after batch 2's commit (before its expiry and before Spark records
the batch); the restart replays batch 2, recognises it as committed (its snapshot is
the newest, which expiry never removes), then commits and expires batches 3 and 4.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from support.kill import run_stream_job

from .helpers import (
    NO_STREAM_COMPACTION,
    append,
    data_files_on_disk,
    live_files,
    make_table,
    reload,
    table_ids,
)
from .stream_job import drain

pytestmark = pytest.mark.spark
RETAIN = {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"}


def _snapshot_ids(table) -> list[int]:
    d = os.path.join(table.table_path, "snapshot")
    return sorted(int(n[9:]) for n in os.listdir(d) if n.startswith("snapshot-"))


def test_sink_expires_per_batch_and_stays_exactly_once_across_a_kill(spark, warehouse, tmp_path):
    src = make_table(warehouse)
    for ids in ([1, 2], [3], [4, 5]):
        append(src, ids)
    make_table(warehouse, "db.dst", options=dict(RETAIN, **NO_STREAM_COMPACTION))
    checkpoint = str(tmp_path / "ck")

    assert run_stream_job(warehouse, checkpoint, "after-commit:2") == -signal.SIGKILL
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == [1, 2, 3, 4, 5]
    assert _snapshot_ids(dst) == [1, 2, 3]  # 2 kept after batch 1; batch 2's expiry never ran

    append(src, [6])
    append(src, [7, 8])
    drain(spark, warehouse, checkpoint)
    dst = reload(warehouse, "db.dst")
    assert table_ids(dst) == [1, 2, 3, 4, 5, 6, 7, 8]  # each row exactly once
    assert _snapshot_ids(dst) == [4, 5]
    snaps = [dst.snapshot_manager().get_snapshot_by_id(i) for i in (4, 5)]
    assert [s.commit_identifier for s in snaps] == [3, 4]
    with open(os.path.join(dst.table_path, "snapshot", "EARLIEST")) as fh:
        assert fh.read().strip() == "4"
    # no replay leftovers and nothing only an expired snapshot needed
    assert data_files_on_disk(dst.table_path) == live_files(dst)
    manifests = os.listdir(os.path.join(dst.table_path, "manifest"))
    named = set()
    for sid in (4, 5):
        with open(os.path.join(dst.table_path, "snapshot", f"snapshot-{sid}")) as fh:
            doc = json.load(fh)
        named.update((doc["baseManifestList"], doc["deltaManifestList"]))
    assert named <= set(manifests)
    assert not [f for f in os.listdir(os.path.join(checkpoint, "paimon-sink")) if f.startswith("pending-")]
