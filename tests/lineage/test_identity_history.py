"""A snapshot id is not an identity: lineage across rollback, fast-forward and replace-main,
on SQLite, MariaDB and PostgreSQL.

The tables are real Paimon tables written with plain pypaimon; the history operations
run through their job entry points (``launcher.py maintenance rollback``, ``branch
fast-forward`` / ``replace-main``) with the store in ``$PAIMON_LINEAGE_URL``, as the
operators run them. Lineage rows are recorded as the capture records them: each with
the identity read from its snapshot file (the capture tests check that the Spark
capture does exactly that).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlalchemy as sa
from pypaimon import CatalogFactory, Schema
from support.pypaimon_writes import commit_arrow

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.lineage.cascade import UnknownLineageSnapshotError, plan_cascade
from airflow_provider_paimon.lineage.history_events import history_events
from airflow_provider_paimon.lineage.queries import downstream, impact, upstream, walk_bounded
from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity
from airflow_provider_paimon.spark.jobs import branch as branch_job
from airflow_provider_paimon.spark.jobs import maintenance as maintenance_job

SCHEMA = pa.schema([("id", pa.int64())])


class Lake:
    """Plain pypaimon tables in one warehouse, and lineage recorded as the capture does."""

    def __init__(self, warehouse: str, store: LineageStore) -> None:
        self.warehouse = warehouse
        self.store = store
        self.catalog = CatalogFactory.create({"warehouse": warehouse})
        self.catalog.create_database("db", True)
        self.barrier = 0

    def create(self, *names: str) -> None:
        for name in names:
            self.catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA), False)

    def table(self, name: str, branch: str | None = None):
        return self.catalog.get_table(f"db.{name}" + (f"$branch_{branch}" if branch else ""))

    def append(self, name: str, ids, branch: str | None = None) -> int:
        return commit_arrow(self.table(name, branch), pa.table({"id": list(ids)}, schema=SCHEMA))

    def ref(self, name: str, snapshot_id: int, branch: str | None = None) -> SnapshotRef:
        snap = self.table(name, branch).snapshot_manager().get_snapshot_by_id(snapshot_id)
        identity = SnapshotIdentity(snap.commit_user, snap.commit_identifier, snap.time_millis)
        return SnapshotRef("db", name, snapshot_id, branch or "main", identity)

    def run(self, job: str, sources: list[SnapshotRef], sink: str, ids, branch: str | None = None) -> int:
        """A batch job: read ``sources``, append to ``sink``; its barrier recorded with identities."""
        self.barrier += 1
        written = self.append(sink, ids, branch)
        self.store.record_batch(job, self.barrier, sources, [self.ref(sink, written, branch)])
        return written


@pytest.fixture
def lake(store, target, warehouse, monkeypatch):
    monkeypatch.setenv("PAIMON_LINEAGE_URL", target.url)
    return Lake(warehouse, store)


def run_job(main, argv, capsys) -> dict:
    code = main(argv)
    out = capsys.readouterr().out
    result = parse_result(out)
    assert code == 0, out
    return result


def nodes(found) -> list[tuple]:
    return sorted((n.table, n.branch, n.snapshot_id, n.job) for n in found)


def test_rollback_then_new_commit_never_joins_the_removed_commit(lake, target, capsys):
    lake.create("rb_src", "rb")
    for i in range(1, 5):
        lake.append("rb_src", [i])  # rb_src@1..4
    lake.run("j.rb", [lake.ref("rb_src", 1)], "rb", [10])  # barrier 1: rb_src@1 -> rb@1
    old = lake.run("j.rb", [lake.ref("rb_src", 2)], "rb", [20])  # barrier 2: rb_src@2 -> rb@2 (rolled back)
    assert old == 2
    result = run_job(maintenance_job.main, ["rollback", "--warehouse", lake.warehouse, "--table", "db.rb",
                                            "--snapshot-id", "1", "--lineage-database", target.database], capsys)
    assert result["removed_snapshot_ids"] == [2] and result["lineage"]["retracted_rows"] == 1  # rb@2's sink row
    assert "removed_snapshots" not in result  # ids only in the XCom
    with pytest.raises(UnknownLineageSnapshotError, match="was removed"):  # nothing holds its rows now
        plan_cascade(lake.store, "db", "rb", 2)
    assert plan_cascade(lake.store, "db", "rb", 2, include_retracted=True).order == ["db.rb"]
    new = lake.run("j.rb", [lake.ref("rb_src", 4)], "rb", [40])  # barrier 3: rb_src@4 -> rb@2 again
    assert new == 2

    store = lake.store
    assert nodes(upstream(store, "db", "rb", 2)) == [("rb_src", "main", 4, "j.rb")]
    assert nodes(downstream(store, "db", "rb_src", 2)) == []  # its output was rolled back
    assert nodes(downstream(store, "db", "rb_src", 4)) == [("rb", "main", 2, "j.rb")]
    assert [t.table for t in impact(store, "db", "rb_src", 2).tables] == []
    # asked for, the removed commit's lineage is still there, marked
    audit = walk_bounded(store, "downstream", "db", "rb_src", 2, include_retracted=True).nodes
    assert [(n.table, n.snapshot_id, n.retracted) for n in audit] == [("rb", 2, True)]
    live = downstream(store, "db", "rb_src", 4)[0]
    assert audit[0].identity != live.identity == lake.ref("rb", 2).identity.digest  # two commits, one id
    # rb_src@2 went bad: the live rb@2 read rb_src@4, which holds it (the removed rb@2 is not listed)
    plan = plan_cascade(store, "db", "rb_src", 2)
    assert [(t.name, t.branch_point, list(t.bad_snapshots), list(t.jobs)) for t in plan.tables] == [
        ("db.rb_src", 1, [2], []), ("db.rb", 1, [2], ["j.rb"])]
    [event] = history_events(store, "db", "rb")
    assert event.kind == "rollback" and [r["snapshot_id"] for r in event.detail["removed"]] == [2]
    # a retried task records nothing twice, and keeps the new commit's rows live
    again = run_job(maintenance_job.main, ["rollback", "--warehouse", lake.warehouse, "--table", "db.rb",
                                           "--snapshot-id", "2", "--lineage-database", target.database], capsys)
    assert again["lineage"]["retracted_rows"] == 0
    assert nodes(upstream(store, "db", "rb", 2)) == [("rb_src", "main", 4, "j.rb")]


def test_catch_up_is_not_fooled_by_a_reused_id(lake, capsys, target):
    from airflow_provider_paimon.lineage.progress import StoreProgress
    from airflow_provider_paimon.paimon.catchup import CatchUpSpec, check_catch_up
    from airflow_provider_paimon.paimon.maintenance import rollback

    lake.create("src", "out")
    for i in range(1, 4):
        lake.append("src", [i])
    lake.run("j.sink", [lake.ref("src", 3)], "out", [1])  # the job consumed src@3
    spec = CatchUpSpec(warehouse=lake.warehouse, table="db.out", job="j.sink")
    progress = StoreProgress(lake.store)
    assert check_catch_up(spec, progress).caught_up
    # src rolled back by a tool that does not tell the store, then a new commit takes id 3
    rollback(lake.table("src"), snapshot_id=2)
    lake.append("src", [33])
    result = check_catch_up(spec, progress)
    assert not result.caught_up
    assert result.sources[0].consumed is None  # src@3 is another commit now; nothing older was read
    lake.run("j.sink", [lake.ref("src", 3)], "out", [2])  # the job reads the new src@3
    assert check_catch_up(spec, progress).caught_up


def test_fast_forward_retracts_old_main_and_links_every_copied_snapshot(lake, target, capsys):
    lake.create("up", "ff")
    for i in range(1, 4):
        lake.append("up", [i])
    lake.run("j.main", [lake.ref("up", 1)], "ff", [1])  # ff@1
    lake.run("j.main", [lake.ref("up", 2)], "ff", [2])  # ff@2 (old main)
    from airflow_provider_paimon.paimon.branch import create_branch

    create_branch(lake.table("ff"), "b", snapshot_id=1)
    lake.run("j.fix", [lake.ref("up", 3)], "ff", [3], branch="b")  # b@2
    lake.run("j.fix", [lake.ref("up", 3)], "ff", [4], branch="b")  # b@3
    result = run_job(branch_job.main, ["fast-forward", "--warehouse", lake.warehouse, "--table", "db.ff",
                                       "--branch", "b", "--lineage-database", target.database], capsys)
    assert result["main_snapshot_id"] == 3 and result["lineage"]["retracted_rows"] >= 1
    store = lake.store
    # main@2 and main@3 are b's commits now: their upstream is j.fix's, never old main's j.main
    for sid in (2, 3):
        ups = upstream(store, "db", "ff", sid, depth=2)
        assert {(n.table, n.job) for n in ups} == {("ff", "paimon.fast_forward"), ("up", "j.fix")}, sid
        assert {n.branch for n in ups if n.table == "ff"} == {"b"}
    assert nodes(downstream(store, "db", "up", 2)) == []  # old main@2 is gone
    assert nodes(downstream(store, "db", "up", 1)) == [("ff", "main", 1, "j.main")]
    assert {(t.table, t.branch) for t in impact(store, "db", "up", 3).tables} == {("ff", "b"), ("ff", "main")}
    plan = plan_cascade(store, "db", "up", 3)
    assert [(t.name, t.first_bad_branch, t.first_bad_snapshot, t.branch_point_branch, t.branch_point)
            for t in plan.tables] == [("db.up", "main", 3, "main", 2), ("db.ff", "b", 2, "b", 1)]
    assert plan.tables[1].jobs == ("j.fix",)  # history links are not jobs to re-run
    [event] = history_events(store, "db", "ff")
    assert event.kind == "fast-forward" and [r["snapshot_id"] for r in event.detail["replaced"]] == [1, 2]


def test_replace_main_then_a_second_correction_branches_from_the_correction(lake, target, capsys):
    """The issue's cascade-after-publish case on a two-table pipeline (recorded rows)."""
    lake.create("raw", "agg")
    lake.run("j.ingest", [], "raw", [1])  # raw@1
    lake.run("j.ingest", [], "raw", [2000])  # raw@2: the first bug
    lake.run("j.ingest", [], "raw", [3])  # raw@3
    lake.run("j.agg", [lake.ref("raw", 3)], "agg", [1])  # agg@1 read raw up to 3
    from airflow_provider_paimon.paimon.branch import create_branch

    for name in ("raw", "agg"):
        create_branch(lake.table(name), "fix", snapshot_id=1)
    lake.run("j.ingest_fix", [], "raw", [2], branch="fix")  # raw fix@2: batch 2 corrected
    lake.run("j.ingest_fix", [], "raw", [3], branch="fix")  # raw fix@3: batch 3 (a second bug, found later)
    lake.run("j.agg_fix", [lake.ref("raw", 3, "fix")], "agg", [2], branch="fix")  # agg fix@2
    for name in ("raw", "agg"):
        run_job(branch_job.main, ["replace-main", "--warehouse", lake.warehouse, "--table", f"db.{name}",
                                  "--branch", "fix", "--lineage-database", target.database], capsys)
    lake.run("j.ingest", [], "raw", [4])  # raw@5: life goes on
    store = lake.store
    # the first bug: already corrected, and the corrected snapshots are never listed as bad
    first = plan_cascade(store, "db", "raw", 2)
    assert first.tables == () and set(first.corrected) == {"db.raw", "db.agg"}
    # the second bug, named by main's snapshot 4 (the publish): its rows are fix@3's
    second = plan_cascade(store, "db", "raw", 4)
    assert [(t.name, t.first_bad_branch, t.first_bad_snapshot, t.branch_point_branch, t.branch_point,
             list(t.bad_snapshots), list(t.jobs)) for t in second.tables] == [
        ("db.raw", "fix", 3, "fix", 2, [4, 5], ["j.ingest", "j.ingest_fix"]),
        ("db.agg", "fix", 2, "fix", 1, [2], ["j.agg_fix"]),
    ]
    assert not second.truncated
    assert second.tables[1].upstreams == ("db.raw",)
    events = history_events(store, "db", "raw")
    assert [e.kind for e in events] == ["replace-main"]
    # upstream of main's snapshot goes through the correction branch
    ups = upstream(store, "db", "agg", 2, depth=2)
    assert {(n.table, n.branch, n.job) for n in ups} == {("agg", "fix", "paimon.replace_main"),
                                                         ("raw", "fix", "j.agg_fix")}


def test_fill_identities_after_upgrading_a_version_4_store(target, warehouse):
    """Rows written before identities get them from the tables, or are marked: never guessed."""
    from airflow_provider_paimon.lineage import schema as lineage_schema
    from airflow_provider_paimon.lineage.engine import create_mysql_database, create_store_engine
    from airflow_provider_paimon.lineage.identity_fill import fill_identities
    from airflow_provider_paimon.lineage.url import parse_url
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.maintenance import rollback

    lake = Lake(warehouse, None)  # type: ignore[arg-type]
    lake.create("t")
    for i in range(1, 4):
        lake.append("t", [i])
    if target.backend == "mysql":
        create_mysql_database(parse_url(target.url), target.database)
    engine = create_store_engine(parse_url(target.url), target.database, None)
    try:
        with engine.connect() as conn:  # a store as version 4 left it, with its rows
            if target.backend == "postgresql":
                conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{target.database}"')
            lineage_schema.migrate(conn, "test", target=4)
            conn.commit()
            snk = sa.table("sink_snapshot_lineage", sa.column("job"), sa.column("barrier_id"), sa.column("database"),
                           sa.column("table"), sa.column("snapshot_id"), sa.column("create_time"), sa.column("branch"))
            from datetime import datetime, timezone
            now = datetime.now(timezone.utc).replace(tzinfo=None)
            old = datetime(2020, 1, 1)
            conn.execute(snk.insert(), [
                {"job": "w", "barrier_id": 1, "database": "db", "table": "t", "snapshot_id": 1, "create_time": now,
                 "branch": "main"},
                {"job": "w", "barrier_id": 2, "database": "db", "table": "t", "snapshot_id": 2, "create_time": old,
                 "branch": "main"},  # recorded before the commit now under id 2: an earlier, removed one
                {"job": "w", "barrier_id": 3, "database": "db", "table": "t", "snapshot_id": 9, "create_time": now,
                 "branch": "main"},  # above the latest: removed
                {"job": "w", "barrier_id": 4, "database": "db", "table": "gone", "snapshot_id": 1, "create_time": now,
                 "branch": "main"},  # the table is gone: cannot tell
            ])
            conn.commit()
    finally:
        engine.dispose()
    rollback(lake.table("t"), snapshot_id=3)  # (nothing above 3: the table keeps 1..3)
    with LineageStore.from_url(target.url, target.database) as store:
        assert store.schema_version == 5
        assert all(r.identity is None and r.identity_status is None for r in store.sink_data_lineages())
        catalog = open_catalog(warehouse)
        counts = fill_identities(store, lambda d, t: load_table(catalog, f"{d}.{t}"))
        assert counts == {"filled": 1, "retracted": 2, "unknown": 1}
        rows = {r.barrier_id: r for r in store.sink_data_lineages()}
        assert rows[1].identity == lake.ref("t", 1).identity and rows[1].identity_status == "filled"
        assert rows[2].retracted_at is not None and rows[2].identity is None
        assert rows[3].retracted_at is not None
        assert rows[4].identity_status == "unknown" and rows[4].retracted_at is None
        assert fill_identities(store, lambda d, t: load_table(catalog, f"{d}.{t}")) == {
            "filled": 0, "retracted": 0, "unknown": 0}  # nothing left to check
