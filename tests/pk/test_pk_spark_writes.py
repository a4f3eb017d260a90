"""CDC writes into primary-key tables through Spark, held to the reference model.

Random feeds of upserts, deletes, ``-U``/``+U`` pairs and late rows (``tests/pk``)
are written through the ``paimon`` batch sink, the streaming sink and
``foreach_batch_writer`` (row kinds in the table's ``rowkind.field`` column); after
every commit plain pypaimon reads back what the model says, and the ``paimon`` data
source and pypaimon-rust read the same rows. Deletes a merge engine cannot take are
refused with the reason, and nothing is written.

Each commit is one single-partition DataFrame: rows of one key spread over several
Spark partitions of one write have no order between them (as in Paimon's own Spark
writer), so a feed that relies on order keeps each key's rows in one partition.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from independent_reader import rust_rows

from airflow_provider_paimon.paimon.lsm.engines import DeleteRefusedError
from airflow_provider_paimon.spark import (
    delete_rows,
    foreach_batch_writer,
    with_row_kinds,
    write_changes,
)

from . import tables
from .scenarios import FIELDS, Feed, arrow_rows, model_for, seed_for, steps

pytestmark = pytest.mark.spark
SPARK_STEPS_SHARE = 3  # Spark commits cost ~0.5 s: a third of the rows of the pypaimon test


SPARK_SCHEMA = "p string, k int, v string, n bigint, m double, ts bigint, op string"


def spark_df(spark, rows):
    return spark.createDataFrame([tuple(r[f] for f in FIELDS) for r in rows], SPARK_SCHEMA).coalesce(1)


def source_read(spark, warehouse: str, name: str = "db.t", **opts: str) -> list[tuple]:
    reader = spark.read.format("paimon").option("warehouse", warehouse).option("table", name)
    for k, v in opts.items():
        reader = reader.option(k, v)
    return sorted((tuple(r[f] for f in FIELDS) for r in reader.load().collect()), key=repr)


def batch_write(df, warehouse: str, name: str = "db.t", **options: str) -> None:
    (df.write.format("paimon").option("warehouse", warehouse).option("table", name).options(**options)
     .mode("append").save())


@pytest.mark.parametrize("variant", ["deduplicate-seq", "partial-update", "aggregation"])
def test_batch_sink_matches_the_model_after_every_commit(spark, warehouse, variant):
    """The sink compacts what it wrote (Paimon's writer rules); with late rows (a
    ``sequence.field``) it writes only: a compaction dropping a delete makes a later late
    row visible again, which the model follows only where it is told of each compaction."""
    seed = seed_for(variant)
    model = model_for(variant)
    tables.create(warehouse, "db.t", variant, {"num-sorted-run.compaction-trigger": "3"})
    commits = Feed(model, seed).commits(max(20, steps() // SPARK_STEPS_SHARE))
    options = {"write-only": "true"} if "seq" in variant else {}
    for n, rows in enumerate(commits):
        batch_write(spark_df(spark, rows), warehouse, **options)
        model.commit(rows)
        where = f"variant {variant} seed {seed} commit {n}"
        assert tables.read(tables.reload(warehouse, "db.t")) == model.rows(), where
        if n % 10 == 0 or n == len(commits) - 1:
            assert source_read(spark, warehouse) == model.rows(), f"{where}: paimon data source"
    assert rust_rows(warehouse, "db.t") == model.rows(), f"variant {variant} seed {seed}: pypaimon-rust"
    kinds = {s.commit_kind for s in tables.reload(warehouse, "db.t").snapshot_manager().list_snapshots()}
    assert ("COMPACT" in kinds) == (not options), kinds


def _feed_files(tmp_path, commits) -> str:
    """One Parquet file per commit, named and timed in commit order (one per micro-batch)."""
    folder = tmp_path / "feed"
    folder.mkdir()
    for n, rows in enumerate(commits):
        path = folder / f"part-{n:05d}.parquet"
        pq.write_table(arrow_rows(rows), path)
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    return str(folder)


@pytest.mark.parametrize("sink", ["stream", "foreach_batch"])
def test_streaming_sinks_match_the_model_after_every_micro_batch(spark, warehouse, tmp_path, sink):
    """``foreachBatch`` with ``write-only``; the sink compacting its table as it goes (Paimon's
    writer rules, ``num-sorted-run.compaction-trigger`` 3) on a table without late rows (a
    compaction that drops a delete makes a later late row visible again, which the model
    follows only where it is told of each compaction)."""
    variant = "deduplicate-seq" if sink == "foreach_batch" else "deduplicate"
    seed = seed_for(variant)
    model = model_for(variant)
    table = tables.create(warehouse, "db.t", variant)
    commits = Feed(model, seed).commits(max(15, steps() // (2 * SPARK_STEPS_SHARE)))
    folder = _feed_files(tmp_path, commits)
    stream = (spark.readStream.schema(SPARK_SCHEMA)
              .option("maxFilesPerTrigger", 1).parquet(folder))
    checkpoint = str(tmp_path / "ck")
    writer = stream.writeStream.option("checkpointLocation", checkpoint).trigger(availableNow=True)
    if sink == "stream":
        query = (writer.format("paimon").option("warehouse", warehouse).option("table", "db.t")
                 .option("num-sorted-run.compaction-trigger", "3").start())
    else:
        query = writer.foreachBatch(foreach_batch_writer(
            "db.t", warehouse=warehouse, checkpoint_location=checkpoint, options={"write-only": "true"}
        )).start()
    query.awaitTermination()
    assert query.exception() is None
    table = tables.reload(warehouse, "db.t")
    appends = sorted(
        (s for s in table.snapshot_manager().list_snapshots() if s.commit_kind == "APPEND"),
        key=lambda s: s.commit_identifier,
    )
    assert [s.commit_identifier for s in appends] == list(range(len(commits)))  # one per micro-batch
    for n, (rows, snapshot) in enumerate(zip(commits, appends, strict=True)):
        model.commit(rows)
        assert tables.read(table, snapshot.id) == model.rows(), f"{sink} seed {seed} micro-batch {n}"
    assert source_read(spark, warehouse) == model.rows()
    assert rust_rows(warehouse, "db.t") == model.rows()
    compacts = {s.commit_user for s in table.snapshot_manager().list_snapshots() if s.commit_kind == "COMPACT"}
    if sink == "stream":  # the sink's own background compaction, under its commit user
        assert len(compacts) == 1 and next(iter(compacts)).endswith("-compact")
    else:
        assert not compacts


def test_debezium_feed_and_delete_rows(spark, warehouse):
    variant = "deduplicate"
    model = model_for(variant)
    tables.create(warehouse, "db.t", variant)
    feed = [
        {"p": "a", "k": 1, "v": "x", "n": 1, "m": None, "ts": 1, "op": "r"},
        {"p": "a", "k": 2, "v": "y", "n": 2, "m": None, "ts": 2, "op": "c"},
        {"p": "b", "k": 3, "v": "z", "n": 3, "m": 1.5, "ts": 3, "op": "c"},
        {"p": "a", "k": 1, "v": "x2", "n": 10, "m": None, "ts": 4, "op": "u"},
        {"p": "a", "k": 2, "v": "y", "n": 2, "m": None, "ts": 5, "op": "d"},
    ]
    result = write_changes(spark_df(spark, feed), "db.t", warehouse=warehouse)
    kinds = {"r": "+I", "c": "+I", "u": "+U", "d": "-D"}
    model.commit([{**r, "op": kinds[r["op"]]} for r in feed])
    assert result.snapshot_id == 1 and result.row_count == 5
    assert tables.read(tables.reload(warehouse, "db.t")) == model.rows()
    assert [r[1] for r in model.rows()] == [1, 3]  # the update won, the delete removed k=2

    # delete_rows: only the key (and NOT NULL) columns are needed; the rest are nulls
    keys = spark.createDataFrame([("b", 3)], "p string, k int")
    result = delete_rows(keys, "db.t", warehouse=warehouse)
    model.commit([{"p": "b", "k": 3, "v": None, "n": None, "m": None, "ts": None, "op": "-D"}])
    assert result.snapshot_id == 2
    assert tables.read(tables.reload(warehouse, "db.t")) == model.rows() == [("a", 1, "x2", 10, None, 4, "+U")]
    assert source_read(spark, warehouse) == model.rows()
    assert rust_rows(warehouse, "db.t") == model.rows()

    # an operation outside the mapping fails the job, naming the value; nothing is written
    bad = spark_df(spark, [{**feed[0], "op": "x"}])
    with pytest.raises(Exception, match="operation column 'op' holds x"):
        write_changes(bad, "db.t", warehouse=warehouse)
    assert len(tables.reload(warehouse, "db.t").snapshot_manager().list_snapshots()) == 2
    mapped = with_row_kinds(spark_df(spark, feed[:1]), "op", mapping={"r": "+I"})
    assert [r["op"] for r in mapped.collect()] == ["+I"]


def _files(warehouse: str) -> set[str]:
    return {os.path.join(r, f) for r, _d, fs in os.walk(warehouse) if "bucket-" in r for f in fs}


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        ("first-row", "merge engine is first-row"),
        ("partial-update", "merge engine is partial-update"),
        ("aggregation", "merge engine is aggregation"),
    ],
)
def test_deletes_a_merge_engine_cannot_take_are_refused_and_nothing_is_written(
    spark, warehouse, variant, reason
):
    tables.create(warehouse, "db.t", variant)
    row = {"p": "a", "k": 1, "v": "x", "n": 1, "m": None, "ts": 1, "op": "+I"}
    batch_write(spark_df(spark, [row]), warehouse)
    before = _files(warehouse)
    with pytest.raises(DeleteRefusedError, match=reason):
        delete_rows(spark.createDataFrame([("a", 1)], "p string, k int"), "db.t", warehouse=warehouse)
    # through the batch sink: the task refuses the batch before its writer sees it
    with pytest.raises(Exception, match=f"cannot take: its {reason}"):
        batch_write(spark_df(spark, [row, {**row, "op": "-D"}]), warehouse)
    if variant == "first-row":  # a row without a kind is refused the same way
        with pytest.raises(Exception, match="is null in 1 row"):
            batch_write(spark_df(spark, [{**row, "op": None}]), warehouse)
    table = tables.reload(warehouse, "db.t")
    # one write (first-row: and its compaction, as Paimon's writers compact those at every commit)
    kinds = [s.commit_kind for s in table.snapshot_manager().list_snapshots()]
    assert kinds == (["APPEND", "COMPACT"] if variant == "first-row" else ["APPEND"])
    assert tables.read(table) == [tuple(row.values())]
    assert _files(warehouse) == before


def test_delete_rows_needs_row_kinds_keys_and_sequence_fields(spark, warehouse):
    tables.create(warehouse, "db.t", "deduplicate-seq")
    keys = spark.createDataFrame([("a", 1)], "p string, k int")
    with pytest.raises(Exception, match=r"needs column\(s\) ts of db.t"):
        delete_rows(keys, "db.t", warehouse=warehouse)
    tables.create(warehouse, "db.ignore", "deduplicate-ignore-delete")
    with pytest.raises(DeleteRefusedError, match="nothing would change"):
        delete_rows(keys, "db.ignore", warehouse=warehouse)
    from pypaimon import Schema

    from airflow_provider_paimon.paimon.catalog import open_catalog

    plain = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
    open_catalog(warehouse).create_table(
        "db.plain", Schema.from_pyarrow_schema(plain, primary_keys=["k"], options={"bucket": "1"}), False
    )
    with pytest.raises(Exception, match=r"no 'rowkind\.field' table option"):
        delete_rows(spark.createDataFrame([(1,)], "k int"), "db.plain", warehouse=warehouse)
