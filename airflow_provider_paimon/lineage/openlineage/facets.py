"""Our custom OpenLineage run facet, ``PaimonBatchRunFacet`` (key ``paimon_batch``).

No standard facet says "batch B consumed source snapshot X and produced sink snapshot
Y", which is exactly the data lineage of the Paimon lineage proposal (barrier id = batch id). The
facet carries it on each RUNNING event of a streaming query and on the COMPLETE event
of a batch job. Its JSON schema ships inside the package
(``airflow_provider_paimon/lineage/facets/PaimonBatchRunFacet.json``) and the facet's
``_schemaURL`` points at that file's stable published location, as OpenLineage asks of
custom facets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import attr
from openlineage.client.facet_v2 import RunFacet
from openlineage.client.utils import RedactMixin

from airflow_provider_paimon import __version__
from airflow_provider_paimon.paimon.commit_properties import SPARK_APP_ID, run_of
from airflow_provider_paimon.paimon.names import MAIN_BRANCH, is_main

from .naming import dataset_name, warehouse_namespace

__all__ = [
    "PAIMON_BATCH_FACET_KEY",
    "PAIMON_BATCH_SCHEMA_ID",
    "PAIMON_BATCH_SCHEMA_URL",
    "PAIMON_RUN_FACET_KEY",
    "PAIMON_RUN_SCHEMA_URL",
    "PRODUCER",
    "PaimonBatchRunFacet",
    "PaimonRunFacet",
    "PaimonTableSnapshot",
    "paimon_batch_schema_path",
]

#: Producer URI stamped on every event and facet this package builds.
PRODUCER = f"https://github.com/airflow-provider-paimon/airflow-provider-paimon/tree/v{__version__}"

#: Key of the facet in ``run.facets`` (custom facets carry a producer prefix).
PAIMON_BATCH_FACET_KEY = "paimon_batch"

#: ``$id`` of the shipped schema file: its stable published location.
PAIMON_BATCH_SCHEMA_ID = (
    "https://raw.githubusercontent.com/airflow-provider-paimon/airflow-provider-paimon/"
    "main/airflow_provider_paimon/lineage/facets/PaimonBatchRunFacet.json"
)

#: ``_schemaURL`` of the facet: the schema file plus a JSON pointer to its definition.
PAIMON_BATCH_SCHEMA_URL = f"{PAIMON_BATCH_SCHEMA_ID}#/$defs/PaimonBatchRunFacet"


def paimon_batch_schema_path() -> Path:
    """Local path of the shipped JSON schema (what ``_schemaURL`` points to)."""
    return Path(__file__).resolve().parent.parent / "facets" / "PaimonBatchRunFacet.json"


@attr.define
class PaimonTableSnapshot(RedactMixin):
    """One table (on one branch) of a batch, with the snapshot consumed or committed.

    ``branch`` is ``"main"`` for the main branch so that consumers need no special case.
    ``namespace``/``name`` repeat the dataset's OpenLineage identity, so the facet can
    be joined to the event's inputs/outputs without re-deriving names.
    """

    database: str
    table: str
    branch: str = MAIN_BRANCH
    snapshotId: int | None = attr.field(default=None)  # noqa: N815 (OpenLineage camelCase)
    namespace: str | None = attr.field(default=None)
    name: str | None = attr.field(default=None)

    _skip_redact: ClassVar[list[str]] = ["database", "table", "branch", "namespace", "name"]

    @classmethod
    def of(
        cls,
        warehouse_uri: str | None,
        database: str,
        table: str,
        branch: str | None = None,
        snapshot_id: int | None = None,
    ) -> PaimonTableSnapshot:
        """Build an entry, normalising the branch (None -> main) and the namespace."""
        return cls(
            database=database,
            table=table,
            branch=MAIN_BRANCH if is_main(branch) else str(branch),
            snapshotId=None if snapshot_id is None else int(snapshot_id),
            namespace=warehouse_namespace(warehouse_uri) if warehouse_uri else None,
            name=dataset_name(database, table, branch),
        )


@attr.define
class PaimonBatchRunFacet(RunFacet):
    """Batch id plus the source and sink snapshots of that batch."""

    batchId: int  # noqa: N815 (OpenLineage camelCase)
    sources: list[PaimonTableSnapshot] = attr.field(factory=list)
    sinks: list[PaimonTableSnapshot] = attr.field(factory=list)

    _additional_skip_redact: ClassVar[list[str]] = ["batchId", "sources", "sinks"]

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        # Our facet is ours: stamp our producer unless the caller chose one.
        if self._producer == _openlineage_default_producer():
            self._producer = PRODUCER

    @staticmethod
    def _get_schema() -> str:
        return PAIMON_BATCH_SCHEMA_URL


def _openlineage_default_producer() -> str:
    """openlineage-python's current default producer (``set_producer`` may change it)."""
    from openlineage.client.generated import base

    return base.PRODUCER


#: Key of the run facet naming the Airflow task try and Spark application of a run.
PAIMON_RUN_FACET_KEY = "paimon_run"

#: ``$id`` of its shipped schema file, and its ``_schemaURL``.
PAIMON_RUN_SCHEMA_ID = (
    "https://raw.githubusercontent.com/airflow-provider-paimon/airflow-provider-paimon/"
    "main/airflow_provider_paimon/lineage/facets/PaimonRunFacet.json"
)
PAIMON_RUN_SCHEMA_URL = f"{PAIMON_RUN_SCHEMA_ID}#/$defs/PaimonRunFacet"


@attr.define
class PaimonRunFacet(RunFacet):
    """The Airflow task try and Spark application behind a run (key ``paimon_run``).

    The same values the run's commits put in their snapshots' ``properties``
    (``paimon/commit_properties``), so a consumer joins an event to the snapshots and
    to the Airflow task try without the ``parent`` facet (which needs Airflow's
    OpenLineage provider to inject its keys). Only the known fields are set.
    """

    dagId: str | None = attr.field(default=None)  # noqa: N815 (OpenLineage camelCase)
    runId: str | None = attr.field(default=None)  # noqa: N815
    taskId: str | None = attr.field(default=None)  # noqa: N815
    tryNumber: int | None = attr.field(default=None)  # noqa: N815
    mapIndex: int | None = attr.field(default=None)  # noqa: N815
    sparkAppId: str | None = attr.field(default=None)  # noqa: N815

    _additional_skip_redact: ClassVar[list[str]] = [
        "dagId", "runId", "taskId", "tryNumber", "mapIndex", "sparkAppId",
    ]

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self._producer == _openlineage_default_producer():
            self._producer = PRODUCER

    @staticmethod
    def _get_schema() -> str:
        return PAIMON_RUN_SCHEMA_URL

    @classmethod
    def from_properties(cls, properties: Mapping[str, str] | None) -> PaimonRunFacet | None:
        """From a commit's run properties (``airflow.*``, ``spark.app.id``); None when empty."""
        props = dict(properties or {})
        ref = run_of(props)
        app_id = (props.get(SPARK_APP_ID) or "").strip() or None
        if ref is None:
            return None if app_id is None else cls(sparkAppId=app_id)
        return cls(
            dagId=ref.dag_id, runId=ref.run_id, taskId=ref.task_id, tryNumber=ref.try_number,
            mapIndex=ref.map_index, sparkAppId=ref.spark_app_id,
        )
