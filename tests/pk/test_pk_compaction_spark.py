"""The compact job on a primary-key table, and ``read_table`` of what it leaves.

A deduplicate table with a ``sequence.field`` gets random CDC commits (plain pypaimon,
the model follows), then the ``compact`` job merges it on Spark executors, minor and
then full. After each step the ``paimon`` data source, ``read_table``, plain pypaimon
and pypaimon-rust read what the model says, and ``read_table``'s plan says which
files Spark's Parquet reader took: none before compaction (every bucket needs a
merge), all after a full compaction (top-level files, no deletes: the value columns
are read and the system columns left out), and after a new write only the written
bucket goes back to the Python merge.
"""

from __future__ import annotations

import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.paimon.lsm.compact import plan_lsm_compaction
from airflow_provider_paimon.paimon.lsm.options import LsmOptions
from airflow_provider_paimon.spark import read_table
from airflow_provider_paimon.spark.jobs import compact as job

from . import lsm_checks, tables
from .scenarios import FIELDS, Feed, model_for

pytestmark = pytest.mark.spark
VARIANT = "deduplicate-seq"


def _job(capsys, warehouse: str, *argv: str) -> dict:
    code = job.main(["--warehouse", warehouse, "--table", "db.t", *argv])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = parse_result(out.out)
    assert result is not None
    return result


def _dropping(warehouse: str, mode: str, overrides: dict | None = None) -> set[tuple]:
    """Keys of the buckets whose compaction will drop deletes (planned as the job will)."""
    table = tables.reload(warehouse, "db.t")
    plan = plan_lsm_compaction(table, mode, LsmOptions.from_table(table, overrides))
    return lsm_checks.keys_of_buckets(table, {(u.partition, u.bucket) for u in plan.units if u.drop_delete})


def _rows(df) -> list[tuple]:
    return sorted((tuple(r[f] for f in FIELDS) for r in df.collect()), key=repr)


def _all_readers(spark, warehouse: str, model) -> object:
    df = read_table(spark, "db.t", warehouse=warehouse)
    assert _rows(df) == model.rows()
    source = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.t").load()
    assert _rows(source) == model.rows()
    assert tables.read(tables.reload(warehouse, "db.t")) == model.rows()
    assert rust_rows(warehouse, "db.t") == model.rows()
    return df.native_plan


def test_compact_job_then_read_table_reads_top_level_files_natively(spark, warehouse, capsys):
    model = model_for(VARIANT, {"num-sorted-run.compaction-trigger": "3"})
    tables.create(warehouse, "db.t", VARIANT, {"num-sorted-run.compaction-trigger": "3"})
    feed = Feed(model, 11, keys_per_partition=400, max_rows_per_commit=40)
    # a bulk load first, so the top level later dwarfs a few small level-0 files
    bulk = [{"p": p, "k": k, "v": "x", "n": k, "m": None, "ts": 0, "op": "+I"} for p in "ab" for k in range(6000)]
    tables.write(tables.reload(warehouse, "db.t"), bulk)
    model.commit(bulk)
    for _ in range(30):
        rows = feed.commit()
        tables.write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
    plan = _all_readers(spark, warehouse, model)
    assert plan.native_files == 0 and set(plan.python_reasons) == {"primary-key merge"}

    def write(n: int) -> None:
        for _ in range(n):
            rows = feed.commit()
            tables.write(tables.reload(warehouse, "db.t"), rows)
            model.commit(rows)

    # a tree of level-0 files only: size amplification merges everything to the top
    keys = _dropping(warehouse, "minor")
    first = _job(capsys, warehouse, "--mode", "minor")
    assert first["committed"] and first["output_levels"] == [3]
    model.compacted(keys)
    _all_readers(spark, warehouse, model)
    # a few small runs above a big top level: merged below it (level 2), deletes kept
    feed.max_rows = 3
    write(4)
    amp = "compaction.max-size-amplification-percent"
    keys = _dropping(warehouse, "minor", {amp: "10000"})
    minor = _job(capsys, warehouse, "--mode", "minor", "--option", f"{amp}=10000")
    model.compacted(keys)
    assert minor["committed"] and min(minor["output_levels"]) == 2, minor
    _all_readers(spark, warehouse, model)

    keys = _dropping(warehouse, "full")
    full = _job(capsys, warehouse, "--mode", "full")
    model.compacted(keys)
    assert full["committed"] and full["output_levels"] == [3], full
    assert full["rows_after"] <= full["rows_before"]
    plan = _all_readers(spark, warehouse, model)
    assert plan.python_file_count == 0 and plan.native_files == full["files_after"]

    rows = [dict(r, p="a") for r in feed.commit()]
    tables.write(tables.reload(warehouse, "db.t"), rows)
    model.commit(rows)
    plan = _all_readers(spark, warehouse, model)
    assert plan.native_files > 0 and plan.python_file_count > 0  # only partition a merges
    assert all("/p=a/" in path for path, _ in plan.python_files), plan.explain()

    nothing = _job(capsys, warehouse, "--mode", "full", "--partition", "p=b")
    assert not nothing["committed"] and nothing["message"] == "nothing to compact"
