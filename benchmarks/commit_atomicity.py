"""What a safe commit costs on S3: plain pypaimon (unsafe) vs conditional PUT vs SQL lock.

On the loopback S3 server (moto), for each mode: a fresh table, warm-up commits
discarded, then ``--commits`` single-writer commits of a small batch, timed (median and
best), and the same number again with moto's request recorder on, to count the S3
requests per commit (all of them, and those on ``snapshot/``: the commit itself and the
``LATEST`` hint). The ratio column is the mode's median over plain pypaimon's, same run.

    python benchmarks/commit_atomicity.py --commits 20
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "s3"))

from commit_race import commit_batch, create_table, open_table  # noqa: E402
from s3support import start_loopback_s3  # noqa: E402


def _moto(server, path: str, method: str = "POST") -> bytes:
    req = urllib.request.Request(server.endpoint + path, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req) as resp:
        return resp.read()


def _commits(table, n: int, start: int) -> list[float]:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        commit_batch(table, [start + i], "bench")
        times.append(time.perf_counter() - t0)
    return times


def run_mode(server, name: str, extra: dict[str, str], plain: bool, commits: int, warmup: int) -> dict:
    bucket = server.new_bucket("bench")
    uri, options = f"s3://{bucket}/warehouse", {**server.options(), **extra}
    create_table(uri, options)
    table = open_table(uri, options, plain=plain)
    _commits(table, warmup, 0)
    times = _commits(table, commits, 1000)
    _moto(server, "/moto-api/recorder/reset-recording")
    _moto(server, "/moto-api/recorder/start-recording")
    _commits(table, commits, 2000)
    _moto(server, "/moto-api/recorder/stop-recording")
    lines = _moto(server, "/moto-api/recorder/download-recording", "GET").decode().splitlines()
    methods: Counter[str] = Counter()
    snapshot_requests = 0
    for line in lines:
        rec = json.loads(line)
        if bucket not in rec.get("url", ""):
            continue
        methods[rec["method"]] += 1
        snapshot_requests += "/snapshot/" in rec["url"]
    return {
        "mode": name,
        "median_ms": statistics.median(times) * 1000,
        "best_ms": min(times) * 1000,
        "requests": sum(methods.values()) / commits,
        "snapshot_requests": snapshot_requests / commits,
        "methods": {m: round(c / commits, 1) for m, c in sorted(methods.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="commit-bench-")
    # moto's request recorder writes its log here (inherited by the server process)
    os.environ["MOTO_RECORDER_FILEPATH"] = os.path.join(tmp, "moto_recording")
    server = start_loopback_s3()
    try:
        modes = [
            ("plain pypaimon (unsafe)", {}, True),
            ("conditional-put", {}, False),
            ("lock (SQLite file)", {"commit.atomicity": "lock", "commit.lock.url": f"sqlite:///{tmp}/locks.sqlite"}, False),
        ]
        rows = [run_mode(server, n, e, p, args.commits, args.warmup) for n, e, p in modes]
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    base = rows[0]["median_ms"]
    print(f"{'mode':28} {'median ms':>10} {'best ms':>8} {'vs plain':>8} {'S3 req':>7} {'on snapshot/':>12}  per commit")
    for r in rows:
        print(
            f"{r['mode']:28} {r['median_ms']:10.1f} {r['best_ms']:8.1f} {r['median_ms'] / base:7.2f}x "
            f"{r['requests']:7.1f} {r['snapshot_requests']:12.1f}  {r['methods']}"
        )



if __name__ == "__main__":
    main()
