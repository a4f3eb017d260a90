"""Expectation results become OpenLineage data quality facets that validate against the
official schemas: one assertion per rule with its severity, and null counts as metrics."""

from __future__ import annotations

from olspec import validate_facet
from openlineage.client.serde import Serde

from airflow_provider_paimon.lineage.openlineage.quality import quality_input_facets
from airflow_provider_paimon.spark.branch.expectations import (
    ExpectationReport,
    ExpectationResult,
    expect_not_null,
    expect_row,
    expect_row_count_change,
)


def test_report_maps_to_valid_assertions_and_metrics():
    rules = [expect_row("positive", "amount >= 0", "drop"), expect_not_null("cust", "customer", "warn"),
             expect_row_count_change("grew", -0.1, 0.5)]
    report = ExpectationReport("shop.orders", "fix", "main", 7, 100, (
        ExpectationResult(rules[0], False, 100, 3, "3 of 100 rows violate", "0", "3"),
        ExpectationResult(rules[1], False, 100, 4, "4 of 100 rows violate", "0", "4"),
        ExpectationResult(rules[2], True, 100, 0, "100 rows vs 90 on the base (+0.1111)", "[-0.1, 0.5]", "+0.1111"),
    ), dropped=3)
    facets = {k: Serde.to_dict(v) for k, v in quality_input_facets(report.to_dict()).items()}
    for key, facet in facets.items():
        validate_facet(key, facet)
    assertions = {a["name"]: a for a in facets["dataQualityAssertions"]["assertions"]}
    assert assertions["positive"] == {
        "assertion": "custom_sql", "success": False, "severity": "drop", "name": "positive",
        "description": "3 of 100 rows violate", "expected": "0", "actual": "3", "content": "amount >= 0",
        "contentType": "sql", "params": {},
    }
    assert assertions["cust"]["column"] == "customer" and assertions["cust"]["severity"] == "warn"
    assert assertions["grew"]["success"] is True and assertions["grew"]["severity"] == "error"
    assert facets["dataQualityMetrics"]["rowCount"] == 100
    assert facets["dataQualityMetrics"]["columnMetrics"] == {"customer": {"nullCount": 4, "quantiles": {}}}
