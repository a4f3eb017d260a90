"""Lineage store fixtures: one fresh store per test on SQLite, MariaDB and PostgreSQL.

On the servers each test gets its own system database (MariaDB) or schema
(PostgreSQL) named by ``unique_name``, dropped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .helpers import StoreTarget, drop_target, make_target

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("mysql", id="mariadb", marks=pytest.mark.mysql),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def target(request, tmp_path, unique_name) -> Iterator[StoreTarget]:
    """A fresh (not yet created) store location on each backend."""
    tgt = make_target(request.param, request, tmp_path, unique_name)
    yield tgt
    drop_target(tgt)


@pytest.fixture
def store(target):
    """An opened, empty ``LineageStore`` on each backend."""
    from airflow_provider_paimon.lineage import LineageStore

    with LineageStore.from_url(target.url, target.database) as opened:
        yield opened


@pytest.fixture
def mysql_target(request, tmp_path, unique_name) -> Iterator[StoreTarget]:
    tgt = make_target("mysql", request, tmp_path, unique_name)
    yield tgt
    drop_target(tgt)
