"""Session-level branch redirects (``spark.paimon.branch.<db>.<table>``), issue #17.

Every read and write of a redirected table goes to the branch: the ``paimon`` data
source (batch and streaming, read and write) and the native helpers. Each test
compares with plain pypaimon reads of main and of the branch, and every conf key it
sets is unset again (then ``register(spark)`` republishes the session's redirects,
so no other test sees them).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from support.lineage_capture import append_to as _append
from support.lineage_capture import wait_until

from airflow_provider_paimon.paimon.catalog import load_table
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark import register
from airflow_provider_paimon.spark.branch.redirect import (
    PREFIX,
    merge_redirects,
    parse_redirects,
    redirect_conf,
    resolve,
)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
SRC_MAIN = [0, 1, 2, 3, 4]
SRC_FIX = [0, 1, 2, 100, 101]


# ---------------------------------------------------------------- helpers


def make_tables(warehouse: str) -> None:
    """db.src: main 0..4, branch fix 0..2 + 100, 101; db.dst: main [0], branch fix [0]."""
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    for name in ("db.src", "db.dst"):
        catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
    src = catalog.get_table("db.src")
    _append(src, [0, 1, 2])
    src.create_tag("t1")
    src.branch_manager().create_branch("fix", "t1")
    _append(catalog.get_table("db.src$branch_fix"), [100, 101])
    _append(src, [3, 4])
    dst = catalog.get_table("db.dst")
    _append(dst, [0])
    dst.create_tag("t1")
    dst.branch_manager().create_branch("fix", "t1")


def ids(warehouse: str, name: str, branch: str | None = None) -> list[int]:
    """The table's ids as plain pypaimon reads them (the reference)."""
    table = load_table(CatalogFactory.create({"warehouse": warehouse}), name, branch)
    builder = table.new_read_builder()
    return sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()).column("id").to_pylist())


def snapshots(warehouse: str) -> dict[str, list[int]]:
    """Snapshot ids of every table and branch: "nothing was written" compares these."""
    out = {}
    for name in ("db.src", "db.dst"):
        for branch in (None, "fix"):
            table = load_table(CatalogFactory.create({"warehouse": warehouse}), name, branch)
            out[f"{name}@{branch or 'main'}"] = sorted(s.id for s in table.snapshot_manager().list_snapshots())
    return out


@contextlib.contextmanager
def conf_set(spark, conf: dict[str, str], *, publish: bool = True):
    """Set ``conf`` (and republish it to the data source); unset and republish afterwards."""
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        if publish:
            register(spark)
        yield
    finally:
        for key in conf:
            spark.conf.unset(key)
        register(spark)


def read(spark, warehouse, table, **options):
    return spark.read.format("paimon").option("warehouse", warehouse).option("table", table).options(**options).load()


def write(df, warehouse, table, **options):
    df.write.format("paimon").option("warehouse", warehouse).option("table", table).options(**options).mode("append").save()


def df_of(spark, values):
    return spark.createDataFrame([(i, "y") for i in values], "id BIGINT, v STRING")


# ---------------------------------------------------------------- the rules (no Spark)


def test_rules_keys_case_conflicts_and_names():
    raw = {PREFIX + "Sales.Orders": "fix", PREFIX + "sales.items": "main"}
    assert resolve(None, "sales", "orders", raw)[0] == "fix"  # case-insensitive table match
    assert resolve("fix", "SALES", "ORDERS", raw)[0] == "fix"  # the same value: fine
    assert resolve(None, "sales", "items", raw)[0] is None  # redirect to main
    assert resolve("b2", "sales", "other", raw) == ("b2", None)  # no redirect: the option
    with pytest.raises(InvalidArgumentError, match=r"branch='other'.*spark\.paimon\.branch\.Sales\.Orders='fix'"):
        resolve("other", "sales", "orders", raw)
    with pytest.raises(InvalidArgumentError, match="contradicts"):
        resolve("main", "sales", "orders", raw)
    bad_keys = [PREFIX + "orders", PREFIX + "a.b.c", PREFIX + ".t"]
    for key in bad_keys:
        with pytest.raises(InvalidArgumentError, match=f"{key}.*<database>.<table>"):
            parse_redirects({key: "fix"})
    with pytest.raises(InvalidArgumentError, match="is blank"):
        parse_redirects({PREFIX + "db.t": " "})
    with pytest.raises(InvalidArgumentError, match="path separators"):
        parse_redirects({PREFIX + "db.t": "a/b"})
    with pytest.raises(InvalidArgumentError, match="different branches"):
        parse_redirects({PREFIX + "db.t": "a", PREFIX + "DB.T": "b"})
    assert redirect_conf({"db.t": "fix"}) == {PREFIX + "db.t": "fix"}
    with pytest.raises(InvalidArgumentError, match=r"branch_redirects.*database.table"):
        redirect_conf({"orders": "fix"})
    with pytest.raises(InvalidArgumentError, match="names branch 'fix' but conf"):
        merge_redirects({PREFIX + "db.t": "other"}, {PREFIX + "db.t": "fix"})
    with pytest.raises(InvalidArgumentError, match="different branches"):
        merge_redirects({PREFIX + "DB.t": "other"}, {PREFIX + "db.t": "fix"})


# ---------------------------------------------------------------- the data source


@pytest.mark.spark
def test_batch_read_and_write_use_the_branch_and_lineage_records_it(spark, warehouse, tmp_path):
    from airflow_provider_paimon.lineage.store import LineageStore
    from airflow_provider_paimon.spark.lineage.capture import active_capture

    make_tables(warehouse)
    url = f"sqlite:///{tmp_path / 'lineage.sqlite'}"
    events = tmp_path / "ol.jsonl"
    conf = {
        PREFIX + "DB.Src": "fix",  # matched case-insensitively
        PREFIX + "db.dst": "fix",
        "spark.paimon.lineage.url": url,
        "spark.paimon.lineage.job": "etl.redirect",
        "spark.paimon.lineage.spoolDir": str(tmp_path / "spool"),
        "spark.paimon.lineage.pollIntervalMs": "100",
        "spark.paimon.openlineage.transport.type": "file",
        "spark.paimon.openlineage.transport.location": str(events),
        "spark.paimon.openlineage.async": "false",
    }
    with conf_set(spark, conf):  # register(spark) publishes the redirects, starts the capture
        capture = active_capture(spark)
        assert capture is not None
        try:
            src = read(spark, warehouse, "db.src")
            assert sorted(r.id for r in src.collect()) == SRC_FIX
            write(src, warehouse, "db.dst", branch="fix")  # an option naming the same branch: fine
            assert wait_until(lambda: capture.recorder.delivered >= 1)
        finally:
            capture.close()
    assert ids(warehouse, "db.dst", "fix") == sorted([0, *SRC_FIX])
    assert ids(warehouse, "db.dst") == [0]  # main unchanged
    assert ids(warehouse, "db.src") == SRC_MAIN
    with LineageStore.from_url(url) as store:
        src_rows = [(r.table, r.branch) for r in store.source_data_lineages(job="etl.redirect")]
        sink_rows = [(r.table, r.branch, r.snapshot_id) for r in store.sink_data_lineages(job="etl.redirect")]
        assert [(t.table, t.branch) for t in store.sink_table_lineages(job="etl.redirect")] == [("dst", "fix")]
    fix_latest = load_table(CatalogFactory.create({"warehouse": warehouse}), "db.dst", "fix")
    assert src_rows == [("src", "fix")]
    assert sink_rows == [("dst", "fix", fix_latest.snapshot_manager().get_latest_snapshot().id)]
    complete = [json.loads(line) for line in events.read_text().splitlines()][-1]
    assert complete["eventType"] == "COMPLETE"
    assert [d["name"] for d in complete["inputs"]] == ["db.src$branch_fix"]
    assert [d["name"] for d in complete["outputs"]] == ["db.dst$branch_fix"]
    # without the conf, the same code reads main again
    assert sorted(r.id for r in read(spark, warehouse, "db.src").collect()) == SRC_MAIN


@pytest.mark.spark
def test_streaming_read_and_write_use_the_branch(spark, warehouse, tmp_path):
    make_tables(warehouse)
    with conf_set(spark, {PREFIX + "db.src": "fix", PREFIX + "db.dst": "fix"}):
        query = (
            spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
            .writeStream.format("paimon").option("warehouse", warehouse).option("table", "db.dst")
            .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
        )
        query.awaitTermination(240)
        assert query.exception() is None
    assert ids(warehouse, "db.dst", "fix") == sorted([0, *SRC_FIX])
    assert ids(warehouse, "db.dst") == [0]
    assert ids(warehouse, "db.src") == SRC_MAIN and ids(warehouse, "db.src", "fix") == SRC_FIX


@pytest.mark.spark
def test_conflicting_option_missing_branch_and_malformed_key_fail_and_write_nothing(spark, warehouse):
    make_tables(warehouse)
    before = snapshots(warehouse)
    with conf_set(spark, {PREFIX + "db.dst": "fix", PREFIX + "db.src": "nope"}):
        with pytest.raises(Exception, match=r"branch='other' contradicts Spark conf spark\.paimon\.branch\.db\.dst='fix'"):
            write(df_of(spark, [7]), warehouse, "db.dst", branch="other")
        with pytest.raises(Exception, match=re.escape("branch 'nope' does not exist on table db.src")):
            write(df_of(spark, [7]), warehouse, "db.src")
    with (
        conf_set(spark, {PREFIX + "dst": "fix"}),
        pytest.raises(Exception, match=r"spark\.paimon\.branch\.dst' is not a branch redirect"),
    ):
        read(spark, warehouse, "db.src").collect()
    assert snapshots(warehouse) == before


@pytest.mark.spark
def test_redirect_set_after_register_fails_the_job_before_commit(spark, warehouse):
    make_tables(warehouse)
    before = snapshots(warehouse)
    with (
        conf_set(spark, {PREFIX + "db.dst": "fix"}, publish=False),  # planned on main
        pytest.raises(Exception, match=re.escape("changed after airflow_provider_paimon.spark.register")),
    ):
        write(df_of(spark, [7]), warehouse, "db.dst")
    assert snapshots(warehouse) == before


# ---------------------------------------------------------------- the native helpers


@pytest.mark.spark
def test_native_read_write_views_and_foreach_batch_use_the_branch(spark, warehouse, tmp_path, caplog):
    from airflow_provider_paimon.spark import (
        foreach_batch_writer,
        read_table,
        register_views,
        write_table,
    )

    make_tables(warehouse)
    with conf_set(spark, {PREFIX + "db.src": "fix", PREFIX + "db.dst": "fix"}):
        with caplog.at_level(logging.INFO, logger="airflow_provider_paimon.spark.branch.redirect"):
            df = read_table(spark, "db.src", warehouse=warehouse)
            assert sorted(r.id for r in df.collect()) == SRC_FIX
            result = write_table(df_of(spark, [7]), "db.dst", warehouse=warehouse)
            read_table(spark, "db.src", warehouse=warehouse)  # logged once per table
        lines = [r.getMessage() for r in caplog.records]
        assert lines.count("reading db.src from branch fix (spark.paimon.branch.db.src)") == 1
        assert "writing db.dst to branch fix (spark.paimon.branch.db.dst)" in lines
        fix = load_table(CatalogFactory.create({"warehouse": warehouse}), "db.dst", "fix")
        assert result.snapshot_id == fix.snapshot_manager().get_latest_snapshot().id
        assert register_views(spark, "db.src", warehouse=warehouse, prefix="br_") == {"br_src": "db.src"}
        assert sorted(r.id for r in spark.sql("SELECT id FROM br_src").collect()) == SRC_FIX
        with pytest.raises(InvalidArgumentError, match="contradicts"):
            write_table(df_of(spark, [8]), "db.dst", warehouse=warehouse, branch="main")
        query = (
            spark.readStream.format("paimon").option("warehouse", warehouse).option("table", "db.src").load()
            .writeStream.foreachBatch(
                foreach_batch_writer("db.dst", warehouse=warehouse, checkpoint_location=str(tmp_path / "cp"))
            )
            .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
        )
        query.awaitTermination(240)
        assert query.exception() is None
    spark.catalog.dropTempView("br_src")
    assert ids(warehouse, "db.dst", "fix") == sorted([0, 7, *SRC_FIX])
    assert ids(warehouse, "db.dst") == [0]
    assert ids(warehouse, "db.src") == SRC_MAIN


# ---------------------------------------------------------------- the Airflow operator


def _operator(**kwargs):
    from airflow.sdk import DAG

    from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator

    with DAG("redirect_dag", schedule=None):
        return PaimonSparkSubmitOperator(task_id="job", application="/nonexistent/job.py", **kwargs)


def test_operator_turns_branch_redirects_into_conf():
    op = _operator(branch_redirects={"sales.orders": "fix", "sales.items": "main"}, conf={"spark.x": "1"})
    conf = op.spark_conf({}, lineage_on=False, database=None)
    assert conf[PREFIX + "sales.orders"] == "fix" and conf[PREFIX + "sales.items"] == "main"
    assert conf["spark.x"] == "1"
    assert "branch_redirects" in op.template_fields
    # the same redirect in conf too: fine; another branch: refused before submitting
    same = _operator(branch_redirects={"sales.orders": "fix"}, conf={PREFIX + "sales.orders": "fix"})
    assert same.spark_conf({}, lineage_on=False, database=None)[PREFIX + "sales.orders"] == "fix"


def test_operator_validates_branch_redirects():
    from airflow.sdk.exceptions import AirflowFailException

    for bad, message in (
        ({"orders": "fix"}, "database.table"),
        ({"sales.orders": "a/b"}, "path separators"),
        ({"sales.orders": ""}, "is blank"),
        ({"sales.orders": "a", "SALES.orders": "b"}, "different branches"),
    ):
        with pytest.raises(ValueError, match=message):
            _operator(branch_redirects=bad)
    # templated: checked at execute, once rendered
    op = _operator(branch_redirects={"sales.orders": "{{ params.branch }}"})
    op.branch_redirects = {"sales.orders": "1234"}  # as rendered
    with pytest.raises(AirflowFailException, match=r"all digits.*nothing was submitted"):
        op.spark_conf({}, lineage_on=False, database=None)
    whole = _operator(branch_redirects="{{ params.redirects }}")  # a template of the whole dict
    whole.branch_redirects = {"sales.orders": "fix"}
    assert whole.spark_conf({}, lineage_on=False, database=None)[PREFIX + "sales.orders"] == "fix"
    with pytest.raises(ValueError, match="must be a dict"):
        _operator(branch_redirects="sales.orders=fix")
    conflicting = _operator(branch_redirects={"sales.orders": "fix"}, conf={PREFIX + "sales.orders": "other"})
    with pytest.raises(AirflowFailException, match="names branch 'fix' but conf"):
        conflicting.spark_conf({}, lineage_on=False, database=None)
