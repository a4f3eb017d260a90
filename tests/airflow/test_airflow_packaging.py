"""The --py-files zip: Airflow-free parts only, cached per version + content hash."""

from __future__ import annotations

import zipfile
from pathlib import Path

from airflow_provider_paimon import __version__
from airflow_provider_paimon.packaging import build_py_files_zip, content_hash, launcher_path


def test_zip_holds_the_job_code_and_not_the_airflow_layer(tmp_path):
    path = build_py_files_zip(tmp_path)
    assert Path(path).name.startswith(f"airflow_provider_paimon-{__version__}-")
    names = set(zipfile.ZipFile(path).namelist())
    assert "airflow_provider_paimon/__init__.py" in names
    assert "airflow_provider_paimon/spark/jobs/launcher.py" in names
    assert "airflow_provider_paimon/paimon/catalog.py" in names
    assert not any(n.startswith(("airflow_provider_paimon/hooks/", "airflow_provider_paimon/operators/")) for n in names)
    assert not any("__pycache__" in n for n in names)
    assert Path(launcher_path()).is_file()


def test_zip_is_cached_and_rebuilt_when_content_changes(tmp_path):
    first = build_py_files_zip(tmp_path)
    mtime = Path(first).stat().st_mtime_ns
    assert build_py_files_zip(tmp_path) == first
    assert Path(first).stat().st_mtime_ns == mtime  # reused, not rewritten

    root = tmp_path / "pkg"
    (root / "spark").mkdir(parents=True)
    module = root / "spark" / "m.py"
    module.write_text("x = 1\n")
    before = content_hash([module], root)
    module.write_text("x = 2\n")
    assert content_hash([module], root) != before


def test_zip_carries_each_modules_bytecode_which_python_imports(tmp_path):
    """Python writes no bytecode cache for a zip's modules: without the .pyc beside each
    .py every Spark worker would compile the package from source again."""
    import subprocess
    import sys

    path = build_py_files_zip(tmp_path)
    names = set(zipfile.ZipFile(path).namelist())
    sources = {n for n in names if n.endswith(".py")}
    assert sources and {n + "c" for n in sources} <= names
    code = ("import os, sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
            "sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or '.', 'airflow_provider_paimon'))]; "
            f"sys.path.insert(0, {path!r}); "
            "import airflow_provider_paimon.spark.datasource.writer as w; print(w.__file__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == f"{path}/airflow_provider_paimon/spark/datasource/writer.pyc"
