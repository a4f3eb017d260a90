"""The Python sample of docs/maintenance.md runs as written (on a temp warehouse)."""

from __future__ import annotations

import re
from pathlib import Path

from support.branch_tables import make_table, write

from airflow_provider_paimon.paimon import branch as bops

DOC = Path(__file__).resolve().parents[2] / "docs" / "maintenance.md"


def test_maintenance_page_sample_runs(warehouse):
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    _, t = make_table(warehouse, "sales.orders")
    for i in range(8):
        write(t, [i])
    bops.create_branch(t, "fix_2026_11", snapshot_id=3)
    ns: dict = {}
    exec(compile(block.replace("/data/warehouse", warehouse), "maintenance.md", "exec"), ns)
    # the snapshots are seconds old: 'older than 1 hour' protects them all
    assert ns["plan"]["expired_snapshot_ids"] == [] and "older_than" in ns["plan"]["stopped_because"]
    assert ns["done"]["deleted_file_count"] == 0
    assert ns["orphans"]["deleted_files"] == []
