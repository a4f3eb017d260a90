"""OpenLineage RunEvents for one run of a Spark job over Paimon tables.

A :class:`PaimonJobRun` is one run (one streaming query, or one batch job): it keeps
the run id, job identity, processing type and the ``parent`` facet, and builds the
events of the run's life: START, RUNNING per micro-batch (with that batch's inputs,
outputs and :class:`PaimonBatchRunFacet`), and one of COMPLETE, FAIL or ABORT.
Building is separate from emitting (see :mod:`.emitter`), so events can be checked
against the spec without any transport.
"""

from __future__ import annotations

import logging
import traceback
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.facet_v2 import (
    JobFacet,
    RunFacet,
    error_message_run,
    job_type_job,
    parent_run,
    processing_engine_run,
)
from openlineage.client.uuid import generate_new_uuid

from airflow_provider_paimon import __version__

from .datasets import DatasetStats, SchemaField, paimon_dataset
from .facets import (
    PAIMON_BATCH_FACET_KEY,
    PAIMON_RUN_FACET_KEY,
    PRODUCER,
    PaimonBatchRunFacet,
    PaimonRunFacet,
    PaimonTableSnapshot,
)
from .naming import warehouse_namespace

__all__ = [
    "PARENT_CONF_KEYS",
    "PaimonJobRun",
    "PaimonTableRef",
    "job_type_facet",
    "parent_run_facet",
]

log = logging.getLogger(__name__)

#: Spark conf keys that Airflow's OpenLineage provider injects into spark-submit
#: (``airflow.providers.openlineage.utils.spark``), as our parent-facet inputs.
PARENT_CONF_KEYS = (
    "spark.openlineage.parentJobNamespace",
    "spark.openlineage.parentJobName",
    "spark.openlineage.parentRunId",
    "spark.openlineage.rootParentJobNamespace",
    "spark.openlineage.rootParentJobName",
    "spark.openlineage.rootParentRunId",
)


def _valid_uuid(value: Any) -> str | None:
    try:
        return str(uuid.UUID(str(value)))
    except (ValueError, TypeError, AttributeError):
        return None


def parent_run_facet(conf: Mapping[str, Any] | None) -> parent_run.ParentRunFacet | None:
    """The ``parent`` run facet (with ``root``) from Airflow-injected Spark conf keys.

    Needs ``parentJobNamespace``, ``parentJobName`` and a UUID ``parentRunId``;
    otherwise there is no parent (a warning says why, lineage never fails the job).
    ``root`` comes from the ``rootParent*`` keys; when they are missing or invalid the
    parent is its own root (it is the topmost run we know of), as OpenLineage's Spark
    integration does.
    """
    conf = conf or {}
    namespace = conf.get("spark.openlineage.parentJobNamespace")
    name = conf.get("spark.openlineage.parentJobName")
    raw_run_id = conf.get("spark.openlineage.parentRunId")
    if not (namespace or name or raw_run_id):
        return None
    run_id = _valid_uuid(raw_run_id)
    if not (namespace and name and run_id):
        log.warning(
            "OpenLineage parent information is incomplete or invalid (namespace=%r, name=%r, "
            "runId=%r); events will have no parent facet",
            namespace,
            name,
            raw_run_id,
        )
        return None
    root_namespace = conf.get("spark.openlineage.rootParentJobNamespace")
    root_name = conf.get("spark.openlineage.rootParentJobName")
    root_run_id = _valid_uuid(conf.get("spark.openlineage.rootParentRunId"))
    if not (root_namespace and root_name and root_run_id):
        root_namespace, root_name, root_run_id = namespace, name, run_id
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=run_id),
        job=parent_run.Job(namespace=str(namespace), name=str(name)),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=root_run_id),
            job=parent_run.RootJob(namespace=str(root_namespace), name=str(root_name)),
        ),
        producer=PRODUCER,
    )


def job_type_facet(streaming: bool) -> job_type_job.JobTypeJobFacet:
    """``jobType``: integration SPARK, job type JOB, processing STREAMING or BATCH."""
    return job_type_job.JobTypeJobFacet(
        processingType="STREAMING" if streaming else "BATCH",
        integration="SPARK",
        jobType="JOB",
        producer=PRODUCER,
    )


@dataclass(frozen=True)
class PaimonTableRef:
    """A table of a batch: enough to build both its dataset and its facet entry."""

    warehouse: str
    database: str
    table: str
    branch: str | None = None
    snapshot_id: int | None = None
    schema_fields: Sequence[SchemaField] | Any | None = field(default=None, compare=False)
    table_path: str | None = None
    stats: DatasetStats | Mapping[str, Any] | None = field(default=None, compare=False)
    # The catalog's options (``metastore``, ``uri``): they name a REST catalog's namespace.
    # Kept out of repr: they may hold a token.
    catalog_options: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def dataset(self, kind: Literal["input", "output"]) -> InputDataset | OutputDataset:
        return paimon_dataset(
            self.warehouse,
            self.database,
            self.table,
            branch=self.branch,
            snapshot_id=self.snapshot_id,
            schema_fields=self.schema_fields,
            table_path=self.table_path,
            stats=self.stats,
            kind=kind,
            catalog_options=self.catalog_options,
        )

    def snapshot(self) -> PaimonTableSnapshot:
        return PaimonTableSnapshot.of(
            warehouse_namespace(self.warehouse, self.catalog_options) if self.warehouse else None,
            self.database, self.table, self.branch, self.snapshot_id,
        )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class PaimonJobRun:
    """One run of a job: builds its START / RUNNING / COMPLETE / FAIL / ABORT events.

    ``job_name`` is the Spark application name (operators set ``{dag_id}.{task_id}``);
    ``parent_conf`` is a plain dict holding the ``spark.openlineage.parent*`` keys, if
    any; ``engine_version`` the Spark version, for the ``processing_engine`` facet;
    ``run_properties`` the run properties its commits carry (``airflow.*``,
    ``spark.app.id``), for the ``paimon_run`` facet on every event.
    """

    def __init__(
        self,
        job_name: str,
        *,
        job_namespace: str = "default",
        streaming: bool,
        run_id: str | None = None,
        parent_conf: Mapping[str, Any] | None = None,
        engine_version: str | None = None,
        job_facets: Mapping[str, JobFacet] | None = None,
        run_properties: Mapping[str, str] | None = None,
    ) -> None:
        if not job_name:
            raise ValueError("job_name must not be empty")
        self.job_name = job_name
        self.job_namespace = job_namespace or "default"
        self.streaming = streaming
        valid = _valid_uuid(run_id) if run_id else str(generate_new_uuid())
        if valid is None:
            raise ValueError(f"run_id must be a UUID, not {run_id!r}")
        self.run_id: str = valid
        self.parent = parent_run_facet(parent_conf)
        self.run_facet = PaimonRunFacet.from_properties(run_properties)
        self.engine_version = engine_version
        self._job_facets: dict[str, JobFacet] = {"jobType": job_type_facet(streaming)}
        self._job_facets.update(job_facets or {})

    def __repr__(self) -> str:
        return (
            f"PaimonJobRun(job={self.job_namespace}/{self.job_name}, run_id={self.run_id}, "
            f"streaming={self.streaming})"
        )

    # -- building blocks -------------------------------------------------------------

    def _run_facets(self, extra: Mapping[str, RunFacet] | None) -> dict[str, RunFacet]:
        facets: dict[str, RunFacet] = {}
        if self.parent is not None:
            facets["parent"] = self.parent
        if self.run_facet is not None:
            facets[PAIMON_RUN_FACET_KEY] = self.run_facet
        if self.engine_version:
            facets["processing_engine"] = processing_engine_run.ProcessingEngineRunFacet(
                version=str(self.engine_version),
                name="spark",
                openlineageAdapterVersion=__version__,
                producer=PRODUCER,
            )
        facets.update(extra or {})
        return facets

    def event(
        self,
        state: RunState | str,
        *,
        inputs: Sequence[InputDataset | PaimonTableRef] = (),
        outputs: Sequence[OutputDataset | PaimonTableRef] = (),
        run_facets: Mapping[str, RunFacet] | None = None,
        event_time: str | None = None,
    ) -> RunEvent:
        """Any event of this run; ``PaimonTableRef``s become datasets of the right kind."""
        return RunEvent(
            eventType=RunState(state) if isinstance(state, str) else state,
            eventTime=event_time or _now(),
            run=Run(runId=self.run_id, facets=self._run_facets(run_facets)),
            job=Job(namespace=self.job_namespace, name=self.job_name, facets=dict(self._job_facets)),
            inputs=[_as_dataset(item, "input") for item in inputs],
            outputs=[_as_dataset(item, "output") for item in outputs],
            producer=PRODUCER,
        )

    # -- the life of a run -----------------------------------------------------------

    def start(
        self,
        inputs: Sequence[InputDataset | PaimonTableRef] = (),
        outputs: Sequence[OutputDataset | PaimonTableRef] = (),
    ) -> RunEvent:
        """START: the query started (or the batch job began)."""
        return self.event(RunState.START, inputs=inputs, outputs=outputs)

    def batch(
        self,
        batch_id: int,
        sources: Sequence[PaimonTableRef] = (),
        sinks: Sequence[PaimonTableRef] = (),
        *,
        state: RunState | str = RunState.RUNNING,
    ) -> RunEvent:
        """One batch's event (RUNNING by default): its inputs, outputs and our facet.

        Each source's ``snapshot_id`` is the last snapshot the batch consumed and
        each sink's the snapshot its commit created (None if it committed nothing).
        """
        facet = PaimonBatchRunFacet(
            batchId=int(batch_id),
            sources=[ref.snapshot() for ref in sources],
            sinks=[ref.snapshot() for ref in sinks],
        )
        return self.event(
            state, inputs=sources, outputs=sinks, run_facets={PAIMON_BATCH_FACET_KEY: facet}
        )

    def complete(
        self,
        inputs: Sequence[InputDataset | PaimonTableRef] = (),
        outputs: Sequence[OutputDataset | PaimonTableRef] = (),
        run_facets: Mapping[str, RunFacet] | None = None,
    ) -> RunEvent:
        """COMPLETE: the batch job (or an ``availableNow`` query) finished."""
        return self.event(RunState.COMPLETE, inputs=inputs, outputs=outputs, run_facets=run_facets)

    def fail(
        self,
        error: BaseException | str,
        inputs: Sequence[InputDataset | PaimonTableRef] = (),
        outputs: Sequence[OutputDataset | PaimonTableRef] = (),
    ) -> RunEvent:
        """FAIL with the ``errorMessage`` facet (message, and stack trace of an exception)."""
        if isinstance(error, BaseException):
            message = f"{type(error).__name__}: {error}"
            stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        else:
            message, stack = str(error), None
        facet = error_message_run.ErrorMessageRunFacet(
            message=message or "unknown error",
            programmingLanguage="PYTHON",
            stackTrace=stack,
            producer=PRODUCER,
        )
        return self.event(
            RunState.FAIL, inputs=inputs, outputs=outputs, run_facets={"errorMessage": facet}
        )

    def abort(
        self,
        inputs: Sequence[InputDataset | PaimonTableRef] = (),
        outputs: Sequence[OutputDataset | PaimonTableRef] = (),
    ) -> RunEvent:
        """ABORT: the query was stopped before it finished (not a failure)."""
        return self.event(RunState.ABORT, inputs=inputs, outputs=outputs)


def _as_dataset(item: Any, kind: Literal["input", "output"]) -> Any:
    if isinstance(item, PaimonTableRef):
        return item.dataset(kind)
    expected = InputDataset if kind == "input" else OutputDataset
    if not isinstance(item, expected):
        raise TypeError(f"{kind}s must be {expected.__name__} or PaimonTableRef, got {item!r}")
    return item
