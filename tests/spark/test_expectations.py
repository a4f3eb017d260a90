"""Expectations on a branch, checked against the same rules evaluated in plain Python on
the rows plain pypaimon reads; ``drop`` moves exactly the violating rows to the
quarantine branch in one commit per branch, read back by pypaimon and pypaimon-rust.
"""

from __future__ import annotations

import datetime
import os
import random

import pyarrow as pa
import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.branch import create_branch
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.branch.expectations import (
    RULE_COLUMN,
    Expectation,
    expect_accepted_values,
    expect_fresh,
    expect_not_null,
    expect_row,
    expect_row_count_change,
    expect_unique,
    parse_expectations,
)
from airflow_provider_paimon.spark.branch.quarantine import (
    SOURCE_PROPERTY,
    apply_expectations,
    quarantine_branch,
)

SCHEMA = pa.schema([
    ("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.int64()),
    ("status", pa.string()), ("dt", pa.string()),
])
COLUMNS = [f.name for f in SCHEMA]
SEEDS = int(os.environ.get("PAIMON_EXPECTATION_SEEDS", "1"))


def _random_rows(rng: random.Random, n: int) -> list[dict]:
    rows = []
    for _ in range(n):
        rows.append({
            "order_id": rng.randint(1, n // 2),  # duplicates on purpose
            "customer": rng.choice(["ann", "bob", None, "cy"]),
            "amount": rng.choice([rng.randint(-5, 100), None]),
            "status": rng.choice(["new", "paid", "void", None, "lost"]),
            "dt": rng.choice(["2026-11-01", "2026-11-02", "2026-11-03"]),
        })
    return rows


# the reference: each rule in plain Python over one row dict (or all rows)
def _ref_violates(rule: Expectation, row: dict, rows: list[dict]) -> bool:
    if rule.name == "positive":  # condition "amount >= 0": NULL violates
        return not (row["amount"] is not None and row["amount"] >= 0)
    if rule.kind == "not_null":
        return any(row[c] is None for c in rule.columns)
    if rule.kind == "accepted_values":
        return row[rule.columns[0]] not in rule.values
    if rule.kind == "unique":
        key = tuple(row[c] for c in rule.columns)
        if any(v is None for v in key):
            return False
        return sum(1 for r in rows if tuple(r[c] for c in rule.columns) == key) > 1
    raise AssertionError(rule)


def _setup(probe, rows: list[dict]):
    table = probe.create("shop.orders", SCHEMA, partition_keys=["dt"])
    probe.write_arrow("shop.orders", pa.Table.from_pylist(rows[: len(rows) // 2], schema=SCHEMA))
    create_branch(table, "fix")
    probe.write_arrow("shop.orders", pa.Table.from_pylist(rows, schema=SCHEMA), branch="fix", overwrite=True)
    return table


def _probe_rows(probe, branch: str, columns=COLUMNS) -> list[tuple]:
    data = probe.read_arrow("shop.orders", branch=branch).select(columns)
    return sorted(zip(*[data.column(c).to_pylist() for c in columns], strict=True), key=repr)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_results_match_the_python_reference_and_drop_moves_exactly_the_violators(spark, probe, warehouse, seed):
    rng = random.Random(seed)
    rows = _random_rows(rng, 300)
    _setup(probe, rows)
    rules = parse_expectations([
        expect_row("positive", "amount >= 0", on_violation="drop"),
        expect_not_null("has_customer", "customer", on_violation="warn"),
        expect_accepted_values("known_status", "status", ["new", "paid", "void", None], on_violation="drop"),
        expect_unique("one_order", ["order_id"], on_violation="warn"),
        expect_row_count_change("grew", min_change=0.5, max_change=1.5, on_violation="fail"),
    ])
    stored = [dict(zip(COLUMNS, r, strict=True)) for r in _probe_rows(probe, "fix")]  # as pypaimon reads them
    report = apply_expectations(spark, "shop.orders", "fix", rules, warehouse=warehouse, sample_rows=3)

    by_name = {r.rule.name: r for r in report.results}
    for rule in rules[:4]:
        expected = [r for r in stored if _ref_violates(rule, r, stored)]
        result = by_name[rule.name]
        assert result.violations == len(expected), (seed, rule.name)
        assert result.passed == (not expected)
        per_dt: dict[str, int] = {}
        for r in expected:
            per_dt[r["dt"]] = per_dt.get(r["dt"], 0) + 1
        assert {p.partition["dt"]: p.violations for p in result.partitions} == per_dt
        assert len(result.samples) == min(3, len(expected))
    base_rows = len(rows) // 2
    assert by_name["grew"].passed == (0.5 <= (len(stored) - base_rows) / base_rows <= 1.5)
    assert report.passed and report.rows == len(stored)

    # drop: the branch keeps exactly the rows passing both drop rules, quarantine the others
    drop_rules = [rules[0], rules[2]]
    keep = [r for r in stored if not any(_ref_violates(x, r, stored) for x in drop_rules)]
    moved = [r for r in stored if any(_ref_violates(x, r, stored) for x in drop_rules)]
    assert report.dropped == len(moved) > 0
    assert _probe_rows(probe, "fix") == sorted((tuple(r[c] for c in COLUMNS) for r in keep), key=repr)
    quarantined = probe.read_arrow("shop.orders", branch=quarantine_branch("fix"))
    assert quarantined.num_rows == len(moved)
    def rule_names(row: dict) -> str:
        return ",".join(x.name for x in drop_rules if _ref_violates(x, row, stored))

    expected_quarantine = sorted(((*[m[c] for c in COLUMNS], rule_names(m)) for m in moved), key=repr)
    got = sorted(zip(*[quarantined.column(c).to_pylist() for c in [*COLUMNS, RULE_COLUMN]], strict=True), key=repr)
    assert got == expected_quarantine
    # the independent reader sees the same branch and quarantine
    assert rust_rows(warehouse, "shop.orders", branch="fix") == _probe_rows(probe, "fix")
    assert len(rust_rows(warehouse, "shop.orders", branch=quarantine_branch("fix"))) == len(moved)
    # one commit per branch: the rewrite is one OVERWRITE snapshot
    fix_latest = probe.latest("shop.orders", "fix")
    assert fix_latest.commit_kind == "OVERWRITE"
    assert probe.snapshot_ids("shop.orders", quarantine_branch("fix")) == [1]
    # main untouched
    assert len(_probe_rows(probe, "main")) == len(rows) // 2
    # a rerun finds nothing to drop and writes nothing
    again = apply_expectations(spark, "shop.orders", "fix", rules, warehouse=warehouse)
    assert again.dropped == 0 and probe.latest("shop.orders", "fix").id == fix_latest.id


def test_a_partition_whose_rows_all_fail_is_emptied_in_the_same_commit(spark, probe, warehouse):
    rows = [
        {"order_id": 1, "customer": "a", "amount": -1, "status": "new", "dt": "2026-11-01"},
        {"order_id": 2, "customer": "a", "amount": -2, "status": "new", "dt": "2026-11-01"},
        {"order_id": 3, "customer": "b", "amount": 5, "status": "new", "dt": "2026-11-02"},
        {"order_id": 4, "customer": "b", "amount": -5, "status": "new", "dt": "2026-11-02"},
        {"order_id": 5, "customer": "c", "amount": 7, "status": "new", "dt": "2026-11-03"},
    ]
    _setup(probe, rows)
    before = probe.snapshot_ids("shop.orders", "fix")
    report = apply_expectations(spark, "shop.orders", "fix", [expect_row("positive", "amount >= 0", "drop")],
                                warehouse=warehouse)
    assert report.dropped == 3 and report.quarantine["partitions_rewritten"] == 2
    assert [r[0] for r in _probe_rows(probe, "fix")] == [3, 5]
    assert probe.snapshot_ids("shop.orders", "fix") == [*before, before[-1] + 1]
    assert rust_rows(warehouse, "shop.orders", branch="fix") == _probe_rows(probe, "fix")


def test_killed_between_quarantine_and_rewrite_a_rerun_finishes_without_duplicates(spark, probe, warehouse, monkeypatch):
    rows = [{"order_id": i, "customer": "a", "amount": (-1 if i % 3 == 0 else i), "status": "new",
             "dt": f"2026-11-0{1 + i % 2}"} for i in range(1, 13)]
    _setup(probe, rows)
    rules = [expect_row("positive", "amount >= 0", "drop")]
    import airflow_provider_paimon.spark.branch.quarantine as quarantine

    real = quarantine._rewrite_branch

    def crash(*args, **kwargs):
        raise faults.InjectedFault("killed before the branch rewrite")

    monkeypatch.setattr(quarantine, "_rewrite_branch", crash)
    with pytest.raises(faults.InjectedFault):
        apply_expectations(spark, "shop.orders", "fix", rules, warehouse=warehouse)
    assert probe.read_arrow("shop.orders", branch=quarantine_branch("fix")).num_rows == 4
    assert len(_probe_rows(probe, "fix")) == 12  # still readable, unchanged
    monkeypatch.setattr(quarantine, "_rewrite_branch", real)
    report = apply_expectations(spark, "shop.orders", "fix", rules, warehouse=warehouse)
    assert report.dropped == 4 and report.quarantine["appended"] is False
    assert probe.read_arrow("shop.orders", branch=quarantine_branch("fix")).num_rows == 4
    assert all(r[2] >= 0 for r in _probe_rows(probe, "fix")) and len(_probe_rows(probe, "fix")) == 8
    latest = probe.latest("shop.orders", quarantine_branch("fix"))
    assert latest.properties[SOURCE_PROPERTY].startswith("fix:")


def test_fail_and_warn_write_nothing_and_freshness_counts_days_from_their_end(spark, probe, warehouse):
    rows = [{"order_id": i, "customer": None, "amount": i, "status": "new", "dt": "2026-11-01"} for i in range(4)]
    _setup(probe, rows)
    state = probe.state()
    from airflow_provider_paimon.spark import read_table
    from airflow_provider_paimon.spark.branch.expectations import evaluate_expectations

    df = read_table(spark, "shop.orders", warehouse=warehouse, branch="fix").selectExpr("*", "to_date(dt) AS day")
    rules = [expect_not_null("cust", "customer", "fail"), expect_fresh("fresh", "day", "1 d", "warn")]
    now = datetime.datetime(2026, 11, 2, 23, 0, tzinfo=datetime.timezone.utc)
    report = evaluate_expectations(df, rules, table="shop.orders", branch="fix", now=now)
    assert not report.passed and [r.rule.name for r in report.failed] == ["cust"]
    assert report.results[1].passed  # 2026-11-01 ends at 11-02 00:00: 23 h old
    late = evaluate_expectations(df, rules, table="shop.orders", branch="fix",
                                 now=now + datetime.timedelta(hours=2))
    assert not late.results[1].passed and late.warnings[0].rule.name == "fresh"
    report = apply_expectations(spark, "shop.orders", "fix", [expect_not_null("cust", "customer")], warehouse=warehouse)
    assert not report.passed and report.dropped == 0
    assert probe.state() == state


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "x", "kind": "row"}, "needs a SQL condition"),
        ({"name": "x", "kind": "row_count", "min_change": -0.1, "on_violation": "drop"}, "no rows to drop"),
        ({"name": "x", "kind": "not_null", "columns": ["a"], "on_violation": "drop_rows"}, "on_violation must be"),
        ({"name": "x y", "kind": "not_null", "columns": ["a"]}, "expectation name"),
        ({"name": "x", "kind": "not_null", "columns": ["a"], "severity": "high"}, "unknown key"),
        ({"name": "x", "kind": "freshness", "column": "d", "max_age": "soon"}, "max_age"),
        ({"name": "x", "kind": "row_count", "min_change": 1, "max_change": 0}, "min_change"),
    ],
)
def test_bad_rules_are_refused_with_the_reason(spec, message):
    with pytest.raises(InvalidArgumentError, match=message):
        parse_expectations([spec])


def test_unknown_columns_and_bad_sql_are_refused_before_anything_is_written(spark, probe, warehouse):
    _setup(probe, [{"order_id": 1, "customer": "a", "amount": -1, "status": "new", "dt": "2026-11-01"}])
    state = probe.state()
    with pytest.raises(InvalidArgumentError, match="does not have"):
        apply_expectations(spark, "shop.orders", "fix", [expect_not_null("n", "nope", "drop")], warehouse=warehouse)
    with pytest.raises(InvalidArgumentError, match="not a SQL expression"):
        apply_expectations(spark, "shop.orders", "fix", [expect_row("r", "amount >>> (", "drop")],
                           warehouse=warehouse)
    with pytest.raises(InvalidArgumentError, match="not to main"):
        apply_expectations(spark, "shop.orders", "main", [expect_row("r", "amount > 0")], warehouse=warehouse)
    assert probe.state() == state


def test_audit_job_applies_expectations_before_its_diff_and_reports_them(spark, probe, warehouse, capsys):
    """The Spark job the audit operator submits: drop rules clean the branch first, so the
    diff and the checks see only passing rows; a violated fail rule makes the result fail."""
    import json

    from airflow_provider_paimon.spark.jobs import audit as job

    rows = [{"order_id": i, "customer": "a" if i % 2 else None, "amount": (-1 if i % 4 == 0 else i),
             "status": "new", "dt": "2026-11-01"} for i in range(1, 9)]
    _setup(probe, rows)
    rules = [{"name": "positive", "kind": "row", "condition": "amount >= 0", "on_violation": "drop"},
             {"name": "cust", "kind": "not_null", "column": "customer"}]
    args = job.build_parser().parse_args([
        "--warehouse", warehouse, "--table", "shop.orders", "--branch", "fix", "--expectations", json.dumps(rules),
        "--check", "neg=SELECT * FROM {branch_rows} WHERE amount < 0",
    ])
    result = job.run(args, spark=spark)
    assert result["expectations"]["dropped"] == 2
    assert result["checks"]["failed"] == []  # the negative rows were moved before the check ran
    assert result["passed"] is False and "FAILED cust" in result["summary"]
    assert json.loads(json.dumps(result)) == result  # XCom-ready
    state = probe.state()
    assert job.main(["--warehouse", warehouse, "--table", "shop.orders", "--branch", "fix",
                     "--expectations", '[{"name": "x", "kind": "row"}]']) == 2
    assert "needs a SQL condition" in capsys.readouterr().err
    assert probe.state() == state
