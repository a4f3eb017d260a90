"""Driver-side checks before a write starts: table exists (or is created), schema fits.

Everything here runs once, on the driver, before Spark launches a single write
task, so bad input (missing table, wrong columns, unsupported types, unknown
partition column) fails with a clear message and leaves no file behind.

Creating tables: with option ``create-table=true`` a missing table is created from
the DataFrame's schema, with options ``partition-keys`` and ``primary-keys``
(comma-separated column names) and the Paimon table options among the options
(``bucket``, ``file.format``, ...; ``paimon/table_options.py``): catalog, connection and
unknown options are never stored in the schema, and a table option that looks like a
credential refuses the creation (naming the key) before anything is written. A
missing database is created too. Without the option a missing table is an error, so
a typo in ``table`` never creates a stray table.
"""

from __future__ import annotations

import uuid
from typing import Any

from pyspark.sql.types import StructType

from airflow_provider_paimon.paimon.catalog import load_table
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, TableNotFoundError
from airflow_provider_paimon.paimon.maintenance.after_commit import check_write_options
from airflow_provider_paimon.paimon.maintenance.options import writer_retention
from airflow_provider_paimon.paimon.manifests import MergeOptions
from airflow_provider_paimon.paimon.partitions import parse_partition_spec
from airflow_provider_paimon.paimon.schema import alter_table
from airflow_provider_paimon.paimon.snapshots import table_latest_snapshot_id
from airflow_provider_paimon.paimon.table_options import refuse_secrets

from ..options import PaimonOptions
from ..tables import catalog_for, open_table
from .schema_merge import effective_schema, plan_merge
from .types import (
    check_supported,
    check_write_compatible,
    spark_to_arrow_schema,
    table_arrow_schema,
)
from .writer import WritePlan


def plan_write(
    opts: PaimonOptions, schema: StructType, overwrite: bool,
    snapshot_properties: dict[str, str] | None = None,
) -> WritePlan:
    """Validate the write and return the plan the writer's tasks and commit share.

    ``snapshot_properties`` go on the commit's snapshot (``paimon.commit_properties``).
    """
    check_supported(schema)
    if opts.time_travel:
        raise InvalidArgumentError(
            "options 'snapshot-id' and 'tag' are for reading; a write always goes on top "
            "of the latest snapshot (use option 'branch' to write elsewhere)"
        )
    if opts.overwrite_partition is not None and not overwrite:
        raise InvalidArgumentError("option 'overwrite-partition' needs mode('overwrite')")
    writer_retention(opts.table_options)  # bad write-only / retention: refused before a table is created
    catalog = catalog_for(opts)
    try:
        stored = load_table(catalog, opts.table, opts.branch)  # without the write's options
    except TableNotFoundError as err:
        if not opts.create_table:
            raise TableNotFoundError(
                f"{err}; to create it from the DataFrame's schema add .option('create-table', 'true')"
                " (with 'partition-keys' / 'primary-keys' as needed)"
            ) from None
        if opts.branch is not None:
            raise TableNotFoundError(
                f"{err}; a table is created on main, not on branch {opts.branch!r}"
            ) from None
        create_table(catalog, opts, schema)
        stored = load_table(catalog, opts.table, opts.branch)
    table = open_table(opts, time_travel=False, catalog=catalog)
    _check_keys(opts, table)
    _check_partition_layout(opts, stored)
    # write-only / snapshot retention: the commit expires with them, so check them now
    check_write_options(stored, branch=opts.branch, options=opts.table_options)
    MergeOptions.of_table(table, opts.table_options)  # manifest.* options: the commit merges with them
    merge = None
    if opts.merge_schema:
        table, merge = merge_schema(opts, schema, stored, table, catalog)
    else:
        check_write_compatible(schema, table, opts.table)
    static = _static_partition(opts, table) if overwrite else None
    write_id = str(uuid.uuid4())
    return WritePlan(
        opts=opts,
        table_arrow_schema=table_arrow_schema(table),
        overwrite=overwrite,
        static_partition=static,
        dynamic_overwrite=overwrite and opts.overwrite_mode == "dynamic",
        commit_user=f"spark-{write_id}",
        base_snapshot_id=table_latest_snapshot_id(table),
        file_prefix=None if "data-file.prefix" in opts.table_options else f"data-{write_id[:13]}-",
        snapshot_properties=dict(snapshot_properties or {}),
        merge=merge if merge is not None and merge.touches_rows else None,
    )


def merge_schema(opts: PaimonOptions, schema: StructType, stored: Any, table: Any, catalog: Any) -> tuple[Any, Any]:
    """``write.merge-schema=true``: fit the DataFrame and the table together
    (``schema_merge.plan_merge``: add new columns, widen columns, cast or null-fill), then
    return the reopened table and the plan the tasks apply to the rows.

    Everything is checked first (a type that neither widens nor casts, a NOT NULL column
    missing, and then ``alter_table``'s own rules), so a write that would fail changes no
    schema. The added and widened columns go in ONE schema change on the written branch.
    As in Paimon's Spark connector the schema is committed before the data: a job that
    fails after this leaves the new schema in place, and a rerun writes into it.
    """

    plan = plan_merge(schema, table, opts.table, explicit_cast=opts.merge_schema_explicit_cast)
    if plan.changes:
        alter_table(stored, plan.changes, branch=opts.branch)
        table = open_table(opts, time_travel=False, catalog=catalog)
    check_write_compatible(effective_schema(schema, plan), table, opts.table)
    return table, plan


def create_table(catalog: Any, opts: PaimonOptions, schema: StructType) -> None:
    """Create ``opts.table`` from a Spark schema (and its database if needed).

    Only ``opts.table_options`` (Paimon's table options) are stored; one that looks like
    a credential refuses the creation before the database or table is written.
    """
    from pypaimon import Schema

    refuse_secrets(opts.table_options, what=f"creating table {opts.table}")
    names = schema.fieldNames()
    for kind, keys in (("partition-keys", opts.partition_keys), ("primary-keys", opts.primary_keys)):
        unknown = [k for k in keys if k not in names]
        if unknown:
            raise InvalidArgumentError(
                f"option {kind!r} names column(s) {', '.join(unknown)} that the DataFrame does "
                f"not have (columns: {', '.join(names)})"
            )
    arrow_schema = spark_to_arrow_schema(schema)
    if opts.primary_keys:  # Paimon requires NOT NULL primary keys
        arrow_schema = _not_null(arrow_schema, opts.primary_keys)
    paimon_schema = Schema.from_pyarrow_schema(
        arrow_schema,
        partition_keys=opts.partition_keys or None,
        primary_keys=opts.primary_keys or None,
        options=dict(opts.table_options),
    )
    catalog.create_database(opts.database, True)
    catalog.create_table(opts.table, paimon_schema, False)


def _not_null(arrow_schema: Any, keys: list[str]) -> Any:
    import pyarrow as pa

    return pa.schema([f.with_nullable(False) if f.name in keys else f for f in arrow_schema])


def _check_keys(opts: PaimonOptions, table: Any) -> None:
    for kind, given, actual in (
        ("partition-keys", opts.partition_keys, list(table.partition_keys or [])),
        ("primary-keys", opts.primary_keys, list(table.primary_keys or [])),
    ):
        if given and given != actual:
            raise InvalidArgumentError(
                f"option {kind!r} is {','.join(given)} but table {opts.table} has "
                f"{','.join(actual) or 'none'}; keys are fixed when a table is created"
            )


# Table options that name partition folders. Paimon (Java and pypaimon) does not store
# a data file's folder in the manifests: readers recompute it from the partition value
# and these options as the table stores them. A write given a different value as a
# dynamic option would put its files where no reader looks for them.
PARTITION_LAYOUT_DEFAULTS = {
    "partition.legacy-name": "true",
    "partition.default-name": "__DEFAULT_PARTITION__",
}


def _check_partition_layout(opts: PaimonOptions, table: Any) -> None:
    """Refuse a write whose options would name partition folders unlike the table.

    ``table`` is the table as stored, without this write's dynamic options.
    """
    if not table.partition_keys:
        return
    stored = dict(table.table_schema.options or {})
    for key, default in PARTITION_LAYOUT_DEFAULTS.items():
        given = opts.table_options.get(key)
        if given is None:
            continue
        have = str(stored.get(key, default))
        same = given.strip().lower() == have.lower() if key == "partition.legacy-name" else given == have
        if not same:
            raise InvalidArgumentError(
                f"option {key!r}={given!r} differs from table {opts.table}'s {have!r}: it names "
                "the partition folders, which are fixed when a table is created (readers find "
                "data files by them); drop the option, or give it with 'create-table' to a new table"
            )


def _static_partition(opts: PaimonOptions, table: Any) -> dict[str, Any] | None:
    """The ``overwrite-partition`` spec with each value parsed by its column's type.

    pypaimon compares the spec with the typed values of the written partitions
    (``datetime.date`` for a DATE, ``Decimal`` for a DECIMAL...), so text would never
    match and the commit would fail after the whole job ran; a value the column
    cannot hold is refused here, before any task writes a file.
    """
    spec = opts.overwrite_partition
    if spec is None:
        return None
    keys = list(table.partition_keys or [])
    if not keys:
        raise InvalidArgumentError(
            f"option 'overwrite-partition' names {', '.join(spec)}, but {opts.table} is not "
            "partitioned (partition columns: none, the table is unpartitioned); drop the option "
            "to overwrite the whole table"
        )
    return parse_partition_spec(table, spec, what="option 'overwrite-partition'")
