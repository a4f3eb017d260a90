"""Helpers of the lineage-capture tests: session conf for one test, tables, waiting.

Used by ``tests/capture`` and by the primary-key lineage test; kept out of the test
modules so importing them does not collect those modules' tests twice.
"""

from __future__ import annotations

import time

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

from airflow_provider_paimon.spark.session_info import session_conf
from support.pypaimon_writes import commit_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


# the session's SQL conf for one block, restored (a key that was unset is unset again)
configured = session_conf


def make_tables(warehouse, *names):
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    for name in names:
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
    return catalog


def append(catalog, name, rows):
    append_to(catalog.get_table(name), rows)


def append_to(table, rows):
    """One pypaimon commit of ``rows`` as ids (``v`` = "x")."""
    commit_arrow(table, pa.table({"id": list(rows), "v": ["x"] * len(rows)}, schema=SCHEMA))


def snapshot_identity(catalog, name, snapshot_id, branch=None):
    """The (commit user, identifier, time) of a snapshot, read with plain pypaimon."""
    from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity

    table = catalog.get_table(name if branch is None else f"{name}$branch_{branch}")
    snap = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    return SnapshotIdentity(snap.commit_user, snap.commit_identifier, snap.time_millis)


def wait_until(predicate, timeout=60.0, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def capture_conf(url: str, job: str, spool, ol_url: str | None = None) -> dict[str, str]:
    """The session conf of a capture into ``url`` for ``job`` (and OpenLineage to ``ol_url``, sync)."""
    conf = {
        "spark.paimon.lineage.url": url,
        "spark.paimon.lineage.job": job,
        "spark.paimon.lineage.spoolDir": str(spool),
        "spark.paimon.lineage.pollIntervalMs": "100",
    }
    if ol_url is not None:
        conf.update({
            "spark.paimon.openlineage.transport.type": "http",
            "spark.paimon.openlineage.transport.url": ol_url,
            "spark.paimon.openlineage.async": "false",
        })
    return conf
