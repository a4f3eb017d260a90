"""The Python samples of docs/*.md run as written (paths pointed at a temp warehouse).

README.md, docs/lineage.md, docs/openlineage.md, docs/operators.md and docs/assets.md
have their own sample tests; this file covers the data source, streaming, compaction
and sensor pages. Shell samples (every page): tests/docs/test_shell_samples.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
from support.pypaimon_writes import commit_arrow

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


def _run(code: str, name: str, namespace: dict) -> dict:
    exec(compile(code, name, "exec"), namespace)
    return namespace


def test_datasource_page(spark, warehouse, tmp_path, monkeypatch):
    import airflow_provider_paimon.spark.session as session

    monkeypatch.setattr(session, "local_session", lambda *a, **k: spark)  # the shared session
    blocks = _python_blocks("datasource.md")
    assert len(blocks) == 7
    uri = Path(warehouse).as_uri()
    ns: dict = {}
    _run(blocks[0].replace("file:///data/warehouse", uri), "datasource.md:1", ns)
    _run(blocks[1], "datasource.md:2", ns)  # the filter that used to leak into later queries
    assert ns["df"].count() == 100
    _run(blocks[2], "datasource.md:3", ns)  # partition-filter
    _run(blocks[3], "datasource.md:4", ns)
    _run(blocks[4].replace("file:///data/warehouse", uri), "datasource.md:5", ns)  # write_table
    assert ns["result"].row_count == 1
    native = spark.read.format("paimon").options(warehouse=uri, table="sales.orders_native").load()
    assert [r.amount for r in native.collect()] == [19.0]  # the overwrite replaced the day
    events = tmp_path / "events.jsonl"
    events.write_text("")
    seen: list = []
    ns.update(callback=seen.append, path=str(events))
    _run(blocks[5], "datasource.md:6", ns)
    assert ns["orders"].count() == 1
    _run(blocks[6].replace("file:///data/warehouse", uri), "datasource.md:7", ns)  # read_table
    assert [r.id for r in ns["df"].collect()] == [1]
    assert spark.sql("SELECT count(*) AS n FROM orders").collect()[0].n == 1


def test_streaming_page(spark, warehouse, tmp_path):
    source = spark.createDataFrame([(1, "click"), (2, "heartbeat"), (3, "view")], "id BIGINT, kind STRING")
    for table, frame in (("raw.events", source), ("clean.events", source.limit(0))):
        (frame.write.format("paimon").option("warehouse", warehouse).option("table", table)
         .option("create-table", "true").mode("append").save())
    (block,) = _python_blocks("streaming.md")
    code = block.replace("s3://lake/warehouse", warehouse).replace(
        "s3://lake/checkpoints/events-to-clean", str(tmp_path / "checkpoint")
    )
    _run(code, "streaming.md", {"spark": spark})
    for query in spark.streams.active:
        query.awaitTermination(300)
    clean = spark.read.format("paimon").option("warehouse", warehouse).option("table", "clean.events").load()
    assert sorted(r.kind for r in clean.collect()) == ["click", "view"]


def test_compaction_page(warehouse):
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("sales", True)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    catalog.create_table("sales.orders", Schema.from_pyarrow_schema(schema), False)
    table = catalog.get_table("sales.orders")
    for i in range(6):  # six small files: above compaction.min.file-num (5)
        commit_arrow(table, pa.table({"id": [i], "v": [str(i)]}, schema=schema))
    (block,) = _python_blocks("compaction.md")
    ns = _run(block.replace("/data/warehouse", warehouse), "compaction.md", {})
    result = ns["result"].to_dict()
    assert result["committed"] and result["files_before"] == 6 and result["files_after"] == 1
    latest = catalog.get_table("sales.orders").snapshot_manager().get_latest_snapshot()
    assert latest.commit_kind == "COMPACT"


def test_sensor_page():
    (block,) = _python_blocks("sensor.md")
    ns = _run(block, "sensor.md", {})
    assert ns["wait"].deferrable and ns["wait"].branch == "fix_2026_11"


def test_lineage_capture_page(spark, warehouse, tmp_path):
    from airflow_provider_paimon.lineage import LineageStore

    orders = spark.createDataFrame([(1, 9.5), (2, 3.0)], "id BIGINT, amount DOUBLE")
    for table, frame in (("sales.orders", orders), ("sales.orders_copy", orders.limit(0))):
        (frame.write.format("paimon").option("warehouse", warehouse).option("table", table)
         .option("create-table", "true").mode("append").save())
    store_path = tmp_path / "lineage.db"
    block = _python_blocks("lineage_capture.md")[0]
    code = block.replace("file:///data/warehouse", Path(warehouse).as_uri()).replace(
        "sqlite:////tmp/lineage.db", f"sqlite:///{store_path}"
    )
    try:
        _run(code, "lineage_capture.md", {"spark": spark})
    finally:  # the sample sets session conf; later tests must not capture
        for key in ("spark.paimon.lineage.url", "spark.paimon.lineage.job"):
            spark.conf.unset(key)
    store = LineageStore.from_url(f"sqlite:///{store_path}")
    try:
        assert [(t.job, t.table) for t in store.source_table_lineages()] == [("orders.copy", "orders")]
        assert [(t.job, t.table) for t in store.sink_table_lineages()] == [("orders.copy", "orders_copy")]
        assert len(store.sink_data_lineages(job="orders.copy")) == 1
    finally:
        store.close()


def test_schema_page_walkthrough(spark, warehouse):
    """docs/schema.md: branch, add a column on it, write the correction, replace main;
    plain pypaimon then reads main as the corrected branch, with the new column."""
    from pypaimon import CatalogFactory

    uri = Path(warehouse).as_uri()
    orders = spark.createDataFrame([(1, "2026-11-01", 10.0), (2, "2026-11-01", 20.0)],
                                   "id BIGINT, day STRING, price DOUBLE")
    (orders.write.format("paimon").option("warehouse", uri).option("table", "sales.orders")
     .option("create-table", "true").mode("append").save())
    walkthrough = _python_blocks("schema.md")[0]
    ns = _run(walkthrough.replace("file:///data/warehouse", uri), "schema.md:1", {"spark": spark})
    assert ns["published"]["schema_id"] == 1 and ns["published"]["backup"]["kind"] == "branch"
    table = CatalogFactory.create({"warehouse": warehouse}).get_table("sales.orders")
    rb = table.new_read_builder()
    got = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": 1, "day": "2026-11-01", "price": 10.0, "discount": 1.0},
                   {"id": 2, "day": "2026-11-01", "price": 20.0, "discount": None}]
    backup = ns["published"]["backup"]["name"]
    old = CatalogFactory.create({"warehouse": warehouse}).get_table(f"sales.orders$branch_{backup}")
    assert old.field_names == ["id", "day", "price"]


def test_lineage_capture_page_seed_options(spark, warehouse, tmp_path):
    """The proposal's options on the data source's reads and writes record lineage."""
    from airflow_provider_paimon.lineage import LineageStore
    from airflow_provider_paimon.spark import register

    orders = spark.createDataFrame([(1, 9.5), (2, 3.0)], "id BIGINT, amount DOUBLE")
    for table, frame in (("sales.orders", orders), ("sales.orders_copy", orders.limit(0))):
        (frame.write.format("paimon").option("warehouse", warehouse).option("table", table)
         .option("create-table", "true").mode("append").save())
    store_path = tmp_path / "lineage.db"
    block = _python_blocks("lineage_capture.md")[1]
    code = block.replace("file:///data/warehouse", Path(warehouse).as_uri()).replace(
        "jdbc:sqlite:/tmp/lineage.db", f"jdbc:sqlite:{store_path}"
    )
    spark.conf.set("spark.paimon.lineage.spoolDir", str(tmp_path / "spool"))
    try:
        _run(code, "lineage_capture.md:2", {"spark": spark})
    finally:  # the sample sets session conf; later tests must not inherit it
        for key in ("spark.paimon.lineage.job", "spark.paimon.lineage.spoolDir"):
            spark.conf.unset(key)
        register(spark)
    with LineageStore.from_url(f"sqlite:///{store_path}") as store:
        assert [(t.job, t.table) for t in store.source_table_lineages()] == [("orders.copy_seed", "orders")]
        assert [(t.job, t.table) for t in store.sink_table_lineages()] == [("orders.copy_seed", "orders_copy")]
        assert [(d.barrier_id, d.snapshot_id) for d in store.source_data_lineages()] == [(1, 1)]
        # the empty create-table write made no snapshot: the sample's write is the first
        assert [(d.barrier_id, d.snapshot_id) for d in store.sink_data_lineages()] == [(1, 1)]


def test_lineage_capture_page_run_of_snapshot(warehouse, capsys):
    """"Which Airflow run made this snapshot": the sample reads the run back."""
    from pypaimon import CatalogFactory, Schema

    from airflow_provider_paimon.paimon.commit_properties import airflow_env, commit_properties

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("sales", True)
    schema = pa.schema([("id", pa.int64())])
    catalog.create_table("sales.orders", Schema.from_pyarrow_schema(schema), False)
    props = commit_properties(airflow_env("orders_daily", "scheduled__x", "load", 1), spark_app_id="local-1")
    commit_arrow(catalog.get_table("sales.orders"), pa.table({"id": [1]}, schema=schema), snapshot_properties=props)
    block = _python_blocks("lineage_capture.md")[2]
    _run(block.replace("/data/wh", warehouse), "lineage_capture.md:2", {})
    printed = capsys.readouterr().out
    assert "dag_id='orders_daily'" in printed and "run_id='scheduled__x'" in printed


def test_publish_page(spark, warehouse):
    """docs/publish.md: the expectations sample on a branch with one bad row of each kind,
    and the approval sample builds audit >> replace with the gate on."""
    import datetime

    from airflow.sdk import DAG

    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.branch.expectations import ExpectationsFailedError

    now = datetime.datetime.now()
    rows = [(1, "ana", 5.0, "paid", now), (2, None, 7.0, "new", now), (3, "bo", -1.0, "paid", now),
            (4, "cy", 2.0, "lost", now), (5, "di", 3.0, "void", now)]
    frame = spark.createDataFrame(rows, "order_id BIGINT, customer STRING, amount DOUBLE, status STRING, "
                                        "event_time TIMESTAMP")
    (frame.limit(4).write.format("paimon").option("warehouse", warehouse).option("table", "shop.orders")
     .option("create-table", "true").mode("append").save())
    create_branch(load_table(open_catalog(warehouse), "shop.orders"), "fix")
    frame.write.format("paimon").option("warehouse", warehouse).option("table", "shop.orders") \
        .option("branch", "fix").mode("append").save()
    sample, operators, deadline = _python_blocks("publish.md")
    code = sample.replace('"/data/warehouse"', repr(warehouse))
    ns = _run(code.replace("report.raise_for_failures()", "pass"), "publish.md:1", {"spark": spark})
    report = ns["report"]
    assert report.dropped == 2 and report.passed  # row 3 (amount) and row 4 (status) moved out
    assert [r.rule.name for r in report.warnings] == ["has_customer"]
    try:
        report.raise_for_failures()
    except ExpectationsFailedError:  # pragma: no cover - the sample's data passes
        raise AssertionError("the sample's report should pass") from None
    with DAG("publish_doc_sample", schedule=None):
        ns = _run(operators, "publish.md:2", {})
    assert ns["replace"].approve and ns["replace"].upstream_task_ids == {"audit"}
    assert _run(deadline, "publish.md:3", {})["dag"].deadline
