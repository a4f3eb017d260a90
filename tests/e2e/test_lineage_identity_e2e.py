"""Lineage that knows what each snapshot is, end to end, on SQLite, MariaDB and PostgreSQL.

A four-table pipeline with fan-out (``ods.raw -> dwd.clean -> {ads.mart, ads.stats}``)
runs as plain pypaimon jobs whose lineage goes through the capture's recorder with each
snapshot's identity (the Spark capture itself is checked against the snapshot files in
``tests/capture/test_capture_spark.py``; one Spark run per backend here would cost minutes
each). Then, driven in-process through the
same pieces the ``cascade_correction`` DAG uses (``plan_cascade``, ``branch_at``, the
jobs re-run with branch redirects, the publish job entry point; the DAG itself is run
by ``test_cascade_dag.py``):

1. a bad batch in ``ods.raw`` is corrected by a cascade and published;
2. the plan of the first bug now lists nothing (the corrected snapshots are not bad);
3. a second bug, in the corrected data, is planned from main's snapshot the publish
   made: each table branches from its correction branch (where its rows came from), not
   from old main; corrected and published again: every main equals a from-scratch
   recomputation on twice-fixed inputs, read by plain pypaimon;
4. ``ads.mart`` is rolled back (destructively) and a new commit takes the removed id;
5. ``ads.stats`` is fast-forwarded to a branch that replaced main's newest snapshot;

after each of 4 and 5, upstream / downstream / impact / cascade answer with live, right
links only.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from dag_run_results import table_rows
from support.pypaimon_writes import commit_arrow

RAW, CLEAN, MART, STATS = "ods.raw", "dwd.clean", "ads.mart", "ads.stats"
TABLES = (RAW, CLEAN, MART, STATS)
SORT = {RAW: "order_id", CLEAN: "order_id", MART: "customer", STATS: "large"}
CUSTOMERS = ("ada", "bob", "cy")


def batch_rows(batch: int, version: str) -> list[dict]:
    """Ingest batch ``batch``: ``buggy`` has batch 2 1000x too large; ``fixed`` corrects it
    but has batch 3 negative (the second bug); ``fixed2`` is right."""
    rows = []
    for i in range(3):
        amount = 500 + 1000 * i + batch
        if version == "buggy" and batch == 2:
            amount *= 1000
        if version == "fixed" and batch == 3:
            amount = -amount
        rows.append({"order_id": batch * 100 + i, "customer": CUSTOMERS[(batch + i) % 3], "amount_cents": amount})
    return rows


def reference(raw: list[dict]) -> dict[str, list[dict]]:
    clean = [{**r, "large": r["amount_cents"] >= 10_000} for r in raw if r["amount_cents"] >= 0]
    mart: dict[str, dict] = {}
    for r in clean:
        row = mart.setdefault(r["customer"], {"customer": r["customer"], "orders": 0, "revenue_cents": 0})
        row["orders"] += 1
        row["revenue_cents"] += r["amount_cents"]
    stats: dict[bool, dict] = {}
    for r in clean:
        stats.setdefault(r["large"], {"large": r["large"], "orders": 0})["orders"] += 1
    return {RAW: sorted(raw, key=lambda r: r["order_id"]), CLEAN: sorted(clean, key=lambda r: r["order_id"]),
            MART: [mart[c] for c in sorted(mart)], STATS: [stats[k] for k in sorted(stats)]}


def create_tables(warehouse: str) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    for db in ("ods", "dwd", "ads"):
        catalog.create_database(db, True)
    base = [("order_id", pa.int64()), ("customer", pa.string()), ("amount_cents", pa.int64())]
    schemas = {RAW: base, CLEAN: [*base, ("large", pa.bool_())],
               MART: [("customer", pa.string()), ("orders", pa.int64()), ("revenue_cents", pa.int64())],
               STATS: [("large", pa.bool_()), ("orders", pa.int64())]}
    for name, fields in schemas.items():
        catalog.create_table(name, Schema.from_pyarrow_schema(pa.schema(fields)), False)


def rows(warehouse: str, name: str, branch: str | None = None) -> list[dict]:
    """A table read with plain pypaimon (the reference reader)."""
    return table_rows(warehouse, name, SORT[name], branch)


class Pipeline:
    """The four jobs, in plain pypaimon + pyarrow, each delivering its lineage through the
    capture's own recorder (``LineageRecorder``: barrier sequence, spool) with the identity
    of every snapshot read and written taken from the snapshot itself, as the Spark
    capture's scan and commit events carry it (``tests/capture/test_capture_spark.py``
    checks the capture on real Spark; this test is about what the store makes of it)."""

    def __init__(self, warehouse: str, url: str, database: str, tmp_path) -> None:
        self.warehouse, self.url, self.database, self.tmp = warehouse, url, database, tmp_path
        self.branches: dict[str, str] = {}
        self.sources: list = []
        self.sinks: list = []

    def _table(self, name: str):
        from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

        branch = self.branches.get(name)
        return load_table(open_catalog(self.warehouse), name, None if branch in (None, "main") else branch)

    def _at(self, name: str, table, snapshot):
        from airflow_provider_paimon.spark.commit_events import identity_fields
        from airflow_provider_paimon.spark.lineage.recorder import TableAt

        db, tbl = name.split(".")
        return TableAt(self.warehouse, db, tbl, self.branches.get(name, "main"), snapshot.id).with_identity(
            identity_fields(snapshot))

    def _read(self, name: str) -> pa.Table:
        table = self._table(name)
        latest = table.snapshot_manager().get_latest_snapshot()
        if latest is not None:
            self.sources.append(self._at(name, table, latest))
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        return builder.new_read().to_arrow(splits) if splits else None

    def _write(self, data: pa.Table, name: str, overwrite: bool) -> None:
        table = self._table(name)
        commit_arrow(table, data.cast(_schema(table)), overwrite={} if overwrite else None)
        self.sinks.append(self._at(name, table, self._table(name).snapshot_manager().get_latest_snapshot()))

    def ingest(self, batch: int, version: str) -> None:
        self._write(pa.Table.from_pylist(batch_rows(batch, version)), RAW, overwrite=False)

    def clean(self) -> None:
        data = self._read(RAW).to_pylist()
        self._write(pa.Table.from_pylist(reference(data)[CLEAN]), CLEAN, overwrite=True)

    def _from_clean(self, name: str) -> None:
        data = self._read(CLEAN).to_pylist()
        raw = [{k: v for k, v in r.items() if k != "large"} for r in data]
        self._write(pa.Table.from_pylist(reference(raw)[name]), name, overwrite=True)

    def mart(self) -> None:
        self._from_clean(MART)

    def stats(self) -> None:
        self._from_clean(STATS)

    def run(self, job: str, action, redirects: dict[str, str] | None = None) -> None:
        """Run ``action`` as job ``job`` (on the redirected branches); one barrier per write."""
        from airflow_provider_paimon.spark.lineage.config import CaptureConfig
        from airflow_provider_paimon.spark.lineage.recorder import BatchRecord, LineageRecorder

        self.branches = dict(redirects or {})
        recorder = LineageRecorder(CaptureConfig(enabled=True, job=job, url=self.url, database=self.database,
                                                 spool_dir=str(self.tmp / "spool")), retry_interval=0.0)
        recorder.open()
        try:
            for step in (action if isinstance(action, list) else [action]):
                self.sources, self.sinks = [], []
                step()
                assert recorder.record(BatchRecord(job, None, self.sources, self.sinks, streaming=False))
        finally:
            recorder.close()
            self.branches = {}


def _schema(table) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def correct(pipe: Pipeline, store, root: tuple[str, int], correction: str, version: str, batches, capsys,
            database: str) -> dict:
    """One cascade, as the cascade_correction DAG does it: plan, branch, re-run, publish."""
    from airflow_provider_paimon.job_contract import parse_result
    from airflow_provider_paimon.lineage.cascade import plan_cascade
    from airflow_provider_paimon.paimon.branch.branch_point import branch_at
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.jobs import publish

    db, tbl = root[0].split(".")
    plan = plan_cascade(store, db, tbl, root[1])
    assert not plan.truncated, plan.truncated_reason
    assert plan.order == list(TABLES), plan.order  # raw, clean, then the fan-out (mart before stats by name)
    catalog = open_catalog(pipe.warehouse)
    for t in plan.tables:
        tag = None if t.branch_point is None else f"{correction}_base"
        branch_at(load_table(catalog, t.name), correction, snapshot_id=t.branch_point, tag=tag,
                  source_branch=t.branch_point_branch)
    redirects = dict.fromkeys(TABLES, correction)
    pipe.run(f"{correction}.ingest", [lambda b=b: pipe.ingest(b, version) for b in batches], redirects)
    for job in ("clean", "mart", "stats"):
        pipe.run(f"{correction}.{job}", getattr(pipe, job), redirects)
    argv = ["publish", "--warehouse", pipe.warehouse, "--backup-name", f"before_{correction}",
            "--lineage-database", database]
    for name in TABLES:
        argv += ["--pair", name, correction]
    assert publish.main(argv) == 0
    return {"plan": plan, "published": parse_result(capsys.readouterr().out)}


def names(found) -> set[tuple]:
    return {(f"{n.database}.{n.table}", n.branch, n.snapshot_id) for n in found}


@pytest.fixture(params=[
    pytest.param("sqlite", id="sqlite"),
    pytest.param("mysql", id="mariadb", marks=pytest.mark.mysql),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
])
def lineage_target(request, tmp_path, unique_name):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from lineage.helpers import drop_target, make_target

    target = make_target(request.param, request, tmp_path, unique_name)
    yield target
    drop_target(target)


def test_corrections_rollback_and_fast_forward_keep_lineage_live_and_right(
    tmp_path, lineage_target, monkeypatch, capsys
):
    from airflow_provider_paimon.job_contract import parse_result
    from airflow_provider_paimon.lineage import LineageStore
    from airflow_provider_paimon.lineage.cascade import plan_cascade
    from airflow_provider_paimon.lineage.history_events import history_events
    from airflow_provider_paimon.lineage.queries import downstream, impact, upstream
    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
    from airflow_provider_paimon.spark.jobs import branch as branch_job
    from airflow_provider_paimon.spark.jobs import maintenance as maintenance_job

    target = lineage_target
    warehouse = str(tmp_path / "warehouse")
    create_tables(warehouse)
    url = target.url
    monkeypatch.setenv("PAIMON_LINEAGE_URL", url)  # the history jobs' store, as the operators pass it
    store_kw = {"database": target.database}
    pipe = Pipeline(warehouse, url, target.database, tmp_path)

    # the original pipeline: batch 1, everything; the bad batch 2 and batch 3, everything again
    pipe.run("pipeline.ingest", lambda: pipe.ingest(1, "buggy"))  # raw@1
    for job in ("clean", "mart", "stats"):
        pipe.run(f"pipeline.{job}", getattr(pipe, job))  # @1 each
    pipe.run("pipeline.ingest", [lambda b=b: pipe.ingest(b, "buggy") for b in (2, 3)])  # raw@2 (bad), raw@3
    for job in ("clean", "mart", "stats"):
        pipe.run(f"pipeline.{job}", getattr(pipe, job))  # @2 each

    with LineageStore.from_url(url, **store_kw) as store:
        first = correct(pipe, store, (RAW, 2), "fix", "fixed", (2, 3), capsys, target.database)
        assert [(t.name, t.branch_point_branch, t.branch_point) for t in first["plan"].tables] == [
            (RAW, "main", 1), (CLEAN, "main", 1), (MART, "main", 1), (STATS, "main", 1)]
        once_fixed = reference([r for b in (1, 2, 3) for r in batch_rows(b, "fixed")])
        for name in TABLES:
            assert rows(warehouse, name) == once_fixed[name], name
        # the first bug is corrected: planning it again lists nothing, never the corrected snapshots
        again = plan_cascade(store, "ods", "raw", 2)
        assert again.tables == () and set(again.corrected) == set(TABLES)

        # the second bug is in the corrected batch 3: named by main's snapshot the publish made
        published_raw = first["published"]["tables"][0]["main_snapshot_id"]
        second = correct(pipe, store, (RAW, published_raw), "fix2", "fixed2", (3,), capsys, target.database)
        assert [(t.name, t.branch_point_branch) for t in second["plan"].tables] == [
            (n, "fix") for n in TABLES]
        assert second["plan"].tables[0].branch_point == 2  # raw fix@2: batch 2 corrected, before batch 3
        assert "paimon.replace_main" not in {j for t in second["plan"].tables for j in t.jobs}
        twice_fixed = reference([r for b in (1, 2, 3) for r in batch_rows(b, "fixed2")])
        for name in TABLES:
            assert rows(warehouse, name) == twice_fixed[name], name
        # corrected too now: every main is; only the old correction branches still hold that bug
        again = plan_cascade(store, "ods", "raw", published_raw)
        assert set(again.corrected) >= set(TABLES) and {t.branch for t in again.tables} == {"fix"}

        # rollback ads.mart destructively, then a new commit takes the removed id
        mart_main = second["published"]["tables"][2]["main_snapshot_id"]
        out = maintenance_job.main(["rollback", "--warehouse", warehouse, "--table", MART,
                                    "--snapshot-id", str(mart_main - 1), "--lineage-database", target.database])
        assert out == 0 and parse_result(capsys.readouterr().out)["removed_snapshot_ids"] == [mart_main]
        pipe.run("pipeline.mart", pipe.mart)
        mart_table = load_table(open_catalog(warehouse), MART)
        assert mart_table.snapshot_manager().get_latest_snapshot().id == mart_main  # the id again
        clean_main = load_table(open_catalog(warehouse), CLEAN).snapshot_manager().get_latest_snapshot().id
        assert names(upstream(store, "ads", "mart", mart_main)) == {(CLEAN, "main", clean_main)}
        # the removed snapshot (the publish's link from fix2) is not downstream of fix2 any more
        fix2_mart = second["published"]["tables"][2]["branch_snapshot_id"]
        assert names(downstream(store, "ads", "mart", fix2_mart, branch="fix2")) == set()
        hit = {(t.database, t.table, t.branch): t.snapshot_ids for t in impact(store, "dwd", "clean", clean_main).tables}
        assert hit[("ads", "mart", "main")] == [mart_main]
        plan = plan_cascade(store, "dwd", "clean", clean_main)
        assert {t.name: list(t.bad_snapshots) for t in plan.tables}[MART] == [mart_main]
        assert [e.kind for e in history_events(store, "ads", "mart")][:2] == ["rollback", "publish"]

        # fast-forward ads.stats to a branch made below main's newest snapshot
        stats_table = load_table(open_catalog(warehouse), STATS)
        stats_latest = stats_table.snapshot_manager().get_latest_snapshot().id
        create_branch(stats_table, "ffb", snapshot_id=stats_latest - 1)
        pipe.run("ff.stats", pipe.stats, {STATS: "ffb"})  # ffb@latest: recomputed from clean's main
        assert branch_job.main(["fast-forward", "--warehouse", warehouse, "--table", STATS, "--branch", "ffb",
                                "--lineage-database", target.database]) == 0
        result = parse_result(capsys.readouterr().out)
        assert result["main_snapshot_id"] == stats_latest and result["lineage"]["retracted_rows"] >= 1
        ups = upstream(store, "ads", "stats", stats_latest, depth=2)
        # main@latest is ffb's commit: ff.stats wrote it from clean's main, whose rows came from fix2
        assert {(n.job, f"{n.database}.{n.table}", n.branch) for n in ups} == {
            ("paimon.fast_forward", STATS, "ffb"), ("ff.stats", CLEAN, "main"),
            ("paimon.replace_main", CLEAN, "fix2")}
        # the replaced main snapshot (fix2's publish) is no longer downstream of fix2's stats
        fix2_stats = second["published"]["tables"][3]["branch_snapshot_id"]
        assert names(downstream(store, "ads", "stats", fix2_stats, branch="fix2")) == set()
        hit = {(t.database, t.table, t.branch): t.snapshot_ids for t in impact(store, "dwd", "clean", clean_main).tables}
        assert hit[("ads", "stats", "main")] == [stats_latest] and hit[("ads", "stats", "ffb")] == [stats_latest]
        plan = plan_cascade(store, "dwd", "clean", clean_main)
        stats_entry = {t.name: t for t in plan.tables}[STATS]
        assert (stats_entry.first_bad_branch, stats_entry.branch_point_branch) == ("ffb", "ffb")
        assert stats_entry.jobs == ("ff.stats",)
        for name in TABLES:  # and the data is still the twice-fixed recomputation
            assert rows(warehouse, name) == twice_fixed[name], name
