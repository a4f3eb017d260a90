"""The lineage store factories this package ships: ``jdbc`` and ``memory``.

``jdbc`` is the proposal's default: the SQL ``LineageStore`` at the context's URL
(``jdbc.url`` mapped to a SQLAlchemy URL; none: ``$PAIMON_LINEAGE_URL`` or the
default SQLite file). ``memory`` keeps rows in this Python process, under the name
given by the option ``memory.name`` (default ``default``); it shows the seam is real
and lets tests and dry runs record lineage without a database. Both are registered
as entry points in pyproject.toml, like a third-party factory would be.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from airflow_provider_paimon.paimon.secrets import is_secret

from .entities import DataLineage, LineageFilter, TableLineage
from .meta_context import LineageMetaContext

JDBC = "jdbc"
MEMORY = "memory"
MEMORY_NAME_OPTION = "memory.name"


class JdbcLineageMetaFactory:
    """``lineage-meta = jdbc``: the SQL store (MySQL/MariaDB, PostgreSQL, SQLite)."""

    def identifier(self) -> str:
        return JDBC

    def create(self, context: LineageMetaContext) -> Any:
        from .store import LineageStore  # the store (its dialects, its schema) when one is opened

        return LineageStore.from_url(context.url, context.database, retry=context.retry)


# -- memory ----------------------------------------------------------------------------

_stores: dict[str, MemoryLineageMeta] = {}
_stores_lock = threading.Lock()


def memory_store(name: str = "default") -> MemoryLineageMeta:
    """The process's memory store called ``name`` (created empty on first use)."""
    with _stores_lock:
        store = _stores.get(name)
        if store is None:
            store = _stores[name] = MemoryLineageMeta(name)
        return store


def _matches(entity: Any, where: LineageFilter | None) -> bool:
    if where is None:
        return True
    for key in ("job", "database", "table", "branch", "barrier_id", "snapshot_id"):
        want = getattr(where, key)
        if want is not None and getattr(entity, key, want) != want:
            return False
    for key in ("barrier_id", "snapshot_id"):
        value = getattr(entity, key, None)
        if value is None:
            continue
        low, high = getattr(where, f"min_{key}"), getattr(where, f"max_{key}")
        if (low is not None and value < low) or (high is not None and value > high):
            return False
    return True


class MemoryLineageMeta:
    """Table and data lineage in dicts, upserted by the proposal's keys (thread-safe)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._tables: dict[str, dict[tuple[Any, ...], TableLineage]] = {"source": {}, "sink": {}}
        self._data: dict[str, dict[tuple[Any, ...], DataLineage]] = {"source": {}, "sink": {}}
        self.catalog_options: dict[str, str | None] = {}

    def _put_table(self, kind: str, entity: TableLineage) -> None:
        key = (entity.job, entity.database, entity.table)
        with self._lock:
            known = self._tables[kind].get(key)
            created = known.create_time if known else entity.create_time or datetime.now(timezone.utc)
            self._tables[kind][key] = replace(entity, create_time=created)

    def _put_data(self, kind: str, entity: DataLineage) -> None:
        key = (entity.job, entity.barrier_id, entity.database, entity.table)
        with self._lock:
            known = self._data[kind].get(key)
            created = known.create_time if known else entity.create_time or datetime.now(timezone.utc)
            self._data[kind][key] = replace(entity, create_time=created)

    def _list(self, rows: Mapping[tuple[Any, ...], Any], where: LineageFilter | None) -> list[Any]:
        with self._lock:
            return [rows[k] for k in sorted(rows) if _matches(rows[k], where)]

    def _delete(self, kind: str, job: str) -> int:
        with self._lock:
            keys = [k for k in self._tables[kind] if k[0] == job]
            for k in keys:
                del self._tables[kind][k]
            return len(keys)

    def store_source_table_lineage(self, entity: TableLineage) -> None:
        self._put_table("source", entity)

    def store_sink_table_lineage(self, entity: TableLineage) -> None:
        self._put_table("sink", entity)

    def store_source_data_lineage(self, entity: DataLineage) -> None:
        self._put_data("source", entity)

    def store_sink_data_lineage(self, entity: DataLineage) -> None:
        self._put_data("sink", entity)

    def source_table_lineages(self, predicate: LineageFilter | None = None) -> list[TableLineage]:
        return self._list(self._tables["source"], predicate)

    def sink_table_lineages(self, predicate: LineageFilter | None = None) -> list[TableLineage]:
        return self._list(self._tables["sink"], predicate)

    def source_data_lineages(self, predicate: LineageFilter | None = None) -> list[DataLineage]:
        return self._list(self._data["source"], predicate)

    def sink_data_lineages(self, predicate: LineageFilter | None = None) -> list[DataLineage]:
        return self._list(self._data["sink"], predicate)

    def delete_source_table_lineage(self, job: str) -> int:
        return self._delete("source", job)

    def delete_sink_table_lineage(self, job: str) -> int:
        return self._delete("sink", job)

    def set_options(self, values: Mapping[str, Any]) -> list[str]:
        kept = {str(k): None if v is None else str(v) for k, v in values.items() if not is_secret(k, v)}
        with self._lock:
            self.catalog_options.update(kept)
        return sorted(kept)

    def clear(self) -> None:
        with self._lock:
            for tables in self._tables.values():
                tables.clear()
            for data in self._data.values():
                data.clear()
            self.catalog_options.clear()

    def close(self) -> None:
        """Nothing to release: the rows stay for other users of ``memory_store(name)``."""

    def __repr__(self) -> str:
        return f"MemoryLineageMeta({self.name!r})"


class MemoryLineageMetaFactory:
    """``lineage-meta = memory``: ``memory_store(options['memory.name'] or 'default')``."""

    def identifier(self) -> str:
        return MEMORY

    def create(self, context: LineageMetaContext) -> MemoryLineageMeta:
        return memory_store(str(context.options().get(MEMORY_NAME_OPTION) or "default"))
