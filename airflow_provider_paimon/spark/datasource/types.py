"""Type mapping between Spark, Arrow and Paimon, and the checks that go with it.

Data moves as Arrow end to end: Spark hands the writer Arrow batches and takes
Arrow batches from the reader, and pypaimon reads and writes Arrow. So the mapping
is Spark <-> Arrow (pyspark's own rules) and Arrow <-> Paimon (pypaimon's rules),
plus two small fix-ups that make batches match exactly what the other side expects
(Spark's list element is called ``element``, pypaimon's ``item``; a Paimon
``TIMESTAMP(3)`` arrives as milliseconds, Spark wants microseconds).

Spark type          Paimon type
BooleanType         BOOLEAN
ByteType            TINYINT
ShortType           SMALLINT
IntegerType         INT
LongType            BIGINT
FloatType           FLOAT
DoubleType          DOUBLE
DecimalType(p, s)   DECIMAL(p, s)
StringType          STRING (CHAR/VARCHAR read as StringType)
BinaryType          BYTES (BINARY/VARBINARY read as BinaryType)
DateType            DATE
TimestampType       TIMESTAMP_LTZ(6) (with time zone: an instant)
TimestampNTZType    TIMESTAMP(6) (without time zone: wall-clock time)
ArrayType           ARRAY
MapType             MAP
StructType          ROW
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    AtomicType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from airflow_provider_paimon.paimon.errors import InvalidArgumentError

# Time zone of timestamp-with-time-zone values inside Arrow batches. Spark exchanges
# TimestampType as UTC instants with Python data sources; Paimon stores UTC instants.
ARROW_TZ = "UTC"

_ATOMIC = (
    BooleanType,
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    StringType,
    BinaryType,
    DateType,
    TimestampType,
    TimestampNTZType,
)


class UnsupportedTypeError(InvalidArgumentError):
    """A column's type cannot be stored in (or read from) a Paimon table."""


class SchemaMismatchError(InvalidArgumentError):
    """A DataFrame does not fit the table it is written to."""


# ---------------------------------------------------------------- Spark side


def check_supported(schema: StructType) -> None:
    """Raise ``UnsupportedTypeError`` naming every column whose type Paimon cannot store."""
    problems = []
    for field in schema.fields:
        problems.extend(_unsupported(field.name, field.dataType))
    if problems:
        raise UnsupportedTypeError(
            "cannot write to Paimon, unsupported column type(s): "
            + "; ".join(problems)
            + ". Cast them first (e.g. intervals and variants to STRING) or drop them."
        )


def _unsupported(path: str, dt: DataType) -> list[str]:
    if isinstance(dt, _ATOMIC):
        return []
    if isinstance(dt, ArrayType):
        return _unsupported(f"{path}[]", dt.elementType)
    if isinstance(dt, MapType):
        return _unsupported(f"{path}.key", dt.keyType) + _unsupported(f"{path}.value", dt.valueType)
    if isinstance(dt, StructType):
        out: list[str] = []
        for field in dt.fields:
            out.extend(_unsupported(f"{path}.{field.name}", field.dataType))
        return out
    return [f"{path} ({dt.simpleString()})"]


def spark_to_arrow_schema(schema: StructType) -> pa.Schema:
    """Arrow schema of a Spark schema, as Spark itself converts it (timestamps in UTC)."""
    check_supported(schema)
    return pa.schema([_spark_field_to_arrow(f) for f in schema.fields])


def _spark_field_to_arrow(field: StructField) -> pa.Field:
    return pa.field(field.name, spark_to_arrow_type(field.dataType), nullable=field.nullable)


def spark_to_arrow_type(dt: DataType) -> pa.DataType:
    """One Spark type as Arrow, with the nesting names Spark uses."""
    if isinstance(dt, ArrayType):
        return pa.list_(pa.field("element", spark_to_arrow_type(dt.elementType), nullable=dt.containsNull))
    if isinstance(dt, MapType):
        return pa.map_(
            pa.field("key", spark_to_arrow_type(dt.keyType), nullable=False),
            pa.field("value", spark_to_arrow_type(dt.valueType), nullable=dt.valueContainsNull),
        )
    if isinstance(dt, StructType):
        return pa.struct([_spark_field_to_arrow(f) for f in dt.fields])
    if isinstance(dt, BooleanType):
        return pa.bool_()
    if isinstance(dt, ByteType):
        return pa.int8()
    if isinstance(dt, ShortType):
        return pa.int16()
    if isinstance(dt, IntegerType):
        return pa.int32()
    if isinstance(dt, LongType):
        return pa.int64()
    if isinstance(dt, FloatType):
        return pa.float32()
    if isinstance(dt, DoubleType):
        return pa.float64()
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, StringType):
        return pa.string()
    if isinstance(dt, BinaryType):
        return pa.binary()
    if isinstance(dt, DateType):
        return pa.date32()
    if isinstance(dt, TimestampType):
        return pa.timestamp("us", tz=ARROW_TZ)
    if isinstance(dt, TimestampNTZType):
        return pa.timestamp("us")
    raise UnsupportedTypeError(f"Spark type {dt.simpleString()} has no Paimon equivalent")


# ---------------------------------------------------------------- Paimon side


def table_arrow_schema(table: Any) -> pa.Schema:
    """The Arrow schema pypaimon reads and writes for ``table``."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def table_spark_schema(table: Any) -> StructType:
    """The Spark schema of a Paimon table (nullability kept: NOT NULL -> nullable=False)."""
    fields = []
    for field in table_arrow_schema(table):
        fields.append(StructField(field.name, arrow_to_spark_type(field.type, field.name), field.nullable))
    return StructType(fields)


def arrow_to_spark_type(at: pa.DataType, path: str = "column") -> DataType:
    """Spark type for an Arrow type that pypaimon produces."""
    t = pa.types
    if t.is_boolean(at):
        return BooleanType()
    if t.is_int8(at):
        return ByteType()
    if t.is_int16(at):
        return ShortType()
    if t.is_int32(at):
        return IntegerType()
    if t.is_int64(at):
        return LongType()
    if t.is_float32(at):
        return FloatType()
    if t.is_float64(at):
        return DoubleType()
    if t.is_decimal(at):
        return DecimalType(at.precision, at.scale)
    if t.is_string(at) or t.is_large_string(at):
        return StringType()
    if t.is_binary(at) or t.is_large_binary(at) or t.is_fixed_size_binary(at):
        return BinaryType()
    if t.is_date32(at):
        return DateType()
    if t.is_timestamp(at):
        return TimestampType() if at.tz is not None else TimestampNTZType()
    if t.is_list(at) or t.is_large_list(at) or t.is_fixed_size_list(at):
        return ArrayType(arrow_to_spark_type(at.value_type, f"{path}[]"), at.value_field.nullable)
    if t.is_map(at):
        return MapType(
            arrow_to_spark_type(at.key_type, f"{path}.key"),
            arrow_to_spark_type(at.item_type, f"{path}.value"),
            at.item_field.nullable,
        )
    if t.is_struct(at):
        return StructType(
            [
                StructField(at.field(i).name, arrow_to_spark_type(at.field(i).type, f"{path}.{at.field(i).name}"), at.field(i).nullable)
                for i in range(at.num_fields)
            ]
        )
    raise UnsupportedTypeError(
        f"column {path} has Paimon/Arrow type {at} that Spark cannot read; "
        "leave it out with option 'columns' (or a user schema without it)"
    )


# ---------------------------------------------------------------- checks


def check_write_compatible(df_schema: StructType, table: Any, table_name: str) -> None:
    """Raise ``SchemaMismatchError`` unless every table column comes with a matching type.

    Columns are matched by name (order does not matter). A missing or extra column,
    or a different type, is an error: cast or select in Spark first.
    """
    check_supported(df_schema)
    table_schema = table_spark_schema(table)
    df_fields = {f.name: f for f in df_schema.fields}
    problems = []
    missing = [f.name for f in table_schema.fields if f.name not in df_fields]
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    table_names = set(table_schema.fieldNames())
    extra = [name for name in df_schema.fieldNames() if name not in table_names]
    if extra:
        problems.append(f"column(s) not in the table: {', '.join(extra)}")
    for field in table_schema.fields:
        other = df_fields.get(field.name)
        if other is not None and not same_type(field.dataType, other.dataType):
            problems.append(
                f"column {field.name} is {other.dataType.simpleString()} in the DataFrame "
                f"but {field.dataType.simpleString()} in the table"
            )
    if problems:
        raise SchemaMismatchError(
            f"DataFrame does not match table {table_name}: "
            + "; ".join(problems)
            + f". Table columns: {table_schema.simpleString()}. "
            "Select/cast the DataFrame's columns to match (e.g. df.select(col('x').cast('bigint')))."
        )


def same_type(a: DataType, b: DataType) -> bool:
    """Equal types, ignoring nullability at any depth."""
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return same_type(a.elementType, b.elementType)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return same_type(a.keyType, b.keyType) and same_type(a.valueType, b.valueType)
    if isinstance(a, StructType) and isinstance(b, StructType):
        return a.fieldNames() == b.fieldNames() and all(
            same_type(x.dataType, y.dataType) for x, y in zip(a.fields, b.fields, strict=True)
        )
    if isinstance(a, AtomicType) and isinstance(b, AtomicType):
        return a == b
    return False


# ---------------------------------------------------------------- batches


def conform_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s column order, names, types and nullability.

    A no-op when they already match (the common case); otherwise a cast, which for
    renamed list elements or a time zone label copies no data.
    """
    if batch.schema.equals(target):
        return batch
    if batch.schema.names != target.names:
        batch = batch.select(target.names)
    if batch.schema.equals(target):
        return batch
    return batch.cast(target, safe=False)


def check_read_schema(schema: StructType, full: StructType, table: str) -> None:
    """A user-given read schema must name table columns with the table's types."""
    by_name = {f.name: f for f in full.fields}
    problems = []
    for field in schema.fields:
        actual = by_name.get(field.name)
        if actual is None:
            problems.append(f"{field.name} is not a column")
        elif not same_type(actual.dataType, field.dataType):
            problems.append(
                f"{field.name} is {actual.dataType.simpleString()}, not {field.dataType.simpleString()}"
            )
    if problems:
        raise InvalidArgumentError(
            f"read schema does not fit table {table}: {'; '.join(problems)} "
            f"(table columns: {full.simpleString()})"
        )
