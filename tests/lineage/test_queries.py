"""Upstream/downstream one hop and transitively, branches, depth limits, impact, graph."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from airflow_provider_paimon.lineage import (
    InvalidLineageArgumentError,
    LineageStore,
    SnapshotRef,
    downstream,
    impact,
    queries,
    table_graph,
    upstream,
)
from airflow_provider_paimon.lineage.queries import (
    Budget,
    lineage_snapshot_history,
    walk,
    walk_bounded,
)


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


def _reference_walk(store, direction, start, depth):
    """Brute force in Python over every data lineage row: {node: (depth, job, barrier)}."""
    src, snk = store.source_data_lineages(), store.sink_data_lineages()
    near, far = (snk, src) if direction == "upstream" else (src, snk)
    best, level_nodes = {}, {start}
    for level in range(1, depth + 1):
        barriers = {(r.job, r.barrier_id) for r in near if (r.database, r.table, r.branch, r.snapshot_id) in level_nodes}
        reached = {}
        for r in far:
            key = (r.database, r.table, r.branch, r.snapshot_id)
            if (r.job, r.barrier_id) in barriers and key not in best:
                reached[key] = min(reached.get(key, (level, r.job, r.barrier_id)), (level, r.job, r.barrier_id))
        best.update(reached)
        level_nodes = set(reached)
    return best


def test_walk_answers_like_a_brute_force_reference(store):
    build_chain(store)
    store.record_batch("loop", 1, [SnapshotRef("dws", "daily", 201)], [SnapshotRef("ods", "raw", 1)])  # a cycle
    for direction, start in (("downstream", ("ods", "raw", 1)), ("upstream", ("ads", "kpi", 301)),
                             ("downstream", ("dim", "users", 7)), ("upstream", ("ods", "raw", 1))):
        for depth in (1, 2, 4, 8):
            got = {(n.database, n.table, n.branch, n.snapshot_id): (n.depth, n.job, n.barrier_id)
                   for n in walk(store, direction, *start, depth=depth)}
            assert got == _reference_walk(store, direction, (*start[:2], "main", start[2]), depth), (direction, start, depth)


def _self_loop(store, barriers: int) -> None:
    """A job that reads and writes the same table: barrier b reads t@b and writes t@b+1."""
    for b in range(1, barriers + 1):
        store.record_batch("loop", b, [SnapshotRef("db", "t", b)], [SnapshotRef("db", "t", b + 1)])


def test_walk_is_bounded_and_says_why_it_stopped(store):
    _self_loop(store, 60)
    whole = walk_bounded(store, "downstream", "db", "t", 1, depth=100)
    assert len(whole.nodes) == 60 and not whole.truncated and whole.reason is None
    by_depth = walk_bounded(store, "downstream", "db", "t", 1, depth=10)
    assert len(by_depth.nodes) == 10 and by_depth.truncated and "depth 10" in by_depth.reason
    rows = walk_bounded(store, "downstream", "db", "t", 1, depth=100, onwards=True, budget=Budget(max_rows=25))
    assert rows.truncated and "row budget" in rows.reason and len(rows.nodes) == 25
    nodes = walk_bounded(store, "downstream", "db", "t", 1, depth=100, budget=Budget(max_nodes=7))
    assert nodes.truncated and "node budget" in nodes.reason and len(nodes.nodes) == 7
    report = impact(store, "db", "t", 1, depth=100, onwards=True, budget=Budget(max_rows=25))
    assert report.truncated and "row budget" in report.truncated_reason
    assert not impact(store, "db", "t", 50, depth=100).truncated
    with pytest.raises(InvalidLineageArgumentError, match="max_rows"):
        Budget(max_rows=0)
    with pytest.raises(InvalidLineageArgumentError, match="timeout_s"):
        Budget(timeout_s=-1)


SLOW_SQL = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
            "SELECT COUNT(*) FROM c a, c b, c d")  # 10^9 rows: minutes on every backend


def test_a_statement_running_over_the_deadline_is_cancelled(store):
    """The backend itself stops a slow statement at the walk's deadline; the connection stays usable."""
    with store.engine.connect() as conn, conn.begin():
        began = time.monotonic()
        with pytest.raises(queries._OutOfTime):
            queries._fetch(conn, sa.text(SLOW_SQL), {}, began + 0.5)
        assert time.monotonic() - began < 5
        assert conn.execute(sa.text("SELECT 1")).scalar() == 1


def test_text_in_an_id_column_is_passed_on_not_an_error(tmp_path):
    """SQLite stores any value in BIGINT; another tool's text id must not fail the query."""
    url = f"sqlite:///{tmp_path / 'odd.sqlite'}"
    with LineageStore.from_url(url) as store:
        store.record_batch("j", 1, [SnapshotRef("a", "src", 1)], [SnapshotRef("a", "dst", 2)])
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE sink_snapshot_lineage SET snapshot_id = '<b>x</b>', barrier_id = 'y'")
            conn.exec_driver_sql("UPDATE source_snapshot_lineage SET barrier_id = 'y'")
        (node,) = downstream(store, "a", "src", 1)
        assert (node.snapshot_id, node.barrier_id) == ("<b>x</b>", "y")
        assert impact(store, "a", "src", 1).tables[0].snapshot_ids == ["<b>x</b>"]


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


def test_table_graph_search_and_first_jobs(store):
    build_chain(store)
    assert table_graph(store, contains="DWD.ORD").jobs == ["agg", "clean", "clean-fix", "enrich"]
    assert table_graph(store, contains="n-f").jobs == ["clean-fix"]
    assert table_graph(store, contains="%").edges == [] and table_graph(store, contains="_").edges == []
    first = table_graph(store, max_jobs=2)
    assert first.jobs == ["agg", "clean"] and first.truncated
    assert {(e.kind, e.table) for e in first.edges if e.job == "clean"} == {("source", "raw"), ("sink", "orders")}
    assert not table_graph(store, max_jobs=5).truncated
    with pytest.raises(InvalidLineageArgumentError, match="max_jobs"):
        table_graph(store, max_jobs=0)


def test_table_history_pages_newest_first(store):
    build_chain(store)
    page = lineage_snapshot_history(store, "dwd", "orders", limit=2)
    assert [(e.snapshot_id, e.writers, e.readers) for e in page.snapshots] == [
        (103, [{"job": "clean", "barrier_id": 3}], [{"job": "agg", "barriers": 1}]),
        (102, [{"job": "clean", "barrier_id": 2}], [{"job": "agg", "barriers": 1}]),
    ]
    rest = lineage_snapshot_history(store, "dwd", "orders", limit=2, before=page.next_before)
    assert [e.snapshot_id for e in rest.snapshots] == [101] and rest.next_before is None
    assert [w["job"] for w in rest.snapshots[0].writers] == ["clean", "enrich"]
    assert [e.snapshot_id for e in lineage_snapshot_history(store, "dim", "users").snapshots] == [7]  # only read
    assert [e.snapshot_id for e in lineage_snapshot_history(store, "dwd", "orders", branch="fix").snapshots] == [101]
    assert lineage_snapshot_history(store, "dwd", "nothing").snapshots == []
    with pytest.raises(InvalidLineageArgumentError, match="limit"):
        lineage_snapshot_history(store, "dwd", "orders", limit=501)


@pytest.mark.mysql
def test_seed_queries_run_verbatim_on_mariadb(mysql_target):
    """The lineage proposal's two SQL queries, as written (downstream: its typo fixed to join the
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
        # A user's own connection to the system database, as the lineage proposal intends.
        engine = sa.create_engine(sa.engine.make_url(mysql_target.url).set(database=mysql_target.database))
        with engine.connect() as conn:
            up = [tuple(r) for r in conn.exec_driver_sql(upstream_sql)]
            down = [tuple(r) for r in conn.exec_driver_sql(downstream_sql)]
        engine.dispose()
        assert up == [("srcDatabase", "srcTable", 120)]
        assert down == [("dstDatabase", "dstTable", 7)]
        assert [(n.database, n.table, n.snapshot_id) for n in upstream(store, "myDatabase", "myTable", 123)] == up
        assert [(n.database, n.table, n.snapshot_id) for n in downstream(store, "myDatabase", "myTable", 123)] == down


def test_cli_says_when_a_walk_was_truncated(tmp_path, capsys):
    from airflow_provider_paimon.lineage import cli

    url = f"sqlite:///{tmp_path / 'loop.sqlite'}"
    with LineageStore.from_url(url) as store:
        _self_loop(store, 5)
    assert cli.main(["downstream", "db.t", "1", "--depth", "2", "--url", url]) == 0
    assert "result truncated: stopped at depth 2" in capsys.readouterr().err
    assert cli.main(["impact", "db.t", "1", "--depth", "2", "--url", url, "--json"]) == 0
    captured = capsys.readouterr()
    assert "result truncated" in captured.err and '"truncated": true' in captured.out
    assert cli.main(["downstream", "db.t", "1", "--depth", "9", "--url", url]) == 0
    assert "truncated" not in capsys.readouterr().err


def test_table_graph_is_bounded(store):
    build_chain(store)
    assert not table_graph(store).truncated
    small = table_graph(store, budget=Budget(max_rows=3))
    assert small.truncated and len(small.edges) == 3


def test_a_read_only_store_answers_queries_and_refuses_writes(store, target):
    from airflow_provider_paimon.lineage import LineageError

    build_chain(store)
    with LineageStore.from_url(target.url, target.database, read_only=True) as reader:
        assert names(upstream(reader, "dwd", "orders", 101)) == [(1, "dim.users", "main", 7), (1, "ods.raw", "main", 1)]
        with pytest.raises(LineageError, match=r"read.only|READ ONLY|readonly"):
            reader.record_batch("x", 1, [SnapshotRef("a", "b", 1)], [])
    assert upstream(store, "a", "b", 1) == [] and store.source_data_lineages(job="x") == []
