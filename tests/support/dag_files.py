"""Write a DAG file into the test run's DAGs folder and import it, for ``dag.test()``."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType


def load_dag_file(name: str, source: str) -> ModuleType:
    """Write ``source`` as ``<DAGs folder>/<name>.py`` and import it (``module.dag.test()``
    then runs it against the session's metadata DB, other DAGs of the file registered)."""
    folder = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
