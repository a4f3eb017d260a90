"""The differential read tests (tests/spark/test_spark_differential.py), once over Connect.

The same generated query shapes run on the ``paimon`` source and on Spark's Parquet,
both through the suite's Connect server, and must give identical rows. The case count
is small (``PAIMON_CONNECT_DIFF_CASES``, default 6; the day's cases, as the classic module): this checks the Connect path,
the classic module checks the query shapes at length.
"""

from __future__ import annotations

import os

import pytest
import test_spark_differential as classic

N = int(os.environ.get("PAIMON_CONNECT_DIFF_CASES", "6"))
BASE = classic.BASE


@pytest.fixture(scope="module")
def spark(connect_spark):
    """The classic module's fixtures and steps, given the Connect session."""
    return connect_spark


world = classic.world  # the same module-scoped fixture: one warehouse and its Parquet twins


@pytest.mark.parametrize("seed", range(BASE, BASE + N))
def test_latest_snapshot_one_dataframe_for_all_queries(spark, world, seed):
    classic.test_latest_snapshot_one_dataframe_for_all_queries(spark, world, seed)


@pytest.mark.parametrize("seed", range(BASE + 1000, BASE + 1000 + max(2, N // 6)))
def test_fresh_dataframe_per_query(spark, world, seed):
    classic.test_fresh_dataframe_per_query(spark, world, seed)


@pytest.mark.parametrize("snapshot", [1, 3])
def test_time_travel(spark, world, snapshot):
    classic.test_time_travel(spark, world, snapshot, 2000)


def test_tag_and_branch(spark, world):
    classic.test_tag_and_branch(spark, world, 3000)


@pytest.mark.parametrize("seed", range(BASE + 4000, BASE + 4000 + max(2, N // 6)))
def test_primary_key_table_matches_merged_rows(spark, world, seed):
    classic.test_primary_key_table_matches_merged_rows(spark, world, seed)


def test_the_reported_leak(spark, world):
    classic.test_the_reported_leak(spark, world)


@pytest.mark.parametrize("seed", range(BASE + 5000, BASE + 5002))
def test_partition_filter_option_prunes_exactly(spark, world, seed):
    classic.test_partition_filter_option_prunes_exactly(spark, world, seed)
