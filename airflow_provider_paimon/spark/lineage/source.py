"""``paimon-lineage``: the lineage store's tables as a read-only PySpark data source.

The Paimon lineage proposal wants its system tables queryable "just like a regular table" but never
written by users; here ``spark.read.format("paimon-lineage")`` reads one table of the
store (``source_job_lineage``, ``sink_job_lineage``, ``source_snapshot_lineage``,
``sink_snapshot_lineage``, ``options`` or ``barrier_run``) and every write is refused with a message
that names the supported ways to change lineage.

Options: ``url`` (SQLAlchemy URL of the store; default ``$PAIMON_LINEAGE_URL``),
``table``, ``database`` (system database, default ``paimon``) and ``password``
(kept out of the URL so Spark's option redaction hides it in plans and logs).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timezone
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ...lineage.errors import InvalidLineageArgumentError, ReadOnlyLineageError
from ...lineage.schema import READABLE_TABLES, TABLES
from ...lineage.url import DEFAULT_DATABASE, parse_url

SHORT_NAME = "paimon-lineage"

_TYPES = {"job": StringType(), "database": StringType(), "table": StringType(), "branch": StringType(),
          "barrier_id": LongType(), "snapshot_id": LongType(), "create_time": TimestampType(),
          "key": StringType(), "value": StringType(),
          # barrier_run: the Airflow task try and Spark application behind each barrier
          "dag_id": StringType(), "run_id": StringType(), "task_id": StringType(),
          "try_number": IntegerType(), "map_index": IntegerType(), "spark_app_id": StringType(),
          # each snapshot row's identity and retraction; lineage_event: the history events
          "snapshot_identity": StringType(), "commit_user": StringType(), "commit_identifier": LongType(),
          "commit_time": LongType(), "identity_status": StringType(), "retracted_at": TimestampType(),
          "retracted_by": StringType(), "event_id": LongType(), "kind": StringType(),
          "event_key": StringType(), "detail": StringType()}

READ_ONLY_MESSAGE = (
    "the paimon-lineage data source is read-only: lineage is recorded by the jobs that "
    "read and write Paimon tables, and removed with the delete actions "
    "('paimon-lineage delete-table-lineage --job NAME' / 'delete-data-lineage --job NAME', "
    "or DeleteTableLineageOperator / DeleteDataLineageOperator in Airflow)"
)


def table_schema(name: str) -> StructType:
    """The Spark schema of one readable lineage table (columns in the store's order)."""
    if name not in READABLE_TABLES:
        raise InvalidLineageArgumentError(
            f"option 'table' is {name!r}; choose one of {', '.join(READABLE_TABLES)}"
        )
    return StructType([StructField(c.name, _TYPES[c.name], bool(c.nullable))
                       for c in TABLES[name].columns])


def _store_url(options: dict[str, str]) -> Any:
    url = parse_url(options.get("url") or None)
    if options.get("password"):
        url = url.set(password=options["password"])
    return url


class PaimonLineageDataSource(DataSource):
    """Read-only access to the lineage store's tables from Spark."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def _table(self) -> str:
        name = self.options.get("table")
        if not name:
            raise InvalidLineageArgumentError(
                f"option 'table' is missing; choose one of {', '.join(READABLE_TABLES)}"
            )
        return name

    def schema(self) -> StructType:
        return table_schema(self._table())

    def reader(self, schema: StructType) -> DataSourceReader:
        return PaimonLineageReader(dict(self.options), self._table())

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        raise ReadOnlyLineageError(READ_ONLY_MESSAGE)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802 - Spark's name
        raise ReadOnlyLineageError(READ_ONLY_MESSAGE)


class PaimonLineageReader(DataSourceReader):
    """Reads the whole table in one partition (lineage tables are metadata-sized)."""

    def __init__(self, options: dict[str, str], table: str) -> None:
        self.options = options
        self.table = table
        _store_url(options)  # fail on the driver, before any task runs

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        from ...lineage.store import LineageStore  # in the worker that reads, not at planning

        with LineageStore.from_url(
            _store_url(self.options), self.options.get("database") or DEFAULT_DATABASE, create=False
        ) as store:
            columns, rows = store.read_table(self.table)
        at = columns.index("create_time") if "create_time" in columns else None
        for row in rows:
            if at is not None and row[at] is not None and row[at].tzinfo is None:
                row = (*row[:at], row[at].replace(tzinfo=timezone.utc), *row[at + 1:])
            yield row
