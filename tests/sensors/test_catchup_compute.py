"""The catch-up computation, and progress read from real Paimon consumer files."""

from __future__ import annotations

import re

import pytest

from airflow_provider_paimon.lineage.errors import LineageStoreUnavailableError
from airflow_provider_paimon.lineage.retry import outlasts_a_poll
from airflow_provider_paimon.paimon.catchup import (
    CatchUpSpec,
    ConsumerNotFoundError,
    SourceRef,
    check_catch_up,
    compute_catch_up,
    count_data_snapshots_after,
)
from airflow_provider_paimon.paimon.errors import (
    BranchNotFoundError,
    InvalidArgumentError,
    TableNotFoundError,
)

S = SourceRef("db", "src")
B = SourceRef("db", "src", "fix")


def test_source_ref_parsing():
    assert SourceRef.parse("db.src") == S
    assert SourceRef.parse("db.src$branch_fix") == B
    assert SourceRef.parse({"table": "db.src", "branch": "fix"}) == B
    assert SourceRef.parse({"table": "db.src", "branch": "main"}) == S
    assert B.display == "db.src$branch_fix" and S.display == "db.src"
    with pytest.raises(InvalidArgumentError):
        SourceRef.parse("nodot")
    with pytest.raises(InvalidArgumentError):
        SourceRef.parse(42)


def test_caught_up_exactly_and_within_lag():
    result = compute_catch_up([S, B], {S: 5, B: 3}, {S: 5, B: 4})
    assert not result.caught_up
    assert [p.lag for p in result.sources] == [0, 1]
    assert compute_catch_up([S, B], {S: 5, B: 3}, {S: 5, B: 4}, max_lag_snapshots=1).caught_up
    d = result.to_dict()
    assert d["sources"][1]["consumed_snapshot_id"] == 3
    assert d["sources"][1]["latest_snapshot_id"] == 4
    assert d["sources"][1]["source"] == "db.src$branch_fix"


def test_empty_source_and_nothing_consumed():
    assert compute_catch_up([S], {S: None}, {S: None}).caught_up  # no snapshot at all
    result = compute_catch_up([S], {S: None}, {S: 3}, max_lag_snapshots=2)
    assert not result.caught_up and result.sources[0].lag == 3
    # consumed beyond latest (e.g. a rollback of the source) is not "behind"
    assert compute_catch_up([S], {S: 9}, {S: 7}).caught_up


def test_compact_snapshots_do_not_count():
    kinds = {6: "APPEND", 7: "COMPACT", 8: "COMPACT"}
    result = compute_catch_up([S], {S: 6}, {S: 8}, commit_kinds={S: kinds.get})
    assert result.caught_up and result.sources[0].lag == 0
    kinds[8] = "APPEND"
    result = compute_catch_up([S], {S: 6}, {S: 8}, commit_kinds={S: kinds.get})
    assert not result.caught_up and result.sources[0].lag == 1


def test_lag_count_stops_early_and_expired_counts_as_data():
    seen = []

    def kind(i):
        seen.append(i)
        return None  # expired: counted as data

    assert count_data_snapshots_after(0, 1000, kind, stop_after=2) == 3
    assert seen == [1000, 999, 998]


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError):
        compute_catch_up([S], {}, {}, max_lag_snapshots=-1)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        CatchUpSpec(warehouse="/w", table="db.t", job="j", consumer_id="c")
    with pytest.raises(InvalidArgumentError, match="explicit sources"):
        CatchUpSpec(warehouse="/w", table="db.t", consumer_id="c")


def test_consumer_file_on_main_and_on_branch(tables):
    tables.create("db.src")
    tables.create("db.sink")
    for _ in range(3):
        tables.append("db.src")
    tables.branch("db.src", "fix", "t3")
    tables.append("db.src", branch="fix")  # branch snapshot 4
    tables.set_consumer("db.src", "c1", next_snapshot=3)  # consumed 2 of 3 on main
    tables.set_consumer("db.src", "c1", next_snapshot=5, branch="fix")  # consumed 4 of 4

    main = CatchUpSpec(warehouse=tables.warehouse, table="db.sink", consumer_id="c1", sources=("db.src",))
    result = check_catch_up(main)
    assert not result.caught_up
    assert result.to_dict()["sources"][0] == {
        "source": "db.src", "database": "db", "table": "src", "branch": "main",
        "consumed_snapshot_id": 2, "latest_snapshot_id": 3, "lag_snapshots": 1, "caught_up": False,
    }
    on_branch = CatchUpSpec(
        warehouse=tables.warehouse, table="db.sink", consumer_id="c1", sources=("db.src$branch_fix",)
    )
    result = check_catch_up(on_branch)
    assert result.caught_up
    assert (result.sources[0].consumed, result.sources[0].latest) == (4, 4)

    tables.set_consumer("db.src", "c1", next_snapshot=4)
    assert check_catch_up(main).caught_up


def test_clear_errors(tables):
    tables.create("db.src")
    tables.create("db.sink")
    tables.append("db.src")
    spec = dict(warehouse=tables.warehouse, consumer_id="c1", sources=("db.src",))
    with pytest.raises(ConsumerNotFoundError, match=re.escape("consumer 'c1' has no progress on db.src")):
        check_catch_up(CatchUpSpec(table="db.sink", **spec))
    with pytest.raises(TableNotFoundError, match=re.escape("db.nope")):
        check_catch_up(CatchUpSpec(table="db.nope", **spec))
    with pytest.raises(BranchNotFoundError, match="'ghost'"):
        check_catch_up(CatchUpSpec(table="db.sink", branch="ghost", **spec))
    with pytest.raises(TableNotFoundError):
        check_catch_up(CatchUpSpec(table="db.sink", **{**spec, "sources": ("db.other",)}))
    with pytest.raises(BranchNotFoundError):
        check_catch_up(CatchUpSpec(table="db.sink", **{**spec, "sources": ("db.src$branch_x",)}))


def test_transient_or_permanent():
    import sqlalchemy as sa

    assert not outlasts_a_poll(TableNotFoundError("x"))
    assert not outlasts_a_poll(sa.exc.ArgumentError("bad url"))
    assert outlasts_a_poll(ConnectionRefusedError(111, "refused"))
    assert outlasts_a_poll(sa.exc.OperationalError("SELECT 1", {}, Exception(2003, "Can't connect")))
    assert not outlasts_a_poll(
        sa.exc.OperationalError("SELECT 1", {}, Exception(1045, "Access denied for user"))
    )
    # The store's own "cannot reach the server" is one of our errors, yet it may pass.
    assert outlasts_a_poll(LineageStoreUnavailableError("lineage store at mysql://h unreachable"))
    assert not outlasts_a_poll(LineageStoreUnavailableError("unreachable: Access denied for user 'x'"))
