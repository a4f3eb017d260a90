"""Warehouse tables for the history page tests: real pypaimon commits and our branch ops."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
from pypaimon import Schema
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as ops
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.tag import create_tag

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
XSS = "<img src=x onerror=window.__pwned=1>"


def _write(table: Any, ids: list[int]) -> None:
    commit_rows(table, [{"id": i, "v": str(i)} for i in ids], SCHEMA)


def _table(catalog: Any, name: str) -> Any:
    catalog.create_database(name.split(".")[0], True)
    catalog.create_table(name, Schema.from_pyarrow_schema(SCHEMA), False)
    return load_table(catalog, name)


def table_dir(warehouse: str, name: str) -> str:
    db, t = name.split(".")
    return os.path.join(warehouse, f"{db}.db", t)


def with_run(warehouse: str, name: str, branch: str | None, sid: int, dag: str, task: str) -> None:
    """Put an Airflow run on a snapshot (as the Spark writer would have)."""
    root = table_dir(warehouse, name) + (f"/branch/branch-{branch}" if branch else "")
    path = f"{root}/snapshot/snapshot-{sid}"
    doc = json.loads(Path(path).read_text())
    doc["properties"] = {"airflow.dag_id": dag, "airflow.run_id": f"scheduled__2026-11-{sid:02d}",
                         "airflow.task_id": task, "airflow.try_number": "1", "spark.app.id": f"local-{sid}"}
    with open(path, "w") as fh:
        json.dump(doc, fh)


def history_scenario(warehouse: str, name: str = "db.orders") -> Any:
    """main 1,2 | tag t1 on 2 | fix from t1: 3,4 | main 3,4, COMPACT-like OVERWRITE by
    replace-main -> 5 (backup branch bk) | ff from main@5: 6,7 | fast-forward main to ff."""
    catalog = open_catalog(warehouse)
    t = _table(catalog, name)
    _write(t, [1])
    _write(t, [2])
    create_tag(t, "t1")
    ops.create_branch(t, "fix", tag="t1")
    fix = load_table(catalog, name, "fix")
    _write(fix, [100])
    _write(fix, [101])
    _write(t, [3])
    _write(t, [4])
    with_run(warehouse, name, None, 3, "ingest_dag", "load")
    with_run(warehouse, name, "fix", 4, "fix_dag", "repair")
    ops.replace_main(t, "fix", backup_name="bk", snapshot_properties={
        "airflow.dag_id": "publish_dag", "airflow.run_id": "manual__1", "airflow.task_id": "replace"})
    ops.create_branch(t, "ff", snapshot_id=5)
    ff = load_table(catalog, name, "ff")
    _write(ff, [300])
    _write(ff, [301])
    ops.fast_forward(t, "ff")
    create_tag(t, "release-1")
    return t


def many_snapshots(warehouse: str, name: str, count: int) -> Any:
    """``count`` snapshots on main, cheaply: copies of one real commit's file under new ids."""
    catalog = open_catalog(warehouse)
    t = _table(catalog, name)
    _write(t, [1])
    d = table_dir(warehouse, name)
    doc = json.loads(Path(f"{d}/snapshot/snapshot-1").read_text())
    for sid in range(2, count + 1):
        doc.update(id=sid, commitKind="COMPACT" if sid % 10 == 0 else "APPEND", uuid=f"u-{sid}")
        with open(f"{d}/snapshot/snapshot-{sid}", "w") as fh:
            fh.write(json.dumps(doc))
    with open(f"{d}/snapshot/LATEST", "w") as fh:
        fh.write(str(count))
    return t


def hostile_table(warehouse: str, name: str = "db.hostile") -> Any:
    """A table whose branch and tag names carry markup (made behind our ops' name checks)."""
    catalog = open_catalog(warehouse)
    t = _table(catalog, name)
    _write(t, [1])
    d = table_dir(warehouse, name)
    os.makedirs(f"{d}/branch/branch-{XSS}/snapshot")
    os.makedirs(f"{d}/branch/branch-{XSS}/schema")
    for sub in ("snapshot/snapshot-1", "schema/schema-0"):
        with open(f"{d}/{sub}") as src, open(f"{d}/branch/branch-{XSS}/{sub}", "w") as dst:
            dst.write(src.read())
    os.makedirs(f"{d}/tag", exist_ok=True)
    with open(f"{d}/snapshot/snapshot-1") as src, open(f"{d}/tag/tag-{XSS}", "w") as dst:
        dst.write(src.read())
    with_run(warehouse, name, None, 1, XSS, XSS)
    return t
