"""Create-if-absent races on S3: tags, branch creation, branch-operation journals, consumers.

Each is "exactly one of N racing creators wins, and what is on S3 is the winner's";
pypaimon's exists-then-move would let several win and the last copy decide the content.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from commit_race import commit_batch, create_table, open_table, read_ids

from airflow_provider_paimon.paimon import fileops
from airflow_provider_paimon.paimon.branch.create import create_branch
from airflow_provider_paimon.paimon.branch.journal import (
    read_journal,
    remove_journal,
    write_journal,
)
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.consumers import read_next_snapshot, save_next_snapshot
from airflow_provider_paimon.paimon.errors import AlreadyExistsError, ConcurrentModificationError
from airflow_provider_paimon.paimon.snapshots import TableLayout, read_tag
from airflow_provider_paimon.paimon.tag.create import create_tag

RACERS = 5


@pytest.fixture(scope="module")
def table_with_snapshots(s3_server):
    """``db.t`` on S3 with RACERS snapshots (ids 0..9 in snapshot 1, 10..19 in 2, ...).

    Shared by the tests of this module (each races on its own name) to save setup time.
    """
    from s3support import S3Warehouse

    bucket = s3_server.new_bucket()
    wh = S3Warehouse(uri=f"s3://{bucket}/warehouse", bucket=bucket, options=s3_server.options(), server=s3_server)
    create_table(wh.uri, wh.options)
    table = open_table(wh.uri, wh.options)
    for s in range(RACERS):
        commit_batch(table, list(range(s * 10, s * 10 + 10)), "setup")
    return wh


def _race(fn, n: int = RACERS) -> list[tuple[int, object]]:
    """Run ``fn(i)`` in ``n`` threads released together; ``[(i, result or exception)]``."""
    barrier = threading.Barrier(n)

    def run(i: int) -> object:
        barrier.wait(timeout=60)
        try:
            return fn(i)
        except Exception as err:  # noqa: BLE001 - the test inspects who lost and how
            return err

    with ThreadPoolExecutor(n) as pool:
        return list(enumerate(pool.map(run, range(n))))


def _tables(wh, n: int = RACERS):
    """One table handle per racer, each from its own catalog (as separate tasks would)."""
    return [open_table(wh.uri, wh.options) for _ in range(n)]


def test_racing_tag_creations_have_one_winner(table_with_snapshots):
    wh = table_with_snapshots
    tables = _tables(wh)
    results = _race(lambda i: create_tag(tables[i], "release", snapshot_id=i + 1))
    winners = [i for i, r in results if isinstance(r, dict)]
    losers = [r for _, r in results if not isinstance(r, dict)]
    assert len(winners) == 1, results
    assert all(isinstance(r, AlreadyExistsError) for r in losers), losers
    tag = read_tag(TableLayout.of(tables[0]), None, "release")
    assert tag["id"] == winners[0] + 1  # the file is the winner's, not the last writer's


def test_racing_branch_creations_have_one_winner(table_with_snapshots):
    wh = table_with_snapshots
    tables = _tables(wh)
    results = _race(lambda i: create_branch(tables[i], "fix", snapshot_id=i + 1))
    winners = [i for i, r in results if isinstance(r, dict)]
    losers = [r for _, r in results if not isinstance(r, dict)]
    assert len(winners) == 1, results
    assert all(isinstance(r, (AlreadyExistsError, FileExistsError)) for r in losers), losers
    keys = wh.object_keys("warehouse/db.db/t/branch/")
    # only the winner's snapshot is on the branch, and no staging folder or claim is left
    assert [k for k in keys if "/snapshot/snapshot-" in k] == [
        f"warehouse/db.db/t/branch/branch-fix/snapshot/snapshot-{winners[0] + 1}"
    ]
    assert not [k for k in keys if "/.tmp-" in k or k.endswith(".claim")], keys
    branch = load_table(open_catalog(wh.uri, wh.options), "db.t", "fix")
    read = branch.new_read_builder()
    ids = sorted(read.new_read().to_arrow(read.new_scan().plan().splits()).column("id").to_pylist())
    assert ids == list(range((winners[0] + 1) * 10))


def test_racing_journals_let_one_branch_operation_run(table_with_snapshots):
    layout = TableLayout.of(open_table(table_with_snapshots.uri, table_with_snapshots.options))
    results = _race(lambda i: write_journal(layout, {"op": "fast-forward", "branch": f"b{i}", "plan": {}}))
    winners = [i for i, r in results if r is None]
    assert len(winners) == 1, results
    assert all(isinstance(r, ConcurrentModificationError) for _, r in results if r is not None)
    assert read_journal(layout)["branch"] == f"b{winners[0]}"
    remove_journal(layout)


def test_racing_consumer_saves_leave_one_whole_position(table_with_snapshots):
    """Consumers are overwritten in place (as Paimon does): a PUT is whole, last one wins."""
    tables = _tables(table_with_snapshots)
    results = _race(lambda i: save_next_snapshot(tables[i], "job-a", i + 2))
    assert all(r is None for _, r in results), results
    assert read_next_snapshot(tables[0], "job-a") in {i + 2 for i in range(RACERS)}
    key = "warehouse/db.db/t/consumer/consumer-job-a"
    body = table_with_snapshots.server.client().get_object(Bucket=table_with_snapshots.bucket, Key=key)["Body"]
    assert json.loads(body.read())["nextSnapshot"] in {i + 2 for i in range(RACERS)}


def test_create_new_on_a_bare_pypaimon_file_io_is_guarded_too(table_with_snapshots):
    """fileops given a table loaded with plain pypaimon still never double-creates."""
    wh = table_with_snapshots
    bare = [open_table(wh.uri, wh.options, plain=True).file_io for _ in range(RACERS)]
    path = f"{wh.uri}/db.db/t/tag/tag-bare"
    results = _race(lambda i: fileops.create_new(bare[i], path, f"writer {i}"))
    winners = [i for i, r in results if r is True]
    assert len(winners) == 1 and [r for _, r in results].count(False) == RACERS - 1, results
    assert fileops.read_text(bare[0], path) == f"writer {winners[0]}"
    assert read_ids(wh.uri, wh.options) == list(range(RACERS * 10))
