"""Every code sample in README.md runs, in order, and does what the text says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from airflow_provider_paimon.lineage import LineageStore, SnapshotRef

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_python_samples_run_in_order(spark, warehouse):
    blocks = _blocks("python")
    assert len(blocks) == 3, "update this test when README samples change"
    namespace = {"spark": spark, "warehouse": warehouse}
    exec(compile(blocks[0], "README.md:data-source", "exec"), namespace)
    exec(compile(blocks[1], "README.md:branches", "exec"), namespace)
    result = namespace["result"]
    assert result["backup"]["name"], result
    # main now reads as the branch did: the tag's 4 rows plus the corrected one.
    main = spark.read.format("paimon").option("warehouse", warehouse).option("table", "shop.orders").load()
    assert main.count() == 5 and main.where("qty = 50").count() == 1
    exec(compile(blocks[2], "README.md:airflow", "exec"), namespace)
    assert namespace["replace"].branch == "fix"
    assert namespace["caught_up"].deferrable is True


def _seeded_store(path: Path) -> str:
    url = f"sqlite:///{path}"
    store = LineageStore.from_url(url)
    store.record_batch("ingest", 1, [SnapshotRef("raw", "events", 3)], [SnapshotRef("dw", "orders", 12)])
    store.record_batch("nightly_load", 7, [SnapshotRef("dw", "orders", 12)], [SnapshotRef("myDatabase", "myTable", 123)])
    store.close()
    return url


def test_sql_sample_runs_verbatim_on_mysql(mysql_server_url, unique_name):
    """The lineage proposal's query (as in the README) on the MySQL store, the proposal's own backend."""
    from sqlalchemy.engine import make_url

    url = make_url(mysql_server_url).set(database=unique_name).render_as_string(hide_password=False)
    store = LineageStore.from_url(url, database=unique_name)
    try:
        store.record_batch("nightly_load", 7, [SnapshotRef("dw", "orders", 12)], [SnapshotRef("myDatabase", "myTable", 123)])
        (sql,) = _blocks("sql")
        with store.engine.connect() as conn:
            rows = conn.exec_driver_sql(sql.strip().rstrip(";").split("\n", 1)[1]).fetchall()
        assert [tuple(r) for r in rows] == [("dw", "orders", 12)]
    finally:
        store.close()
        engine = sa.create_engine(mysql_server_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{unique_name}`")
        engine.dispose()


def test_cli_samples_run(tmp_path):
    _seeded_store(tmp_path / "lineage.db")
    (bash,) = [b for b in _blocks("bash") if "paimon-lineage" in b]
    cli = str(Path(sys.executable).with_name("paimon-lineage"))
    outputs = []
    for line in bash.strip().splitlines():
        argv = line.split()
        assert argv[0] == "paimon-lineage"
        done = subprocess.run([cli, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert "raw" in outputs[0] and "events" in outputs[0]          # upstream of dw.orders@12
    assert '"myTable"' in outputs[1] or "myTable" in outputs[1]    # impact of raw.events@3
    assert LineageStore.from_url(f"sqlite:///{tmp_path / 'lineage.db'}").sink_data_lineages(job="nightly_load") == []
