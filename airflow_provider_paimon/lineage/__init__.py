"""The lineage store: the Paimon lineage proposal's table and data lineage in SQL, its queries and CLI.

Imports neither Spark nor Airflow. Start with ``LineageStore.from_url(url)``; see
docs/lineage.md for the schema, the API and the ``paimon-lineage`` command.
"""

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
