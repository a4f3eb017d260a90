"""The sweep after a compaction commit: listing a bucket folder for an attempt's leftover files.

After every commit (and after a failed attempt) a compaction deletes the files its
attempt wrote but did not commit (duplicate task attempts), by name prefix, in each
bucket folder it wrote to (``compaction.result.delete_attempt_files``). Ours lists a
local folder by name once (``os.listdir``) for both prefixes (data and changelog
files); the baseline is what it replaced: pypaimon's ``list_status`` once per prefix,
which stats every file of the folder. The folders hold ``--files`` data files each
(a primary-key bucket between compactions holds tens; an append bucket can hold
thousands); nothing matches the prefixes, as after a clean commit.

    python benchmarks/compaction_sweep.py                   # 20, 200, 2000 files per folder
    python benchmarks/compaction_sweep.py --files 50,500 --repeat 50
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypaimon.filesystem.local_file_io import LocalFileIO

from airflow_provider_paimon.paimon.compaction.result import base_name, folder_names

PREFIXES = ("data-compact-0123456789ab-", "changelog-compact-0123456789ab-")


def baseline(file_io, folder: str) -> int:
    """pypaimon's list_status once per prefix (what the sweep did before)."""
    hits = 0
    for prefix in PREFIXES:
        for status in file_io.list_status(folder):
            hits += base_name(status).startswith(prefix)
    return hits


def ours(file_io, folder: str) -> int:
    return sum(name.startswith(PREFIXES) for name in folder_names(file_io, folder))


def timed(fn, file_io, folder: str, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        began = time.process_time()
        fn(file_io, folder)
        samples.append(time.process_time() - began)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="20,200,2000", help="files per bucket folder, comma-separated")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU ms per folder, median of {args.repeat}")
    print(f"{'files':>7} {'ours ms':>9} {'baseline ms':>12} {'baseline/ours':>14}")
    file_io = LocalFileIO()
    for count in (int(n) for n in args.files.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            for i in range(count):
                with open(os.path.join(folder, f"data-{i:08d}-0.parquet"), "wb") as f:
                    f.write(b"x")
            assert ours(file_io, folder) == baseline(file_io, folder) == 0
            a = timed(ours, file_io, folder, args.repeat) * 1000
            b = timed(baseline, file_io, folder, args.repeat) * 1000
            print(f"{count:>7} {a:>9.3f} {b:>12.3f} {b / a:>13.1f}x")


if __name__ == "__main__":
    main()
