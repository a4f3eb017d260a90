"""The capture's OpenLineage side: one emitter, one run per streaming query or batch write.

START when a query starts, RUNNING per micro-batch, COMPLETE/FAIL when it ends; START
and COMPLETE per batch write. Datasets carry the snapshot as their version and a schema
facet read once per table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .recorder import BatchRecord, TableAt

log = logging.getLogger(__name__)


class CaptureOpenLineage:
    """OpenLineage events for one capture (a no-op when no transport is configured)."""

    def __init__(
        self, conf: Mapping[str, Any], job: str, spark: Any, run_properties: Mapping[str, str] | None = None,
        *, engine_version: str | None = None,
    ) -> None:
        from airflow_provider_paimon.lineage.openlineage import PaimonLineageEmitter

        self.emitter = PaimonLineageEmitter.from_conf(conf)
        self.conf = dict(conf)
        self.run_properties = dict(run_properties or {})
        self.job = job
        self.version = engine_version or getattr(spark, "version", None)
        self.runs: dict[str, Any] = {}
        self._schemas: dict[tuple[str, str, str, str], Any] = {}

    @property
    def enabled(self) -> bool:
        return self.emitter.enabled

    def _ref(self, table: TableAt) -> Any:
        from airflow_provider_paimon.lineage.openlineage import PaimonTableRef

        # The namespace the data source computed (it knows the catalog options: a REST
        # catalog's namespace is not its warehouse), so operators and Spark name it alike.
        return PaimonTableRef(
            table.namespace or table.warehouse, table.database, table.table,
            None if table.branch == "main" else table.branch,
            table.snapshot_id, schema_fields=self._schema(table),
        )

    def _schema(self, table: TableAt) -> Any:
        """Schema facet fields, read once per table (None when it cannot be read)."""
        key = (table.warehouse, table.database, table.table, table.branch)
        if key not in self._schemas:
            try:
                from airflow_provider_paimon.lineage.openlineage import schema_fields_from_paimon
                from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

                loaded = load_table(
                    open_catalog(table.warehouse), f"{table.database}.{table.table}", table.branch
                )
                self._schemas[key] = schema_fields_from_paimon(loaded)
            except Exception as err:  # noqa: BLE001 - a facet is not worth failing for
                log.debug("no schema facet for %s: %s", table.display, err)
                self._schemas[key] = None
        return self._schemas[key]

    def _run(self, key: str, streaming: bool, run_id: str | None = None) -> Any:
        if key not in self.runs:
            self.runs[key] = self.emitter.new_run(
                self.job, streaming=streaming, parent_conf=self.conf, engine_version=self.version,
                run_properties=self.run_properties, run_id=run_id,
            )
        return self.runs[key]

    # ``run_id``: the OpenLineage run's id when more than one process sends its events
    # (Spark Connect: the client sends START and COMPLETE, the server's workers RUNNING;
    # both take the query's Spark ``runId``); None: a new random one per query.

    def query_started(self, query_id: str, sources: list[TableAt], run_id: str | None = None) -> None:
        if self.enabled:
            run = self._run(query_id, streaming=True, run_id=run_id)
            self.emitter.emit(run.start(inputs=[self._ref(s) for s in sources]))

    def micro_batch(self, query_id: str, record: BatchRecord, run_id: str | None = None) -> None:
        if self.enabled:
            run = self._run(query_id, streaming=True, run_id=run_id)
            self.emitter.emit(
                run.batch(
                    int(record.barrier_id or 0),
                    sources=[self._ref(s) for s in record.sources],
                    sinks=[self._ref(s) for s in record.sinks],
                )
            )

    def query_terminated(self, query_id: str, exception: str | None, run_id: str | None = None) -> None:
        if self.enabled:
            run = self.runs.pop(query_id, None) or self._run(query_id, streaming=True, run_id=run_id)
            self.runs.pop(query_id, None)
            self.emitter.emit(run.fail(str(exception)) if exception else run.complete())

    def batch_job(self, record: BatchRecord) -> None:
        if self.enabled:
            run = self.emitter.new_run(
                self.job, streaming=False, parent_conf=self.conf, engine_version=self.version,
                run_properties=self.run_properties,
            )
            sources = [self._ref(s) for s in record.sources]
            sinks = [self._ref(s) for s in record.sinks]
            self.emitter.emit(run.start(inputs=sources, outputs=sinks))
            self.emitter.emit(
                run.batch(int(record.barrier_id or 0), sources, sinks, state="COMPLETE")
            )

    def close(self) -> None:
        try:
            self.emitter.close()
        except Exception:
            log.exception("closing the OpenLineage emitter failed")
