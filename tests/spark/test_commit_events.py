"""The events a data source publishes name the table of its own options (no Spark started)."""

from __future__ import annotations

from airflow_provider_paimon.spark import commit_events
from airflow_provider_paimon.spark.options import parse_options


def test_publish_for_names_the_options_table_and_reaches_its_listeners_and_log(tmp_path):
    log = str(tmp_path / "events.jsonl")
    opts = parse_options({"warehouse": str(tmp_path / "wh"), "table": "db.orders", "branch": "fix", "event-log": log})
    seen: list[commit_events.Event] = []
    listener = commit_events.add_listener(seen.append)
    try:
        commit = commit_events.publish_for(opts, commit_events.CommitEvent, snapshot_id=3, commit_kind="APPEND",
                                           row_count=7, commit_user="u")
        scan = commit_events.publish_for(opts, commit_events.ScanEvent, snapshot_id=None, split_count=0)
    finally:
        commit_events.remove_listener(listener)
    assert seen == [commit, scan]
    for event in (commit, scan):
        assert (event.warehouse, event.namespace, event.database, event.table, event.branch) == (
            opts.warehouse, opts.lineage_namespace, "db", "orders", "fix")
    assert commit_events.read_event_log(log) == [commit, scan]
    assert (commit.snapshot_id, commit.row_count, commit.commit_user, scan.snapshot_id) == (3, 7, "u", None)
