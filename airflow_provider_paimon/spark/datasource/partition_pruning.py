"""Option ``partition-filter``: partition pruning that belongs to the DataFrame, not to a query.

Spark's pushed filters cannot be used for pruning (see ``reader.py``: Spark reuses
one query's pruned plan for the next). A predicate given as a read option is part
of the DataFrame's definition instead, so every query on it reads the same
partitions. It uses the compaction ``where`` grammar (``paimon/predicates.py``:
partition columns against literals, ``IN``, ``BETWEEN``, ``IS NULL``, ``AND``/``OR``/
``NOT``), parsed and evaluated in Python over each split's partition values, so the
rows kept are exactly the partitions for which the predicate is true (SQL's
three-valued logic: unknown drops the partition, as a ``WHERE`` would).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.predicates import (
    check_where,
    table_partition_types,
    where_filter,
)


def check_partition_filter(table: Any, predicate: str, table_name: str) -> None:
    """Refuse a ``partition-filter`` the table cannot evaluate, before any task runs."""
    types = table_partition_types(table)
    if not types:
        raise InvalidArgumentError(
            f"option 'partition-filter' needs a partitioned table; {table_name} has no partition "
            "columns (filter with DataFrame.where instead)"
        )
    try:
        check_where(predicate, types)
    except InvalidArgumentError as err:
        raise InvalidArgumentError(
            f"option 'partition-filter' of {table_name}: {err}".removesuffix("; nothing is submitted or changed")
        ) from None


def select_partitions(table: Any, splits: Sequence[Any], predicate: str) -> list[Any]:
    """The splits whose partition satisfies ``predicate`` (partition values typed by pypaimon)."""
    keep = where_filter(predicate, table_partition_types(table))
    keys = list(table.partition_keys)
    return [s for s in splits if keep(dict(zip(keys, s.partition.values, strict=True)))]
