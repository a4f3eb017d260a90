"""The capture names a stream's source from its offset: no query plan, no scan event needed."""

from __future__ import annotations

import json
from types import SimpleNamespace

from airflow_provider_paimon.spark.lineage_capture import LineageCapture
from airflow_provider_paimon.spark.lineage_config import capture_config


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
