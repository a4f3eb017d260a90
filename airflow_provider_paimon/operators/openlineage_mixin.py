"""OpenLineage facets and Paimon asset outlets for the operators that submit Paimon jobs.

Airflow's OpenLineage provider asks an operator for ``get_openlineage_facets_on_start``
/ ``_on_complete`` / ``_on_failure`` and puts the datasets into the task's events. The
datasets here are built by ``lineage.openlineage.paimon_dataset``, the same function the
Spark-side events use, so the Airflow task and the Spark run it starts name the same
datasets (namespace = warehouse URI, name = ``db.table[$branch_NAME]``) and Marquez
draws one graph. Imports of the OpenLineage provider are inside the methods, as the
provider asks: the operators work without it.

What the host operator must have (``PaimonSparkJobOperator`` has it all):
``paimon_hook`` (a ``PaimonHook``), ``input_tables()`` / ``output_tables()`` giving
``(db.table, branch)`` pairs and ``last_result`` (the job's result dict). What differs
between operators is said by overriding a method, never by switching on a family
name here: ``ol_lifecycle_change`` (a branch created, dropped or renamed),
``ol_main_snapshot_read`` (the main snapshot a new branch starts from),
``ol_committed_snapshot`` (the snapshot the job says it committed),
``ol_output_gone`` (the output no longer exists) and ``paimon_outlet_tables``.

Versions (the ``version`` facet = a Paimon snapshot id):

* an input: the snapshot the job read, when the result says it (a branch created from
  ``snapshot_id``, a branch fast-forwarded into main); else the input's latest snapshot
  when the task started;
* an output: the snapshot the job committed or left as latest (``main_snapshot_id``,
  ``snapshot_id``), else the output's latest snapshot after the job; none when the
  job failed, changed nothing, or the branch is gone.

Outlets: after a run that changed a table, the operator adds the ``paimon://`` asset of
each table it wrote (not for tags, which are metadata, nor a deleted branch) to its ``outlets`` (the warehouse is in the connection, which is
not read while a DAG file is parsed), so DAGs scheduled on that asset run. Assets the
user declared are kept and not duplicated; a run that changed nothing (``skipped``,
``dry_run``, nothing committed) adds none.

Partitioned events (``asset_partitions=True``): the operator keeps each output's latest
snapshot (the JSON, not the id: a replace-main or rollback reuses ids) before the job
and, after it, emits one partitioned event per partition whose live files differ
between that state and the new latest one (``paimon.partition_keys.partitions_between``,
reading only the manifests the two states do not share). Operators that never change
the rows a reader sees (compaction, tags, branch delete, expiry) refuse the argument.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from airflow_provider_paimon.paimon.names import is_main, parse_table_name
from airflow_provider_paimon.paimon.snapshots import TableLayout, latest_snapshot

if TYPE_CHECKING:
    from openlineage.client.event_v2 import InputDataset, OutputDataset

    from airflow_provider_paimon.hooks.paimon import PaimonHook

log = logging.getLogger(__name__)

__all__ = ["PaimonOpenLineageMixin", "table_changed"]

TableRef = tuple[str, "str | None"]


def table_changed(result: dict[str, Any] | None) -> bool:
    """Did the job change a table? (False for a skip, a dry run, nothing committed, no-op.)"""
    if not isinstance(result, dict):
        return False
    if result.get("skipped") or result.get("dry_run") or result.get("unchanged"):
        return False
    return result.get("committed", True) is not False


def _norm_branch(branch: str | None) -> str | None:
    if branch is None or not str(branch).strip() or is_main(str(branch)):
        return None
    return str(branch)


class PaimonOpenLineageMixin:
    """OpenLineage ``get_openlineage_facets_on_*`` and runtime outlets for Paimon operators."""

    # state kept between on_start, execute and on_complete (same operator object)
    _ol_start_snapshots: dict[TableRef, int | None]
    #: False where the job never changes the rows a reader sees: no partition events
    partition_events_allowed: ClassVar[bool] = True

    def init_asset_partitions(self, asset_partitions: Any) -> None:
        """The operator's ``asset_partitions`` argument (its ``__init__`` takes it, so
        Airflow's checks of ``partial()``/``expand()`` know it): ``True``, after a run that
        changed an output, one partitioned asset event per partition changed (module doc)."""
        from airflow_provider_paimon.common.asset_partitions import check_asset_partitions

        task_id = getattr(self, "task_id", "?")
        self.asset_partitions = check_asset_partitions(asset_partitions, task_id)
        if self.asset_partitions and not self.partition_events_allowed:
            raise ValueError(
                f"{task_id}: {type(self).__name__} changes no rows a reader sees, so it has no "
                "partitions to report; drop asset_partitions=True"
            )
        self._partition_starts: dict[TableRef, dict[str, Any] | None] = {}

    if TYPE_CHECKING:  # what the host operator provides (PaimonSparkJobOperator does)

        @property
        def paimon_hook(self) -> PaimonHook: ...

        def input_tables(self) -> list[TableRef]: ...

        def output_tables(self) -> list[TableRef]: ...

    # -- tables --

    def _ol_tables(self, kind: str) -> list[TableRef]:
        method = self.input_tables if kind == "input" else self.output_tables
        seen: list[TableRef] = []
        for table, branch in method():
            ref = (str(table), _norm_branch(branch))
            if ref not in seen:
                seen.append(ref)
        return seen

    def _ol_warehouse(self) -> str:
        return self.paimon_hook.warehouse

    def _ol_catalog_options(self) -> dict[str, str]:
        """The catalog options that name the namespace (a REST catalog's ``metastore``, ``uri``)."""
        options = self.paimon_hook.catalog_config.options
        return {k: str(options[k]) for k in ("metastore", "uri") if options.get(k) is not None}

    def _ol_latest(self, table: str, branch: str | None) -> int | None:
        try:
            return self.paimon_hook.get_latest_snapshot_id(table, branch)
        except Exception as err:  # noqa: BLE001 - lineage never fails a task
            log.debug("no latest snapshot for %s (branch %s): %s", table, branch, err)
            return None

    def _ol_schema(self, table: str, branch: str | None) -> list[Any] | None:
        from airflow_provider_paimon.lineage.openlineage import schema_fields_from_paimon

        try:
            fields = self.paimon_hook.get_table(table, branch).table_schema.fields
        except Exception as err:  # noqa: BLE001
            log.debug("no schema for %s (branch %s): %s", table, branch, err)
            return None
        return schema_fields_from_paimon(fields)

    def _ol_dataset(
        self, kind: Literal["input", "output"], table: str, branch: str | None, snapshot_id: int | None, *,
        schema: bool = True,
    ) -> InputDataset | OutputDataset:
        from airflow_provider_paimon.lineage.openlineage import paimon_dataset

        database, name = parse_table_name(table)
        dataset = paimon_dataset(
            self._ol_warehouse(),
            database,
            name,
            branch=branch,
            snapshot_id=snapshot_id,
            schema_fields=self._ol_schema(table, branch) if schema else None,
            kind=kind,
            catalog_options=self._ol_catalog_options(),
        )
        lifecycle = self._ol_lifecycle(kind, table, branch)
        if lifecycle is not None and dataset.facets is not None:  # paimon_dataset always sets facets
            dataset.facets["lifecycleStateChange"] = lifecycle
        return dataset

    # -- what subclasses say about themselves --

    def ol_lifecycle_change(self) -> str | None:
        """``CREATE``, ``DROP`` or ``RENAME`` when the operator creates, drops or renames
        the branch it outputs (``None``: the dataset itself lives on)."""
        return None

    def ol_main_snapshot_read(self, result: dict[str, Any]) -> int | None:
        """The main snapshot the job read, when its result says so (``None``: the
        latest at start)."""
        return None

    def ol_committed_snapshot(self, result: dict[str, Any]) -> int | None:
        """The snapshot the job committed, when its result says so (``None``: read the
        output's latest after the job)."""
        return None

    def ol_output_gone(self) -> bool:
        """Whether the output no longer exists after a successful run (no version)."""
        return False

    def ol_input_facets(self, table: str, branch: str | None, result: dict[str, Any]) -> dict[str, Any]:
        """Extra ``inputFacets`` of an input dataset from the job's result (e.g. an
        audit's data quality assertions on the branch it checked); none by default."""
        return {}

    def _ol_with_input_facets(self, dataset: Any, table: str, branch: str | None, result: dict[str, Any]) -> Any:
        try:
            extra = self.ol_input_facets(table, branch, result) if result else {}
        except Exception as err:  # noqa: BLE001 - lineage never fails a task
            log.warning("OpenLineage input facets for %s not built: %s", table, err)
            extra = {}
        if extra:
            dataset.inputFacets = {**(getattr(dataset, "inputFacets", None) or {}), **extra}
        return dataset

    def _ol_lifecycle(self, kind: str, table: str, branch: str | None) -> Any:
        """``lifecycleStateChange`` for the branch an operator creates, drops or renames."""
        change = self.ol_lifecycle_change() if kind == "output" and branch is not None else None
        if change is None:
            return None
        from openlineage.client.facet_v2 import lifecycle_state_change_dataset as lsc

        from airflow_provider_paimon.lineage.openlineage import (
            PRODUCER,
            dataset_name,
            warehouse_namespace,
        )

        state = lsc.LifecycleStateChange
        if change == "CREATE":
            return lsc.LifecycleStateChangeDatasetFacet(lifecycleStateChange=state.CREATE, producer=PRODUCER)
        if change == "DROP":
            return lsc.LifecycleStateChangeDatasetFacet(lifecycleStateChange=state.DROP, producer=PRODUCER)
        if change == "RENAME":
            old = _norm_branch(getattr(self, "branch", None))
            database, name = table.split(".", 1)
            return lsc.LifecycleStateChangeDatasetFacet(
                lifecycleStateChange=state.RENAME,
                previousIdentifier=lsc.PreviousIdentifier(
                    namespace=warehouse_namespace(self._ol_warehouse(), self._ol_catalog_options()),
                    name=dataset_name(database, name, old),
                ),
                producer=PRODUCER,
            )
        return None

    # -- versions --

    def _ol_record_start(self) -> None:
        if getattr(self, "_ol_start_snapshots", None):
            return
        self._ol_start_snapshots = {
            ref: self._ol_latest(*ref) for ref in [*self._ol_tables("input"), *self._ol_tables("output")]
        }

    def _ol_input_version(self, ref: TableRef, result: dict[str, Any]) -> int | None:
        outputs = self._ol_tables("output")
        if ref not in outputs:
            if ref[1] is not None and result.get("branch_snapshot_id") is not None:
                return int(result["branch_snapshot_id"])  # the branch state main now reads as
            if ref[1] is None and (read := self.ol_main_snapshot_read(result)) is not None:
                return read
        return getattr(self, "_ol_start_snapshots", {}).get(ref)

    def _ol_output_version(self, ref: TableRef, result: dict[str, Any]) -> int | None:
        if not table_changed(result):
            return getattr(self, "_ol_start_snapshots", {}).get(ref)
        if ref[1] is None and result.get("main_snapshot_id") is not None:
            return int(result["main_snapshot_id"])
        committed = self.ol_committed_snapshot(result)
        if committed is not None:
            return committed
        if self.ol_output_gone():
            return None
        return self._ol_latest(*ref)

    # -- the OpenLineage provider's interface --

    def get_openlineage_facets_on_start(self) -> Any:
        """The tables the task will read and write, with their schema and current snapshot."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        try:
            self._ol_record_start()
            starts = self._ol_start_snapshots
            inputs = [self._ol_dataset("input", t, b, starts.get((t, b))) for t, b in self._ol_tables("input")]
            outputs = [self._ol_dataset("output", t, b, None) for t, b in self._ol_tables("output")]
        except Exception as err:  # noqa: BLE001 - lineage never fails a task
            log.warning("OpenLineage facets for %s not built: %s", getattr(self, "task_id", "?"), err)
            return OperatorLineage()
        return OperatorLineage(inputs=inputs, outputs=outputs)

    def get_openlineage_facets_on_complete(self, task_instance: Any = None) -> Any:
        """Inputs at the snapshot read, outputs at the snapshot the job left (from the result)."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        result = getattr(self, "last_result", None) or {}
        try:
            self._ol_record_start()
            inputs = [
                self._ol_with_input_facets(
                    self._ol_dataset("input", t, b, self._ol_input_version((t, b), result)), t, b, result
                )
                for t, b in self._ol_tables("input")
            ]
            outputs = [
                self._ol_dataset("output", t, b, self._ol_output_version((t, b), result))
                for t, b in self._ol_tables("output")
            ]
        except Exception as err:  # noqa: BLE001
            log.warning("OpenLineage facets for %s not built: %s", getattr(self, "task_id", "?"), err)
            return OperatorLineage()
        return OperatorLineage(inputs=inputs, outputs=outputs)

    def get_openlineage_facets_on_failure(self, task_instance: Any = None) -> Any:
        """The tables involved; outputs carry no version (nothing is known to be committed)."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        try:
            starts = getattr(self, "_ol_start_snapshots", None) or {}
            result = getattr(self, "last_result", None) or {}  # a job that reported, then failed the task
            inputs = [
                self._ol_with_input_facets(self._ol_dataset("input", t, b, starts.get((t, b))), t, b, result)
                for t, b in self._ol_tables("input")
            ]
            outputs = [self._ol_dataset("output", t, b, None) for t, b in self._ol_tables("output")]
        except Exception as err:  # noqa: BLE001
            log.warning("OpenLineage facets for %s not built: %s", getattr(self, "task_id", "?"), err)
            return OperatorLineage()
        return OperatorLineage(inputs=inputs, outputs=outputs)

    # -- assets --

    def paimon_outlet_tables(self) -> list[TableRef]:
        """The tables whose asset this operator updates: those it writes, except where
        nothing a reader could schedule on appears (operators that only change metadata,
        such as tags, override this to return none; a deleted branch has nothing left)."""
        return [] if self.ol_output_gone() else self._ol_tables("output")

    def paimon_assets(self) -> list[Any]:
        """The ``paimon://`` assets this operator updates (see :meth:`paimon_outlet_tables`)."""
        from airflow_provider_paimon.assets import asset_for

        warehouse, options = self._ol_warehouse(), self._ol_catalog_options()
        return [
            asset_for(warehouse, table, branch, catalog_options=options)
            for table, branch in self.paimon_outlet_tables()
        ]

    def add_paimon_outlets(self, result: dict[str, Any] | None) -> list[Any]:
        """Add the written tables' assets to ``outlets`` when the run changed them; return those added."""
        if not table_changed(result):
            return []
        try:
            assets = self.paimon_assets()
        except Exception as err:  # noqa: BLE001 - a lineage problem must not fail the task
            log.warning("Paimon asset outlets not added: %s", err)
            return []
        outlets = list(getattr(self, "outlets", None) or [])
        known = {getattr(o, "uri", None) for o in outlets}
        added = [asset for asset in assets if asset.uri not in known]
        if added:
            self.outlets = [*outlets, *added]
        return added

    def _record_partition_starts(self) -> None:
        """``asset_partitions``: each output's latest snapshot JSON before the job (None:
        none yet, e.g. a branch to be created). A read that fails is not recorded, so no
        partition is reported for that output rather than every partition."""
        for table, branch in self.paimon_outlet_tables():
            try:
                layout = TableLayout.of(self.paimon_hook.get_table(table))
                self._partition_starts[(table, branch)] = latest_snapshot(layout, branch)
            except Exception as err:  # noqa: BLE001 - reported after the job, when it matters
                log.warning("asset_partitions: the state of %s (branch %s) before the job could not "
                            "be read (%s); no partition events for it", table, branch or "main", err)

    def emit_changed_partitions(self, context: Any) -> dict[str, list[str]]:
        """One partitioned event per partition each output changed (``asset_partitions``)."""
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_provider_paimon.assets import asset_for
        from airflow_provider_paimon.common.asset_partitions import emit_partition_events
        from airflow_provider_paimon.paimon.partition_keys import partition_keys_between

        emitted: dict[str, list[str]] = {}
        for table, branch in self.paimon_outlet_tables():
            if (table, branch) not in self._partition_starts:
                continue  # its state before the job is unknown (logged then)
            try:
                handle = self.paimon_hook.get_table(table)
                after = latest_snapshot(TableLayout.of(handle), branch)
                keys = partition_keys_between(handle, self._partition_starts[(table, branch)], after)
            except Exception as err:  # noqa: BLE001 - named in the task's failure
                raise AirflowFailException(
                    f"{getattr(self, 'task_id', '?')}: the job succeeded, but the partitions it changed in "
                    f"{table} (branch {branch or 'main'}) could not be read ({err}); no partition "
                    "event was emitted (not retried: a retry would run the job again)"
                ) from None
            asset = asset_for(self._ol_warehouse(), table, branch, catalog_options=self._ol_catalog_options())
            extra = {"paimon": {"table": table, "branch": branch or "main",
                                "snapshot_id": None if after is None else int(after["id"])}}
            emitted[asset.uri] = emit_partition_events(self, context, asset, keys, extra)
        return emitted

    def pre_execute(self, context: Any) -> None:
        """Before execute: remember each table's latest snapshot (the inputs' read versions).

        Done here too because the OpenLineage listener calls ``on_start`` in a forked
        process, whose state is lost, and may not be enabled at all.
        """
        super().pre_execute(context)  # type: ignore[misc]  # a mixin: the operator class has it
        try:
            self._ol_record_start()
        except Exception as err:  # noqa: BLE001
            log.debug("start snapshots not recorded: %s", err)
        if getattr(self, "asset_partitions", False):
            self._record_partition_starts()

    def post_execute(self, context: Any, result: Any = None) -> None:
        """After a successful execute: the written tables' assets become outlets, and with
        ``asset_partitions`` get one event per partition changed (see module doc)."""
        super().post_execute(context, result)  # type: ignore[misc]  # a mixin: the operator class has it
        last = getattr(self, "last_result", None)
        self.add_paimon_outlets(last)
        if getattr(self, "asset_partitions", False) and table_changed(last):
            partitions = self.emit_changed_partitions(context)
            if isinstance(last, dict):
                last["asset_partitions"] = partitions
