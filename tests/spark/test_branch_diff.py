"""Auditing a branch before it is published: row diff per partition, and data checks.

One warehouse for the module, written with plain pypaimon:

- ``aud.p`` (partitioned by ``dt``): main has duplicates, NULL values and a NULL
  partition; branch ``fix`` is made from main's first snapshot, then one partition is
  overwritten on it (removes rows, one copy of a duplicate among them) and rows are
  appended to it; main moves on after the branch point (rows the branch lacks);
  branch ``same`` is made from main's last snapshot (no difference).
- ``aud.u`` (no partitions): branch ``fix`` replaces the table's rows with a subset plus
  one new row.
- ``aud.s``: branch ``fix`` added a column and widened another (INT -> BIGINT); main
  added a column after the branch point.

Every diff is compared with a pure-Python multiset difference of the rows pypaimon
reads. The warehouse must be byte-identical after every audit.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon.errors import (
    BranchNotFoundError,
    InvalidArgumentError,
    TableNotFoundError,
)
from airflow_provider_paimon.spark.branch.diff import (
    AuditFailedError,
    audit_branch,
    branch_diff,
    run_checks,
)

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("amount", pa.float64())])
MAIN_1 = [
    (1, "d1", "a", 1.0), (1, "d1", "a", 1.0), (2, "d1", None, 2.0), (3, "d1", "c", None),
    (4, "d2", "d", 4.0), (5, "d2", "e", 5.0), (5, "d2", "e", 5.0), (5, "d2", "e", 5.0),
    (6, None, "n", 6.0), (7, "d3", "g", 7.0),
]
MAIN_2 = [(8, "d3", "h", 8.0), (9, "d4", "i", 9.0)]  # main moves on after the branch point
FIX_D2 = [(4, "d2", "d", 4.0), (5, "d2", "e", 5.0), (5, "d2", "e", 5.0), (50, "d2", "x", -1.0)]
FIX_APPEND = [(10, "d1", None, None), (11, "d5", "k", 11.0), (1, "d1", "a", 1.0)]
UNPART_MAIN = [(1, "x", "a", 1.0), (1, "x", "a", 1.0), (2, "x", "b", None), (3, "y", None, 3.0)]
UNPART_FIX = [(1, "x", "a", 1.0), (2, "x", "b", None), (3, "y", None, 3.0), (4, "z", "new", 4.0)]


def _write(table: Any, rows: list[tuple], overwrite: dict | None = None, schema: pa.Schema = SCHEMA) -> None:
    commit_rows(table, [dict(zip(schema.names, r, strict=True)) for r in rows], schema, overwrite=overwrite)


def _read(wh: str, name: str, branch: str | None = None, columns: list[str] = SCHEMA.names) -> list[tuple]:
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    table = load_table(open_catalog(wh), name, branch)
    builder = table.new_read_builder()
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return [tuple(r[c] for c in columns) for r in data.to_pylist()]


def _reference(base: list[tuple], branch: list[tuple], key: int | None) -> dict[Any, tuple[int, int]]:
    """Pure-Python multiset difference: partition -> (added, removed), changed partitions only."""
    b, m = Counter(branch), Counter(base)
    out: dict[Any, list[int]] = {}
    for row, n in (b - m).items():
        out.setdefault(None if key is None else row[key], [0, 0])[0] += n
    for row, n in (m - b).items():
        out.setdefault(None if key is None else row[key], [0, 0])[1] += n
    return {k: (a, r) for k, (a, r) in out.items()}


def _fingerprint(wh: str) -> dict[str, str]:
    """Every file under the warehouse and the hash of its bytes."""
    out = {}
    for root, _dirs, files in os.walk(wh):
        for f in files:
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, wh)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    from pypaimon import Schema
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    path = str(tmp_path_factory.mktemp("audit") / "warehouse")
    catalog = open_catalog(path)
    catalog.create_database("aud", True)
    catalog.create_table("aud.p", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    catalog.create_table("aud.u", Schema.from_pyarrow_schema(SCHEMA), False)
    main = load_table(catalog, "aud.p")
    _write(main, MAIN_1)
    create_branch(main, "fix", snapshot_id=1)
    _write(main, MAIN_2)
    fix = load_table(catalog, "aud.p", "fix")
    _write(fix, FIX_D2, overwrite={"dt": "d2"})
    _write(fix, FIX_APPEND)
    main = load_table(open_catalog(path), "aud.p")
    create_branch(main, "same", snapshot_id=main.snapshot_manager().get_latest_snapshot().id)
    unpart = load_table(catalog, "aud.u")
    _write(unpart, UNPART_MAIN)
    create_branch(unpart, "fix", snapshot_id=1)
    _write(load_table(catalog, "aud.u", "fix"), UNPART_FIX, overwrite={})
    # aud.s: the branch added a column and widened one (INT -> BIGINT); main added another
    with_qty = pa.schema([*SCHEMA, ("qty", pa.int32())])
    catalog.create_table("aud.s", Schema.from_pyarrow_schema(with_qty, partition_keys=["dt"]), False)
    _write(load_table(catalog, "aud.s"), [(*r, i) for i, r in enumerate(UNPART_MAIN)], schema=with_qty)
    create_branch(load_table(catalog, "aud.s"), "fix", snapshot_id=1)
    catalog.alter_table("aud.s$branch_fix", [SchemaChange.add_column("note", AtomicType("STRING")),
                                             SchemaChange.update_column_type("qty", AtomicType("BIGINT"))])
    catalog.alter_table("aud.s", [SchemaChange.add_column("main_only", AtomicType("INT"))])
    fix = load_table(open_catalog(path), "aud.s", "fix")
    extended = pa.schema([*SCHEMA, ("qty", pa.int64()), ("note", pa.string())])
    _write(fix, [(9, "x", "z", 9.0, 5_000_000_000, "added with a note"), (1, "x", "a", 1.0, 0, None)], schema=extended)
    return path


def test_partitioned_diff_matches_a_python_multiset_difference(spark, wh):
    before = _fingerprint(wh)
    main_rows, fix_rows = _read(wh, "aud.p"), _read(wh, "aud.p", "fix")
    assert Counter(fix_rows) != Counter(main_rows)
    want = _reference(main_rows, fix_rows, key=1)

    diff = branch_diff(spark, "aud.p", "fix", warehouse=wh)

    got = {p.partition["dt"]: (p.added, p.removed) for p in diff.partitions}
    assert got == want
    assert set(want) >= {"d2", "d1", "d3", "d4", "d5"} - {None}  # overwritten, appended, main-only, branch-only
    assert (diff.added, diff.removed) == (sum(a for a, _ in want.values()), sum(r for _, r in want.values()))
    assert diff.changed_partitions == len(want) and not diff.truncated
    all_partitions = {r[1] for r in main_rows} | {r[1] for r in fix_rows}
    assert diff.total_partitions == len(all_partitions)  # the NULL partition counts once
    assert diff.partition_keys == ("dt",) and diff.compared_columns == tuple(SCHEMA.names)
    assert diff.summary() == (
        f"aud.p main..fix: +{diff.added} -{diff.removed} rows in {len(want)} of {len(all_partitions)} partitions"
    )
    # most changed partition first
    sizes = [p.added + p.removed for p in diff.partitions]
    assert sizes == sorted(sizes, reverse=True)

    small = branch_diff(spark, "aud.p", "fix", warehouse=wh, limit_partitions=2)
    assert small.truncated and len(small.partitions) == 2
    assert (small.added, small.removed, small.changed_partitions) == (diff.added, diff.removed, diff.changed_partitions)
    assert small.partitions == diff.partitions[:2]
    capped = diff.to_dict(max_partitions=1)
    assert json.loads(json.dumps(capped)) == capped
    assert len(capped["partitions"]) == 1 and capped["truncated"] and capped["added"] == diff.added
    assert _fingerprint(wh) == before


def test_unpartitioned_and_identical_branches(spark, wh):
    want = _reference(_read(wh, "aud.u"), _read(wh, "aud.u", "fix"), key=None)
    assert want == {None: (1, 1)}  # one new row, one copy of a duplicate gone
    diff = branch_diff(spark, "aud.u", "fix", warehouse=wh)
    assert [(p.partition, p.added, p.removed) for p in diff.partitions] == [({}, 1, 1)]
    assert diff.summary() == "aud.u main..fix: +1 -1 rows in 1 of 1 partition"

    same = branch_diff(spark, "aud.p", "same", warehouse=wh)
    assert same.identical and same.partitions == () and same.changed_partitions == 0
    assert same.summary().startswith("aud.p main..same: +0 -0 rows in 0 of ")
    # base may be another branch
    reverse = branch_diff(spark, "aud.p", "same", warehouse=wh, base="fix")
    want = _reference(_read(wh, "aud.p", "fix"), _read(wh, "aud.p", "same"), key=1)
    assert {p.partition["dt"]: (p.added, p.removed) for p in reverse.partitions} == want
    assert reverse.summary().startswith("aud.p fix..same: ")


def test_schema_differences_compare_the_common_columns_and_say_so(spark, wh):
    diff = branch_diff(spark, "aud.s", "fix", warehouse=wh)
    columns = [*SCHEMA.names, "qty"]
    assert diff.compared_columns == tuple(columns)
    assert (diff.only_in_branch, diff.only_in_base, diff.cast_columns) == (("note",), ("main_only",), ("qty",))
    common = _reference(_read(wh, "aud.s", columns=columns), _read(wh, "aud.s", "fix", columns=columns), key=1)
    assert common == {"x": (2, 0)}  # a second copy of (1, x, a, 1.0, 0) and the new row
    assert [(p.partition, p.added, p.removed) for p in diff.partitions] == [({"dt": "x"}, 2, 0)]
    assert diff.summary() == (
        "aud.s main..fix: +2 -0 rows in 1 of 2 partitions (not compared (only on fix): note; "
        "not compared (only on main): main_only; main values cast to fix's type: qty)"
    )


def test_checks_report_each_result_and_write_nothing(spark, wh):
    before = _fingerprint(wh)
    checks = {
        "no_negative_amounts": "SELECT id, dt, amount FROM {branch_rows} WHERE amount < 0",
        "ids_not_null": "-- a comment first\nSELECT * FROM {branch_rows} WHERE id IS NULL;",
        "nothing_lost": "SELECT id FROM {main_rows} EXCEPT SELECT id FROM {branch_rows}",
        "row_count_close": lambda b, m: True if abs(b.count() - m.count()) <= 5 else "row counts differ",
        "has_d9": lambda b, m: b.where("dt = 'd9'").count() > 0,
        "explains": lambda b, m: "amount is NULL in d1",
        "broken": lambda b, m: b.select("nope").count(),
        "forgot_return": lambda b, m: None,
    }
    report = run_checks(spark, "aud.p", "fix", checks, warehouse=wh, sample_rows=1)

    by = {r.name: r for r in report.results}
    assert [r.name for r in report.results] == list(checks)
    assert by["no_negative_amounts"].passed is False and by["no_negative_amounts"].violations == 1
    assert [dict(s) for s in by["no_negative_amounts"].sample] == [{"id": 50, "dt": "d2", "amount": -1.0}]
    assert by["ids_not_null"].passed and by["ids_not_null"].violations == 0
    lost = {r[0] for r in _read(wh, "aud.p")} - {r[0] for r in _read(wh, "aud.p", "fix")}
    assert by["nothing_lost"].violations == len(lost) and len(by["nothing_lost"].sample) == 1
    assert by["row_count_close"].passed
    assert not by["has_d9"].passed and by["has_d9"].message == "returned False"
    assert not by["explains"].passed and by["explains"].message == "amount is NULL in d1"
    assert not by["broken"].passed and "nope" in by["broken"].message
    assert not by["forgot_return"].passed and "must return True, False or a message" in by["forgot_return"].message
    assert report.failed == ("no_negative_amounts", "nothing_lost", "has_d9", "explains", "broken", "forgot_return")
    assert json.loads(json.dumps(report.to_dict()))["failed"] == list(report.failed)

    with pytest.raises(AuditFailedError, match=r"no_negative_amounts: 1 violating row.*do not publish branch 'fix'"):
        run_checks(spark, "aud.p", "fix", {"no_negative_amounts": checks["no_negative_amounts"]}, warehouse=wh,
                   raise_on_failure=True)
    ok = run_checks(spark, "aud.p", "fix", [checks["ids_not_null"]], warehouse=wh, raise_on_failure=True)
    assert ok.passed and ok.summary() == "aud.p branch fix: 1 of 1 checks passed"

    audit = audit_branch(spark, "aud.u", "fix", {"dupes": "SELECT id FROM {branch_rows} GROUP BY id HAVING count(*) > 1"},
                         warehouse=wh)
    assert audit.passed and audit.diff.added == 1
    assert audit.summary() == "aud.u main..fix: +1 -1 rows in 1 of 1 partition; 1 of 1 checks passed"
    assert _fingerprint(wh) == before


def test_audit_job_reports_a_failed_check_with_exit_zero(spark, wh, capsys):
    """The Spark job (what the operator submits) prints the audit; a failed check is a result."""
    from airflow_provider_paimon.spark.jobs import audit as job

    before = _fingerprint(wh)
    args = job.build_parser().parse_args([
        "--warehouse", wh, "--table", "aud.p", "--branch", "fix",
        "--check", "positive=SELECT * FROM {branch_rows} WHERE amount < 0", "--limit-partitions", "1",
    ])
    result = job.run(args, spark=spark)
    assert result["passed"] is False and result["checks"]["failed"] == ["positive"]
    # samples for a reviewer: rows the branch adds / removes, per the pure-Python diff
    added = Counter(_read(wh, "aud.p", "fix")) - Counter(_read(wh, "aud.p"))
    removed = Counter(_read(wh, "aud.p")) - Counter(_read(wh, "aud.p", "fix"))
    for rows, expected in ((result["diff"]["sample_added"], added), (result["diff"]["sample_removed"], removed)):
        assert 0 < len(rows) <= 5
        assert all(tuple(r[c] for c in SCHEMA.names) in expected for r in rows)
    assert len(result["diff"]["partitions"]) == 1 and result["diff"]["truncated"]
    assert result["summary"].startswith("aud.p main..fix: +")
    assert job.main(["--warehouse", wh, "--table", "aud.p", "--branch", "fix", "--check", "bad=DROP TABLE x"]) == 2
    assert "must be a query" in capsys.readouterr().err
    assert _fingerprint(wh) == before


def test_bad_input_is_refused_with_a_clear_error(spark, wh):
    before = _fingerprint(wh)
    with pytest.raises(TableNotFoundError, match=r"aud.nope does not exist.*tables in aud: p, s, u"):
        branch_diff(spark, "aud.nope", "fix", warehouse=wh)
    with pytest.raises(BranchNotFoundError, match=r"branch 'fx' does not exist.*branches: fix, same"):
        branch_diff(spark, "aud.p", "fx", warehouse=wh)
    with pytest.raises(BranchNotFoundError, match="branch 'old'"):
        branch_diff(spark, "aud.p", "fix", warehouse=wh, base="old")
    with pytest.raises(InvalidArgumentError, match="branch and base are both 'main'"):
        branch_diff(spark, "aud.p", "main", warehouse=wh)
    with pytest.raises(InvalidArgumentError, match=r"must be a query.*'INSERT'"):
        run_checks(spark, "aud.p", "fix", ["INSERT INTO aud.p VALUES (1)"], warehouse=wh)
    with pytest.raises(InvalidArgumentError, match=r"names \{fix_rows\}; the tables are \{branch_rows\}"):
        run_checks(spark, "aud.p", "fix", ["SELECT * FROM {fix_rows}"], warehouse=wh)
    with pytest.raises(InvalidArgumentError, match="no checks given"):
        run_checks(spark, "aud.p", "fix", [], warehouse=wh)
    # a command hidden after WITH cannot run: the query is parsed as a subquery
    report = run_checks(spark, "aud.p", "fix", ["WITH x AS (SELECT 1) INSERT INTO aud.p SELECT * FROM x"], warehouse=wh)
    assert not report.passed and report.results[0].message.startswith("query failed")
    assert _fingerprint(wh) == before


def test_the_docs_samples_run(spark, wh):
    """docs/branches.md "Audit a branch before publishing": the library sample on ``aud.u``
    (its branch passes every check), the operator sample builds audit >> replace."""
    import re
    from pathlib import Path

    from airflow.sdk import DAG

    page = (Path(__file__).resolve().parents[2] / "docs" / "branches.md").read_text()
    section = page.split("## Audit a branch before publishing", 1)[1]
    library, operator = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    code = library.replace('"sales.orders"', '"aud.u"').replace('"/data/warehouse"', repr(wh))
    ns: dict = {"spark": spark}
    exec(compile(code, "branches.md", "exec"), ns)
    assert ns["diff"].summary() == "aud.u main..fix: +1 -1 rows in 1 of 1 partition"
    assert ns["report"].passed and len(ns["report"].results) == 3
    with DAG("audit_doc_sample", schedule=None) as dag:
        exec(compile(operator, "branches.md", "exec"), {})
    assert dag.get_task("replace_main").upstream_task_ids == {"audit_fix"}
    assert set(dag.get_task("audit_fix").checks) == {"no_negative_amounts", "no_lost_orders"}
