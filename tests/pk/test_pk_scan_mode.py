"""``scan.mode`` in batch reads of primary-key tables, and ``compacted-full`` end to end.

Paimon Java's batch reads honour ``scan.mode``: ``compacted-full`` reads the snapshot of
the newest full compaction (``full-compaction.delta-commits`` narrows which COMPACT
snapshots count; none: the latest), the other modes as pypaimon's batch scan already
reads them; an unknown or unsupported mode fails, naming the accepted ones. Tables are
real: random CDC commits (plain pypaimon, the reference model follows) and the
package's LSM compaction. The same rule starts a ``compacted-full`` stream: a real
query reads the compacted snapshot in full, then the later commits one by one.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from airflow_provider_paimon.paimon.batch_scan import BATCH_SCAN_MODES, batch_scan_options
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.lsm.compact import compact_primary_keys
from airflow_provider_paimon.paimon.stream_scan import BATCH_IDENTIFIER, latest_full_compaction

from . import tables
from .scenarios import FIELDS, Feed, model_for, seed_for
from .test_pk_changelog import input_changes
from .test_pk_stream_read import _drain, _stream

VARIANT = "deduplicate"
INPUT = {"changelog-producer": "input"}


def _history(warehouse: str, extra: dict | None = None):
    """s1..s3 commits, s4 a full compaction, s5 and s6 commits; the model's rows at s4 and s6."""
    seed = seed_for(VARIANT)
    model = model_for(VARIANT, extra)
    tables.create(warehouse, "db.t", VARIANT, extra)
    feed = Feed(model, seed)
    for _ in range(3):
        rows = feed.commit()
        tables.write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
    assert compact_primary_keys(tables.reload(warehouse, "db.t"), "full").committed
    at_compaction = model.rows()
    later = []
    for _ in range(2):
        rows = feed.commit()
        tables.write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        later.append(rows)
    table = tables.reload(warehouse, "db.t")
    kinds = [table.snapshot_manager().get_snapshot_by_id(i).commit_kind for i in range(1, 7)]
    assert kinds == ["APPEND"] * 3 + ["COMPACT"] + ["APPEND"] * 2, kinds
    return model, feed, at_compaction, later, seed


def test_batch_scan_options_follow_paimons_rule(warehouse, tmp_path):
    model, _feed, at_compaction, _later, seed = _history(warehouse)
    table = tables.reload(warehouse, "db.t")
    assert latest_full_compaction(table) == 4
    assert batch_scan_options(table, {"scan.mode": "compacted-full"}) == {"scan.snapshot-id": "4"}
    assert tables.read(table, 4) == at_compaction != model.rows(), f"seed {seed}"
    # a batch compaction's identifier (Long.MAX_VALUE) counts whatever the delta-commits
    assert int(table.snapshot_manager().get_snapshot_by_id(4).commit_identifier) == BATCH_IDENTIFIER
    every_two = table.copy({"full-compaction.delta-commits": "2"})
    assert batch_scan_options(every_two, {"scan.mode": "compacted-full"}) == {"scan.snapshot-id": "4"}
    # modes pypaimon reads itself are handed over; default changes nothing
    assert batch_scan_options(table, {}) == {}
    for mode in ("latest", "latest-full", "from-snapshot", "from-timestamp", "incremental"):
        assert batch_scan_options(table, {"scan.mode": mode.upper()}) == {"scan.mode": mode}
    # no COMPACT snapshot: the latest; an empty table: nothing to pin
    other = str(tmp_path / "plain")
    tables.create(other, "db.t", VARIANT)
    assert batch_scan_options(tables.reload(other, "db.t"), {"scan.mode": "compacted-full"}) == {}
    tables.write(tables.reload(other, "db.t"), [{"p": "a", "k": 1, "op": "+I"}])
    tables.write(tables.reload(other, "db.t"), [{"p": "a", "k": 2, "op": "+I"}])
    assert batch_scan_options(tables.reload(other, "db.t"), {"scan.mode": "compacted-full"}) == \
        {"scan.snapshot-id": "2"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scan.mode": "sideways"}, "scan.mode 'sideways' is unknown; a batch read takes one of: "
         + ", ".join(BATCH_SCAN_MODES)),
        ({"scan.mode": "from-file-creation-time"}, "not supported for batch reads"),
        ({"scan.mode": "from-creation-timestamp"}, "not supported for batch reads"),
        ({"scan.mode": "compacted-full", "scan.snapshot-id": "2"}, "takes no start point"),
        ({"scan.mode": "compacted-full", "scan.tag-name": "t"}, "takes no start point"),
        ({"incremental-between": "1,3"}, "'incremental-between' .* is not supported"),
        ({"incremental-between-timestamp": "1,3", "incremental-between-scan-mode": "diff"}, "'diff'"),
    ],
)
def test_batch_scan_mode_refusals_name_the_fix(warehouse, options, message):
    tables.create(warehouse, "db.t", VARIANT)
    with pytest.raises(InvalidArgumentError, match=re.escape(message) if "one of" in message else message):
        batch_scan_options(tables.reload(warehouse, "db.t"), options)


def _batch(spark, warehouse, **options):
    reader = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.t")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _by_key(changes) -> list[tuple]:
    return sorted(changes, key=repr)


def _rows(df) -> list[tuple]:
    return sorted((tuple(r[f] for f in FIELDS) for r in df.collect()), key=repr)


@pytest.mark.spark
def test_spark_batch_reads_honour_scan_mode(spark, warehouse):
    from airflow_provider_paimon.spark import read_table

    model, _feed, at_compaction, _later, seed = _history(warehouse)
    where = f"seed {seed}"
    assert _rows(_batch(spark, warehouse, **{"scan.mode": "compacted-full"})) == at_compaction, where
    compacted = read_table(spark, "db.t", warehouse=warehouse, options={"scan.mode": "compacted-full"})
    assert _rows(compacted) == at_compaction, where
    assert compacted.native_plan.snapshot_id == 4
    # what pypaimon reads itself keeps working, through the mode as given
    assert _rows(_batch(spark, warehouse)) == model.rows(), where
    assert _rows(_batch(spark, warehouse, **{"scan.mode": "latest"})) == model.rows(), where
    assert _rows(_batch(spark, warehouse, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "4"})) == \
        at_compaction, where
    assert _rows(_batch(spark, warehouse, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "4"})) == \
        at_compaction, where
    s4 = tables.reload(warehouse, "db.t").snapshot_manager().get_snapshot_by_id(4)
    assert _rows(_batch(spark, warehouse, **{"scan.mode": "from-timestamp",
                                             "scan.timestamp-millis": str(s4.time_millis)})) == at_compaction
    # refusals happen when the read is defined, naming the accepted values
    with pytest.raises(Exception, match=r"scan\.mode 'sideways' is unknown; a batch read takes one of: default"):
        _batch(spark, warehouse, **{"scan.mode": "sideways"}).collect()
    with pytest.raises(Exception, match="takes no start point, but snapshot-id"):
        _batch(spark, warehouse, **{"scan.mode": "compacted-full", "snapshot-id": "2"}).collect()
    with pytest.raises(Exception, match="conflicts with"):  # pypaimon's check, run up front
        _batch(spark, warehouse, **{"scan.mode": "latest", "scan.snapshot-id": "2"}).collect()
    with pytest.raises(Exception, match="is unknown"):
        read_table(spark, "db.t", warehouse=warehouse, options={"scan.mode": "sideways"})


@pytest.mark.spark
def test_compacted_full_stream_starts_at_the_compaction_then_reads_each_commit(spark, warehouse, tmp_path):
    model, feed, at_compaction, later, seed = _history(warehouse, INPUT)
    checkpoint = str(tmp_path / "ck")
    df = _stream(spark, warehouse, **{"scan.mode": "compacted-full"})
    batches = _drain(df, checkpoint)
    # s4 in full (the compacted state, not the latest s6); the first micro-batch also
    # takes the first snapshot after it (s5, as its changes), the next one s6
    assert len(batches) == 2, f"seed {seed}: {batches}"
    changes = [input_changes(model, rows) for rows in later]
    rest = Counter(batches[0])
    rest.subtract(changes[0])
    assert all(n >= 0 for n in rest.values()), f"seed {seed}: s5's changes not in {batches[0]}"
    full = list(rest.elements())
    assert sorted((r[1:] for r in full), key=repr) == at_compaction, f"seed {seed}"
    assert {r[0] for r in full} <= {"+I", "+U"}
    assert _by_key(batches[1]) == _by_key(changes[1]), f"seed {seed}"
    # later commits: read incrementally, each once
    expected = []
    for _ in range(2):
        rows = feed.commit()
        tables.write(tables.reload(warehouse, "db.t"), rows)
        model.commit(rows)
        expected.append(_by_key(input_changes(model, rows)))
    assert [_by_key(b) for b in _drain(df, checkpoint)] == expected, f"seed {seed}"
    assert _drain(df, checkpoint) == []
