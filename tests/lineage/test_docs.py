"""docs/lineage.md: its Python sample runs as written (on SQLite) and its CLI sample prints what it shows."""

from __future__ import annotations

import re
from pathlib import Path

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef
from airflow_provider_paimon.lineage.cli import main
from airflow_provider_paimon.paimon.snapshot_identity import SnapshotIdentity

DOC = (Path(__file__).resolve().parents[2] / "docs" / "lineage.md").read_text()


def test_python_sample_runs(tmp_path):
    sample = re.findall(r"```python\n(.*?)```", DOC, re.S)[0]
    server = 'LineageStore.from_url("mysql+pymysql://etl:pw@db:3306", database="paimon")'
    assert server in sample
    code = sample.replace(server, f'LineageStore.from_url("sqlite:///{tmp_path}/doc.sqlite")')
    exec(compile(code, "docs/lineage.md", "exec"), {})  # our own documentation
    with LineageStore.from_url(f"sqlite:///{tmp_path}/doc.sqlite") as store:
        assert store.next_barrier_id("dag.daily_batch") == 2


def test_cli_sample_output(tmp_path, capsys):
    shown = re.search(r"\$ paimon-lineage upstream dws.daily 21 --depth 2\n(.*?)```", DOC, re.S).group(1)
    url = f"sqlite:///{tmp_path}/cli.sqlite"
    assert main(["init", "--url", url]) == 0
    raw = SnapshotIdentity("ingest-7f3a", 2**63 - 1, 1764115200000)  # the commits the snapshot files name
    orders = SnapshotIdentity("clean-91c2", 2**63 - 1, 1764115260000)
    daily = SnapshotIdentity("agg-04be", 2**63 - 1, 1764115320000)
    with LineageStore.from_url(url) as store:
        store.record_batch("clean", 1, [SnapshotRef("ods", "raw", 1, identity=raw)],
                           [SnapshotRef("dwd", "orders", 11, identity=orders)])
        store.record_batch("agg", 1, [SnapshotRef("dwd", "orders", 11, identity=orders)],
                           [SnapshotRef("dws", "daily", 21, identity=daily)])
    capsys.readouterr()
    assert main(["upstream", "dws.daily", "21", "--depth", "2", "--url", url]) == 0
    assert capsys.readouterr().out == shown
