"""The capture names a stream's source from its offset: no query plan, no scan event needed."""

from __future__ import annotations

import json
from types import SimpleNamespace

from airflow_provider_paimon.spark.lineage.capture import LineageCapture
from airflow_provider_paimon.spark.lineage.config import capture_config


class _Recorder:
    def __init__(self):
        self.records = []

    def record(self, record):
        self.records.append(record)
        return True


def _capture(tmp_path):
    conf = SimpleNamespace(getAll=lambda: [("spark.app.name", "app")])
    spark = SimpleNamespace(
        sparkContext=SimpleNamespace(getConf=lambda: conf),
        conf=SimpleNamespace(getAll={}),
        version="4",
    )
    config = capture_config(
        {"spark.paimon.lineage.job": "j", "spark.paimon.lineage.spoolDir": str(tmp_path)},
        "app",
        environ={},
        force=True,
    )
    return LineageCapture(spark, config, recorder=_Recorder())


def _progress(batch_id, *offsets):
    sources = [
        SimpleNamespace(endOffset=json.dumps(o), description=f"stream-{i}")
        for i, o in enumerate(offsets)
    ]
    return SimpleNamespace(batchId=batch_id, id="q1", sources=sources)


def test_first_batch_names_its_sources_from_the_offsets_before_query_started(tmp_path):
    capture = _capture(tmp_path)  # onQueryStarted never ran: no plan, no scan events
    capture.on_query_progress(
        _progress(
            0,
            {
                "nextSnapshot": 4,
                "fullSnapshot": 3,
                "startSnapshot": 4,
                "table": "db.src",
                "branch": "fix",
                "warehouse": "/wh",
            },
            {"nextSnapshot": 2, "table": "db.other", "branch": "main", "warehouse": "/wh"},
            {"partition": 0},  # not a Paimon source: ignored
        )
    )
    (record,) = capture.recorder.records
    assert record.barrier_id == 0
    assert [
        (s.warehouse, s.database, s.table, s.branch, s.snapshot_id) for s in record.sources
    ] == [
        ("/wh", "db", "src", "fix", 3),
        ("/wh", "db", "other", "main", 1),
    ]


def test_old_offsets_without_a_table_fall_back_to_the_scan_events(tmp_path):
    capture = _capture(tmp_path)
    capture._on_event(
        {
            "kind": "scan",
            "warehouse": "/wh",
            "database": "db",
            "table": "src",
            "branch": "main",
            "snapshot_id": 4,
            "next_snapshot": 5,
        }
    )
    capture.on_query_progress(_progress(3, {"nextSnapshot": 5}, {"nextSnapshot": 9}))
    (record,) = capture.recorder.records  # the unnamed, unknown second source is left out
    assert [(s.table, s.snapshot_id) for s in record.sources] == [("src", 4)]


def test_rest_catalog_tables_get_the_operators_namespace(tmp_path):
    """A REST catalog's warehouse is a catalog name: Spark-side events must name the
    table as the Airflow operators do (``paimon+rest://server/catalog``), not by it."""
    from airflow_provider_paimon.lineage.openlineage import paimon_dataset
    from airflow_provider_paimon.spark.options import parse_options

    catalog = {"metastore": "rest", "uri": "http://svc:secret@Paimon.example:8080/"}
    opts = parse_options({"warehouse": "sales", "table": "db.src", **catalog})
    assert opts.lineage_namespace == "paimon+rest://paimon.example:8080/sales"
    operator_side = paimon_dataset("sales", "db", "src", catalog_options=catalog)  # what operators emit
    assert operator_side.namespace == opts.lineage_namespace

    capture = _capture(tmp_path)
    # the source's scan event carries the namespace; its offset only the warehouse
    capture._on_event(
        {"kind": "scan", "warehouse": "sales", "namespace": opts.lineage_namespace, "database": "db",
         "table": "src", "branch": "main", "snapshot_id": 4, "next_snapshot": 5}
    )
    capture._on_event(
        {"kind": "commit", "warehouse": "sales", "namespace": opts.lineage_namespace, "database": "db",
         "table": "sink", "branch": "main", "snapshot_id": 8, "commit_kind": "APPEND", "row_count": 1,
         "batch_id": 0}
    )
    capture.on_query_progress(
        _progress(0, {"nextSnapshot": 5, "table": "db.src", "branch": "main", "warehouse": "sales"})
    )
    (record,) = capture.recorder.records
    (source,) = record.sources
    assert (source.warehouse, source.table, source.snapshot_id) == ("sales", "src", 4)
    assert capture.ol._ref(source).dataset("input").namespace == operator_side.namespace
    (sink,) = record.sinks
    assert capture.ol._ref(sink).dataset("output").namespace == operator_side.namespace
    assert "secret" not in repr(record)


def test_filesystem_tables_keep_the_warehouse_namespace(tmp_path):
    from airflow_provider_paimon.spark.options import parse_options

    opts = parse_options({"warehouse": str(tmp_path / "wh"), "table": "db.t"})
    assert opts.lineage_namespace == f"file://{tmp_path}/wh"


def _scan(next_snapshot, table="src"):
    return {"kind": "scan", "warehouse": "/wh", "database": "db", "table": table, "branch": "main",
            "snapshot_id": next_snapshot - 1, "next_snapshot": next_snapshot}


def _commit(batch_id, snapshot_id):
    return {"kind": "commit", "warehouse": "/wh", "database": "db", "table": "dst", "branch": "main",
            "snapshot_id": snapshot_id, "commit_kind": "APPEND", "row_count": 1, "batch_id": batch_id}


def test_per_batch_state_stays_bounded_over_many_micro_batches(tmp_path):
    """A long stream: each micro-batch's scan and commit entries go once it is recorded.

    Some scan events arrive after their batch's progress (Spark commits a source when it
    plans the next batch), and every 50th progress is lost (a dropped listener event).
    """
    capture = _capture(tmp_path)
    batches = 400
    for batch in range(batches):
        end = batch + 2  # nextSnapshot after the batch; snapshot end-1 consumed
        capture._on_event(_commit(batch, 1000 + batch))
        if batch % 2:
            capture._on_event(_scan(end))  # before the progress ...
        if batch % 50 != 25:
            offset = {"nextSnapshot": end, "table": "db.src", "branch": "main", "warehouse": "/wh"}
            capture.on_query_progress(_progress(batch, offset))
        if not batch % 2:
            capture._on_event(_scan(end))  # ... or after it
        assert len(capture._stream_commits) <= 2 and len(capture._stream_scans) <= 2, batch
    records = capture.recorder.records
    assert len(records) == batches - batches // 50
    last = records[-1]
    assert last.barrier_id == batches - 1
    assert [(s.table, s.snapshot_id) for s in last.sources] == [("src", batches)]
    assert [(s.table, s.snapshot_id) for s in last.sinks] == [("dst", 1000 + batches - 1)]
    assert capture.pending_sizes() == {
        "stream_commits": 0, "stream_scans": 0, "pending_scans": 0, "queries": 0,
        "query_sources": 0, "openlineage_runs": 0,
    }


def test_unclaimed_entries_are_capped(tmp_path):
    """Entries no progress ever claims (another query's, a stalled one) cannot pile up."""
    from airflow_provider_paimon.spark.lineage.capture import MAX_PENDING_BATCHES

    capture = _capture(tmp_path)
    for n in range(3 * MAX_PENDING_BATCHES):
        capture._on_event(_commit(n, n))
        capture._on_event(_scan(n + 2, table="other"))
    assert len(capture._stream_commits) == MAX_PENDING_BATCHES
    assert len(capture._stream_scans) == MAX_PENDING_BATCHES
    assert min(capture._stream_commits) == 2 * MAX_PENDING_BATCHES  # the newest are kept
