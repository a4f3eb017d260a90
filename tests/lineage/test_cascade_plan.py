"""plan_cascade: the tables a bad snapshot spoiled, their branch points, bad snapshots,
jobs and correction order, on SQLite, MariaDB and PostgreSQL; its CLI and API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from airflow_provider_paimon.lineage import (
    InvalidLineageArgumentError,
    LineageError,
    LineageStore,
    impact,
)
from airflow_provider_paimon.lineage.cascade import (
    CascadePlan,
    LineageCycleError,
    UnknownLineageSnapshotError,
    plan_cascade,
)
from airflow_provider_paimon.lineage.cli import main
from airflow_provider_paimon.lineage.queries import Budget

from .cascade_lineage import LAKE_PLAN, S, plan_rows, record_lake, record_random_dag, reference_plan


def test_plan_of_a_chain_a_diamond_and_a_branch(store):
    record_lake(store)
    plan = plan_cascade(store, "ods", "raw", 3)
    assert plan_rows(plan) == LAKE_PLAN
    assert not plan.truncated and plan.truncated_reason is None
    assert str(plan.root) == "ods.raw@3"
    assert [t.first_bad_snapshot for t in plan.tables] == [3, 1, 4, 3, 2, 2, 3, 2, 2]
    # the unrelated tables are not in it, and the plan agrees with the rules recomputed from every row
    assert reference_plan(store, S("ods.raw", 3)) == {
        name: (bp, bad, jobs, up) for name, _depth, bp, bad, jobs, up in LAKE_PLAN}
    # the exact-snapshot impact walk misses ads.mart: its micro-batch ended at clean@4
    assert "mart" not in {t.table for t in impact(store, "ods", "raw", 3).tables}


def test_depth_bounds_the_table_hops_and_says_what_it_left_out(store):
    record_lake(store)
    one = plan_cascade(store, "ods", "raw", 3, depth=1)
    assert one.order == ["ods.raw", "ads.audit", "dwd.clean$branch_fix", "dwd.clean", "dws.right"]
    assert one.truncated
    assert one.truncated_reason == (
        "stopped at depth 1; ads.joined, ads.mart, dws.left read bad snapshots too and are not planned "
        "(ask for a larger depth, at most 100)")
    # ads.joined is 2 hops away through dws.right (first bad joined@3) but takes joined@2
    # from dws.left, also at the depth limit: still walked, so the branch point is right
    two = plan_cascade(store, "ods", "raw", 3, depth=2)
    assert plan_rows(two) == LAKE_PLAN[:-1]
    assert two.truncated_reason.startswith("stopped at depth 2; ads.report read bad snapshots too")
    assert plan_rows(plan_cascade(store, "ods", "raw", 3, depth=3)) == LAKE_PLAN
    assert not plan_cascade(store, "ods", "raw", 3, depth=3).truncated


def test_leaf_first_snapshot_and_branches(store):
    record_lake(store)
    leaf = plan_cascade(store, "ads", "report", 2)
    assert plan_rows(leaf) == [("ads.report", 0, 1, [2], ["lake.report"], [])]
    first = plan_cascade(store, "ods", "raw", 1)
    assert first.tables[0].branch_point is None  # from empty
    assert {t.name: t.branch_point for t in first.tables}["dwd.clean"] is None
    fix = plan_cascade(store, "dwd", "clean", 4, branch="fix")
    assert plan_rows(fix) == [("dwd.clean$branch_fix", 0, 3, [4], ["lake.clean_fix"], [])]
    assert fix.to_dict()["root"] == {"database": "dwd", "table": "clean", "branch": "fix", "snapshot_id": 4}
    # a snapshot only read (its writer records no lineage) is known too
    assert plan_rows(plan_cascade(store, "dim", "users", 1)) == [
        ("dim.users", 0, None, [1], [], []),
        ("dwd.clean", 1, 5, [6], ["lake.enrich"], ["dim.users"]),
        ("ads.mart", 2, 2, [3], ["lake.mart"], ["dwd.clean"]),
    ]


def test_unknown_table_or_snapshot_is_a_clear_error(store):
    record_lake(store)
    with pytest.raises(UnknownLineageSnapshotError, match=r"table ods\.nope has no lineage in the store"):
        plan_cascade(store, "ods", "nope", 3)
    with pytest.raises(UnknownLineageSnapshotError, match=r"snapshot 99 of ods\.raw is not in the lineage store"):
        plan_cascade(store, "ods", "raw", 99)
    with pytest.raises(UnknownLineageSnapshotError, match=r"snapshot 3 of ods\.raw\$branch_fix is not"):
        plan_cascade(store, "ods", "raw", 3, branch="fix")
    assert issubclass(UnknownLineageSnapshotError, InvalidLineageArgumentError)
    for bad in ({"depth": 0}, {"depth": 101}, {"branch": "1"}, {"budget": "big"}):
        with pytest.raises(InvalidLineageArgumentError):
            plan_cascade(store, "ods", "raw", 3, **bad)
    with pytest.raises(InvalidLineageArgumentError, match="snapshot_id"):
        plan_cascade(store, "ods", "raw", 0)


def test_cycles_raise_and_a_job_writing_its_own_source_does_not(store):
    store.record_batch("c.one", 1, [S("a.x", 1)], [S("a.y", 1)])
    store.record_batch("c.two", 1, [S("a.y", 1)], [S("a.z", 1)])
    store.record_batch("c.three", 1, [S("a.z", 1)], [S("a.x", 2)])
    with pytest.raises(LineageCycleError, match=r"cycle \(a\.x -> a\.y -> a\.z -> a\.x\)") as err:
        plan_cascade(store, "a", "x", 1)
    assert "delete-data-lineage" in str(err.value) and isinstance(err.value, LineageError)
    for b in range(1, 4):  # dedupe reads t.s@b and writes t.s@b+1
        store.record_batch("t.dedupe", b, [S("t.s", b)], [S("t.s", b + 1)])
    store.record_batch("t.down", 1, [S("t.s", 3)], [S("t.d", 1)])
    assert plan_rows(plan_cascade(store, "t", "s", 2)) == [
        ("t.s", 0, 1, [2, 3, 4], ["t.dedupe"], []),
        ("t.d", 1, None, [1], ["t.down"], ["t.s"]),
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_lineage_matches_a_recomputation(tmp_path, seed):
    with LineageStore.from_url(f"sqlite:///{tmp_path}/random.sqlite") as store:
        record_random_dag(store, seed)
        for root in (S("r.t0", 2), S("r.t1", 2), S("r.t0", 4)):
            try:
                plan = plan_cascade(store, root.database, root.table, root.snapshot_id, depth=100)
            except UnknownLineageSnapshotError:
                continue
            assert {t.name: (t.branch_point, list(t.bad_snapshots), list(t.jobs), list(t.upstreams))
                    for t in plan.tables} == reference_plan(store, root)
            position = {name: i for i, name in enumerate(plan.order)}
            for t in plan.tables:  # every table after all of its upstreams
                assert all(position[u] < position[t.name] for u in t.upstreams)


def test_budget_cuts_are_reported(store):
    record_lake(store)
    plan = plan_cascade(store, "ods", "raw", 3, budget=Budget(max_rows=2))
    assert plan.truncated and "row budget" in plan.truncated_reason
    # the snapshot budget is the whole plan's: no single walk finds 7, all of them do
    shared = plan_cascade(store, "ods", "raw", 3, budget=Budget(max_nodes=7))
    assert shared.truncated and "(the node budget)" in shared.truncated_reason
    assert "ads.report" not in shared.order and len(shared.order) < len(LAKE_PLAN)
    small = plan_cascade(store, "ods", "raw", 3, budget=Budget(max_nodes=2))
    assert small.truncated and "stopped after 2 snapshots (the node budget)" in small.truncated_reason
    assert small.tables == ()  # a cut plan lists nothing to act on


def test_job_filter_hides_jobs_and_their_tables(store):
    record_lake(store)
    plan = plan_cascade(store, "ods", "raw", 3, job_filter=lambda job: job != "lake.clean")
    assert "dwd.clean" not in plan.order and "dws.left" not in plan.order
    assert {t.name: t.branch_point for t in plan.tables}["ads.joined"] == 2  # only through dws.right now
    with pytest.raises(UnknownLineageSnapshotError):
        plan_cascade(store, "other", "dst", 3, job_filter=lambda job: job != "lake.other")


def test_plan_is_frozen_and_json_ready(store):
    record_lake(store)
    plan = plan_cascade(store, "ods", "raw", 3)
    assert isinstance(plan, CascadePlan)
    with pytest.raises(AttributeError):
        plan.tables[0].branch_point = 1  # type: ignore[misc]
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["order"] == [row[0] for row in LAKE_PLAN]
    assert data["tables"][-2] == {
        "name": "ads.joined", "database": "ads", "table": "joined", "branch": "main", "depth": 2,
        "first_bad_snapshot": 2, "first_bad_branch": "main", "branch_point": 1, "branch_point_branch": "main",
        "bad_snapshots": [2, 3], "jobs": ["lake.join"], "upstreams": ["dws.left", "dws.right"]}
    assert data["corrected"] == []


# -- the command line ----------------------------------------------------------------------


@pytest.fixture
def lake_url(tmp_path):
    url = f"sqlite:///{tmp_path}/cascade.sqlite"
    with LineageStore.from_url(url) as store:
        record_lake(store)
    return url


def test_cli_text_and_json(lake_url, capsys):
    assert main(["cascade", "ods.raw", "3", "--url", lake_url]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "order  table                 branch point  bad snapshots  jobs                     after\n"
        "-----  --------------------  ------------  -------------  -----------------------  -------------------\n"
        "1      ods.raw               2             3-5            lake.ingest\n"
        "2      ads.audit             (empty)       1              lake.audit               ods.raw\n"
        "3      dwd.clean$branch_fix  3             4              lake.clean_fix           ods.raw\n"
        "4      dwd.clean             2             3-6            lake.clean, lake.enrich  ods.raw\n"
        "5      dws.right             1             2              lake.right               ods.raw\n"
        "6      ads.mart              1             2-3            lake.mart                dwd.clean\n"
        "7      dws.left              2             3-4            lake.left                dwd.clean\n"
        "8      ads.joined            1             2-3            lake.join                dws.left, dws.right\n"
        "9      ads.report            1             2              lake.report              ads.joined\n"
    )
    assert err == ""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "lineage.md").read_text()
    assert re.search(r"\$ paimon-lineage cascade ods.raw 3\n(.*?)```", doc, re.S).group(1) == out
    assert main(["--json", "cascade", "ods.raw", "3", "--url", lake_url, "--depth", "1"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["order"] == ["ods.raw", "ads.audit", "dwd.clean$branch_fix", "dwd.clean", "dws.right"]
    assert data["truncated"] and "result truncated: stopped at depth 1" in err
    assert main(["cascade", "dwd.clean$branch_fix", "4", "--url", lake_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["order"] == ["dwd.clean$branch_fix"]


def test_cli_errors_and_exit_codes(lake_url, tmp_path, capsys):
    assert main(["cascade", "ods.raw", "99", "--url", lake_url, "--json"]) == 2
    out, err = capsys.readouterr()
    assert "snapshot 99 of ods.raw is not in the lineage store" in err
    assert json.loads(out)["exit_code"] == 2
    assert main(["cascade", "ods.raw", "3", "--depth", "0", "--url", lake_url]) == 2
    assert main(["cascade", "no-dot", "3", "--url", lake_url]) == 2
    capsys.readouterr()
    cyclic = f"sqlite:///{tmp_path}/cycle.sqlite"
    with LineageStore.from_url(cyclic) as store:
        store.record_batch("c.one", 1, [S("a.x", 1)], [S("a.y", 1)])
        store.record_batch("c.two", 1, [S("a.y", 1)], [S("a.x", 2)])
    assert main(["cascade", "a.x", "1", "--url", cyclic]) == 1
    assert "cycle (a.x -> a.y -> a.x)" in capsys.readouterr().err


# -- the API ---------------------------------------------------------------------------------


@pytest.fixture
def client(lake_url):
    from fastapi import Header, HTTPException
    from fastapi.testclient import TestClient

    from airflow_provider_paimon.plugins.lineage_api import create_app

    def user(authorization: str | None = Header(default=None)) -> str:
        if not authorization:
            raise HTTPException(status_code=401, detail="Not authenticated")
        return "someone"

    with LineageStore.from_url(lake_url, read_only=True) as store:
        yield TestClient(create_app(lambda: store, user), headers={"Authorization": "Bearer t"})


def test_api_cascade(client):
    from fastapi.testclient import TestClient

    body = client.get("/api/cascade/ods/raw/3").json()
    assert body["order"] == [row[0] for row in LAKE_PLAN]
    assert [(t["name"], t["branch_point"], t["bad_snapshots"], t["jobs"]) for t in body["tables"]] == [
        (name, bp, bad, jobs) for name, _d, bp, bad, jobs, _u in LAKE_PLAN]
    assert body["truncated"] is False
    assert client.get("/api/cascade/dwd/clean/4", params={"branch": "fix"}).json()["order"] == ["dwd.clean$branch_fix"]
    cut = client.get("/api/cascade/ods/raw/3", params={"depth": 1}).json()
    assert cut["truncated"] and "stopped at depth 1" in cut["truncated_reason"]
    assert TestClient(client.app).get("/api/cascade/ods/raw/3").status_code == 401
    missing = client.get("/api/cascade/ods/raw/99")
    assert missing.status_code == 404 and "snapshot 99 of ods.raw" in missing.json()["detail"]
    assert client.get("/api/cascade/ods/raw/0").status_code == 400
    assert client.get("/api/cascade/ods/raw/3", params={"depth": 0}).status_code == 422
    assert client.get("/api/cascade/ods/raw/3", params={"depth": 101}).status_code == 422


def test_api_cycle_is_a_409_and_hidden_jobs_stay_hidden(tmp_path):
    from fastapi.testclient import TestClient

    from airflow_provider_paimon.plugins.lineage_api import create_app

    url = f"sqlite:///{tmp_path}/api.sqlite"
    with LineageStore.from_url(url) as store:
        record_lake(store)
        store.record_batch("c.one", 1, [S("a.x", 1)], [S("a.y", 1)])
        store.record_batch("c.two", 1, [S("a.y", 1)], [S("a.x", 2)])
    with LineageStore.from_url(url, read_only=True) as store:
        app = create_app(lambda: store, lambda: "someone", lambda: (lambda job: job != "lake.clean"))
        client = TestClient(app)
        cycle = client.get("/api/cascade/a/x/1")
        assert cycle.status_code == 409 and "cycle (a.x -> a.y -> a.x)" in cycle.json()["detail"]
        order = client.get("/api/cascade/ods/raw/3").json()["order"]
        assert "dwd.clean" not in order and "ads.joined" in order
