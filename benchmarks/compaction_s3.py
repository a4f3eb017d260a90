"""Benchmark: where compaction pays, a table of small files on object storage.

On a local disk a file costs about a millisecond, so compaction saved little
(benchmarks/compaction.py). On object storage every file is at least one request.
This script measures that: the loopback S3 server (moto) behind a small TCP proxy that
holds every HTTP request ``--latency-ms`` (default 15 ms) before passing it on, an
append table of ``--files`` (default 2,000) small files written with plain pypaimon,
then one compaction, and prints planning and full-scan times before and after, through
pypaimon and through the Spark ``paimon`` source, side by side with their ratios.

"Before" is the same table read at its pre-compaction snapshot (time travel: the small
files and their manifests are still there, nothing was expired), so both sides read
identical rows through the same proxy in the same run. Each figure is the best and the
median of ``--repeats`` runs, before and after interleaved, after one discarded warm-up
of each. The table is written and compacted without the latency (straight to the server).

Usage: ``python benchmarks/compaction_s3.py`` or ``--files 500 --latency-ms 10``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # s3support: the loopback S3 server the tests use
sys.path.insert(0, str(ROOT / "benchmarks"))

from compaction import SCHEMA, manifest_counts, rows_per_file, write_small_files  # noqa: E402
from pypaimon import Schema  # noqa: E402
from s3support import start_loopback_s3  # noqa: E402

from airflow_provider_paimon.paimon.catalog import load_table, open_catalog  # noqa: E402
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions  # noqa: E402
from airflow_provider_paimon.paimon.compaction.runner import compact  # noqa: E402

TABLE = "bench.events"
_METHODS = (b"GET ", b"PUT ", b"HEAD ", b"POST ", b"DELETE ")


class LatencyProxy:
    """A TCP proxy on 127.0.0.1 that delays each HTTP request by ``latency`` seconds.

    A request is recognised by its first bytes (an HTTP method) at the start of a chunk
    from the client; body chunks of uploads pass at once. Responses are not delayed: one
    hold per request models a round trip to a remote store.
    """

    def __init__(self, target_port: int, latency: float) -> None:
        self.target_port = target_port
        self.latency = latency
        self.requests = 0
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, client_reader, client_writer) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return

        async def pipe(reader, writer, delay: bool) -> None:
            try:
                while True:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    if delay and chunk.startswith(_METHODS):
                        self.requests += 1
                        await asyncio.sleep(self.latency)
                    writer.write(chunk)
                    await writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                with contextlib.suppress(Exception):  # already closed
                    writer.close()

        await asyncio.gather(pipe(client_reader, up_writer, True), pipe(up_reader, client_writer, False))

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def stats(values: list[float]) -> str:
    return f"best {min(values):7.2f}s  median {statistics.median(values):7.2f}s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--mb", type=float, default=50.0, help="table size in MB (default 50)")
    parser.add_argument("--latency-ms", type=float, default=15.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-spark", action="store_true", help="pypaimon only")
    args = parser.parse_args()

    server = start_loopback_s3()
    proxy = LatencyProxy(int(server.endpoint.rsplit(":", 1)[1]), args.latency_ms / 1000)
    try:
        bucket = server.new_bucket("bench")
        warehouse = f"s3://{bucket}/warehouse"
        direct = server.options()
        slow = {**direct, "fs.s3.endpoint": proxy.endpoint}
        print(f"loopback S3 {server.endpoint}, proxy {proxy.endpoint} holding each request "
              f"{args.latency_ms:g} ms; {os.cpu_count()} cores")

        started = time.perf_counter()
        catalog = open_catalog(warehouse, direct)
        catalog.create_database("bench", True)
        catalog.create_table(TABLE, Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"]), False)
        rows = rows_per_file(int(args.mb * 1024 * 1024 / args.files))
        write_small_files(load_table(catalog, TABLE), args.files, rows, 1)
        print(f"wrote {args.files} files ({rows} rows each) in {time.perf_counter() - started:.0f}s (no latency)")

        # compaction runs straight against the server: its own cost is benchmarks/compaction.py's
        table = load_table(open_catalog(warehouse, direct), TABLE)
        before_id = table.snapshot_manager().get_latest_snapshot().id
        manifests_before = manifest_counts(table)
        t_compact = timed(lambda: compact(table, CompactionOptions.from_table(table, {})))
        table = load_table(open_catalog(warehouse, slow), TABLE)
        after_id = table.snapshot_manager().get_latest_snapshot().id
        manifests_after = manifest_counts(table)
        files_after = sum(len(s.files) for s in table.new_read_builder().new_scan().plan().splits())
        print(f"compaction (pypaimon, one process, no latency): {t_compact:.1f}s; "
              f"snapshot {before_id} -> {after_id}, {args.files} -> {files_after} files; manifests "
              f"(files, entries) {manifests_before} -> {manifests_after}")

        def at(snapshot_id: int):
            return load_table(open_catalog(warehouse, slow), TABLE).copy({"scan.snapshot-id": str(snapshot_id)})

        def plan(snapshot_id: int) -> None:
            at(snapshot_id).new_read_builder().new_scan().plan()

        def scan(snapshot_id: int) -> None:
            rb = at(snapshot_id).new_read_builder()
            rb.new_read().to_arrow(rb.new_scan().plan().splits())

        measures = {"pypaimon plan": plan, "pypaimon plan + full scan": scan}
        if not args.no_spark:
            from airflow_provider_paimon.spark.session import local_session

            spark = local_session("compaction-s3-bench")

            def spark_scan(snapshot_id: int) -> None:
                df = (spark.read.format("paimon").options(**slow).option("warehouse", warehouse)
                      .option("table", TABLE).option("snapshot-id", str(snapshot_id)).load())
                df.selectExpr("sum(id)", "count(*)").collect()

            measures["Spark paimon source full scan"] = spark_scan

        results: dict[str, tuple[list[float], list[float], int, int]] = {}
        for name, fn in measures.items():
            fn(before_id)  # warm-up, discarded
            fn(after_id)
            before, after = [], []
            req_before = req_after = 0
            for _ in range(args.repeats):
                n = proxy.requests
                before.append(timed(lambda fn=fn: fn(before_id)))
                req_before = proxy.requests - n
                n = proxy.requests
                after.append(timed(lambda fn=fn: fn(after_id)))
                req_after = proxy.requests - n
            results[name] = (before, after, req_before, req_after)

        print(f"\n{'':32}{'before (small files)':>36}{'after compaction':>36}{'ratio':>10}{'requests':>16}")
        for name, (before, after, rb_, ra) in results.items():
            ratio = min(before) / min(after)
            print(f"{name:32}{stats(before):>36}{stats(after):>36}{ratio:>9.1f}x{rb_:>8} -> {ra}")
        print("\nratio = best before / best after (higher: compaction pays more); requests = HTTP "
              "requests through the proxy in one run")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
