"""A person approves or rejects a replace-main through Airflow's human-in-the-loop API.

A real DAG run (``dag.test()`` in a thread) parks ``replace_main`` waiting for input;
the test answers through a real api-server sharing the metadata database, with the
REST call the UI's "Required actions" page makes. Rejected: the task fails with the
reviewer's comment and main is byte-identical. Approved: main becomes the branch.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pytest
from independent_reader import rust_rows
from support.pypaimon_writes import commit_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _tree_digest(path: str) -> str:
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(os.path.relpath(full, path).encode())
            digest.update(Path(full).read_bytes())
    return digest.hexdigest()


def _call(base: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, {"detail": err.read().decode(errors="replace")}


DAG_SOURCE = """
import os

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

from airflow_provider_paimon.operators.branch import ReplaceMainBranchOperator

EVIDENCE = {
    "table": "db.t", "branch": "fix", "base": "main", "passed": True, "summary": "db.t main..fix: +1 -0 rows",
    "diff": {"table": "db.t", "partitions": [], "sample_added": [{"id": 9, "v": "secret-ish"}]},
}

with DAG("approval_hitl", schedule=None, catchup=False) as dag:
    audit = PythonOperator(task_id="audit", python_callable=lambda: EVIDENCE)
    replace = ReplaceMainBranchOperator(
        task_id="replace_main", table="db.t", branch="fix", warehouse=os.environ["HITL_TEST_WAREHOUSE"],
        run_in="worker", approve=True, approval_timeout="10 min", sensitive_columns=["v"],
    )
    audit >> replace
"""


def _dag(folder: Path, warehouse: str, monkeypatch: pytest.MonkeyPatch):
    """The DAG, loaded from a file in the DAGs folder (``dag.test()`` serializes only those)."""
    import importlib.util

    import airflow.settings

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "approval_hitl.py"
    path.write_text(DAG_SOURCE)
    monkeypatch.setenv("HITL_TEST_WAREHOUSE", warehouse)
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(folder))
    monkeypatch.setattr(airflow.settings, "DAGS_FOLDER", str(folder))
    spec = importlib.util.spec_from_file_location("approval_hitl", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def _answer_when_asked(base: str, token: str, seen: set[str], option: str, comment: str, box: dict) -> None:
    """Find the new run of the DAG, wait for its HITL request, answer it as the UI does."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status, runs = _call(base, token, "GET", "/api/v2/dags/approval_hitl/dagRuns?limit=100")
        fresh = [r["dag_run_id"] for r in runs.get("dag_runs", [])] if status == 200 else []
        fresh = [r for r in fresh if r not in seen]
        if fresh:
            path = f"/api/v2/dags/approval_hitl/dagRuns/{fresh[0]}/taskInstances/replace_main/-1/hitlDetails"
            status, detail = _call(base, token, "GET", path)
            if status == 200 and detail.get("subject"):
                box["run_id"] = fresh[0]
                box["detail"] = detail
                box["answer"] = _call(base, token, "PATCH", path,
                                      {"chosen_options": [option], "params_input": {"comment": comment}})
                return
        time.sleep(1)
    box["error"] = "no HITL request appeared"


@pytest.mark.timeout(600)
def test_reject_leaves_main_byte_identical_and_approve_publishes(airflow_db, tmp_path, warehouse, monkeypatch):
    from airflow.utils.state import DagRunState
    from ui.airflow_server import api_server_process, login_token

    from airflow_provider_paimon.paimon.branch import create_branch
    from airflow_provider_paimon.paimon.catalog import load_table, open_catalog

    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    from pypaimon import Schema

    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA), False)
    commit_rows(load_table(catalog, "db.t"), [{"id": 1, "v": "a"}], SCHEMA)
    create_branch(load_table(catalog, "db.t"), "fix")
    commit_rows(load_table(catalog, "db.t", "fix"), [{"id": 9, "v": "b"}], SCHEMA)
    table_dir = os.path.join(warehouse, "db.db", "t")
    main_before = rust_rows(warehouse, "db.t")

    dag = _dag(tmp_path / "dags", warehouse, monkeypatch)
    with api_server_process(tmp_path / "api", db_url=airflow_db) as (base, _proc):
        token = login_token(base)
        seen: set[str] = set()
        for option, comment in (("Reject", "the fix drops d2, redo it"), ("Approve", "checked")):
            box: dict = {}
            digest = _tree_digest(table_dir)
            answerer = threading.Thread(target=_answer_when_asked, args=(base, token, set(seen), option, comment, box))
            answerer.start()
            run = dag.test()
            seen.add(run.run_id)
            answerer.join(30)
            assert "error" not in box, box
            assert box["answer"][0] == 200, box["answer"]
            body = box["detail"]["body"]
            assert "db.t" in body and "secret-ish" not in body and "***" in body
            if option == "Reject":
                assert run.state == DagRunState.FAILED
                assert _tree_digest(table_dir) == digest  # not a byte changed
                assert rust_rows(warehouse, "db.t") == main_before
            else:
                assert run.state == DagRunState.SUCCESS
                assert rust_rows(warehouse, "db.t") == rust_rows(warehouse, "db.t", branch="fix") == [(9, "b")]
