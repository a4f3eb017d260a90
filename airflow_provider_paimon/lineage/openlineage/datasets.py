"""Build OpenLineage input/output datasets for Paimon tables.

One function, :func:`paimon_dataset`, so that the Spark capture, the batch job entry
points and the Airflow operators describe a table identically: namespace and name
from :mod:`.naming`, and the facets Marquez and other consumers understand
(``version``, ``schema``, ``symlinks``, ``catalog``, statistics).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.facet_v2 import (
    DatasetFacet,
    InputDatasetFacet,
    OutputDatasetFacet,
    catalog_dataset,
    dataset_version_dataset,
    input_statistics_input_dataset,
    output_statistics_output_dataset,
    schema_dataset,
    symlinks_dataset,
)

from .facets import PRODUCER
from .naming import (
    catalog_type,
    dataset_name,
    is_rest_namespace,
    location_identifier,
    table_location,
    warehouse_namespace,
)

__all__ = [
    "DatasetStats",
    "SchemaField",
    "paimon_dataset",
    "schema_fields_from_arrow",
    "schema_fields_from_paimon",
]

log = logging.getLogger(__name__)

SchemaField = schema_dataset.SchemaDatasetFacetFields


@dataclass(frozen=True)
class DatasetStats:
    """What is known about the data a batch read or wrote (any may be unknown)."""

    row_count: int | None = None
    size: int | None = None  # bytes
    file_count: int | None = None

    @classmethod
    def coerce(cls, value: DatasetStats | Mapping[str, Any] | None) -> DatasetStats | None:
        """Accept a ``DatasetStats`` or a mapping with snake_case or camelCase keys."""
        if value is None or isinstance(value, DatasetStats):
            return value

        def pick(*keys: str) -> int | None:
            for key in keys:
                if value.get(key) is not None:
                    return int(value[key])
            return None

        return cls(
            row_count=pick("row_count", "rowCount", "rows"),
            size=pick("size", "bytes", "size_bytes"),
            file_count=pick("file_count", "fileCount", "files"),
        )

    def is_empty(self) -> bool:
        return self.row_count is None and self.size is None and self.file_count is None


def paimon_dataset(
    warehouse_uri: str,
    database: str,
    table: str,
    branch: str | None = None,
    snapshot_id: int | None = None,
    schema_fields: Sequence[SchemaField] | Any | None = None,
    table_path: str | None = None,
    stats: DatasetStats | Mapping[str, Any] | None = None,
    kind: Literal["input", "output"] = "input",
    catalog_options: Mapping[str, Any] | None = None,
) -> InputDataset | OutputDataset:
    """An OpenLineage dataset for ``database.table`` (on ``branch``) in a warehouse.

    - namespace: :func:`warehouse_namespace` of ``warehouse_uri`` (and of the catalog
      options, which matter for a REST catalog: ``paimon+rest://server/catalog``);
      name ``db.table`` or ``db.table$branch_NAME``;
    - ``version``: the snapshot id (as a string) when known;
    - ``schema``: from ``schema_fields`` (``SchemaDatasetFacetFields``, a pyarrow
      schema, or pypaimon ``DataField``s), nested fields for ROW types;
    - ``symlinks``: the physical table folder (``table_path``, default
      ``WH/db.db/table``; none for a REST catalog unless ``table_path`` is given, its
      server places the files) as a LOCATION identifier;
    - ``catalog``: framework ``paimon``, type ``filesystem`` / ``jdbc`` / ``rest``, with
      the warehouse URI (for a REST catalog: name = the catalog name, no warehouse URI);
    - ``inputStatistics`` / ``outputStatistics`` (by ``kind``) from ``stats``.
    """
    if kind not in ("input", "output"):
        raise ValueError(f"kind must be 'input' or 'output', not {kind!r}")
    namespace = warehouse_namespace(warehouse_uri, catalog_options)
    rest = is_rest_namespace(namespace)
    name = dataset_name(database, table, branch)
    facets: dict[str, DatasetFacet] = {}
    if snapshot_id is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=str(int(snapshot_id)), producer=PRODUCER
        )
    fields = _coerce_schema_fields(schema_fields)
    if fields is not None:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(fields=fields, producer=PRODUCER)
    location = table_path or (None if rest else table_location(namespace, database, table))
    if location is not None:
        loc_namespace, loc_name = location_identifier(location)
        facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
            identifiers=[
                symlinks_dataset.Identifier(namespace=loc_namespace, name=loc_name, type="LOCATION")
            ],
            producer=PRODUCER,
        )
    facets["catalog"] = catalog_dataset.CatalogDatasetFacet(
        framework="paimon",
        type="rest" if rest else catalog_type(catalog_options),
        name=namespace.rsplit("/", 1)[-1] if rest else "paimon",
        warehouseUri=None if rest else namespace,
        source="spark",
        producer=PRODUCER,
    )
    stats_value = DatasetStats.coerce(stats)
    if kind == "input":
        input_facets: dict[str, InputDatasetFacet] = {}
        if stats_value is not None and not stats_value.is_empty():
            input_facets["inputStatistics"] = (
                input_statistics_input_dataset.InputStatisticsInputDatasetFacet(
                    rowCount=stats_value.row_count,
                    size=stats_value.size,
                    fileCount=stats_value.file_count,
                    producer=PRODUCER,
                )
            )
        return InputDataset(
            namespace=namespace, name=name, facets=facets, inputFacets=input_facets or None
        )
    output_facets: dict[str, OutputDatasetFacet] = {}
    if stats_value is not None and not stats_value.is_empty():
        output_facets["outputStatistics"] = (
            output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=stats_value.row_count,
                size=stats_value.size,
                fileCount=stats_value.file_count,
                producer=PRODUCER,
            )
        )
    return OutputDataset(
        namespace=namespace, name=name, facets=facets, outputFacets=output_facets or None
    )


def _coerce_schema_fields(value: Any) -> list[SchemaField] | None:
    """Turn whatever schema the caller has into ``SchemaDatasetFacetFields``."""
    if value is None:
        return None
    if _is_arrow_schema(value):
        return schema_fields_from_arrow(value)
    items = list(value)
    if all(isinstance(item, SchemaField) for item in items):
        return items
    if all(hasattr(item, "name") and hasattr(item, "type") for item in items):
        return schema_fields_from_paimon(items)
    raise TypeError(
        "schema_fields must be SchemaDatasetFacetFields, a pyarrow.Schema or pypaimon DataFields"
    )


def _is_arrow_schema(value: Any) -> bool:
    module = type(value).__module__ or ""
    return module.startswith("pyarrow") and type(value).__name__ == "Schema"


def schema_fields_from_arrow(schema: Any) -> list[SchemaField]:
    """Schema facet fields from a ``pyarrow.Schema``, with Paimon's type names.

    Types are named as Paimon names them (``BIGINT NOT NULL``, ``ROW<...>``), through
    pypaimon's own Arrow-to-Paimon conversion, so the facet shows the table's real
    types. A type pypaimon cannot convert falls back to Arrow's name for it.
    """
    try:
        from pypaimon.schema.data_types import PyarrowFieldParser

        return schema_fields_from_paimon(PyarrowFieldParser.to_paimon_schema(schema))
    except Exception as err:  # noqa: BLE001 - best effort, never fail lineage on a type
        log.debug("pypaimon could not convert the Arrow schema (%s); using Arrow type names", err)
        return [_arrow_field(field, position) for position, field in enumerate(schema, start=1)]


def _arrow_field(field: Any, position: int) -> SchemaField:
    import pyarrow as pa

    nested = None
    if pa.types.is_struct(field.type):
        nested = [
            _arrow_field(field.type.field(i), i + 1) for i in range(field.type.num_fields)
        ]
    description = None
    if field.metadata and b"description" in field.metadata:
        description = field.metadata[b"description"].decode("utf-8", "replace")
    return SchemaField(
        name=field.name,
        type=str(field.type),
        description=description,
        ordinal_position=position,
        fields=nested,
    )


def schema_fields_from_paimon(fields: Iterable[Any]) -> list[SchemaField]:
    """Schema facet fields from pypaimon ``DataField``s (``table.table_schema.fields``).

    Duck-typed on ``name``, ``type`` and ``description``; a ``RowType`` (anything
    with ``fields``) becomes nested fields, as the schema facet allows.
    """
    result = []
    for position, field in enumerate(fields, start=1):
        nested_source = getattr(field.type, "fields", None)
        nested = schema_fields_from_paimon(nested_source) if nested_source else None
        result.append(
            SchemaField(
                name=str(field.name),
                type=str(field.type),
                description=getattr(field, "description", None) or None,
                ordinal_position=position,
                fields=nested,
            )
        )
    return result
