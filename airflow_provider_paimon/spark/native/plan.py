"""Plan a native read on the driver: which data files Spark's own readers can read, and how.

pypaimon does what is Paimon's: it opens the table (branch, snapshot or tag), reads
the manifests and prunes partitions and files with the ``filter`` given to
``read_table`` (partition values and per-file min/max statistics). This module then
sorts the planned files into

* **native groups**: plain Parquet/ORC files that Spark's built-in file source can
  read as they are. Files are grouped by (format, schema id), because a file holds
  the columns of the schema it was written under; each group carries that file
  schema and the mapping to the read schema *by field id*, as Paimon maps them
  (a renamed column follows its id, an added one reads as NULL, a widened one is
  cast, a dropped-and-re-added name never revives old data);
* **Python splits**: everything Spark cannot read byte for byte the way Paimon
  means it (primary-key splits that need a merge, files with deletion vectors,
  Avro or other formats, types Spark's readers decode differently, schema changes
  that are not plain widenings). They are read by the ``paimon`` data source's
  reader, so one ``read_table`` call always returns the right rows.

``ReadPlan.summary()`` is the one line ``read_table`` logs; ``ReadPlan.explain()``
lists which file took which path and why.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.planning import Planner, unsupported_reason

from ..branch import redirect as branch_redirect
from ..datasource.types import arrow_to_spark_type, table_spark_schema
from ..options import PaimonOptions, parse_options
from ..tables import batch_read_options, open_table
from .filters import compile_filter

NATIVE_FORMATS = ("parquet", "orc")
_INTEGERS = (ByteType, ShortType, IntegerType, LongType)


@dataclass(frozen=True)
class FieldMapping:
    """One read-schema column of a native group: where it comes from in the group's files."""

    name: str  # name in the read schema
    data_type: DataType  # type in the read schema
    file_name: str | None  # name in the files (None: added after these files, reads NULL)
    file_type: DataType | None  # type in the files (a cast when it differs)


@dataclass
class NativeGroup:
    """Files of one format written under one schema: one ``spark.read`` of them."""

    format: str
    schema_id: int
    paths: list[str]
    fields: list[FieldMapping]
    rows: int = 0
    size: int = 0

    @property
    def file_schema(self) -> StructType:
        """The schema Spark reads the files with: the files' own names and types."""
        return StructType(
            [
                StructField(f.file_name, f.file_type, True)
                for f in self.fields
                if f.file_name is not None and f.file_type is not None  # both None: added later
            ]
        )


@dataclass
class ReadPlan:
    """What one ``read_table`` call reads, and along which path."""

    table: str
    branch: str
    snapshot_id: int | None
    schema: StructType
    options: PaimonOptions
    filter: str | None = None
    compiled_filter: Any = None  # filters.CompiledFilter: the rows the DataFrame keeps
    native: list[NativeGroup] = field(default_factory=list)
    python_splits: list[Any] = field(default_factory=list)
    python_reasons: Counter = field(default_factory=Counter)  # reason -> files
    python_files: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    @property
    def native_files(self) -> int:
        return sum(len(g.paths) for g in self.native)

    @property
    def python_file_count(self) -> int:
        return len(self.python_files)

    def summary(self) -> str:
        """One line: table, snapshot, how many files went which way (and why)."""
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(self.python_reasons.items()))
        snap = self.snapshot_id if self.snapshot_id is not None else "none (empty table)"
        return (
            f"read_table {self.table} branch={self.branch} snapshot={snap}: "
            f"{self.native_files} file(s) in {len(self.native)} group(s) read by Spark's own readers, "
            f"{self.python_file_count} file(s) in {len(self.python_splits)} split(s) by the Python reader"
            + (f" ({reasons})" if reasons else "")
            + (f"; filter: {self.filter}" if self.filter else "")
        )

    def explain(self) -> str:
        """Every file and its path, for a person (``print(df.native_plan.explain())``)."""
        lines = [self.summary()]
        for g in self.native:
            lines.append(f"  native {g.format} schema-id {g.schema_id}: {len(g.paths)} file(s), {g.rows} row(s)")
            renamed = [f"{f.file_name}->{f.name}" for f in g.fields if f.file_name and f.file_name != f.name]
            added = [f.name for f in g.fields if f.file_name is None]
            cast = [f.name for f in g.fields if f.file_type is not None and f.file_type != f.data_type]
            for label, items in (("renamed", renamed), ("added (NULL)", added), ("cast", cast)):
                if items:
                    lines.append(f"    {label}: {', '.join(items)}")
            lines.extend(f"    {p}" for p in g.paths)
        for path, reason in self.python_files:
            lines.append(f"  python ({reason}): {path}")
        return "\n".join(lines)


def read_options(
    name: str,
    *,
    warehouse: str | None,
    branch: str | None,
    snapshot_id: int | None,
    tag: str | None,
    options: Mapping[str, Any] | None,
    spark: Any = None,
) -> PaimonOptions:
    """The data source's option object for a ``read_table`` call (same names, same checks).

    The branch is resolved with the session's redirects (``spark``, else the active
    session; none without one), as the ``paimon`` data source does.
    """
    raw = {str(k): str(v) for k, v in dict(options or {}).items() if v is not None}
    for key, value in (("warehouse", warehouse), ("branch", branch), ("snapshot-id", snapshot_id), ("tag", tag)):
        if value is None:
            continue
        given = raw.get(key)
        if given is not None and given != str(value):
            raise InvalidArgumentError(
                f"{key!r} given twice with different values ({value!r} as an argument, "
                f"{given!r} in options); pass it once"
            )
        raw[key] = str(value)
    raw["table"] = name
    return branch_redirect.apply_from_session(parse_options(raw), spark, what="reading")



def plan_read(
    name: str,
    *,
    warehouse: str | None = None,
    branch: str | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    options: Mapping[str, Any] | None = None,
    filter: str | None = None,  # the public argument name
) -> ReadPlan:
    """Plan ``read_table``'s read without Spark doing any work: files, groups, fallbacks."""
    opts = read_options(name, warehouse=warehouse, branch=branch, snapshot_id=snapshot_id, tag=tag, options=options)
    return plan_for(opts, filter)


def plan_for(opts: PaimonOptions, filter_text: str | None, planner: str = "auto") -> ReadPlan:
    """The read plan; ``planner``: ``auto`` (ours where it applies), ``pypaimon`` (the reference)."""
    if planner not in ("auto", "pypaimon"):
        raise InvalidArgumentError(f"planner must be 'auto' or 'pypaimon', got {planner!r}")
    opts = batch_read_options(opts)  # scan.mode (compacted-full: the snapshot the rule picks)
    table = open_table(opts)
    schema = table_spark_schema(table)
    builder = table.new_read_builder()
    compiled = None
    if filter_text is not None:
        compiled = compile_filter(table, filter_text, opts.table)
        if compiled.predicate is not None:
            builder = builder.with_filter(compiled.predicate)
    if planner == "auto" and unsupported_reason(table) is None:
        fast = _plan_append(opts, table, schema, builder.new_scan(), filter_text, compiled)
        if fast is not None:
            return fast
    return _plan_with_pypaimon(opts, table, schema, builder, filter_text, compiled)


def _plan_append(opts: PaimonOptions, table: Any, schema: StructType, scan: Any,
                 filter_text: str | None, compiled: Any) -> ReadPlan | None:
    """An append table planned by ``paimon.planning`` (None: a file needs pypaimon's split).

    Only plain Parquet/ORC files written in full go native; the first other one hands the
    whole plan back to pypaimon, whose splits the Python reader needs.
    """
    planner = Planner(table, scan)
    files = planner.live_files()
    groups: dict[tuple[str, int], NativeGroup] = {}
    for live in files:
        e = live.entry
        fmt = os.path.splitext(e.file_name)[1].lstrip(".").lower()
        if e.write_cols or fmt not in NATIVE_FORMATS:
            return None
        key = (fmt, int(e.schema_id))
        group = groups.get(key)
        if group is None:
            made = _native_group(table, fmt, key[1], live.path)
            if isinstance(made, str):
                return None
            group = groups[key] = made
        group.paths.append(spark_path(live.path))
        group.rows += e.row_count
        group.size += e.file_size
    snapshot = planner.snapshot.id if planner.snapshot is not None else opts.snapshot_id
    plan = ReadPlan(opts.table, opts.branch_name, snapshot, schema, opts, filter_text, compiled)
    plan.native = [g for g in groups.values() if g.paths]
    return plan


def _plan_with_pypaimon(opts: PaimonOptions, table: Any, schema: StructType, builder: Any,
                        filter_text: str | None, compiled: Any) -> ReadPlan:  # one pass, many cases
    scan_plan = builder.new_scan().plan()
    splits = list(scan_plan.splits())
    snapshot = getattr(scan_plan, "snapshot_id", None)
    if snapshot is None and splits:
        snapshot = getattr(splits[0], "snapshot_id", None)
    if snapshot is None:
        latest = table.snapshot_manager().get_latest_snapshot() if opts.snapshot_id is None and opts.tag is None else None
        snapshot = latest.id if latest is not None else opts.snapshot_id
    plan = ReadPlan(opts.table, opts.branch_name, snapshot, schema, opts, filter_text, compiled)

    table_reason = _table_reason(table)
    groups: dict[tuple[str, int], NativeGroup] = {}
    group_reason: dict[tuple[str, int], str | None] = {}
    for split in splits:
        python_files = []
        deletion = list(getattr(split, "data_deletion_files", None) or [])
        for i, meta in enumerate(split.files):
            reason = table_reason or _split_reason(table, split, meta, deletion[i] if i < len(deletion) else None)
            fmt = _format_of(meta)
            if reason is None:
                key = (fmt, int(meta.schema_id))
                if key not in group_reason:
                    group = _native_group(table, fmt, int(meta.schema_id), str(meta.physical_path()))
                    group_reason[key] = group if isinstance(group, str) else None
                    if not isinstance(group, str):
                        groups[key] = group
                reason = group_reason[key]
            if reason is None:
                g = groups[(fmt, int(meta.schema_id))]
                g.paths.append(spark_path(meta.physical_path()))
                g.rows += int(meta.row_count)
                g.size += int(meta.file_size)
            else:
                python_files.append(meta)
                plan.python_files.append((str(meta.physical_path()), reason))
                plan.python_reasons[reason] += 1
        if python_files:
            if len(python_files) == len(split.files):
                plan.python_splits.append(split)
            else:  # keep deletion files aligned with the files left in the split
                keep = {id(m) for m in python_files}
                plan.python_splits.append(split.filter_file(lambda m, keep=keep: id(m) in keep))
    plan.native = [g for g in groups.values() if g.paths]
    return plan


def spark_path(path: str) -> str:
    """A data file path as Spark's file sources take it (a bare local path gets ``file:``)."""
    text = str(path)
    if "://" in text or text.startswith("file:"):
        return text
    return "file://" + os.path.abspath(text)


def _format_of(meta: Any) -> str:
    return os.path.splitext(str(meta.file_name))[1].lstrip(".").lower()


def _table_reason(table: Any) -> str | None:
    """A reason every file of this table goes through the Python reader, if there is one."""
    options = table.options
    for probe, reason in (("data_evolution_enabled", "data evolution"), ("row_tracking_enabled", "row tracking")):
        check = getattr(options, probe, None)
        if check is not None and check():
            return reason
    return None


def _split_reason(table: Any, split: Any, meta: Any, deletion_file: Any) -> str | None:
    """Why this file of this split cannot be read by Spark as it is (None: it can)."""
    if table.is_primary_key_table:
        if not getattr(split, "raw_convertible", False):
            return "primary-key merge"
        if getattr(meta, "delete_row_count", None) != 0:
            return "primary-key merge"  # a raw file may still hold DELETE rows
    if deletion_file is not None:
        return "deletion vector"
    if getattr(meta, "write_cols", None):
        return "partial-column file"
    fmt = _format_of(meta)
    if fmt not in NATIVE_FORMATS:
        return f"format {fmt or 'unknown'}"
    return None


def _spark_type(field: Any) -> tuple[DataType, Any]:
    from pypaimon.schema.data_types import PyarrowFieldParser

    arrow = PyarrowFieldParser.from_paimon_schema([field])[0]
    return arrow_to_spark_type(arrow.type, field.name), arrow.type


def _native_type_problem(fmt: str, arrow_type: Any) -> str | None:
    """Types Spark's reader decodes differently from pypaimon (tested in the type table)."""
    import pyarrow as pa

    def walk(t: Any) -> str | None:
        if fmt == "orc" and (pa.types.is_timestamp(t) or pa.types.is_date(t)):
            # Spark's ORC reader misreads zone-less timestamps and shifts dates before
            # 1582 to the hybrid calendar; pypaimon reads both as written
            return "ORC date/timestamp"
        if pa.types.is_timestamp(t) and t.unit == "ns":
            return "nanosecond timestamp"
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return walk(t.value_type)
        if pa.types.is_map(t):
            return walk(t.key_type) or walk(t.item_type)
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                found = walk(t.field(i).type)
                if found:
                    return found
        return None

    return walk(arrow_type)


def _native_group(table: Any, fmt: str, schema_id: int, sample: str) -> NativeGroup | str:
    """The group for files of ``schema_id`` in ``fmt``, or the reason they go through Python."""
    read_fields = table.table_schema.fields
    file_fields = read_fields if schema_id == table.table_schema.id else _schema_fields(table, schema_id)
    if file_fields is None:
        return f"schema {schema_id} not found"
    by_id = {f.id: f for f in file_fields}
    mappings = []
    for read_field in read_fields:
        read_type, read_arrow = _spark_type(read_field)
        problem = _native_type_problem(fmt, read_arrow)
        if problem:
            return problem
        old = by_id.get(read_field.id)
        if old is None:
            mappings.append(FieldMapping(read_field.name, read_type, None, None))
            continue
        old_type, old_arrow = _spark_type(old)
        problem = _native_type_problem(fmt, old_arrow)
        if problem:
            return problem
        if old_type != read_type and not _exact_cast(old_type, read_type):
            return "type change Spark would cast differently"
        mappings.append(FieldMapping(read_field.name, read_type, old.name, old_type))
    partition_keys = list(table.partition_keys)
    if partition_keys:
        missing = _missing_in_file(table, sample, fmt, [m.file_name for m in mappings if m.name in partition_keys])
        if missing:
            return "partition columns not in the files"
    return NativeGroup(fmt, schema_id, [], mappings)


def _schema_fields(table: Any, schema_id: int) -> list[Any] | None:
    schema = table.schema_manager.get_schema(schema_id)
    return None if schema is None else schema.fields


def _exact_cast(source: DataType, target: DataType) -> bool:
    """Changes Spark's cast turns into the same values as pypaimon's (widenings, int -> string)."""
    if isinstance(source, _INTEGERS) and isinstance(target, _INTEGERS):
        return _INTEGERS.index(type(source)) <= _INTEGERS.index(type(target))
    if isinstance(source, FloatType) and isinstance(target, DoubleType):
        return True
    if isinstance(source, _INTEGERS) and isinstance(target, StringType):
        return True
    if isinstance(source, DecimalType) and isinstance(target, DecimalType):
        return target.scale >= source.scale and target.precision - target.scale >= source.precision - source.scale
    return isinstance(source, TimestampNTZType) and isinstance(target, TimestampNTZType)


def _missing_in_file(table: Any, path: str, fmt: str, names: list[str | None]) -> list[str]:
    """Partition columns one file of the group lacks (pypaimon writes them; others may not)."""
    wanted = [n for n in names if n]
    if not wanted:
        return []
    try:
        present = set(_file_columns(table, path, fmt))
    except Exception:  # noqa: BLE001 - unreadable footer: let the Python reader decide
        return wanted
    return [n for n in wanted if n not in present]


def _file_columns(table: Any, path: str, fmt: str) -> list[str]:
    stream = table.file_io.new_input_stream(path)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return list(pq.ParquetFile(stream).schema_arrow.names)
        import pyarrow.orc as orc

        return list(orc.ORCFile(stream).schema.names)
    finally:
        stream.close()
