"""Eight processes write at once (the lineage proposal's first requirement) on each backend.

All eight also race to create the store. Each writes its own job's batches, all of
them upsert the same shared table-lineage key and draw from one barrier sequence.
Nothing may be lost or duplicated, no error (deadlock, busy file) may reach a writer,
and each row must be readable as soon as its call returns.
"""

from __future__ import annotations

import multiprocessing
import traceback

import pytest

from airflow_provider_paimon.lineage.schema import LATEST_VERSION

from .helpers import snapshot_count

WRITERS = 8
BATCHES = 25
SEQUENCE_CALLS = 5


def _writer(url: str, database: str, number: int, start, results) -> None:
    try:
        from airflow_provider_paimon.lineage import LineageStore, SnapshotRef, TableLineage

        start.wait(timeout=60)
        with LineageStore.from_url(url, database) as store:
            job = f"job-{number}"
            unseen = 0
            for barrier in range(BATCHES):
                store.record_batch(job, barrier, [SnapshotRef("ods", "shared_source", barrier + 1)],
                                   [SnapshotRef("dwd", f"sink_{number}", barrier + 1)])
                store.store_source_table_lineage(TableLineage("shared-job", "ods", "shared_source"))
                if not store.sink_data_lineages(job=job, barrier_id=barrier):
                    unseen += 1
            ids = [store.next_barrier_id("shared-sequence") for _ in range(SEQUENCE_CALLS)]
        results.put((number, None, ids, unseen))
    except BaseException:  # noqa: BLE001 - reported to the parent
        results.put((number, traceback.format_exc(), [], 0))


def test_eight_concurrent_writers_lose_nothing(target):
    from airflow_provider_paimon.lineage import LineageStore

    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(WRITERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(target.url, target.database, n, start, results))
             for n in range(WRITERS)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=240) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    errors = [err for _, err, _, _ in outcomes if err]
    assert not errors, errors[0]
    assert [unseen for *_, unseen in outcomes] == [0] * WRITERS
    ids = sorted(i for _, _, got, _ in outcomes for i in got)
    assert ids == list(range(1, WRITERS * SEQUENCE_CALLS + 1))
    with LineageStore.from_url(target.url, target.database) as store:
        assert snapshot_count(store, "source_snapshot_lineage") == WRITERS * BATCHES
        assert snapshot_count(store, "sink_snapshot_lineage") == WRITERS * BATCHES
        assert snapshot_count(store, "source_job_lineage") == WRITERS + 1
        assert snapshot_count(store, "sink_job_lineage") == WRITERS
        assert snapshot_count(store, "schema_version") == LATEST_VERSION
        for number in range(WRITERS):
            rows = store.sink_data_lineages(job=f"job-{number}")
            assert [(r.barrier_id, r.snapshot_id) for r in rows] == [(b, b + 1) for b in range(BATCHES)]


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    yield
    for child in multiprocessing.active_children():
        child.join(timeout=5)
