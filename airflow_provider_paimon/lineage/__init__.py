"""The lineage store: the Paimon lineage proposal's table and data lineage in SQL, its queries and CLI.

Imports neither Spark nor Airflow. Start with ``LineageStore.from_url(url)``; see
docs/lineage.md for the schema, the API and the ``paimon-lineage`` command.

The names below load their module on first use (PEP 562): ``lineage.meta_options``,
which every Spark job's option parsing reads, must not pull SQLAlchemy and the whole
store into each Python worker of a Spark task (each new worker pays its imports).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..paimon.secrets import mask_url  # the package's one masker, part of this package's API
    from .cascade import CascadePlan, CascadeTable, plan_cascade
    from .entities import BarrierRun, DataLineage, LineageFilter, SnapshotRef, TableLineage
    from .errors import (
        InvalidLineageArgumentError,
        LineageCycleError,
        LineageError,
        LineageStoreUnavailableError,
        ReadOnlyLineageError,
        SchemaVersionError,
        UnknownLineageSnapshotError,
        UnsupportedBackendError,
    )
    from .queries import (
        ImpactedTable,
        ImpactReport,
        LineageNode,
        TableEdge,
        TableGraph,
        downstream,
        impact,
        table_graph,
        upstream,
        walk,
    )
    from .retry import RetryPolicy
    from .schema import LATEST_VERSION
    from .store import LineageStore
    from .url import DEFAULT_DATABASE, default_url

#: public name -> the module (relative to this package) that defines it
_HOMES = {
    "BarrierRun": ".entities",
    "CascadePlan": ".cascade",
    "CascadeTable": ".cascade",
    "DEFAULT_DATABASE": ".url",
    "DataLineage": ".entities",
    "ImpactReport": ".queries",
    "ImpactedTable": ".queries",
    "InvalidLineageArgumentError": ".errors",
    "LATEST_VERSION": ".schema",
    "LineageCycleError": ".errors",
    "LineageError": ".errors",
    "LineageFilter": ".entities",
    "LineageNode": ".queries",
    "LineageStore": ".store",
    "LineageStoreUnavailableError": ".errors",
    "ReadOnlyLineageError": ".errors",
    "RetryPolicy": ".retry",
    "SchemaVersionError": ".errors",
    "SnapshotRef": ".entities",
    "TableEdge": ".queries",
    "TableGraph": ".queries",
    "TableLineage": ".entities",
    "UnknownLineageSnapshotError": ".errors",
    "UnsupportedBackendError": ".errors",
    "default_url": ".url",
    "downstream": ".queries",
    "impact": ".queries",
    "mask_url": "..paimon.secrets",
    "plan_cascade": ".cascade",
    "table_graph": ".queries",
    "upstream": ".queries",
    "walk": ".queries",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        if not name.startswith("_"):  # ``lineage.store`` and the like: the submodule
            try:
                return import_module(f".{name}", __name__)
            except ModuleNotFoundError as err:
                if err.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


__all__ = [
    "DEFAULT_DATABASE",
    "LATEST_VERSION",
    "BarrierRun",
    "CascadePlan",
    "CascadeTable",
    "DataLineage",
    "ImpactReport",
    "ImpactedTable",
    "InvalidLineageArgumentError",
    "LineageCycleError",
    "LineageError",
    "LineageFilter",
    "LineageNode",
    "LineageStore",
    "LineageStoreUnavailableError",
    "ReadOnlyLineageError",
    "RetryPolicy",
    "SchemaVersionError",
    "SnapshotRef",
    "TableEdge",
    "TableGraph",
    "TableLineage",
    "UnknownLineageSnapshotError",
    "UnsupportedBackendError",
    "default_url",
    "downstream",
    "impact",
    "mask_url",
    "plan_cascade",
    "table_graph",
    "upstream",
    "walk",
]
