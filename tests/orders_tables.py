"""The example tables of the correction DAG (``db.orders`` -> ``db.orders_enriched``) for tests.

Shared by tests/e2e (the DAG) and tests/docs (the docs' shell samples): the schemas
``dags/jobs/enrich_orders.py`` reads and writes.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from support.pypaimon_writes import commit_rows

SOURCE = pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount_cents", pa.int64())])
SINK = pa.schema(
    [("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()), ("size", pa.string())]
)


def create_orders_tables(warehouse: str, orders: list[dict], options: dict[str, str] | None = None) -> Any:
    """``db.orders`` holding ``orders`` (one snapshot) and an empty ``db.orders_enriched``; the catalog.

    ``options``: more catalog options (an ``s3://`` warehouse's endpoint and credentials).
    """
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse, **(options or {})})
    catalog.create_database("db", True)
    catalog.create_table("db.orders", Schema.from_pyarrow_schema(SOURCE), False)
    catalog.create_table("db.orders_enriched", Schema.from_pyarrow_schema(SINK), False)
    commit_rows(catalog.get_table("db.orders"), orders, SOURCE)
    return catalog
