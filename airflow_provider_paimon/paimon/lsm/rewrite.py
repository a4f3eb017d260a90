"""Merge the sorted runs of one bucket into new key-value files (a compaction unit's work).

Runs wherever it is called: on a Spark executor, or in-process. The steps follow
Paimon Java's ``MergeTreeCompactRewriter`` with pypaimon's file format:

1. read every input file whole, with its system columns (``_KEY_<k>``,
   ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``); files of an older schema are read by field
   id as readers do (added columns are nulls, types cast);
2. sort by key, ``sequence.field`` and sequence number (pypaimon's writer order:
   ``KeyValueDataWriter._sort_by_primary_key``, nulls first as Java orders keys);
3. merge each key's versions with the table's merge function: ``deduplicate`` keeps the
   last and ``first-row`` the first (vectorised, the common cases), ``partial-update``
   and ``aggregation`` fold the keys that have several versions with pypaimon's own
   merge functions (the ones its reader uses), and every result is an INSERT as
   Paimon's merge functions return it;
4. drop ``-U``/``-D`` results only when ``drop_delete`` (the output is the oldest data
   of the bucket: Paimon's ``dropDelete``), keep them otherwise;
5. ``first-row`` only: drop keys already present in older runs that are not merged
   (Paimon's lookup does this: first-row reads levels above 0 without merging, so a key
   must live in one of them only);
6. write target-size files at the output level with everything a reader relies on:
   min/max key, key and value statistics, min/max sequence number of their rows, the
   level, ``file_source`` COMPACT, the current schema id, the retract count;
7. ``changelog-producer=full-compaction`` and output at the top level: write the
   changes between the old and the new top level as changelog files
   (``changelog.full_compaction_changelog``).

Nothing is committed here. On failure the files written so far are deleted.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pypaimon.common.options.core_options import ChangelogProducer
from pypaimon.schema.data_types import PyarrowFieldParser
from pypaimon.write.file_store_write import FileStoreWrite
from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

from ..compaction.rewrite import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, _open
from ..compaction.scan import resolve_path
from ..parquet_encoding import DICTIONARY_SAMPLE_ROWS, dictionary_columns
from .changelog import changelog_prefix, full_compaction_changelog
from .engines import merge_engine
from .retracts import VALUE_KIND, retract_count

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
KEY_PREFIX = "_KEY_"
_ADD_BYTES = pa.array([0, 2], pa.int8())
_NO_SIZE_ROLL = 1 << 62


def kv_schema(table: Any) -> pa.Schema:
    """The Arrow schema of the table's key-value files (system columns, then the row)."""
    values = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
    keys = [
        pa.field(f"{KEY_PREFIX}{f.name}", values.field(f.name).type, nullable=values.field(f.name).nullable)
        for f in table.trimmed_primary_keys_fields
    ]
    system = [pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False), pa.field(VALUE_KIND, pa.int8(), nullable=False)]
    return pa.schema(keys + system + list(values))


class KvFileWriter(KeyValueDataWriter):
    """pypaimon's key-value file writer, writing sorted rows as they are at a level.

    Used for the merged rows of a compaction (``file_source`` COMPACT) and for
    changelog files (named by the table's ``data-file.prefix``, ``changelog-...``).
    """

    def __init__(self, table: Any, partition: tuple, bucket: int, level: int, merge_function: Any = None,
                 file_source: int = FILE_SOURCE_COMPACT) -> None:
        super().__init__(table, partition, bucket, 0, options=table.options,
                         merge_function=merge_function, changelog_producer=ChangelogProducer.NONE)
        self.level = level
        self.file_source = file_source
        self.target_file_size = _NO_SIZE_ROLL
        self._retracts = 0

    def write_file(self, data: pa.Table) -> None:
        self._retracts = retract_count(data.column(VALUE_KIND))
        self._write_data_to_file(data)

    def _create_data_file_meta(self, *args: Any, **kwargs: Any) -> Any:
        meta = super()._create_data_file_meta(*args, **kwargs)
        return dataclasses.replace(meta, level=self.level, file_source=self.file_source,
                                   delete_row_count=self._retracts)


def read_kv_files(table: Any, partition: tuple, bucket: int, files: list[Any]) -> pa.Table:
    """Every row of ``files`` with its system columns, in the current schema."""
    target = kv_schema(table)
    tables = []
    for f in files:
        resolve_path(table, partition, bucket, f)
        if not f.file_name.endswith(".parquet"):
            raise ValueError(f"cannot compact {f.file_name}: only Parquet data files are read here")
        data = pq.ParquetFile(_open(table, f.physical_path())).read()
        tables.append(_conform(table, f.schema_id, data, target))
    if not tables:
        return target.empty_table()
    return pa.concat_tables(tables)


def _conform(table: Any, schema_id: int, data: pa.Table, target: pa.Schema) -> pa.Table:
    """``data`` (written with schema ``schema_id``) as columns of ``target``, by field id."""
    if schema_id == table.table_schema.id and data.schema.names == target.names:
        return pa.Table.from_arrays(
            [c if c.type.equals(t.type) else c.cast(t.type) for c, t in zip(data.columns, target, strict=True)],
            schema=target,
        )
    old = table.schema_manager.get_schema(schema_id)
    old_names = {f.id: f.name for f in old.fields}
    columns = []
    for field in target:
        name = field.name
        if name in (SEQUENCE_NUMBER, VALUE_KIND):
            source: str | None = name
        else:
            base = name[len(KEY_PREFIX):] if name.startswith(KEY_PREFIX) else name
            old_name = old_names.get(table.field_dict[base].id)
            source = None if old_name is None else (KEY_PREFIX + old_name if name.startswith(KEY_PREFIX) else old_name)
        if source is None or source not in data.schema.names:
            columns.append(pa.nulls(data.num_rows, field.type))
        else:
            columns.append(data.column(source).cast(field.type))
    return pa.Table.from_arrays(columns, schema=target)


def _group_ends(keys: pa.Table) -> tuple[pa.Array, pa.Array]:
    """Masks over sorted rows: last row of its key, first row of its key."""
    n = keys.num_rows
    if n == 0:
        empty = pa.array([], pa.bool_())
        return empty, empty
    differs = None
    for column in keys.columns:
        col = column.combine_chunks()
        d = pc.not_equal(col.slice(0, n - 1), col.slice(1))
        d = pc.fill_null(d, True)
        differs = d if differs is None else pc.or_(differs, d)
    if differs is None:
        differs = pa.array([False] * (n - 1))
    true = pa.array([True])
    last = pa.concat_arrays([differs, true]) if n > 1 else true
    first = pa.concat_arrays([true, differs]) if n > 1 else true
    return last, first


def merge_rows(table: Any, rows: pa.Table, writer: KvFileWriter) -> pa.Table:
    """One row per key: ``rows`` (all versions) merged with the table's merge engine."""
    if rows.num_rows == 0:
        return rows
    rows = writer._sort_by_primary_key(rows)
    key_columns = rows.select([f"{KEY_PREFIX}{k}" for k in table.trimmed_primary_keys])
    last, first = _group_ends(key_columns)
    engine = merge_engine(table)
    if engine == "deduplicate":
        return rows.filter(last)
    if engine == "first-row":
        return rows.filter(first)
    single = pc.and_(last, first)
    singles = rows.filter(single)
    several = rows.filter(pc.invert(single))
    folded = writer._merge_pending_by_pk(several) if several.num_rows else several
    merged = pa.concat_tables([singles, folded]) if folded.num_rows else singles
    # Paimon's partial-update and aggregate merge functions return INSERT results
    kinds = pa.array([0] * merged.num_rows, pa.int8())
    merged = merged.set_column(merged.schema.get_field_index(VALUE_KIND), merged.schema.field(VALUE_KIND), kinds)
    return writer._sort_by_primary_key(merged)


def drop_keys_in(rows: pa.Table, table: Any, older: pa.Table) -> pa.Table:
    """``rows`` without the keys ``older`` has (first-row's lookup of older runs)."""
    names = [f"{KEY_PREFIX}{k}" for k in table.trimmed_primary_keys]
    if older.num_rows == 0 or rows.num_rows == 0:
        return rows
    marked = rows.append_column("__row", pa.array(range(rows.num_rows), pa.int64()))
    hits = marked.select([*names, "__row"]).join(older.select(names).group_by(names).aggregate([]),
                                                 keys=names, join_type="left semi")
    keep = pc.invert(pc.is_in(marked.column("__row"), value_set=hits.column("__row")))
    return rows.filter(keep)


def rewrite_unit(
    table: Any,
    partition: tuple,
    bucket: int,
    files: list[Any],
    output_level: int,
    drop_delete: bool,
    target_file_size: int,
    file_prefix: str | None = None,
    older_files: list[Any] | None = None,
    changelog: bool = False,
) -> list[Any]:
    """Merge ``files`` of one bucket into new files at ``output_level``; their metas.

    ``changelog`` (``changelog-producer=full-compaction``, output at the top level):
    the changes between the old and the new top level are written too, as changelog
    files (``changelog.is_changelog_file``) after the data files.
    """
    write_table = table.copy({"data-file.prefix": file_prefix}) if file_prefix else table
    merge_function = FileStoreWrite(write_table, "compaction")._build_pk_merge_function()
    writer = KvFileWriter(write_table, tuple(partition), bucket, output_level, merge_function)
    log_writer: KvFileWriter | None = None
    try:
        top_files = [f for f in files if f.level == output_level] if changelog else []
        top = read_kv_files(table, partition, bucket, top_files)
        top_names = {f.file_name for f in top_files}
        others = read_kv_files(table, partition, bucket, [f for f in files if f.file_name not in top_names])
        rows = pa.concat_tables([others, top]) if top.num_rows else others
        merged = merge_rows(table, rows, writer)
        if drop_delete:
            merged = merged.filter(pc.is_in(merged.column(VALUE_KIND), value_set=_ADD_BYTES))
        if older_files:
            merged = drop_keys_in(merged, table, read_kv_files(table, partition, bucket, list(older_files)))
        _write_rolled(writer, merged, sum(f.file_size for f in files), rows.num_rows, target_file_size)
        new_files = list(writer.committed_files)
        if changelog:
            changes = full_compaction_changelog(table, rows, top, merged)
            if changes.num_rows:
                log_table = table.copy({"data-file.prefix": changelog_prefix(file_prefix)})
                log_writer = KvFileWriter(log_table, tuple(partition), bucket, output_level,
                                          file_source=FILE_SOURCE_APPEND)
                log_writer.write_file(changes)
                new_files += log_writer.committed_files
    except BaseException:
        writer.abort()
        if log_writer is not None:
            log_writer.abort()
        raise
    return new_files


def _write_rolled(writer: KvFileWriter, rows: pa.Table, input_bytes: int, input_rows: int,
                  target_file_size: int) -> None:
    """Write ``rows`` (sorted, one per key) as files of about ``target_file_size`` each.

    The file count comes from the input's bytes per row (in-memory Arrow sizes are
    several times the Parquet ones): any slice of unique sorted keys is a valid file.
    """
    if rows.num_rows == 0:
        return
    if writer.file_format == "parquet" and isinstance(writer.parquet_writer_options, dict):
        raw = writer.options.options.to_map()
        first = rows.slice(0, DICTIONARY_SAMPLE_ROWS)
        writer.parquet_writer_options = {
            **writer.parquet_writer_options,
            "use_dictionary": dictionary_columns(rows.schema, raw, first),
        }
    est_bytes = input_bytes * rows.num_rows / max(1, input_rows)
    count = max(1, min(rows.num_rows, math.floor(est_bytes / max(1, target_file_size)) or 1))
    per_file = math.ceil(rows.num_rows / count)
    for start in range(0, rows.num_rows, per_file):
        writer.write_file(rows.slice(start, per_file))
