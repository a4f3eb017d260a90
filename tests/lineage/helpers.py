"""Helpers shared by the lineage tests (targets, cleanup, counting rows)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import sqlalchemy as sa


@dataclass(frozen=True)
class StoreTarget:
    """Where a test's store lives: a URL and the system database name."""

    backend: str
    url: str
    database: str


def drop_target(target: StoreTarget) -> None:
    """Remove a test's system database/schema from its server."""
    if target.backend == "sqlite":
        return
    engine = sa.create_engine(target.url)
    try:
        with engine.connect() as conn:
            if target.backend == "mysql":
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{target.database}`")
            else:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{target.database}" CASCADE')
            conn.commit()
    finally:
        engine.dispose()


def make_target(backend: str, request: pytest.FixtureRequest, tmp_path, unique_name: str) -> StoreTarget:
    if backend == "sqlite":
        return StoreTarget("sqlite", f"sqlite:///{tmp_path}/lineage.sqlite", unique_name)
    if backend == "mysql":
        return StoreTarget("mysql", request.getfixturevalue("mysql_server_url"), unique_name)
    return StoreTarget("postgresql", request.getfixturevalue("postgres_server_url"), unique_name)



def snapshot_count(store, name: str) -> int:
    """Rows in one of the store's tables, counted with plain SQL."""
    with store.engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT COUNT(*) FROM {name}")).scalar()
