"""Expectation results as OpenLineage data quality facets on the audited dataset.

An audit reads the branch it checks, so the branch is an *input* of the audit run and
the results go in its ``inputFacets``: ``dataQualityAssertions`` (one assertion per
rule: kind, success, severity, the rule's text, expected and actual values) and
``dataQualityMetrics`` (rows evaluated, and per column the violations of its
not-null rules as ``nullCount``). Marquez shows both on the dataset version.

Built from the report's dict (``ExpectationReport.to_dict``), the form it travels in
between the Spark job, XCom and the operators, so this module needs no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openlineage.client.generated.data_quality_assertions_dataset import (
    Assertion,
    DataQualityAssertionsDatasetFacet,
)
from openlineage.client.generated.data_quality_metrics_input_dataset import (
    ColumnMetrics,
    DataQualityMetricsInputDatasetFacet,
)

from .facets import PRODUCER

ASSERTIONS_KEY = "dataQualityAssertions"
METRICS_KEY = "dataQualityMetrics"
#: OpenLineage severity of each ``on_violation``
SEVERITY = {"fail": "error", "warn": "warn", "drop": "drop"}
#: OpenLineage's classification of each rule kind
ASSERTION_KIND = {
    "row": "custom_sql",
    "not_null": "not_null",
    "unique": "unique",
    "accepted_values": "accepted_values",
    "row_count": "row_count",
    "freshness": "freshness",
}


def quality_input_facets(report: Mapping[str, Any]) -> dict[str, Any]:
    """``{"dataQualityAssertions": ..., "dataQualityMetrics": ...}`` for the audited
    dataset's ``inputFacets``, from an ``ExpectationReport.to_dict()``."""
    results = list(report.get("results") or [])
    assertions = []
    null_counts: dict[str, int] = {}
    for result in results:
        columns = list(result.get("columns") or [])
        column = columns[0] if len(columns) == 1 else None
        assertions.append(Assertion(
            assertion=ASSERTION_KIND.get(str(result.get("kind")), str(result.get("kind"))),
            success=bool(result.get("passed")),
            column=column,
            severity=SEVERITY.get(str(result.get("on_violation")), str(result.get("on_violation"))),
            name=str(result.get("name")),
            description=str(result.get("message") or "") or None,
            expected=str(result.get("expected") or "") or None,
            actual=str(result.get("actual") or "") or None,
            content=str(result.get("content") or "") or None,
            contentType="sql" if result.get("kind") == "row" else "expression",
        ))
        if result.get("kind") == "not_null" and column is not None:
            null_counts[column] = null_counts.get(column, 0) + int(result.get("violations") or 0)
    facets: dict[str, Any] = {
        ASSERTIONS_KEY: DataQualityAssertionsDatasetFacet(assertions=assertions, producer=PRODUCER),
        METRICS_KEY: DataQualityMetricsInputDatasetFacet(
            rowCount=int(report.get("rows") or 0),
            columnMetrics={name: ColumnMetrics(nullCount=count) for name, count in null_counts.items()},
            producer=PRODUCER,
        ),
    }
    return facets
