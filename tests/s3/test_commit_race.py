"""N writers racing snapshot commits to one table on the loopback S3 server.

The reference is plain pypaimon reading the table back: every row of every commit that
returned must be there exactly once, and there must be one snapshot per commit. The
first test shows that plain pypaimon (exists-then-move) breaks that, so the check can
fail; the others show that tables loaded through our catalog do not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from commit_race import commit_batch, create_table, open_table, read_ids

from airflow_provider_paimon.paimon.storage import CommitSafeFileIO

HERE = Path(__file__).resolve().parent
WRITERS = 6


def _race_round(s3_warehouse, round_no: int, *, plain: bool) -> list[int]:
    """One round: WRITERS threads commit at the same moment; returns the ids committed."""
    tables = [open_table(s3_warehouse.uri, s3_warehouse.options, plain=plain) for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS)
    batches = [list(range((round_no * WRITERS + w) * 10, (round_no * WRITERS + w) * 10 + 10)) for w in range(WRITERS)]
    with ThreadPoolExecutor(WRITERS) as pool:
        futures = [
            pool.submit(commit_batch, tables[w], batches[w], f"w{w}", barrier) for w in range(WRITERS)
        ]
        for f in futures:
            f.result()  # a commit that raises fails the test: none may
    return [i for batch in batches for i in batch]


def _snapshot_ids(s3_warehouse) -> list[int]:
    prefix = "warehouse/db.db/t/snapshot/snapshot-"
    return sorted(int(k[len(prefix):]) for k in s3_warehouse.object_keys(prefix))


def test_plain_pypaimon_silently_loses_racing_commits(s3_warehouse):
    """The baseline: every commit returns, yet rows go missing (this is what we fix)."""
    create_table(s3_warehouse.uri, s3_warehouse.options)
    committed: list[int] = []
    for round_no in range(5):
        committed += _race_round(s3_warehouse, round_no, plain=True)
        if len(read_ids(s3_warehouse.uri, s3_warehouse.options)) < len(committed):
            break
    ids = read_ids(s3_warehouse.uri, s3_warehouse.options)
    assert len(ids) < len(committed), "plain pypaimon kept every racing commit: the race was not provoked"
    assert len(_snapshot_ids(s3_warehouse)) < len(committed) // 10


def test_racing_threads_lose_no_commit_through_our_catalog(s3_warehouse):
    create_table(s3_warehouse.uri, s3_warehouse.options)
    assert isinstance(open_table(s3_warehouse.uri, s3_warehouse.options).file_io, CommitSafeFileIO)
    committed: list[int] = []
    committed += _race_round(s3_warehouse, 0, plain=False)
    ids = read_ids(s3_warehouse.uri, s3_warehouse.options)
    assert ids == sorted(committed)  # none lost, none doubled
    assert _snapshot_ids(s3_warehouse) == list(range(1, WRITERS + 1))
    latest = s3_warehouse.server.client().get_object(
        Bucket=s3_warehouse.bucket, Key="warehouse/db.db/t/snapshot/LATEST"
    )["Body"].read()
    assert int(latest) == WRITERS
    # nothing left behind by the commits: no temporary objects, no probes
    leftovers = [k for k in s3_warehouse.object_keys("warehouse/db.db/t/snapshot/") if "/." in k or k.endswith(".tmp")]
    assert leftovers == []


def test_racing_processes_lose_no_commit(s3_warehouse):
    """Separate processes (as separate Airflow tasks or Spark drivers would be)."""
    create_table(s3_warehouse.uri, s3_warehouse.options)
    procs = []
    expected: list[int] = []
    for w in range(2):
        batches = [list(range(1000 * w + 10 * b, 1000 * w + 10 * b + 10)) for b in range(4)]
        expected += [i for batch in batches for i in batch]
        job = {"warehouse": s3_warehouse.uri, "options": s3_warehouse.options, "writer": f"p{w}", "batches": batches}
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "commit_race.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])},
        )
        proc.stdin.write(json.dumps(job))
        proc.stdin.close()
        procs.append(proc)
    landed: list[int] = []
    for proc in procs:
        out = proc.stdout.read()
        assert proc.wait(timeout=180) == 0, out[-2000:]
        for line in out.splitlines():
            if not line.startswith("{"):
                continue  # log output
            result = json.loads(line)
            assert "error" not in result, result
            landed += result["ids"]
    assert sorted(landed) == sorted(expected)
    assert read_ids(s3_warehouse.uri, s3_warehouse.options) == sorted(expected)
    assert _snapshot_ids(s3_warehouse) == list(range(1, 9))


def test_compaction_racing_appends_loses_nothing(s3_warehouse):
    """The COMPACT commit and APPEND commits race for the same snapshot id."""
    from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
    from airflow_provider_paimon.paimon.compaction.runner import compact

    small = {"compaction.min.file-num": "3", "target-file-size": "32kb", "source.split.open-file-cost": "1b"}
    create_table(s3_warehouse.uri, s3_warehouse.options, table_options=small)
    setup = open_table(s3_warehouse.uri, s3_warehouse.options)
    for s in range(4):
        commit_batch(setup, list(range(s * 10, s * 10 + 10)), "setup")
    appenders = [open_table(s3_warehouse.uri, s3_warehouse.options) for _ in range(3)]
    compactor = open_table(s3_warehouse.uri, s3_warehouse.options)
    barrier = threading.Barrier(len(appenders) + 1)

    def before_commit(attempt: int) -> None:
        if attempt == 1:
            barrier.wait(timeout=60)

    appended = [list(range(100 + a * 10, 100 + a * 10 + 10)) for a in range(len(appenders))]
    with ThreadPoolExecutor(len(appenders) + 1) as pool:
        compaction = pool.submit(compact, compactor, CompactionOptions.from_table(compactor), before_commit=before_commit)
        appends = [pool.submit(commit_batch, t, ids, f"a{i}", barrier) for i, (t, ids) in enumerate(zip(appenders, appended, strict=True))]
        for f in appends:
            f.result()
        result = compaction.result()
    assert result.committed
    expected = list(range(40)) + [i for ids in appended for i in ids]
    assert read_ids(s3_warehouse.uri, s3_warehouse.options) == sorted(expected)
    client = s3_warehouse.server.client()
    kinds = [
        json.loads(client.get_object(Bucket=s3_warehouse.bucket, Key=f"warehouse/db.db/t/snapshot/snapshot-{i}")["Body"].read())["commitKind"]
        for i in _snapshot_ids(s3_warehouse)
    ]
    assert sorted(kinds) == ["APPEND"] * 7 + ["COMPACT"]
    assert _snapshot_ids(s3_warehouse) == list(range(1, 9))
