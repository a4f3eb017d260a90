"""Zip this package for spark-submit's ``--py-files``, so its code reaches the cluster.

The cluster gets the Airflow-free parts only (``paimon``, ``lineage``, ``spark`` and the
package root): executors have no Airflow, and shipping the Airflow layer would invite an
import of it there. The zip is cached under a name made of the package version and a
hash of the shipped files' contents (and of the Python that compiled them), so it is
built once per code change and a stale zip is never reused after an edit (development
installs change without a version bump).

Each module goes in with its bytecode (``.pyc`` beside the ``.py``, unchecked-hash, as
``py_compile`` writes it): Python imports a zip's modules without writing bytecode
caches, so without it every Python worker compiles the modules it imports from source,
again and again (~0.3 s of CPU per worker for the data source's modules, more on a
loaded server: benchmarks/worker_preload.py). A worker of another Python version
ignores bytecode that is not its own and compiles the source, as before.

Imports no Airflow: a notebook or CI script can build the zip too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import airflow_provider_paimon

PACKAGE_NAME = "airflow_provider_paimon"
CACHE_DIR_ENV = "PAIMON_PY_FILES_CACHE_DIR"

# The Airflow layer stays on the Airflow side.
_EXCLUDED_TOP_LEVEL = {"hooks", "operators", "sensors", "triggers", "plugins", "get_provider_info.py"}
_SHIPPED_SUFFIXES = {".py", ".json", ".sql"}


def package_dir() -> Path:
    """The directory of the installed ``airflow_provider_paimon`` package."""
    return Path(airflow_provider_paimon.__file__).resolve().parent


def launcher_path() -> str:
    """Absolute path of ``spark/jobs/launcher.py``, the application spark-submit runs."""
    return str(package_dir() / "spark" / "jobs" / "launcher.py")


def shipped_files(root: Path | None = None) -> list[Path]:
    """The files that go into the zip, sorted so the content hash is stable."""
    root = root or package_dir()
    files = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if not path.is_file() or "__pycache__" in rel.parts:
            continue
        if rel.parts[0] in _EXCLUDED_TOP_LEVEL or path.suffix not in _SHIPPED_SUFFIXES:
            continue
        files.append(path)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def bytecode(source: bytes, filename: str) -> bytes:
    """``source`` compiled, as an unchecked-hash ``.pyc`` (what ``py_compile`` writes
    with ``PycInvalidationMode.UNCHECKED_HASH``): a zip's ``.py`` and ``.pyc`` are
    written together and never diverge, so the import needs no check of the source."""
    code = compile(source, filename, "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")  # hash-based, source not checked
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def content_hash(files: list[Path], root: Path, salt: str = "") -> str:
    """A short hash over the shipped files' relative paths and bytes (and ``salt``)."""
    digest = hashlib.sha256(salt.encode())
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """``$PAIMON_PY_FILES_CACHE_DIR`` or ``<tmp>/airflow-provider-paimon-pyfiles``."""
    configured = os.environ.get(CACHE_DIR_ENV)
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "airflow-provider-paimon-pyfiles"


def build_py_files_zip(target_dir: Path | None = None) -> str:
    """Return the path of the package zip, building it if this version+content is not cached.

    The zip is written to a temporary name and renamed into place, so concurrent tasks
    on one worker never see a half-written file.
    """
    root = package_dir()
    files = shipped_files(root)
    digest = content_hash(files, root, sys.implementation.cache_tag or "")
    name = f"{PACKAGE_NAME}-{airflow_provider_paimon.__version__}-{digest}.zip"
    target_dir = target_dir or cache_dir()
    target = target_dir / name
    if target.is_file():
        return str(target)
    target_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".building-", suffix=".zip", dir=target_dir)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp_name, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                arcname = f"{PACKAGE_NAME}/{path.relative_to(root).as_posix()}"
                zf.write(path, arcname)
                if path.suffix == ".py":
                    zf.writestr(arcname + "c", bytecode(path.read_bytes(), arcname))
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return str(target)
