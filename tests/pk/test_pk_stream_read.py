"""``readStream.format("paimon")`` of primary-key tables: each change once, with its kind.

One real query (``availableNow``, one snapshot per micro-batch, ``foreachBatch``
collecting each batch in order) over a table with ``changelog-producer=input``:
the latest snapshot in full first (each key's row with the kind of its last version),
then each commit's raw changelog, a COMPACT snapshot skipped; a second run on the same
checkpoint reads only what came after. Expected changes come from the reference model
(``test_pk_changelog.input_changes``). Refusals: a primary-key stream without
``read.changelog``, ``read.changelog`` on a batch read or an append table.
"""

from __future__ import annotations

import pytest

from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys

from . import tables
from .scenarios import FIELDS, Feed, model_for, seed_for
from .tables import write
from .test_pk_changelog import input_changes

pytestmark = pytest.mark.spark
INPUT = {"changelog-producer": "input"}


def _stream(spark, warehouse, **options):
    reader = (spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.t")
              .option("read.changelog", "true").option("max-snapshots-per-trigger", "1"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _drain(df, checkpoint: str) -> list[list[tuple]]:
    """Each non-empty micro-batch's rows (``rowkind``, then the table's fields), in order read."""
    seen: dict[int, list[tuple]] = {}

    def collect(batch_df, batch_id):
        seen[batch_id] = [tuple(r[c] for c in ["rowkind", *FIELDS]) for r in batch_df.collect()]

    query = (df.writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert not query.isActive and query.exception() is None
    return [seen[b] for b in sorted(seen) if seen[b]]


def _by_key(changes):
    return sorted(changes, key=lambda c: (c[1], c[2]))  # a key's own order is kept


def test_a_primary_key_stream_reads_each_change_once_with_its_kind(spark, warehouse, tmp_path):
    variant = "deduplicate"
    seed = seed_for(variant)
    model = model_for(variant, INPUT)
    tables.create(warehouse, "db.t", variant, INPUT)
    feed = Feed(model, seed)
    for _ in range(3):
        rows = feed.commit()
        write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
    checkpoint = str(tmp_path / "ck")
    df = _stream(spark, warehouse, **{"consumer-id": "cdc"})
    first = _drain(df, checkpoint)
    # the latest snapshot in full: the model's rows, each with its last version's kind
    assert len(first) == 1 and sorted((r[1:] for r in first[0]), key=repr) == model.rows(), f"seed {seed}"
    assert {r[0] for r in first[0]} <= {"+I", "+U"}

    expected = []
    for n in range(4):
        rows = feed.commit()
        write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        expected.append(input_changes(model, rows))
        if n == 1:  # a COMPACT snapshot in between: nothing to read
            assert compact_primary_keys(tables.reload(warehouse, "db.t"), "full").committed
    batches = _drain(df, checkpoint)
    assert [_by_key(b) for b in batches] == expected, f"seed {seed}"  # one commit per micro-batch
    assert _drain(df, checkpoint) == []  # nothing twice

    # refusals, each naming the fix
    from airflow_provider_paimon.spark.datasource.streaming_reader import create_stream_reader
    from airflow_provider_paimon.spark.options import parse_options

    with pytest.raises(Exception, match=r"Set option 'read\.changelog'='true'"):
        create_stream_reader(parse_options({"warehouse": warehouse, "table": "db.t"}), df.schema)
    with pytest.raises(Exception, match="is for streaming reads"):
        spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.t") \
            .option("read.changelog", "true").load().collect()
