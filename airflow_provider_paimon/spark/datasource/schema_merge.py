"""``write.merge-schema``: fit a DataFrame's schema and the table's together before a write.

Paimon's Spark connector (``SchemaMergingUtils``) merges the data's schema into the
table's: a column the table lacks is added, a table column whose type the data widens
is widened, a table column the data lacks is written as null. Here the same, with this
package's schema rules (``paimon.schema``): the widening is checked by ``is_widening``
and committed through ``alter_table`` (so a key column keeps its type, a change that is
not a widening is refused), and a missing column must be nullable.

``write.merge-schema.explicit-cast=true``: Paimon's connector then changes the *table*
column to the data's type whenever an explicit cast exists (BIGINT to INT, STRING to
DATE), so older files are read through a lossy cast. That narrowing is what
``alter_table`` refuses everywhere, so here the option works the other way round: a
numeric DataFrame column (TINYINT ... BIGINT, FLOAT, DOUBLE, DECIMAL) whose type the
table column does not widen to is cast to the table's type, and a value the table type
cannot hold exactly (overflow, lost fraction or digits, NaN into an integer or
decimal) fails the write, nothing committed. Both write paths use the same test: the
value cast to the table type and back must equal the original (``batch_casts`` in
Arrow for the data source, ``frame_casts`` in Spark for ``write_table``).

The plan is computed on the driver; its casts and null columns are applied by the
executors (picklable: Spark types only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    AtomicType,
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)

from .types import SchemaMismatchError, same_type, spark_to_arrow_type, table_spark_schema

EXPLICIT_CAST_TYPES = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType)


class CastValueError(SchemaMismatchError):
    """A DataFrame value does not fit the table column's type exactly (explicit-cast)."""


@dataclass(frozen=True)
class MergePlan:
    """What a merge-schema write changes in the table, and what it does to the rows."""

    changes: list[dict[str, Any]] = field(default_factory=list)  # for alter_table
    # column -> (DataFrame type, table type): cast with the exactness check
    casts: dict[str, tuple[DataType, DataType]] = field(default_factory=dict)
    # table columns the DataFrame lacks -> their Spark type (written as null)
    fill_nulls: dict[str, DataType] = field(default_factory=dict)

    @property
    def touches_rows(self) -> bool:
        return bool(self.casts or self.fill_nulls)


def plan_merge(df_schema: StructType, table: Any, table_name: str, *, explicit_cast: bool) -> MergePlan:
    """The merge of ``df_schema`` into ``table``'s schema; every problem raised at once.

    Columns are matched by name as in every write. Nothing is changed here.
    """
    from airflow_provider_paimon.paimon.schema import is_widening

    table_schema = table_spark_schema(table)
    paimon_types = {f.name: f.type for f in table.table_schema.fields}
    df_fields = {f.name: f for f in df_schema.fields}
    plan = MergePlan()
    problems: list[str] = []
    for name, df_field in df_fields.items():
        if name not in paimon_types:
            plan.changes.append({"op": "add_column", "name": name, "type": paimon_type(df_field)})
    for column in table_schema.fields:
        other = df_fields.get(column.name)
        if other is None:
            if column.nullable:
                plan.fill_nulls[column.name] = column.dataType
            else:
                problems.append(f"column {column.name} is NOT NULL in the table but missing in the DataFrame")
            continue
        if same_type(column.dataType, other.dataType):
            continue
        widened = _widened_type(other, paimon_types[column.name], is_widening)
        if widened is not None:
            plan.changes.append({"op": "update_column_type", "name": column.name, "type": widened})
        elif explicit_cast and _castable(other.dataType, column.dataType):
            plan.casts[column.name] = (other.dataType, column.dataType)
        else:
            hint = (
                "write.merge-schema.explicit-cast casts numeric columns only"
                if explicit_cast
                else "add option write.merge-schema.explicit-cast=true to cast a numeric column to the "
                "table's type (values must fit exactly)"
            )
            problems.append(
                f"column {column.name} is {other.dataType.simpleString()} in the DataFrame but "
                f"{column.dataType.simpleString()} in the table, which is not a widening of the "
                f"table column ({hint})"
            )
    if problems:
        raise SchemaMismatchError(
            f"DataFrame does not fit table {table_name} with write.merge-schema: "
            + "; ".join(problems)
            + f". Table columns: {table_schema.simpleString()}. Cast or select the DataFrame's "
            "columns in Spark first (df.select(col('x').cast('bigint')))."
        )
    return plan


def paimon_type(field_: StructField) -> str:
    """The Paimon type string of a Spark column (nullable), for a column a write adds or widens."""
    from pypaimon.schema.data_types import AtomicType as PaimonAtomic
    from pypaimon.schema.data_types import PyarrowFieldParser

    from airflow_provider_paimon.paimon.schema import SchemaChangeError

    paimon = PyarrowFieldParser.to_paimon_type(spark_to_arrow_type(field_.dataType), True)
    if not isinstance(paimon, PaimonAtomic):
        raise SchemaChangeError(
            f"write.merge-schema: column {field_.name!r} is {field_.dataType.simpleString()}; only "
            "atomic columns can be added by a write; add it with alter_table first"
        )
    return str(paimon.type)


def _widened_type(df_field: StructField, table_type: Any, is_widening: Any) -> str | None:
    """The DataFrame column's Paimon type when it widens the table column's, else None."""
    if not isinstance(df_field.dataType, AtomicType):
        return None
    df_type = paimon_type(df_field)
    old = str(getattr(table_type, "type", table_type))
    return df_type if is_widening(old, df_type) else None


def _castable(source: DataType, target: DataType) -> bool:
    return isinstance(source, EXPLICIT_CAST_TYPES) and isinstance(target, EXPLICIT_CAST_TYPES)


def effective_schema(df_schema: StructType, plan: MergePlan) -> StructType:
    """The DataFrame's schema after the plan's casts and null columns (for the usual check)."""
    fields = [
        StructField(f.name, plan.casts[f.name][1], f.nullable) if f.name in plan.casts else f
        for f in df_schema.fields
    ]
    fields += [StructField(name, dt, True) for name, dt in plan.fill_nulls.items()]
    return StructType(fields)


# ---------------------------------------------------------------- applying (executors)


def batch_casts(batch: pa.RecordBatch, plan: MergePlan, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the plan's casts done (each value checked) and its null columns added."""
    if not plan.touches_rows:
        return batch
    names, arrays = list(batch.schema.names), list(batch.columns)
    for name, (source, _) in plan.casts.items():
        i = names.index(name)
        arrays[i] = _exact_cast(name, arrays[i], spark_to_arrow_type(source), target.field(name).type)
    for name in plan.fill_nulls:
        names.append(name)
        arrays.append(pa.nulls(batch.num_rows, target.field(name).type))
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _exact_cast(name: str, values: pa.Array, source: pa.DataType, target: pa.DataType) -> pa.Array:
    values = values.cast(source) if values.type != source else values
    try:  # Arrow's own checks: overflow, lost fraction, decimal precision
        pc.cast(values, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise CastValueError(_cast_message(name, None, target) + f" ({err})") from None
    cast = pc.cast(values, target, safe=False)
    back = pc.cast(cast, source, safe=False)
    same = pc.equal(back, values)
    if pa.types.is_floating(source):  # NaN equals NaN here, as in Spark
        same = pc.or_(same, pc.and_(pc.is_nan(back), pc.is_nan(values)))
    bad = pc.and_(values.is_valid(), pc.invert(pc.fill_null(same, False)))
    if pc.any(bad).as_py():
        first = values.filter(bad)[0].as_py()
        raise CastValueError(_cast_message(name, first, target))
    return cast


def _cast_message(name: str, value: Any, target: Any) -> str:
    shown = "a value" if value is None else f"value {value!r}"
    return (
        f"write.merge-schema.explicit-cast: column {name} {shown} does not fit the table's "
        f"type {target} exactly (overflow, lost fraction or digits); nothing was written. Round or "
        "filter the values in Spark, or widen the column with alter_table"
    )


def frame_casts(df: Any, plan: MergePlan) -> Any:
    """``df`` with the plan's casts (a bad value fails the Spark job) and null columns added."""
    if not plan.touches_rows:
        return df
    from pyspark.sql import functions as F

    columns = []
    for name in df.columns:
        src = F.col(f"`{name}`")
        if name in plan.casts:
            source, target = plan.casts[name]
            cast = src.try_cast(target)  # null on overflow, whatever spark.sql.ansi.enabled says
            bad = src.isNotNull() & ~cast.cast(source).eqNullSafe(src)
            message = F.concat(
                F.lit(f"write.merge-schema.explicit-cast: column {name} value "),
                src.cast("string"),
                F.lit(f" does not fit the table's type {target.simpleString()} exactly (overflow, "
                      "lost fraction or digits); nothing was written"),
            )
            columns.append(F.when(bad, F.raise_error(message)).otherwise(cast).alias(name))
        else:
            columns.append(src)
    for name, data_type in plan.fill_nulls.items():
        columns.append(F.lit(None).cast(data_type).alias(name))
    return df.select(*columns)
