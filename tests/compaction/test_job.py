"""The compact job entry point, in-process on the shared SparkSession."""

from __future__ import annotations

import pytest

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.spark.jobs import compact as job

from .helpers import (
    SMALL,
    append_many,
    checksum,
    data_file_count,
    files_on_disk,
    make_table,
    reload,
)

pytestmark = pytest.mark.spark


def _run(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = job.main(list(argv))
    out = capsys.readouterr()
    return code, parse_result(out.out), out.err


def test_compacts_on_executors_and_reports(spark, warehouse, capsys):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 8)
    before_sum, before_files = checksum(table), data_file_count(table)

    code, result, err = _run(capsys, "--warehouse", warehouse, "--table", "db.t")
    assert code == 0, err
    table = reload(warehouse)
    latest = table.snapshot_manager().get_latest_snapshot()
    assert result["committed"] is True and result["snapshot_id"] == latest.id == 9
    assert latest.commit_kind == "COMPACT"
    assert result["files_before"] == before_files == 16
    assert result["files_after"] == data_file_count(table) < before_files
    assert result["bytes_before"] > 0 and result["bytes_after"] > 0 and result["bins"] >= 2
    assert result["duration_s"] >= 0 and "compacted 16 files" in result["message"]
    assert checksum(table) == before_sum

    # Nothing left to do: succeeds, says so, commits nothing.
    code, result, _ = _run(capsys, "--warehouse", warehouse, "--table", "db.t")
    assert code == 0
    assert result["committed"] is False and result["snapshot_id"] is None
    assert result["message"] == "nothing to compact"
    assert reload(warehouse).snapshot_manager().get_latest_snapshot().id == 9


def test_dry_run_prints_plan_and_commits_nothing(spark, warehouse, capsys):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 5)
    disk = files_on_disk(warehouse)
    code, result, _ = _run(capsys, "--warehouse", warehouse, "--table", "db.t", "--dry-run")
    assert code == 0
    assert result["dry_run"] is True and result["committed"] is False and result["snapshot_id"] is None
    assert result["plan"]["files_before"] == 10 and len(result["plan"]["bins"]) == result["bins"]
    assert files_on_disk(warehouse) == disk


def test_where_and_partition_select_partitions(spark, warehouse, capsys):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 5)
    code, result, err = _run(capsys, "--warehouse", warehouse, "--table", "db.t",
                             "--where", "p = 'a' OR p > 'x'")
    assert code == 0, err
    plan_parts = {b["partition"]["p"] for b in result.get("plan", {}).get("bins", [])}
    assert plan_parts <= {"a"}
    table = reload(warehouse)
    from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

    per_part = {}
    for e in live_entries(table, latest_snapshot(table)):
        per_part[e.partition.values[0]] = per_part.get(e.partition.values[0], 0) + 1
    assert per_part["b"] == 5 and per_part["a"] < 5

    code, result, err = _run(capsys, "--warehouse", warehouse, "--table", "db.t",
                             "--partition", "p=b", "--option", "compaction.min.file-num=2")
    assert code == 0, err
    assert result["committed"] is True


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--table", "db.nope"], "table db.nope does not exist (tables in db: pk, t)"),
        (["--table", "db.t", "--branch", "nope"], "branch 'nope' does not exist"),
        (["--table", "db.t", "--partition", "p=zz"], "partition p=zz does not exist"),
        (["--table", "db.t", "--partition", "q=a"], "not partition columns"),
        (["--table", "db.t", "--option", "target-file-size=-1mb"], "must not be negative"),
        (["--table", "db.t", "--option", "compaction.min.file-num=0"], "at least 1"),
        (["--table", "db.t", "--where", "no_such_col = 1"], "'no_such_col' is not a partition column"),
        (["--table", "db.t", "--where", "p = reflect('java.lang.System', 'exit', 1)"],
         "function calls are not allowed (reflect"),
        (["--table", "db.t", "--where", "p IN (SELECT p FROM db.t)"], "subqueries are not allowed"),
        (["--table", "db.t", "--where", "1=1; DROP TABLE db.t"], "semicolon"),
        (["--table", "db.t", "--where", "v = 'x'"], "'v' is not a partition column (partition columns: p)"),
        (["--table", "db.t", "--where", "(" * 2000 + "p = 'a'" + ")" * 2000], "more than 50 deep"),
        (["--table", "db.t", "--max-retries", "-1"], "must not be negative"),
        (["--table", "db.t", "--mode", "minor"], "--mode is for primary-key tables"),
        (["--table", "db.pk", "--mode", "major"], "compaction mode must be 'full'"),
        (["--table", "db.pk", "--option", "num-levels=1"], "num-levels must be at least 2"),
    ],
)
def test_bad_input_exits_2_and_commits_nothing(spark, warehouse, capsys, extra, fragment):
    table = make_table(warehouse, options=SMALL)
    make_table(warehouse, "db.pk", primary_keys=["id", "p"], bucket=1)
    append_many(table, 5)
    disk = files_on_disk(warehouse)
    code, result, err = _run(capsys, "--warehouse", warehouse, *extra)
    assert code == 2, err
    assert result is None
    assert "PAIMON_ERROR" in err and fragment in err
    assert files_on_disk(warehouse) == disk


def test_compact_job_never_hands_where_to_spark(spark, warehouse, capsys):
    """A hostile where fails with exit 2 before Spark sees it: the JVM side-effect never happens."""
    table = make_table(warehouse, options=SMALL)
    append_many(table, 4)
    disk = files_on_disk(warehouse)
    system = spark.sparkContext._jvm.java.lang.System
    system.clearProperty("paimon.where.pwned")
    hostile = "p = 'a' OR reflect('java.lang.System', 'setProperty', 'paimon.where.pwned', 'yes') IS NOT NULL"
    code = job.main(["--warehouse", warehouse, "--table", "db.t", "--where", hostile])
    out = capsys.readouterr()
    assert code == 2 and parse_result(out.out) is None
    assert "function calls are not allowed (reflect" in out.err
    assert system.getProperty("paimon.where.pwned") is None
    assert files_on_disk(warehouse) == disk

    # a valid predicate still compacts exactly the partitions it names
    code = job.main(["--warehouse", warehouse, "--table", "db.t", "--where", "p IN ('b') AND NOT p IS NULL"])
    result = parse_result(capsys.readouterr().out)
    assert code == 0 and result["committed"] is True
    assert {b["partition"]["p"] for b in result.get("plan", {}).get("bins", [])} <= {"b"}
    from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries

    t = reload(warehouse)
    per_part: dict[str, int] = {}
    for e in live_entries(t, latest_snapshot(t)):
        per_part[e.partition.values[0]] = per_part.get(e.partition.values[0], 0) + 1
    assert per_part["a"] == 4 and per_part["b"] < 4
