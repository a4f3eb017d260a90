"""Temp views over ``read_table`` for SQL users: one table, or every table of a database.

``register_views(spark, "sales")`` makes ``SELECT ... FROM orders`` work in
``spark.sql`` for each table of database ``sales``; ``register_views(spark,
"sales.orders")`` registers just that one. Each view is a native read planned
now (the table's current snapshot, or the branch/time travel given; a session's
``spark.paimon.branch.<db>.<table>`` redirect applies per table, as in ``read_table``),
so it shows the rows of that moment until it is registered again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, TableNotFoundError

from .plan import read_options
from .read import read_table


def register_views(
    spark: Any,
    name: str,
    *,
    warehouse: str | None = None,
    branch: str | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    options: Mapping[str, Any] | None = None,
    prefix: str = "",
) -> dict[str, str]:
    """Register ``name`` (``db`` or ``db.table``) as temp view(s) named ``prefix + table``.

    :returns: view name -> ``db.table`` for every view registered.
    """
    if not isinstance(name, str) or not name.strip() or name.count(".") > 1:
        raise InvalidArgumentError(
            f"register_views takes a database ('sales') or one table ('sales.orders'), got {name!r}"
        )
    if warehouse is None and not (options and "warehouse" in {str(k).lower() for k in options}):
        warehouse = spark.conf.get("spark.paimon.warehouse", None)
    if "." in name:
        tables = [name]
    else:
        probe = read_options(
            f"{name}.probe", warehouse=warehouse, branch=None, snapshot_id=None, tag=None, options=options, spark=spark
        )
        catalog = open_catalog(probe.warehouse, probe.catalog_options)
        try:
            tables = [f"{name}.{t}" for t in sorted(catalog.list_tables(name))]
        except Exception as err:  # pypaimon raises its own not-found types
            known = ", ".join(sorted(catalog.list_databases())) or "none"
            raise TableNotFoundError(f"database {name!r} does not exist in the warehouse (databases: {known})") from err
    registered: dict[str, str] = {}
    for table in tables:
        df = read_table(
            spark, table, warehouse=warehouse, branch=branch, snapshot_id=snapshot_id, tag=tag, options=options
        )
        view = prefix + table.split(".", 1)[1]
        df.createOrReplaceTempView(view)
        registered[view] = table
    return registered
