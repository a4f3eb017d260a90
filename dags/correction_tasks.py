"""Building blocks of the example DAGs (data correction and the original ETL).

Kept beside the DAG files (Airflow puts the DAGs folder on ``sys.path``) so users can
copy the folder as it is. What is here:

* ``job_path`` / ``JOBS_DIR``: the example Spark jobs live in ``dags/jobs/NAME.py``;
  a job name is a Python identifier naming one of them. The DAGs run them with the
  provider's ``PaimonSparkSubmitOperator``.
* ``resolve_warehouse``: the provider's rule (a warehouse param when given, else the
  ``paimon_default`` connection's) for plain ``@task`` functions and as a template
  macro (``{{ paimon_warehouse(params.warehouse) }}``).
* ``read_rows``: a table's rows with plain pypaimon (the check task).

A job the correction DAG runs (``dags/jobs/``; ``cascade_chain.py`` belongs to the
cascade example and has its own arguments) follows one contract: ``--warehouse W
--source DB.T --sink DB.T [--branch B] --version buggy|fixed [--mode batch|stream --checkpoint DIR]
[--job-name NAME]``, prints ``PAIMON_RESULT {json}`` and may define
``verify(source_rows, sink_rows) -> [problems]``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from airflow_provider_paimon.hooks.paimon import PaimonHook

JOBS_DIR = Path(__file__).resolve().parent / "jobs"
JOB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def known_jobs() -> list[str]:
    """Names of the jobs in ``dags/jobs/`` (files not starting with ``_``)."""
    return sorted(p.stem for p in JOBS_DIR.glob("*.py") if not p.stem.startswith("_"))


def job_path(name: str) -> Path:
    """The script of job ``name``; ``ValueError`` naming the known jobs when there is none."""
    if not isinstance(name, str) or not JOB_NAME.match(name):
        raise ValueError(f"job name {name!r} is not a Python identifier (known jobs: {', '.join(known_jobs())})")
    path = JOBS_DIR / f"{name}.py"
    if not path.is_file() or name.startswith("_"):
        raise ValueError(f"no job {name!r} in {JOBS_DIR} (known jobs: {', '.join(known_jobs())})")
    return path


def load_job_module(name: str) -> ModuleType:
    """Import job ``name``'s script as a module (its ``verify`` and helpers; no Spark started)."""
    path = job_path(name)
    spec = importlib.util.spec_from_file_location(f"paimon_example_job_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def paimon_hook_for(warehouse: str | None, conn_id: str | None = None) -> PaimonHook:
    """A PaimonHook on ``warehouse`` when given, else on the connection (``paimon_default``)."""
    return PaimonHook.for_task(warehouse, conn_id)


def resolve_warehouse(warehouse: str | None, conn_id: str | None = None) -> str:
    """The warehouse param when given, else the connection's warehouse."""
    return paimon_hook_for(warehouse, conn_id).warehouse


def read_rows(hook: PaimonHook, table: str, branch: str | None = None) -> list[dict[str, Any]]:
    """All rows of ``table`` (on ``branch``) read with plain pypaimon, as dicts."""
    pt = hook.get_table(table, branch)
    builder = pt.new_read_builder()
    splits = builder.new_scan().plan().splits()
    if not splits:
        return []
    return builder.new_read().to_arrow(splits).to_pylist()
