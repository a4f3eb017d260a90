"""What lineage capture adds to a streaming job's micro-batch time.

The same streaming query (``readStream`` a Paimon table -> ``writeStream`` another)
runs once per configuration, on one local SparkSession, over the same source: ``--batches``
snapshots of ``--rows`` rows each (default 8 x 10,000), read one snapshot per
micro-batch (``max-snapshots-per-trigger=1``, ``processingTime`` trigger of 1 s, so one
10k-row micro-batch per second). Configurations:

* ``off``: no capture (the baseline);
* ``sqlite``: capture into a SQLite store;
* ``mariadb``: capture into MariaDB at ``--mysql-url`` (skipped when unreachable);
* ``sqlite+ol``: SQLite capture plus OpenLineage over HTTP to a local receiver.

Per batch time is Spark's own ``triggerExecution`` duration from the query progress;
the first batch of each query and ``--warmup`` whole uncounted queries are dropped.
Baseline and captured runs alternate for ``--rounds`` rounds, in a rotating order, so
machine load drifts into all of them. Prints the median per-batch
time per configuration and its ratio to the baseline (goal: <= 1.05).

    python benchmarks/lineage_overhead.py --batches 8 --rows 10000 --rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypaimon import CatalogFactory, Schema

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


def make_source(warehouse: str, batches: int, rows: int) -> None:
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.src", Schema.from_pyarrow_schema(SCHEMA), False)
    table = catalog.get_table("db.src")
    for b in range(batches):
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        ids = list(range(b * rows, (b + 1) * rows))
        write.write_arrow(pa.table({"id": ids, "payload": [f"p{i}" for i in ids]}, schema=SCHEMA))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()


def new_sink(warehouse: str) -> str:
    name = f"db.dst_{uuid.uuid4().hex[:8]}"
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
    return name


class Receiver:
    """A minimal Marquez-like ``POST /api/v1/lineage`` endpoint counting events."""

    def __init__(self) -> None:
        self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.count += 1
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()


def run_query(spark, warehouse: str, batches: int, checkpoint: str) -> list[float]:
    """Per-batch triggerExecution ms of one query over the whole source."""
    sink = new_sink(warehouse)
    query = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse).option("table", "db.src")
        .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
        .option("max-snapshots-per-trigger", "1")
        .load()
        .writeStream.format("paimon")
        .option("warehouse", warehouse).option("table", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + 60 + 30 * batches
    durations: dict[int, float] = {}
    while time.monotonic() < deadline and len(durations) < batches:
        if not query.isActive:
            raise RuntimeError(f"query failed: {query.exception()}")
        for progress in query.recentProgress:
            if progress["numInputRows"] > 0:
                durations[progress["batchId"]] = progress["durationMs"]["triggerExecution"]
        time.sleep(0.5)
    query.stop()
    ordered = [durations[k] for k in sorted(durations)]
    return ordered[1:]  # drop the warm-up batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mysql-url", default=os.environ.get("PAIMON_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test"))
    parser.add_argument("--configs", default="off,sqlite,mariadb,sqlite+ol")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted baseline queries first (JIT, workers)")
    args = parser.parse_args()

    from airflow_provider_paimon.spark.lineage.capture import enable_lineage_capture
    from airflow_provider_paimon.spark.session import local_session, session_conf

    work = tempfile.mkdtemp(prefix="lineage-overhead-")
    warehouse = os.path.join(work, "warehouse")
    os.makedirs(warehouse)
    make_source(warehouse, args.batches + 1, args.rows)
    receiver = Receiver()
    mysql_database = f"bench_{uuid.uuid4().hex[:8]}"
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if "mariadb" in configs and not mysql_reachable(args.mysql_url):
        print(f"MariaDB at {args.mysql_url} unreachable: skipping 'mariadb'")
        configs.remove("mariadb")

    def conf_for(config: str) -> dict[str, str]:
        if config == "off":
            return {}
        conf = {
            "spark.paimon.lineage.job": f"bench.{config}",
            "spark.paimon.lineage.spoolDir": os.path.join(work, "spool"),
            "spark.paimon.lineage.url": f"sqlite:///{os.path.join(work, 'lineage.sqlite')}",
        }
        if config == "mariadb":
            conf["spark.paimon.lineage.url"] = args.mysql_url
            conf["spark.paimon.lineage.database"] = mysql_database
        if config.endswith("+ol"):
            conf["spark.paimon.openlineage.transport.type"] = "http"
            conf["spark.paimon.openlineage.transport.url"] = receiver.url
        return conf

    spark = local_session("lineage-overhead")
    results: dict[str, list[float]] = {c: [] for c in configs}
    store_ms: dict[str, list[float]] = {c: [] for c in configs}
    try:
        for w in range(args.warmup):
            with contextlib.suppress(RuntimeError):
                run_query(spark, warehouse, args.batches + 1, os.path.join(work, f"ckpt-warmup-{w}"))
            print(f"warm-up {w + 1} done", flush=True)
        for r in range(args.rounds):
            shift = r % len(configs)  # rotate the order: no config always runs first
            for config in configs[shift:] + configs[:shift]:
                with session_conf(spark, conf_for(config)):
                    capture = enable_lineage_capture(spark) if config != "off" else None
                    try:
                        times = []
                        for attempt in range(3):  # an overloaded machine may time a worker out
                            try:
                                checkpoint = os.path.join(work, f"ckpt-{config}-{r}-{attempt}")
                                times = run_query(spark, warehouse, args.batches + 1, checkpoint)
                                break
                            except RuntimeError as err:
                                print(f"round {r + 1} {config}: {str(err)[:200]}; retrying", flush=True)
                    finally:
                        if capture is not None:
                            capture.close()
                            store_ms[config].extend(s * 1000 for s in capture.recorder.delivery_seconds)
                results[config].extend(times)
                print(f"round {r + 1} {config:10s} batches={len(times)} median={_median(times):.0f} ms", flush=True)
    finally:
        spark.stop()
        receiver.stop()
        if "mariadb" in configs:
            drop_mysql_database(args.mysql_url, mysql_database)
        shutil.rmtree(work, ignore_errors=True)

    base = _median(results.get("off", []))
    print()
    print(f"{args.rows} rows per micro-batch, {args.batches} measured batches x {args.rounds} rounds")
    print("batch ms: Spark's triggerExecution; store ms: the capture's write per batch, done")
    print("off the query thread (listener), shown to size the work the capture adds")
    print(f"{'config':12s} {'median ms':>10s} {'mean ms':>10s} {'ratio':>7s} {'store ms':>9s}")
    for config in configs:
        times = results[config]
        ratio = _median(times) / base if base else float("nan")
        mean = statistics.fmean(times) if times else float("nan")
        print(f"{config:12s} {_median(times):10.0f} {mean:10.0f} {ratio:7.3f} {_median(store_ms[config]):9.1f}")
    print(f"OpenLineage events received: {receiver.count}")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def mysql_reachable(url: str) -> bool:
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
        return True
    except Exception:  # noqa: BLE001
        return False


def drop_mysql_database(url: str, database: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{database}`"))
    engine.dispose()


if __name__ == "__main__":
    main()
