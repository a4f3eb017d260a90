"""Change data into primary-key tables: deletes, and CDC feeds with an operation column.

Paimon takes a row's kind (``+I`` insert, ``-U`` update-before, ``+U`` update-after,
``-D`` delete) from the column its ``rowkind.field`` table option names; the
``paimon`` data source (batch and streaming sinks) and ``foreach_batch_writer``
write it as given. This module adds the conveniences a CDC pipeline wants:

- ``delete_rows(df, "db.t", warehouse=...)``: delete the keys of ``df`` (one commit).
  Columns the table has and ``df`` lacks are written as nulls; the key columns, the
  ``sequence.field`` columns (a delete must be ordered like any other version) and
  NOT NULL columns are required.
- ``with_row_kinds(df, "rowkind")``: map a Debezium-style operation column
  (``c`` create, ``r`` snapshot read, ``u`` update, ``d`` delete) to Paimon row kinds;
  an operation outside the mapping fails the job, naming the value.
- ``write_changes(df, "db.t", warehouse=..., op_column="op")``: map and write one
  commit.

Deletes into a table whose merge engine cannot take them (``paimon.lsm.engines``:
first-row without ``ignore-delete``, partial-update, aggregation) are refused: by
``delete_rows`` on the driver before Spark runs anything, and for other writes by
each write task before its rows reach the writer (the failed job then leaves no
file). Every write is one snapshot with the data source's commit (lineage events,
commit properties, snapshot expiry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.paimon.commit_properties import commit_properties
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.lsm.engines import (
    ROW_KINDS,
    DeleteRefusedError,
    delete_refusal,
    ignore_delete,
    rowkind_field,
    sequence_fields,
)
from airflow_provider_paimon.spark.session_info import app_id

from .tables import open_table

#: Debezium's ``op`` codes -> Paimon row kinds (``r`` is a row of the initial snapshot).
DEBEZIUM_OPS: dict[str, str] = {"c": "+I", "r": "+I", "u": "+U", "d": "-D"}


def with_row_kinds(
    df: Any,
    rowkind_column: str,
    op_column: str = "op",
    mapping: Mapping[str, str] | None = None,
    drop_op: bool = True,
) -> Any:
    """``df`` with ``rowkind_column`` set from ``op_column`` through ``mapping``.

    ``mapping`` defaults to ``DEBEZIUM_OPS``; its values must be Paimon row kinds. A
    row whose operation is null or not in the mapping fails the Spark job with a
    message naming the value. ``op_column`` is dropped unless ``drop_op=False`` or it
    is ``rowkind_column`` itself.
    """
    from pyspark.sql import functions as F

    ops = dict(DEBEZIUM_OPS if mapping is None else mapping)
    if not ops:
        raise InvalidArgumentError("the operation mapping is empty: map at least one op to a row kind")
    bad = {op: kind for op, kind in ops.items() if kind not in ROW_KINDS}
    if bad:
        raise InvalidArgumentError(
            f"the operation mapping gives {bad}, which are not row kinds: use {', '.join(ROW_KINDS)}"
        )
    if op_column not in df.columns:
        raise InvalidArgumentError(
            f"the DataFrame has no operation column {op_column!r} (columns: {', '.join(df.columns)})"
        )
    op = F.col(f"`{op_column}`")
    known = ", ".join(sorted(ops))
    expr = F.raise_error(
        F.concat(
            F.lit(f"operation column {op_column!r} holds "),
            F.coalesce(op.cast("string"), F.lit("null")),
            F.lit(f", which is not one of the mapped operations ({known})"),
        )
    )
    for code in sorted(ops, reverse=True):
        expr = F.when(op == F.lit(code), F.lit(ops[code])).otherwise(expr)
    out = df.withColumn(rowkind_column, expr)
    if drop_op and op_column != rowkind_column:
        out = out.drop(op_column)
    return out


def write_changes(
    df: Any,
    table: str,
    *,
    warehouse: str | None = None,
    op_column: str = "op",
    mapping: Mapping[str, str] | None = None,
    branch: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """Write a CDC feed into primary-key table ``table`` as one commit; returns a ``WriteResult``.

    ``op_column`` holds each row's operation (``mapping``, default ``DEBEZIUM_OPS``);
    it becomes the table's ``rowkind.field`` column.
    """
    paimon_table, opts = _open(df, table, warehouse, branch, options)
    column = _rowkind_column(paimon_table, table)
    return _write(df.transform(lambda d: with_row_kinds(d, column, op_column, mapping)), opts)


def delete_rows(
    df: Any,
    table: str,
    *,
    warehouse: str | None = None,
    branch: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """Delete the keys of ``df``'s rows from primary-key table ``table``, as one commit.

    Returns a ``WriteResult`` (snapshot id, rows, files). Refused before Spark runs
    anything when the table cannot take deletes (the reason is in the message).
    """
    from pyspark.sql import functions as F

    from .datasource.types import table_arrow_schema, table_spark_schema

    paimon_table, opts = _open(df, table, warehouse, branch, options)
    column = _rowkind_column(paimon_table, table)
    refusal = delete_refusal(paimon_table)
    if refusal is not None:
        raise DeleteRefusedError(f"cannot delete rows from {table}: {refusal}. Nothing was written.")
    if ignore_delete(paimon_table):
        raise DeleteRefusedError(
            f"cannot delete rows from {table}: it sets 'ignore-delete'='true', so Paimon drops "
            "delete rows on write and nothing would change"
        )
    required = list(dict.fromkeys(list(paimon_table.primary_keys) + sequence_fields(paimon_table)))
    required += [f.name for f in table_arrow_schema(paimon_table) if not f.nullable and f.name != column]
    missing = [name for name in dict.fromkeys(required) if name not in df.columns]
    if missing:
        raise InvalidArgumentError(
            f"delete_rows needs column(s) {', '.join(missing)} of {table} in the DataFrame "
            "(the primary key, the sequence.field columns that order the delete, and NOT NULL "
            f"columns); it has {', '.join(df.columns)}"
        )
    columns = []
    for field in table_spark_schema(paimon_table).fields:
        if field.name == column:
            columns.append(F.lit("-D").alias(column))
        elif field.name in df.columns:
            columns.append(F.col(f"`{field.name}`"))
        else:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
    return _write(df.select(*columns), opts)


# ----------------------------------------------------------------- shared


def _open(df: Any, table: str, warehouse: str | None, branch: str | None,
          options: Mapping[str, Any] | None) -> tuple[Any, Any]:
    from .native.write import write_options

    opts = write_options(table, warehouse=warehouse, branch=branch, options=options, spark=df.sparkSession)
    paimon_table = open_table(opts, time_travel=False)
    if not paimon_table.is_primary_key_table:
        raise InvalidArgumentError(
            f"{table} has no primary key: row kinds and deletes are for primary-key tables"
        )
    return paimon_table, opts


def _rowkind_column(paimon_table: Any, table: str) -> str:
    column = rowkind_field(paimon_table)
    if column is None:
        raise InvalidArgumentError(
            f"{table} has no 'rowkind.field' table option: Paimon reads a row's kind (+I, -U, "
            "+U, -D) from the STRING column that option names; add such a column and set the "
            "option (paimon.schema.alter_table), or create the table with it"
        )
    return column


def _write(df: Any, opts: Any) -> Any:
    """One commit of ``df`` through the data source's write tasks and commit."""
    from .datasource.task_write import run_write_tasks
    from .datasource.write_setup import plan_write
    from .datasource.writer import PaimonWriter
    from .native.write import WriteResult, routed_events

    spark = df.sparkSession
    plan = plan_write(opts, df.schema, overwrite=False,
                      snapshot_properties=commit_properties(spark_app_id=app_id(spark)))
    writer = PaimonWriter(plan)
    tasks = run_write_tasks(df, writer)
    with routed_events(spark):
        try:
            writer.commit(list(tasks))
        except BaseException:
            writer.abort(list(tasks))
            raise
    snapshot = writer._committed_snapshot(writer._table())
    return WriteResult(
        snapshot_id=None if snapshot is None else int(snapshot.id),
        row_count=sum(t.row_count for t in tasks),
        file_count=sum(len(m.new_files) for t in tasks for m in t.messages),
    )
