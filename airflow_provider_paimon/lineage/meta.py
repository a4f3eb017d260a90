"""Pluggable lineage stores: the proposal's ``LineageMetaFactory`` and ``LineageMeta``.

The proposal makes the lineage store pluggable: ``'lineage-meta' = '<identifier>'``
picks the factory whose ``identifier()`` matches, and the factory's ``create(context)``
builds the store from the catalog options. Here the two interfaces are Python
protocols (snake_case names), and factories are found through the entry point group
``airflow_provider_paimon.lineage_meta``::

    [project.entry-points."airflow_provider_paimon.lineage_meta"]
    mystore = "my_package.lineage:MyStoreFactory"

An entry point names the factory class (or an instance, or a function returning
one). This package ships ``jdbc`` (the SQL ``LineageStore``, the default) and
``memory`` (rows kept in this process, for tests and dry runs).

What the capture needs of a store beyond the proposal's interface it asks for only
when the store has it: ``store_lineage`` (one barrier's rows in one call; otherwise
one call per row), ``next_barrier_id`` (a batch job's barrier; otherwise one more
than the job's largest recorded barrier) and ``set_options`` (the ``options`` table).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

from .entities import DataLineage, LineageFilter, TableLineage
from .errors import InvalidLineageArgumentError, LineageError
from .meta_context import LineageMetaContext

log = logging.getLogger(__name__)

#: The entry point group factories are registered in.
ENTRY_POINT_GROUP = "airflow_provider_paimon.lineage_meta"


@runtime_checkable
class LineageMeta(Protocol):
    """The store of one catalog's table and data lineage (the proposal's ``LineageMeta``).

    ``predicate`` is a ``LineageFilter`` (None: everything).
    """

    def store_source_table_lineage(self, entity: TableLineage) -> None: ...

    def delete_source_table_lineage(self, job: str) -> Any: ...

    def source_table_lineages(self, predicate: LineageFilter | None = None) -> Iterable[TableLineage]: ...

    def store_sink_table_lineage(self, entity: TableLineage) -> None: ...

    def sink_table_lineages(self, predicate: LineageFilter | None = None) -> Iterable[TableLineage]: ...

    def delete_sink_table_lineage(self, job: str) -> Any: ...

    def store_source_data_lineage(self, entity: DataLineage) -> None: ...

    def source_data_lineages(self, predicate: LineageFilter | None = None) -> Iterable[DataLineage]: ...

    def store_sink_data_lineage(self, entity: DataLineage) -> None: ...

    def sink_data_lineages(self, predicate: LineageFilter | None = None) -> Iterable[DataLineage]: ...

    def close(self) -> None: ...


@runtime_checkable
class LineageMetaFactory(Protocol):
    """Builds a ``LineageMeta`` from a context (the proposal's ``LineageMetaFactory``)."""

    def identifier(self) -> str: ...

    def create(self, context: LineageMetaContext) -> LineageMeta: ...


# -- discovery -------------------------------------------------------------------------

_lock = threading.Lock()
_registered: dict[str, LineageMetaFactory] = {}


def register_factory(factory: LineageMetaFactory) -> None:
    """Add a factory in this process (tests, notebooks); wins over an entry point."""
    with _lock:
        _registered[_checked(factory, "register_factory").identifier()] = factory


def _checked(factory: Any, source: str) -> LineageMetaFactory:
    if isinstance(factory, type) or (
        callable(factory) and not isinstance(factory, LineageMetaFactory)
    ):
        factory = factory()
    if not isinstance(factory, LineageMetaFactory):
        raise LineageError(
            f"{source} is not a LineageMetaFactory (it needs identifier() and create(context))"
        )
    ident = factory.identifier()
    if not isinstance(ident, str) or not ident.strip() or ident != ident.strip().lower():
        raise LineageError(f"{source}: identifier() must be a lower-case name, got {ident!r}")
    return factory


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def factories() -> dict[str, LineageMetaFactory]:
    """Every factory by identifier: entry points, then ``register_factory`` ones.

    Read fresh each call (a package installed into a running interpreter is seen). An
    entry point that cannot be loaded is logged and left out; two entry points with one
    identifier are an error (which one would be used is otherwise an accident).
    """
    found: dict[str, LineageMetaFactory] = {}
    origin: dict[str, str] = {}
    # The shipped factories are known even where the package's metadata is not (a job
    # whose code came as a --py-files zip has no entry points); the entry points name
    # the same classes.
    from .meta_factories import JdbcLineageMetaFactory, MemoryLineageMetaFactory

    factory: LineageMetaFactory
    for builtin in (JdbcLineageMetaFactory, MemoryLineageMetaFactory):
        factory = builtin()
        found[factory.identifier()] = factory
        origin[factory.identifier()] = f"{builtin.__module__}:{builtin.__qualname__}"
    for ep in _entry_points():
        source = f"entry point {ep.name} = {ep.value}"
        try:
            factory = _checked(ep.load(), source)
        except Exception as err:  # noqa: BLE001 - one broken plugin must not hide the rest
            log.warning("lineage store factory %s cannot be loaded: %s", source, err)
            continue
        ident = factory.identifier()
        if ident in found and origin[ident] != ep.value:
            raise LineageError(
                f"two lineage store factories are named {ident!r}: {origin[ident]} and "
                f"{ep.value}; uninstall one"
            )
        found[ident] = factory
        origin[ident] = ep.value
    with _lock:
        found.update(_registered)
    return found


def installed_identifiers() -> list[str]:
    """The ``lineage-meta`` values this process can use."""
    return sorted(factories())


def find_factory(identifier: str) -> LineageMetaFactory:
    """The factory for ``identifier``; an error naming the installed ones otherwise."""
    known = factories()
    factory = known.get(str(identifier).strip().lower())
    if factory is None:
        raise InvalidLineageArgumentError(
            f"lineage-meta {identifier!r}: no lineage store factory of that name is installed; "
            f"installed: {', '.join(sorted(known)) or 'none'} (entry point group {ENTRY_POINT_GROUP!r})"
        )
    return factory


def create_lineage_meta(identifier: str, context: LineageMetaContext) -> LineageMeta:
    """Build the store ``identifier`` names from ``context``."""
    meta = find_factory(identifier).create(context)
    if not isinstance(meta, LineageMeta):
        raise LineageError(
            f"lineage store factory {identifier!r} returned {type(meta).__name__}, which lacks "
            "the LineageMeta methods"
        )
    return meta


# -- what the capture asks of a store ------------------------------------------------


def store_rows(
    meta: Any,
    *,
    source_tables: list[TableLineage],
    sink_tables: list[TableLineage],
    source_data: list[DataLineage],
    sink_data: list[DataLineage],
    runs: list[Any] | None = None,
) -> None:
    """One barrier's rows: in one call when the store can, else one call per row.

    ``runs`` (``BarrierRun``: the Airflow run and Spark application of the barrier) are
    kept by stores that know them (``store_barrier_runs``; ours, in the same
    transaction); a store of another ``lineage-meta`` without that method skips them.
    """
    runs = list(runs or [])
    batch = getattr(meta, "store_lineage", None)
    if callable(batch):
        if runs and callable(getattr(meta, "store_barrier_runs", None)):
            batch(source_tables=source_tables, sink_tables=sink_tables,
                  source_data=source_data, sink_data=sink_data, runs=runs)
        else:
            batch(source_tables=source_tables, sink_tables=sink_tables,
                  source_data=source_data, sink_data=sink_data)
        return
    if runs and callable(getattr(meta, "store_barrier_runs", None)):
        meta.store_barrier_runs(runs)
    for entity in source_tables:
        meta.store_source_table_lineage(entity)
    for entity in sink_tables:
        meta.store_sink_table_lineage(entity)
    for data in source_data:
        meta.store_source_data_lineage(data)
    for data in sink_data:
        meta.store_sink_data_lineage(data)


def next_barrier_id(meta: Any, job: str) -> int:
    """A batch run's barrier: the store's sequence, else one above the job's largest."""
    seq = getattr(meta, "next_barrier_id", None)
    if callable(seq):
        return int(seq(job))
    where = LineageFilter(job=job)
    ids = [d.barrier_id for d in meta.source_data_lineages(where)]
    ids += [d.barrier_id for d in meta.sink_data_lineages(where)]
    return max(ids, default=0) + 1


def store_options(meta: Any, options: Mapping[str, Any]) -> list[str]:
    """Keep the catalog options in the store's ``options`` table, if it has one."""
    setter = getattr(meta, "set_options", None)
    return list(setter(options)) if callable(setter) else []
