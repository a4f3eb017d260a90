"""``write_table``: Spark's own Parquet writer writes a Paimon table's data files; pypaimon commits them.

The ``paimon`` data source hands every row to Python (Arrow batches, pypaimon or
pyarrow writes the files). Paimon's data files are ordinary Parquet, so this path
lets Spark's JVM Parquet writer produce them and keeps only Paimon's part in Python:

1. **Plan** (driver): the same checks as the data source (``write_setup.plan_write``:
   options, table exists or ``create-table``, schema fits, ``overwrite-partition``
   parsed by column type), plus what this path supports: unaware-bucket append
   tables stored as Parquet (a bucketed or primary-key table is refused with a
   message naming the ``paimon`` data source, which writes those).
2. **Write** (executors): ``df.write.parquet`` into a staging folder under the table,
   ``_native_write_staging/<write id>/``. Partitioned tables are written with
   ``partitionBy`` on *copies* of the partition columns, so the partition columns
   stay inside the files as Paimon (Java and pypaimon) writes them; the copies only
   name the staging folders. Per write (the session's settings are restored after):
   timestamps as INT64 (``TIMESTAMP_MICROS``, or ``TIMESTAMP_MILLIS`` when every
   timestamp column is ``TIMESTAMP(3)``, as pypaimon stores those), the standard
   (non-legacy) Parquet layout, compression from ``file.compression`` with
   ``file.compression.zstd-level``. Decimals are written as Spark writes them: INT32 for
   precision <= 9, INT64 for <= 18, else fixed-length binary, which is Paimon Java's
   own layout (pypaimon writes fixed-length binary for all; both read all three).
3. **Place** (driver): each file's footer gives its row count, size, partition value
   and, with ``metadata.stats-mode=full``, column statistics (``footers``); the file is
   renamed to Paimon's name (``data-<write id>-<uuid>-0.parquet``, the data source's
   per-write prefix) in its partition's ``bucket-0/`` folder.
4. **Commit** (driver): the data source's own commit (``PaimonWriter.commit``): one
   APPEND or OVERWRITE snapshot (whole table, ``overwrite-partition``, or
   ``overwrite-mode=dynamic``), ``precommit-compact``, the lineage store check and the
   commit event that lineage capture and OpenLineage consume, and the table's snapshot
   expiry (``paimon.maintenance.after_commit``, off with ``write-only=true``).

Failure safety: a Spark job that fails leaves only the staging folder, which is
deleted; a failure after files were placed deletes them (the data source's ``abort``,
which also sweeps the write's file prefix); files are referenced only by the commit.
A driver killed outright can leave the staging folder (removed by the next
``write_table`` on the table once older than a day) and placed files (unreferenced,
named with the write's prefix: ``remove_orphan_files`` deletes them after its safety age).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_provider_paimon.paimon import faults, fileops
from airflow_provider_paimon.paimon.commit_properties import commit_properties
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partitions import format_partition_value, parse_partition_spec
from airflow_provider_paimon.spark.session_info import app_id

from .. import commit_events
from ..branch import redirect as branch_redirect
from ..datasource.fast_append import _has_special_fields, _map_shredding_active
from ..datasource.schema_merge import frame_casts
from ..datasource.types import table_arrow_schema
from ..datasource.write_setup import plan_write
from ..datasource.writer import PaimonWriter, TaskCommit, WritePlan, check_rows_in_partition
from ..lineage import guard as lineage_guard
from ..lineage.direct import SESSION_ENV
from ..lineage.routing_state import routed_environment
from ..options import PaimonOptions, parse_options
from ..session_info import session_conf
from .footers import Footer, footer_file_meta, read_footer

log = logging.getLogger(__name__)

WRITE_MODES = ("append", "overwrite")
# Staging folders live under the table (same file system: placing a file is a rename).
STAGING_DIR = "_native_write_staging"
# Staging folders of writes killed outright are removed by later writes after this long.
STALE_STAGING_S = 24 * 3600
FOOTER_THREADS = 8
# Paimon file.compression -> Spark's Parquet codec name (pyarrow's lz4 is LZ4_RAW).
_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4_raw",
    "brotli": "brotli",
    "none": "uncompressed",
    "uncompressed": "uncompressed",
}
_HIDDEN_PARTITION = "__paimon_partition_{}"
FAULT_BEFORE_COMMIT = "native_write.before_commit"


class NativeWriteUnsupportedError(InvalidArgumentError):
    """The table needs the ``paimon`` data source's writer (buckets, primary keys, ...)."""


@dataclass(frozen=True)
class WriteResult:
    """What ``write_table`` committed: the snapshot (None if nothing was written)."""

    snapshot_id: int | None
    row_count: int
    file_count: int


def write_table(
    df: Any,
    table: str,
    *,
    warehouse: str | None = None,
    mode: str = "append",
    branch: str | None = None,
    options: Mapping[str, Any] | None = None,
    replace_partitions: Sequence[Mapping[str, Any]] | None = None,
    snapshot_properties: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write ``df`` into Paimon table ``table`` (``db.t``) as one snapshot, Spark writing the files.

    ``mode``: ``"append"`` or ``"overwrite"`` (whole table; with option
    ``overwrite-partition`` one partition; with ``overwrite-mode=dynamic`` the
    partitions ``df`` has rows for). ``options`` are the ``paimon`` data source's
    (``create-table``, ``partition-keys``, ``precommit-compact``, Paimon table and
    catalog options, ...).

    ``replace_partitions`` (with ``mode="overwrite"``): replace exactly these
    partitions (``{"dt": "2026-11-01"}``, values as text or typed), emptying those
    ``df`` has no rows for, in one OVERWRITE snapshot; every row must lie in one of them.
    ``snapshot_properties`` are added to the snapshot's properties.
    """
    overwrite = _overwrite(mode)
    opts = write_options(table, warehouse=warehouse, branch=branch, options=options, spark=df.sparkSession)

    spark = df.sparkSession
    # the Airflow run (AIRFLOW_CTX_* of this driver) and the Spark app on the snapshot
    properties = {**commit_properties(spark_app_id=app_id(spark)), **dict(snapshot_properties or {})}
    plan = plan_write(opts, df.schema, overwrite, snapshot_properties=properties)
    if replace_partitions is not None:
        plan = _with_replaced_partitions(plan, replace_partitions)
    writer = PaimonWriter(plan)
    paimon_table = writer._table()
    task = write_files(spark, df, paimon_table, plan)
    with routed_events(spark):
        try:
            faults.check(FAULT_BEFORE_COMMIT)  # tests: files placed, nothing committed yet
            writer.commit([task])
        except BaseException:
            writer.abort([task])  # deletes the placed files unless the commit landed
            raise
    snapshot = writer._committed_snapshot(paimon_table)
    return WriteResult(
        snapshot_id=None if snapshot is None else int(snapshot.id),
        row_count=task.row_count,
        file_count=sum(len(m.new_files) for m in task.messages),
    )


def _with_replaced_partitions(plan: WritePlan, partitions: Sequence[Mapping[str, Any]]) -> WritePlan:
    """``plan`` overwriting exactly ``partitions``, each parsed by its columns' types."""
    from dataclasses import replace

    if not plan.overwrite:
        raise InvalidArgumentError("replace_partitions needs mode='overwrite'")
    if plan.static_partition or plan.dynamic_overwrite:
        raise InvalidArgumentError(
            "replace_partitions names the partitions itself: drop 'overwrite-partition' / 'overwrite-mode'"
        )
    table = PaimonWriter(plan)._table()
    if not table.partition_keys:
        raise InvalidArgumentError(f"{plan.opts.table} is not partitioned: overwrite it whole, without replace_partitions")
    typed = tuple(
        parse_partition_spec(
            table, {k: v if isinstance(v, str) else format_partition_value(v) for k, v in spec.items()},
            what="replace_partitions",
        )
        for spec in partitions
    )
    return replace(plan, replace_partitions=typed)


def _overwrite(mode: str) -> bool:
    value = str(mode).strip().lower()
    if value not in WRITE_MODES:
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    return value == "overwrite"


def write_options(
    table: str,
    *,
    warehouse: str | None,
    branch: str | None,
    options: Mapping[str, Any] | None,
    extra: Mapping[str, str] | None = None,
    spark: Any = None,
) -> PaimonOptions:
    """The data source's options for this write; arguments and options must agree.

    The branch is resolved with the session's redirects (``spark``, else the active
    session), as the ``paimon`` data source does.
    """
    raw = {str(k).lower(): str(v) for k, v in dict(options or {}).items() if v is not None}
    for key, value in (("table", table), ("warehouse", warehouse), ("branch", branch)):
        if value is None:
            continue
        if key in raw and raw[key] != str(value):
            raise InvalidArgumentError(
                f"{key} is given twice, as argument {value!r} and as option {raw[key]!r}; give it once"
            )
        raw[key] = str(value)
    if not raw.get("warehouse"):
        raise InvalidArgumentError(
            "write_table needs the warehouse: write_table(df, 'db.t', warehouse='file:///path/to/warehouse')"
        )
    raw.update(extra or {})
    return branch_redirect.apply_from_session(parse_options(raw), spark, what="writing")


# ---------------------------------------------------------------- support checks


def unsupported_reason(table: Any) -> str | None:
    """Why ``write_table`` cannot write ``table`` (the data source can), or None."""
    from pypaimon.common.options.core_options import ChangelogProducer, CoreOptions
    from pypaimon.table.bucket_mode import BucketMode

    options = table.options
    checks = (
        (bool(table.is_primary_key_table), "it is a primary-key table"),
        (table.bucket_mode() != BucketMode.BUCKET_UNAWARE, "it is a bucketed table (bucket > 0)"),
        (
            options.file_format(CoreOptions.FILE_FORMAT_PARQUET) != CoreOptions.FILE_FORMAT_PARQUET,
            "its file.format is not parquet",
        ),
        (bool(options.data_evolution_enabled(False)), "it has data evolution enabled"),
        (bool(options.row_tracking_enabled(False)), "it has row tracking enabled"),
        (bool(options.deletion_vectors_enabled(False)), "it has deletion vectors enabled"),
        (options.data_file_external_paths() is not None, "it writes to external data paths"),
        (options.changelog_producer() != ChangelogProducer.NONE, "it has a changelog producer"),
        (bool(options.variant_shredding_schema()), "it shreds variant columns"),
        (_has_special_fields(table), "it has a blob, vector or variant column"),
        (_map_shredding_active(table), "it shreds map columns"),
        (_timestamp_units(table_arrow_schema(table)) - {"ms", "us"} != set(), "it has TIMESTAMP(7..9) columns"),
        (_timestamp_units(table_arrow_schema(table)) == {"ms", "us"}, "it mixes TIMESTAMP(3) and TIMESTAMP(6) columns"),
    )
    for failed, reason in checks:
        if failed:
            return reason
    return None


def check_supported(table: Any, name: str) -> None:
    reason = unsupported_reason(table)
    if reason is not None:
        raise NativeWriteUnsupportedError(
            f"write_table cannot write table {name}: {reason}. write_table writes "
            "unaware-bucket append tables stored as Parquet; write this table with the "
            "paimon data source instead: df.write.format('paimon').option('warehouse', ...)"
            f".option('table', '{name}').mode(...).save()"
        )


def _timestamp_units(schema: pa.Schema) -> set[str]:
    units: set[str] = set()

    def visit(t: pa.DataType) -> None:
        if pa.types.is_timestamp(t):
            units.add(t.unit)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            visit(t.value_type)
        elif pa.types.is_map(t):
            visit(t.key_type)
            visit(t.item_type)
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i).type)

    for field in schema:
        visit(field.type)
    return units


# ---------------------------------------------------------------- writing the files


def write_files(spark: Any, df: Any, table: Any, plan: WritePlan) -> TaskCommit:
    """Spark writes ``df``'s rows as data files of ``table``; returns their commit messages.

    Nothing is committed. On failure every file this call wrote is gone.
    """
    check_supported(table, plan.opts.table)
    file_io = table.file_io
    root = table.table_path.rstrip("/")
    _remove_stale_staging(file_io, f"{root}/{STAGING_DIR}")
    staging = f"{root}/{STAGING_DIR}/{plan.commit_user}-{uuid.uuid4().hex[:8]}"
    if plan.merge is not None:  # write.merge-schema: casts (checked per value), null columns
        df = frame_casts(df, plan.merge)
    placed: list[str] = []
    try:
        _spark_write(spark, df, table, staging)
        task = _place(table, plan, staging, placed)
    except BaseException:
        for path in placed:
            file_io.delete_quietly(path)
        raise
    finally:
        file_io.delete_directory_quietly(staging)
        _remove_if_empty(file_io, f"{root}/{STAGING_DIR}")
    return task


def _remove_if_empty(file_io: Any, directory: str) -> None:
    if not fileops.list_names(file_io, directory):
        with contextlib.suppress(Exception):  # another write may be staging there right now
            file_io.delete(directory, False)


def _spark_write(spark: Any, df: Any, table: Any, staging: str) -> None:
    from pyspark.sql import functions as F

    schema = table_arrow_schema(table)
    keys = list(table.partition_keys or [])
    columns = [F.col(f"`{name}`") for name in schema.names]
    hidden = [F.col(f"`{k}`").alias(_HIDDEN_PARTITION.format(i)) for i, k in enumerate(keys)]
    writer = df.select(*columns, *hidden).write.format("parquet").mode("error")  # "errorifexists": not on Connect
    for key, value in parquet_options(table).items():
        writer = writer.option(key, value)
    if hidden:
        writer = writer.partitionBy(*[_HIDDEN_PARTITION.format(i) for i in range(len(keys))])
    with session_conf(spark, parquet_session_conf(schema)):
        writer.save(spark_path(staging))


def parquet_options(table: Any) -> dict[str, str]:
    """Spark Parquet writer options giving Paimon's Parquet settings for ``table``."""
    options = table.options
    codec = str(options.file_compression()).strip().lower()
    if codec not in _CODECS:
        raise InvalidArgumentError(
            f"table option file.compression={codec!r} has no Spark Parquet codec; "
            f"use one of {', '.join(sorted(_CODECS))}"
        )
    out = {"compression": _CODECS[codec]}
    if codec == "zstd":
        out["parquet.compression.codec.zstd.level"] = str(options.file_compression_zstd_level())
    return out


def parquet_session_conf(schema: pa.Schema) -> dict[str, str]:
    """SQL settings Spark's Parquet writer reads from the session (not from write options)."""
    units = _timestamp_units(schema)
    return {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS" if units == {"ms"} else "TIMESTAMP_MICROS",
        "spark.sql.parquet.writeLegacyFormat": "false",
    }


def spark_path(path: str) -> str:
    """The URI Spark's file sources use for a pypaimon path."""
    if path.startswith("/"):
        return f"file://{path}"
    if path.startswith("s3://"):
        return "s3a://" + path[len("s3://"):]
    return path


def _place(table: Any, plan: WritePlan, staging: str, placed: list[str]) -> TaskCommit:
    """Read the staged files' footers, move them to Paimon's layout, build commit messages."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path
    from pypaimon.write.commit_message import CommitMessage

    file_io = table.file_io
    schema = table_arrow_schema(table)
    keys = list(table.partition_keys or [])
    staged = list(_staged_files(file_io, staging))
    with_stats = bool(table.options.metadata_stats_enabled())
    with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, max(1, len(staged)))) as pool:
        footers: list[Footer] = list(
            pool.map(lambda p: read_footer(file_io, p, schema, keys, with_stats), staged)
        )
    if plan.static_partition:
        _check_static_partition(footers, keys, schema, plan.static_partition)
    prefix = plan.file_prefix or table.options.data_file_prefix()
    by_partition: dict[tuple, list[Any]] = {}
    rows = 0
    for path, footer in zip(staged, footers, strict=True):
        if footer.row_count == 0:
            continue
        name = f"{prefix}{uuid.uuid4()}-0.parquet"
        target = canonical_data_file_path(table, footer.partition, 0, name)
        placed.append(target)
        if not file_io.rename(path, target):
            raise OSError(f"cannot move staged data file {path} to {target}")
        by_partition.setdefault(footer.partition, []).append(footer_file_meta(table, name, target, footer))
        rows += footer.row_count
    messages = [
        CommitMessage(partition=partition, bucket=0, new_files=files, changelog_files=[], total_buckets=None)
        for partition, files in by_partition.items()
    ]
    return TaskCommit(messages=messages, row_count=rows)


def _staged_files(file_io: Any, directory: str) -> Iterator[str]:
    """Data files Spark wrote under ``directory`` (skips ``_SUCCESS``, ``.crc`` files)."""
    import pyarrow.fs as pafs

    for status in file_io.list_status(directory):
        name = status.base_name
        child = f"{directory.rstrip('/')}/{name}"
        if getattr(status, "type", None) == pafs.FileType.Directory:
            if name != "_temporary" and not name.startswith("."):  # partition folders
                yield from _staged_files(file_io, child)
        elif name.endswith(".parquet") and not name.startswith(("_", ".")):
            yield child


def _check_static_partition(
    footers: list[Footer], keys: list[str], schema: pa.Schema, spec: dict[str, Any]
) -> None:
    """Refuse rows outside ``overwrite-partition`` (the data source's check and message)."""
    values = sorted({f.partition for f in footers if f.row_count}, key=repr)
    if not values:
        return
    batch = pa.RecordBatch.from_arrays(
        [pa.array([v[i] for v in values], type=schema.field(k).type) for i, k in enumerate(keys)],
        names=keys,
    )
    check_rows_in_partition(batch, spec)


def _remove_stale_staging(file_io: Any, directory: str) -> None:
    """Delete staging folders left by writes killed outright more than a day ago."""
    cutoff_ms = (time.time() - STALE_STAGING_S) * 1000
    for name in fileops.list_names(file_io, directory):
        path = f"{directory}/{name}"
        mtime = fileops.mtime_millis(file_io, path)
        if mtime is not None and mtime < cutoff_ms:
            log.info("removing staging folder %s of a killed write", name)
            fileops.delete_tree(file_io, path)


# ---------------------------------------------------------------- lineage routing


@contextmanager
def routed_events(spark: Any) -> Iterator[None]:
    """Give this (driver) process the lineage capture's event log and store check.

    The capture routes them to the data source's Python workers inside the registered
    class (``lineage.routing_state``); ``write_table`` commits in the driver's own
    process, so the same names are set in its environment for the duration of the
    commit. (A Connect session routes nothing: its capture records in the commit.)
    """
    env = routed_environment(spark)
    added = []

    for key in (commit_events.EVENT_LOG_ENV, lineage_guard.PRECOMMIT_ENV, SESSION_ENV):
        value = env.get(key)
        if value and key not in os.environ:
            os.environ[key] = value
            added.append(key)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)
