"""Put bytecode into the zips Spark's Python processes import pyspark and py4j from.

Spark starts its Python processes (the daemons and workers behind every UDF and every
Python data source call, and the driver of a spark-submit) with
``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on ``PYTHONPATH``. pip's
pyspark ships those zips with sources only, and Python never writes bytecode into a zip:
so every such process compiled pyspark from source again, ~0.8 s of CPU each (measured
2026-11-27: ``import pyspark.worker`` 1.0-1.3 s of CPU from the zip, 0.2-0.3 s with
bytecode), and a local Spark session starts one daemon per kind of Python work (seven for
a write and a read through the ``paimon`` data source).

This adds ``module.pyc`` beside each ``module.py`` in those zips (where zipimport looks
first), as checked-hash bytecode: the source is still read and hashed, so a changed
source is compiled again, and a Python with another bytecode version ignores the files.
Idempotent: a zip that already holds bytecode is left alone. Run by scripts/bootstrap.sh.

Usage: python scripts/compile_spark_zips.py [SPARK_PYTHON_LIB_DIR]
(default: the lib directory of the pyspark this Python imports).
"""

from __future__ import annotations

import os
import py_compile
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path


def spark_python_lib() -> Path:
    """The directory holding pyspark.zip for the pyspark this interpreter imports."""
    import pyspark  # the heavy import only when no directory is given

    return Path(pyspark.__file__).parent / "python" / "lib"


def add_bytecode(archive: Path) -> int:
    """Rewrite ``archive`` with a .pyc beside each .py; return how many were added."""
    with zipfile.ZipFile(archive) as source:
        entries = source.infolist()
        if any(e.filename.endswith(".pyc") for e in entries):
            return 0
        with tempfile.TemporaryDirectory(prefix="spark-zip-") as scratch:
            compiled: dict[str, bytes] = {}
            for entry in entries:
                if not entry.filename.endswith(".py") or "/tests/" in entry.filename:
                    continue  # pyspark's own test modules: no Spark process imports them
                py = Path(scratch, entry.filename)
                py.parent.mkdir(parents=True, exist_ok=True)
                py.write_bytes(source.read(entry))
                pyc = py.with_suffix(".pyc")
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # pyspark's own SyntaxWarnings: not ours
                        py_compile.compile(
                            str(py),
                            cfile=str(pyc),
                            # Tracebacks name the file inside the zip, as they did before.
                            dfile=f"{archive}/{entry.filename}",
                            doraise=True,
                            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                        )
                except py_compile.PyCompileError:
                    continue  # e.g. a Python-2-only file: left to compile (and fail) as before
                compiled[entry.filename[:-3] + ".pyc"] = pyc.read_bytes()
            partial = archive.with_name(archive.name + ".partial")
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as target:
                for entry in entries:
                    target.writestr(entry, source.read(entry))
                for name, data in compiled.items():
                    target.writestr(name, data)
    os.replace(partial, archive)  # readers see the old zip or the new one, never half
    return len(compiled)


def main(argv: list[str]) -> int:
    lib = Path(argv[1]) if len(argv) > 1 else spark_python_lib()
    archives = sorted(lib.glob("*.zip"))
    if not archives:
        print(f"compile_spark_zips: no zip in {lib}", file=sys.stderr)
        return 1
    for archive in archives:
        added = add_bytecode(archive)
        if added:
            print(
                f"compile_spark_zips: {archive.name}: bytecode for {added} modules", file=sys.stderr
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
