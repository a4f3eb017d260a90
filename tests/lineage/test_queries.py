"""Upstream/downstream one hop and transitively, branches, depth limits, impact, graph."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_provider_paimon.lineage import (
    InvalidLineageArgumentError,
    LineageStore,
    SnapshotRef,
    downstream,
    impact,
    table_graph,
    upstream,
)
from airflow_provider_paimon.lineage.queries import walk


def build_chain(store: LineageStore) -> None:
    """ods.raw -> (clean) -> dwd.orders -> (agg) -> dws.daily -> (report) -> ads.kpi.

    Batch b of ``clean`` consumed raw snapshot b and produced orders snapshot b+100; and
    so on down the chain. ``enrich`` also reads dim.users into dwd.orders, and a
    corrected ``clean`` runs on branch ``fix`` of dwd.orders.
    """
    for b in range(1, 4):
        store.record_batch("clean", b, [SnapshotRef("ods", "raw", b)], [SnapshotRef("dwd", "orders", b + 100)])
        store.record_batch("agg", b, [SnapshotRef("dwd", "orders", b + 100)], [SnapshotRef("dws", "daily", b + 200)])
        store.record_batch("report", b, [SnapshotRef("dws", "daily", b + 200)], [SnapshotRef("ads", "kpi", b + 300)])
    store.record_batch("enrich", 1, [SnapshotRef("dim", "users", 7)], [SnapshotRef("dwd", "orders", 101)])
    store.record_batch("clean-fix", 1, [SnapshotRef("ods", "raw", 1)], [SnapshotRef("dwd", "orders", 101, "fix")])


def names(nodes):
    return [(n.depth, f"{n.database}.{n.table}", n.branch, n.snapshot_id) for n in nodes]


def test_one_hop_and_transitive_up_and_downstream(store):
    build_chain(store)
    assert names(upstream(store, "dwd", "orders", 101)) == [(1, "dim.users", "main", 7), (1, "ods.raw", "main", 1)]
    assert names(upstream(store, "ads", "kpi", 302, depth=5)) == [
        (1, "dws.daily", "main", 202), (2, "dwd.orders", "main", 102), (3, "ods.raw", "main", 2)]
    assert names(downstream(store, "ods", "raw", 1, depth=2)) == [
        (1, "dwd.orders", "fix", 101), (1, "dwd.orders", "main", 101), (2, "dws.daily", "main", 201)]
    down = downstream(store, "ods", "raw", 1, depth=10)
    assert names(down)[-1] == (3, "ads.kpi", "main", 301)
    assert (down[0].job, down[0].barrier_id) == ("clean-fix", 1)


def test_branch_is_part_of_the_node(store):
    build_chain(store)
    assert names(upstream(store, "dwd", "orders", 101, branch="fix")) == [(1, "ods.raw", "main", 1)]
    assert downstream(store, "dwd", "orders", 101, branch="fix") == []
    assert upstream(store, "dwd", "orders", 999) == []


def test_depth_limit_and_cycles_terminate(store):
    # a job that reads and writes the same snapshots in a loop
    store.record_batch("loop", 1, [SnapshotRef("db", "a", 1)], [SnapshotRef("db", "b", 1)])
    store.record_batch("loop", 2, [SnapshotRef("db", "b", 1)], [SnapshotRef("db", "a", 1)])
    assert names(downstream(store, "db", "a", 1, depth=100)) == [(1, "db.b", "main", 1), (2, "db.a", "main", 1)]
    with pytest.raises(InvalidLineageArgumentError, match="depth"):
        downstream(store, "db", "a", 1, depth=0)
    with pytest.raises(InvalidLineageArgumentError, match="depth"):
        downstream(store, "db", "a", 1, depth=101)
    with pytest.raises(InvalidLineageArgumentError, match="snapshot_id"):
        upstream(store, "db", "a", -1)


def test_iterative_walk_answers_like_the_recursive_cte(store):
    build_chain(store)
    for direction, start in (("downstream", ("ods", "raw", 1)), ("upstream", ("ads", "kpi", 301)),
                             ("downstream", ("dim", "users", 7))):
        by_cte = walk(store, direction, *start, depth=4, recursive_cte=True)
        by_hops = walk(store, direction, *start, depth=4, recursive_cte=False)
        assert by_cte == by_hops and by_cte


def test_impact_lists_every_downstream_snapshot_per_table(store):
    build_chain(store)
    report = impact(store, "ods", "raw", 2)
    assert [(t.database, t.table, t.branch, t.snapshot_ids, t.jobs, t.min_depth) for t in report.tables] == [
        ("ads", "kpi", "main", [302], ["report"], 3),
        ("dwd", "orders", "main", [102], ["clean"], 1),
        ("dws", "daily", "main", [202], ["agg"], 2),
    ]
    onwards = impact(store, "ods", "raw", 2, onwards=True)
    assert [t.snapshot_ids for t in onwards.tables] == [[302, 303], [102, 103], [202, 203]]
    assert str(report.source) == "ods.raw@2"


def test_table_graph(store):
    build_chain(store)
    graph = table_graph(store)
    assert graph.jobs == ["agg", "clean", "clean-fix", "enrich", "report"]
    assert graph.writers("dwd", "orders") == ["clean", "clean-fix", "enrich"]
    assert graph.readers("dwd", "orders") == ["agg"]
    assert {(e.kind, e.table) for e in table_graph(store, job="enrich").edges} == {("source", "users"), ("sink", "orders")}


@pytest.mark.mysql
def test_seed_queries_run_verbatim_on_mariadb(mysql_target):
    """The seed's two SQL queries, as written (downstream: its typo fixed to join the
    snapshot tables), run on the store and agree with the API."""
    with LineageStore.from_url(mysql_target.url, mysql_target.database) as store:
        store.record_batch("myJob", 1, [SnapshotRef("srcDatabase", "srcTable", 120)], [SnapshotRef("myDatabase", "myTable", 123)])
        store.record_batch("nextJob", 9, [SnapshotRef("myDatabase", "myTable", 123)], [SnapshotRef("dstDatabase", "dstTable", 7)])
        store.record_batch("otherJob", 1, [SnapshotRef("x", "y", 1)], [SnapshotRef("myDatabase", "myTable", 124)])
        upstream_sql = """
-- Query upstream table snapshot for given table and snapshot
SELECT S.database, S.table, S.snapshot_id FROM
    source_snapshot_lineage S
    JOIN sink_snapshot_lineage T
    ON S.job=T.job AND S.barrier_id=T.barrier_id
    where T.`database`='myDatabase' and T.`table`='myTable' and T.snapshot_id=123;
"""
        downstream_sql = """
-- Query downstream table snapshot for given table and snapshot
SELECT T.database, T.table, T.snapshot_id FROM
    source_snapshot_lineage S
    JOIN sink_snapshot_lineage T
    ON S.job=T.job AND S.barrier_id=T.barrier_id
    where S.`database`='myDatabase' and S.`table`='myTable' and S.snapshot_id=123;
"""
        # A user's own connection to the system database, as the seed intends.
        engine = sa.create_engine(sa.engine.make_url(mysql_target.url).set(database=mysql_target.database))
        with engine.connect() as conn:
            up = [tuple(r) for r in conn.exec_driver_sql(upstream_sql)]
            down = [tuple(r) for r in conn.exec_driver_sql(downstream_sql)]
        engine.dispose()
        assert up == [("srcDatabase", "srcTable", 120)]
        assert down == [("dstDatabase", "dstTable", 7)]
        assert [(n.database, n.table, n.snapshot_id) for n in upstream(store, "myDatabase", "myTable", 123)] == up
        assert [(n.database, n.table, n.snapshot_id) for n in downstream(store, "myDatabase", "myTable", 123)] == down
