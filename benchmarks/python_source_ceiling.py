"""How fast can ANY Spark Python data source be here? The ceiling behind spark_io.py.

    python benchmarks/python_source_ceiling.py [--rows 5000000] [--repeat 3]

Two sources that do no Paimon work at all, timed against Spark's built-in Parquet in
the same session on the same DataFrame as ``spark_io.py``:

- **write**: a sink that only consumes the Arrow batches Spark sends it (no encoding,
  no files) vs ``df.write.parquet``;
- **read**: a source that yields Arrow batches already decoded in the Python worker's
  memory (decoded once, in the untimed warm-up round) vs ``spark.read.parquet`` of
  the same files; both hash every column of every row.

Whatever a real source does in Python comes on top, so the printed ratios bound what
the ``paimon`` source can reach on this machine (see docs/datasource.md).
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from spark_io import cached_input, full_scan, ratios, workload_parser

from airflow_provider_paimon.spark.session import local_session

# Decoded batches per input partition, kept in the (reused) Python worker.
_DECODED: dict[tuple[str, ...], list[Any]] = {}


class _Files(InputPartition):
    def __init__(self, files: list[str]) -> None:
        self.files = files


class _MemoryReader(DataSourceReader):
    def __init__(self, schema: Any, files: list[str], partitions: int) -> None:
        self.schema = schema
        self.files = files
        self.partitions_wanted = partitions

    def partitions(self) -> list[_Files]:
        n = self.partitions_wanted
        return [_Files(self.files[i::n]) for i in range(n)]

    def read(self, partition: _Files):
        import pyarrow.parquet as pq

        from airflow_provider_paimon.spark.datasource.types import (
            conform_batch,
            spark_to_arrow_schema,
        )

        key = tuple(partition.files)
        if key not in _DECODED:
            target = spark_to_arrow_schema(self.schema)
            _DECODED[key] = [
                conform_batch(batch, target)
                for path in partition.files
                for batch in pq.ParquetFile(path).iter_batches(batch_size=65536)
            ]
        yield from _DECODED[key]


class _NullWriter(DataSourceArrowWriter):
    def write(self, iterator):
        for _batch in iterator:
            pass
        return WriterCommitMessage()


class CeilingSource(DataSource):
    """``memory`` reads decoded batches from the worker's memory; writes go nowhere."""

    @classmethod
    def name(cls) -> str:
        return "ceiling"

    def reader(self, schema):
        files = self.options["files"].split(",")
        return _MemoryReader(schema, files, int(self.options.get("partitions", "2")))

    def writer(self, schema, overwrite):
        return _NullWriter()


def _time(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    args = workload_parser(__doc__.split("\n")[0]).parse_args(argv)

    spark = local_session("benchmark-python-source-ceiling", master=args.master)
    spark.dataSource.register(CeilingSource)
    workdir = tempfile.mkdtemp(prefix="source-ceiling-")
    try:
        df = cached_input(spark, args)
        files_dir = os.path.join(workdir, "files")
        df.write.parquet(files_dir)
        files = sorted(glob.glob(os.path.join(files_dir, "*.parquet")))
        parquet = spark.read.parquet(*files)
        memory = (
            spark.read.format("ceiling").schema(parquet.schema)
            .option("files", ",".join(files)).option("partitions", "2").load()
        )
        times: dict[str, list[float]] = {k: [] for k in ("write null", "write parquet", "read memory", "read parquet")}
        for rep in range(-1, args.repeat):  # rep -1 warms up (and decodes into memory)
            out = os.path.join(workdir, f"out-{rep}")
            rnd = {
                "write parquet": _time(lambda out=out: df.write.parquet(out)),
                "write null": _time(lambda: df.write.format("ceiling").mode("append").save()),
                "read parquet": _time(lambda: full_scan(parquet)),
                "read memory": _time(lambda: full_scan(memory)),
            }
            print(f"rep {rep}: " + ", ".join(f"{k} {v:.2f}s" for k, v in rnd.items()), flush=True)
            if rep >= 0:
                for k, v in rnd.items():
                    times[k].append(v)
            shutil.rmtree(out, ignore_errors=True)

        print(
            f"\nrows={args.rows:,} repeat={args.repeat} master={spark.sparkContext.master} "
            f"cpus={os.cpu_count()} load average {os.getloadavg()[0]:.1f}"
        )
        for op, ours, base in (("write", "write null", "write parquet"), ("read", "read memory", "read parquet")):
            best, median = ratios(times[ours], times[base])
            print(
                f"{op:<5} python source doing nothing {min(times[ours]):.2f}s | Spark Parquet "
                f"{min(times[base]):.2f}s | ceiling ratio {best:.2f}x best ({median:.2f}x median)"
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
