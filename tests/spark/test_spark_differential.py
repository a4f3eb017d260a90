"""Differential tests: the ``paimon`` source answers every query exactly as Spark's Parquet.

The same rows are written to a Paimon table (three commits, partitioned by a string
and an int column, every supported type) and to plain Parquet; generated query
shapes (see ``differential.py``) then run on both and must give identical results.
The table is also read at each snapshot (time travel), on a branch, and as a
primary-key table whose expected rows are the merged upserts.

These tests are what caught the lost-rows defect: a filter pushed for one query
was reused by Spark for the next query on the same DataFrame. They run with
``spark.sql.python.filterPushdown.enabled=true`` so that a reader that starts
pushing filters again is exercised the way users' sessions would.

``PAIMON_DIFF_CASES`` (default 20) sets the number of generated cases on the
latest snapshot; the other groups scale with it (62 cases in all at 20). The count is
measured, not felt: benchmarks/differential_mutations.py injects known reader defects
(the lost-rows push-down, '' / NaN / empty array / NULL struct / NULL boolean read
wrong, timestamps cut to milliseconds, a partition-filter ``IN`` slip) and counts the
cases that catch each. On 2026-11-27 every defect but the ``IN`` slip was caught by
25-71% of the cases of each group that can see it, so a run of 20 misses one with a
chance below 1e-10; the ``IN`` slip only by 17% of the partition-filter cases, hence
their floor of 12 (miss 0.11 per run; tests/paimon/test_predicates.py catches it always). The cases change every day
(``PAIMON_DIFF_BASE``, set once per run in tests/conftest.py: the day's number times
10,000), so daily runs add up to more cases than one run holds; a case is its seed (the
test id): group ``g`` (0 latest, 1000 fresh, 2000 time travel, 3000 tag and branch,
4000 primary key, 5000 partition filter) runs seed ``base + g + i``, so
``PAIMON_DIFF_BASE=<seed - g> PAIMON_DIFF_CASES=1`` runs a failed case again.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from differential import COLUMNS, SCHEMA, SNAPSHOTS, TABLE, build_world, compare, group_seeds

N = int(os.environ.get("PAIMON_DIFF_CASES", "20"))
BASE = int(os.environ.get("PAIMON_DIFF_BASE", "0"))


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory) -> dict[str, Any]:
    """One warehouse and its Parquet twins, built once for the module."""
    previous = spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    yield build_world(spark, tmp_path_factory.mktemp("differential"))
    spark.conf.set("spark.sql.python.filterPushdown.enabled", previous)


def _check(spark, world, group: str, seed: int, snapshot: int | None = None) -> None:
    for got, want, description in compare(spark, world, group, seed, snapshot):
        assert got == want, description


@pytest.mark.parametrize("seed", group_seeds("latest", N, BASE))
def test_latest_snapshot_one_dataframe_for_all_queries(spark, world, seed):
    _check(spark, world, "latest", seed)


@pytest.mark.parametrize("seed", group_seeds("fresh", N, BASE))
def test_fresh_dataframe_per_query(spark, world, seed):
    _check(spark, world, "fresh", seed)


@pytest.mark.parametrize("snapshot", SNAPSHOTS)
@pytest.mark.parametrize("seed", group_seeds("time_travel", N, BASE))
def test_time_travel(spark, world, snapshot, seed):
    _check(spark, world, "time_travel", seed, snapshot)


@pytest.mark.parametrize("seed", group_seeds("tag_branch", N, BASE))
def test_tag_and_branch(spark, world, seed):
    _check(spark, world, "tag_branch", seed)


@pytest.mark.parametrize("seed", group_seeds("primary_key", N, BASE))
def test_primary_key_table_matches_merged_rows(spark, world, seed):
    _check(spark, world, "primary_key", seed)


def test_the_reported_leak(spark, world):
    """The issue's own example: a filtered count, then whole-table actions on the same DataFrame."""
    df = world["paimon"]()
    total = len(world["rows"])
    north = sum(1 for r in world["rows"] if r[COLUMNS.index("p")] == "north")
    assert 0 < north < total
    assert df.where("p = 'north'").count() == north
    assert df.count() == total
    assert len(df.collect()) == total
    assert df.where("id >= 300").count() == total - 300
    assert df.select("p").distinct().count() == 3


def test_filter_pushdown_true_is_refused(spark, world):
    """The old opt-in is refused with the reason, not silently ignored (flags fail closed)."""
    from pyspark.errors import PySparkException

    with pytest.raises((PySparkException, Exception), match="filter-pushdown=true"):
        world["paimon"](**{"filter-pushdown": "true"}).count()
    with pytest.raises((PySparkException, Exception), match="filter-pushdown"):
        world["paimon"](**{"filter-pushdown": "maybe"}).count()
    assert world["paimon"](**{"filter-pushdown": "false"}).count() == len(world["rows"])


@pytest.mark.parametrize("seed", group_seeds("partition_filter", N, BASE))
def test_partition_filter_option_prunes_exactly(spark, world, seed):
    """``partition-filter`` is pruning bound to the DataFrame: same rows as Spark's WHERE, every query."""
    _check(spark, world, "partition_filter", seed)


def test_partition_filter_reads_fewer_files(world):
    from airflow_provider_paimon.spark.datasource.reader import PaimonReader
    from airflow_provider_paimon.spark.options import parse_options

    df = world["paimon"]()
    base = {"warehouse": world["warehouse"], "table": TABLE}
    everything, _ = PaimonReader(parse_options(base), df.schema).plan()
    some, _ = PaimonReader(parse_options({**base, "partition-filter": "q = 2 AND p <> 'east'"}), df.schema).plan()
    assert {tuple(s.partition.values) for s in some} == {("north", 2), ("south", 2)}
    assert 0 < sum(len(s.files) for s in some) < sum(len(s.files) for s in everything)


@pytest.mark.parametrize(
    ("predicate", "message"),
    [
        ("id = 3", "not a partition column"),
        ("reflect('java.lang.System', 'exit', 1) = 1", "partition-filter"),
        ("q = 'abc'", "partition-filter"),
        ("q = 1; DROP TABLE x", "partition-filter"),
        ("   ", "blank"),
    ],
)
def test_bad_partition_filter_is_refused_before_reading(world, predicate, message):
    with pytest.raises(Exception, match=message):
        world["paimon"](**{"partition-filter": predicate}).count()


def test_partition_filter_refused_where_it_would_be_ignored(spark, world, tmp_path):
    with pytest.raises(Exception, match="batch reads only"):
        (spark.createDataFrame(world["rows"][:1], SCHEMA).write.format("paimon").mode("append")
         .option("warehouse", world["warehouse"]).option("table", TABLE)
         .option("partition-filter", "q = 1").save())
    with pytest.raises(Exception, match="batch reads only"):
        (spark.readStream.format("paimon").option("warehouse", world["warehouse"]).option("table", TABLE)
         .option("partition-filter", "q = 1").load().writeStream.format("noop")
         .option("checkpointLocation", str(tmp_path / "ck")).start().awaitTermination(60))
    with pytest.raises(Exception, match="needs a partitioned table"):
        world["paimon"]("diff.plain", **{"partition-filter": "q = 1"}).count()


def test_streaming_and_batch_readers_do_not_share_filters(spark, world, tmp_path):
    """A filtered stream beside filtered batch queries on the same table: each gets its own rows."""
    rows = world["rows"]
    q_of = COLUMNS.index("q")
    batch = world["paimon"]()
    assert batch.where("q = 1").count() == sum(1 for r in rows if r[q_of] == 1)
    query = (
        spark.readStream.format("paimon").option("warehouse", world["warehouse"]).option("table", TABLE)
        .load().where("q = 2").select("id")
        .writeStream.format("memory").queryName("diff_stream_q2").trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    )
    try:
        assert query.awaitTermination(300)
        streamed = sorted(r[0] for r in spark.table("diff_stream_q2").collect())
    finally:
        query.stop()
        spark.catalog.dropTempView("diff_stream_q2")
    assert streamed == sorted(r[0] for r in rows if r[q_of] == 2)
    assert batch.count() == len(rows)  # neither the stream's nor the batch's filter stuck
    assert world["paimon"]().where("q = 3").count() == sum(1 for r in rows if r[q_of] == 3)
