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

``PAIMON_DIFF_CASES`` (default 60) sets the number of generated cases on the
latest snapshot; the other groups scale with it. The cases change every day
(``PAIMON_DIFF_BASE``, set once per run in tests/conftest.py: the day's number times
10,000), so daily runs add up to more cases than one run holds; a case is its seed (the
test id): group ``g`` (0 latest, 1000 fresh, 2000 time travel, 3000 tag and branch,
4000 primary key, 5000 partition filter) runs seed ``base + g + i``, so
``PAIMON_DIFF_BASE=<seed - g> PAIMON_DIFF_CASES=1`` runs a failed case again.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from differential import (
    COLUMNS,
    PK_COLUMNS,
    PK_SCHEMA,
    SCHEMA,
    SHAPES,
    make_case,
    make_pk_rows,
    make_rows,
    run_case,
)

N = int(os.environ.get("PAIMON_DIFF_CASES", "60"))
BASE = int(os.environ.get("PAIMON_DIFF_BASE", "0"))
TABLE = "diff.t"
PK_TABLE = "diff.pk"
COMMIT_ROWS = 150


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory) -> dict[str, Any]:
    """One warehouse and its Parquet twins, built once for the module."""
    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.paimon.tag import create_tag

    previous = spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    root = tmp_path_factory.mktemp("differential")
    wh = str(root / "warehouse")
    rng = random.Random(20261124)

    def write(rows: list[tuple], table: str, schema: str, branch: str | None = None, **opts: str) -> None:
        writer = (
            spark.createDataFrame(rows, schema).write.format("paimon").mode("append")
            .option("warehouse", wh).option("table", table)
        )
        if branch:
            writer = writer.option("branch", branch)
        for key, value in opts.items():
            writer = writer.option(key, value)
        writer.save()

    commits = [make_rows(rng, k * COMMIT_ROWS, COMMIT_ROWS) for k in range(3)]
    parquet = []
    for k, rows in enumerate(commits):
        create = {"create-table": "true", "partition-keys": "p,q"} if k == 0 else {}
        write(rows, TABLE, SCHEMA, **create)
        path = str(root / f"parquet-{k}")
        spark.createDataFrame(rows, SCHEMA).write.parquet(path)
        parquet.append(path)

    # a branch from a tag of snapshot 2, with rows of its own
    table = load_table(open_catalog(wh), TABLE)
    create_tag(table, "two", snapshot_id=2)
    create_branch(table, "fix", tag="two")
    branch_rows = make_rows(rng, 10_000, 100)
    write(branch_rows, TABLE, SCHEMA, branch="fix")
    branch_parquet = str(root / "parquet-branch")
    spark.createDataFrame(branch_rows, SCHEMA).write.parquet(branch_parquet)

    # primary-key table: upserts in three commits; expected = last write per key
    merged: dict[int, tuple] = {}
    for k in range(3):
        rows = make_pk_rows(rng, 160, 100)
        create = {"create-table": "true", "partition-keys": "p", "primary-keys": "id,p", "bucket": "2"} if k == 0 else {}
        write(rows, PK_TABLE, PK_SCHEMA, **create)
        for row in rows:
            merged[row[0]] = row
    pk_parquet = str(root / "parquet-pk")
    spark.createDataFrame(list(merged.values()), PK_SCHEMA).write.parquet(pk_parquet)

    def paimon(table: str = TABLE, **options: str) -> Any:
        reader = spark.read.format("paimon").option("warehouse", wh).option("table", table)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    def reference(*paths: str) -> Any:
        return spark.read.schema(SCHEMA).parquet(*paths)

    # an unpartitioned table, for the options that need partitions
    write(commits[0][:5], "diff.plain", SCHEMA, **{"create-table": "true"})

    world = {
        "warehouse": wh,
        "paimon": paimon,
        "reference": reference,
        "parquet": parquet,
        "branch_parquet": branch_parquet,
        "pk_reference": spark.read.schema(PK_SCHEMA.replace(" NOT NULL", "")).parquet(pk_parquet),
        "rows": [r for rows in commits for r in rows],
        "pk_rows": list(merged.values()),
        # ONE DataFrame per source reused by every case of the module, as in a notebook
        "latest": paimon(),
        "latest_reference": reference(*parquet),
    }
    yield world
    spark.conf.set("spark.sql.python.filterPushdown.enabled", previous)


def _check(case, spark, ours, reference) -> None:
    got, want = run_case(case, spark, ours, reference)
    assert got == want, case.describe()


@pytest.mark.parametrize("seed", range(BASE, BASE + N))
def test_latest_snapshot_one_dataframe_for_all_queries(spark, world, seed):
    case = make_case(seed, world["rows"], COLUMNS)
    _check(case, spark, world["latest"], world["latest_reference"])


@pytest.mark.parametrize("seed", range(BASE + 1000, BASE + 1000 + max(9, N // 6)))
def test_fresh_dataframe_per_query(spark, world, seed):
    case = make_case(seed, world["rows"], COLUMNS)
    _check(case, spark, world["paimon"](), world["reference"](*world["parquet"]))


@pytest.mark.parametrize("snapshot", [1, 2, 3])
@pytest.mark.parametrize("seed", range(BASE + 2000, BASE + 2000 + max(3, N // 20)))
def test_time_travel(spark, world, snapshot, seed):
    case = make_case(seed, world["rows"], COLUMNS)
    ours = world["paimon"](**{"snapshot-id": str(snapshot)})
    _check(case, spark, ours, world["reference"](*world["parquet"][:snapshot]))


@pytest.mark.parametrize("seed", range(BASE + 3000, BASE + 3000 + max(3, N // 12)))
def test_tag_and_branch(spark, world, seed):
    case = make_case(seed, world["rows"], COLUMNS)
    _check(case, spark, world["paimon"](tag="two"), world["reference"](*world["parquet"][:2]))
    branch_ref = world["reference"](*world["parquet"][:2], world["branch_parquet"])
    _check(case, spark, world["paimon"](branch="fix"), branch_ref)


PK_SHAPES = [s for s in SHAPES if s not in ("selfjoin",)] + ["selfjoin"]


@pytest.mark.parametrize("seed", range(BASE + 4000, BASE + 4000 + max(9, N // 3)))
def test_primary_key_table_matches_merged_rows(spark, world, seed):
    case = make_case(seed, world["pk_rows"], PK_COLUMNS, PK_SHAPES)
    ours = world["paimon"](PK_TABLE)
    _check(case, spark, ours, world["pk_reference"])


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


def _partition_predicate(rng: random.Random, depth: int = 2) -> str:
    """A predicate in the ``partition-filter`` grammar that Spark SQL reads the same way."""
    if depth == 0 or rng.random() < 0.4:
        atom = rng.choice(
            [
                f"p {rng.choice(['=', '<>', '<', '>='])} '{rng.choice(['north', 'south', 'east', 'west'])}'",
                f"q {rng.choice(['=', '<>', '<', '<=', '>', '>='])} {rng.randint(0, 4)}",
                f"q {rng.choice(['IN', 'NOT IN'])} ({', '.join(str(rng.randint(1, 3)) for _ in range(2))})",
                f"q BETWEEN {rng.randint(0, 2)} AND {rng.randint(1, 4)}",
                f"p IN ('north', '{rng.choice(['east', 'nowhere'])}')",
                "p IS NOT NULL",
            ]
        )
        return f"NOT ({atom})" if rng.random() < 0.2 else atom
    return f"({_partition_predicate(rng, depth - 1)} {rng.choice(['AND', 'OR'])} {_partition_predicate(rng, depth - 1)})"


@pytest.mark.parametrize("seed", range(BASE + 5000, BASE + 5000 + max(6, N // 10)))
def test_partition_filter_option_prunes_exactly(spark, world, seed):
    """``partition-filter`` is pruning bound to the DataFrame: same rows as Spark's WHERE, every query."""
    rng = random.Random(seed)
    pred = _partition_predicate(rng)
    ours = world["paimon"](**{"partition-filter": pred})
    reference = world["latest_reference"].where(pred)
    case = make_case(seed, world["rows"], COLUMNS, ["reuse", "cache", "union", "aggregate"])
    got, want = run_case(case, spark, ours, reference)
    assert got == want, f"partition-filter {pred}: {case.describe()}"


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
