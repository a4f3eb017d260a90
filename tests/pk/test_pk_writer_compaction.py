"""Writers compact their primary-key tables by Paimon Java's writer rules (``lsm.after_commit``).

In-process, with the hooks the sinks call after their commits: ``compact_after_commit``
(the streaming sink and ``foreachBatch``: background worker, waits only past
``num-sorted-run.stop-trigger``) and ``compact_after_write`` (batch writes: the
buckets written, waited for). Rows are checked against the reference model after every
commit; level 0 stays bounded; first-row tables read their rows after each commit
(their reads skip level 0); ``full-compaction.delta-commits`` and the full-compaction
changelog producer compact fully on their schedule; ``write-only`` turns it all off.
"""

from __future__ import annotations

import threading

import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.paimon.compaction.after_commit import (
    compact_after_commit,
    forget,
    stream_compaction,
)
from airflow_provider_paimon.paimon.lsm.after_commit import compact_after_write
from airflow_provider_paimon.paimon.lsm.levels import sorted_runs

from . import lsm_checks, tables
from .changes import changes_of
from .scenarios import Feed, model_for, seed_for, steps
from .tables import write

SMALL = {"num-sorted-run.compaction-trigger": "3", "target-file-size": "2kb"}


@pytest.fixture
def stream_key(warehouse):
    key = (warehouse, "db.t", "main", "stream-user")
    yield key
    state = stream_compaction(key)
    if state is not None and hasattr(state, "worker"):
        state.worker.wait_idle(60)
    forget(key)


def after_commit(warehouse, stream_key, batch_id, options=None, fault=None):
    return compact_after_commit(tables.reload(warehouse, "db.t"), stream_key=stream_key,
                                commit_user="stream-user", options=options, batch_id=batch_id, fault=fault)


def level0_per_bucket(warehouse) -> int:
    buckets = lsm_checks.buckets(tables.reload(warehouse, "db.t"))
    return max((sum(1 for f in files if f.level == 0) for files in buckets.values()), default=0)


def test_a_stream_keeps_level0_bounded_without_waiting(warehouse, stream_key):
    variant = "deduplicate"
    seed = seed_for(variant)
    model = model_for(variant, SMALL)
    tables.create(warehouse, "db.t", variant, SMALL)
    worst = 0
    for n, rows in enumerate(Feed(model, seed).commits(steps() // 2)):
        write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        decision = after_commit(warehouse, stream_key, n)
        assert decision is not None and decision.action in ("nothing", "submitted", "busy"), decision
        stream = stream_compaction(stream_key)
        stream.worker.wait_idle(60)  # a stream slower than its compaction: it never has to wait
        worst = max(worst, level0_per_bucket(warehouse))
        assert tables.read(tables.reload(warehouse, "db.t")) == model.rows(), f"seed {seed} commit {n}"
    assert stream.waits == 0 and stream.jobs_committed > 0 and stream.jobs_failed == 0
    assert worst <= 3  # the trigger: a bucket never holds more level-0 runs than that
    table = tables.reload(warehouse, "db.t")
    lsm_checks.check_levels(table)
    compacts = [s for s in table.snapshot_manager().list_snapshots() if s.commit_kind == "COMPACT"]
    assert compacts and {s.commit_user for s in compacts} == {"stream-user-compact"}
    assert rust_rows(warehouse, "db.t") == model.rows()


def test_past_the_stop_trigger_the_commit_waits_for_the_running_compaction(warehouse, stream_key):
    variant = "deduplicate"
    model = model_for(variant, SMALL)
    tables.create(warehouse, "db.t", variant, {**SMALL, "num-sorted-run.stop-trigger": "5", "bucket": "1"})
    blocked, release = threading.Event(), threading.Event()

    def slow_commit(point, batch_id):  # the worker's first job hangs until released
        if point == "compact-before-commit" and not blocked.is_set():
            blocked.set()
            release.wait(60)

    feed = Feed(model, seed_for(variant), partitions=("a",))
    seen = []  # (decision, sorted runs after it, waits so far)
    for n in range(10):
        rows = feed.commit()
        write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        action = after_commit(warehouse, stream_key, n, fault=slow_commit).action
        if action == "submitted" and not seen_submitted(seen):
            threading.Timer(1.0, release.set).start()
        files = lsm_checks.buckets(tables.reload(warehouse, "db.t"))[(("a",), 0)]
        seen.append((action, len(sorted_runs(files)), stream_compaction(stream_key).waits))
    stream = stream_compaction(stream_key)
    busy = [runs for action, runs, _w in seen if action == "busy"]
    assert busy and max(busy) <= 5, seen  # at or below the stop trigger the stream goes on
    assert stream.waits >= 1 and release.is_set(), seen  # past it, the commit waited
    assert max(runs for _a, runs, _w in seen) <= 6, seen
    stream.worker.wait_idle(60)
    assert tables.read(tables.reload(warehouse, "db.t")) == model.rows()


def seen_submitted(seen) -> bool:
    return any(action == "submitted" for action, _r, _w in seen)


@pytest.mark.parametrize("how", ["batch", "stream"])
def test_first_row_rows_are_visible_after_every_commit(warehouse, stream_key, how):
    variant = "first-row"
    seed = seed_for(variant)
    model = model_for(variant, SMALL)
    tables.create(warehouse, "db.t", variant, SMALL)
    for n, rows in enumerate(Feed(model, seed).commits(steps() // 4)):
        table = tables.reload(warehouse, "db.t")
        write(table, rows)
        model.commit(rows)
        if how == "batch":
            written = {(("a",), b) for b in (0, 1)} | {(("b",), b) for b in (0, 1)}
            result = compact_after_write(tables.reload(warehouse, "db.t"), written, commit_user="w")
            assert result is not None and result.committed
        else:
            assert after_commit(warehouse, stream_key, n).action == "compacted"
        table = tables.reload(warehouse, "db.t")
        assert level0_per_bucket(warehouse) == 0
        assert tables.read(table) == model.rows(), f"{how} seed {seed} commit {n}"
    lsm_checks.check_levels(tables.reload(warehouse, "db.t"), first_row=True)
    assert rust_rows(warehouse, "db.t") == model.rows()


def test_full_compaction_on_schedule_with_its_changelog(warehouse, stream_key):
    variant = "deduplicate"
    extra = {**SMALL, "changelog-producer": "full-compaction"}
    model = model_for(variant, extra)
    tables.create(warehouse, "db.t", variant, extra)
    feed = Feed(model, seed_for(variant))
    for n in range(4):
        rows = feed.commit()
        write(tables.reload(warehouse, "db.t"), rows)
        before = model.rows()
        model.commit(rows)
        # the full-compaction producer without delta-commits: every commit, waited for
        assert after_commit(warehouse, stream_key, n).action == "compacted"
        table = tables.reload(warehouse, "db.t")
        latest = table.snapshot_manager().get_latest_snapshot()
        # its changelog: the changes since the last full compaction (none when a commit
        # changed nothing visible, e.g. a first commit that only deletes)
        assert latest.commit_kind == "COMPACT"
        assert bool(changes_of(table, latest.id)) == (model.rows() != before), f"commit {n}"
        for files in lsm_checks.buckets(table).values():
            assert {f.level for f in files} == {3}
        assert tables.read(table) == model.rows()
    forget(stream_key)
    # full-compaction.delta-commits=3 on a plain table: batches 2 and 5 compact fully
    tables.create(warehouse, "db.u", variant, SMALL)
    key = (warehouse, "db.u", "main", "u")
    actions = []
    for n in range(6):
        table = tables.reload(warehouse, "db.u")
        write(table, feed.commit())
        decision = compact_after_commit(tables.reload(warehouse, "db.u"), stream_key=key, commit_user="u",
                                        options={"full-compaction.delta-commits": "3"}, batch_id=n)
        actions.append(decision.action)
    assert [n for n, a in enumerate(actions) if a == "compacted"] == [2, 5]
    forget(key)


def test_write_only_leaves_compaction_to_the_compaction_job(warehouse, stream_key):
    tables.create(warehouse, "db.t", "first-row", {**SMALL, "write-only": "true"})
    model = model_for("first-row", SMALL)
    for n, rows in enumerate(Feed(model, seed_for("first-row")).commits(30)):
        write(tables.reload(warehouse, "db.t"), rows)
        assert after_commit(warehouse, stream_key, n).action == "off"
        assert compact_after_write(tables.reload(warehouse, "db.t"), {(("a",), 0)}) is None
    snapshots = tables.reload(warehouse, "db.t").snapshot_manager().list_snapshots()
    assert {s.commit_kind for s in snapshots} == {"APPEND"}
