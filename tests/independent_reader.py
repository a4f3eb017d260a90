"""pypaimon-rust: an independent reader of the tables this project writes (test only).

pypaimon-rust (Paimon's Rust implementation with a DataFusion SQL binding) shares no
code with pypaimon, so a table state it reads with the same rows is in Paimon's format,
not just in pypaimon's reading of it. It is a test-only dependency kept out of the
package's virtualenv: it runs in its own interpreter, ``$PAIMON_RUST_PYTHON`` (default
``/opt/pypaimon-rust-venv/bin/python``; create it with
``python3 -m venv /opt/pypaimon-rust-venv && /opt/pypaimon-rust-venv/bin/pip install
pypaimon-rust==0.4.0 pyarrow``). Tests that need it skip with that instruction when it
is missing.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections import Counter

import pyarrow as pa
import pytest

RUST_PYTHON = os.environ.get("PAIMON_RUST_PYTHON", "/opt/pypaimon-rust-venv/bin/python")

_SCRIPT = r"""
import sys
import pyarrow as pa
from pypaimon_rust.datafusion import SQLContext

warehouse, table, out = sys.argv[1], sys.argv[2], sys.argv[3]
ctx = SQLContext()
ctx.register_catalog("p", {"warehouse": warehouse})
batches = ctx.sql(f"SELECT * FROM p.{table}")
with pa.OSFile(out, "wb") as sink:
    if batches:
        data = pa.Table.from_batches(batches)
        with pa.ipc.new_file(sink, data.schema) as writer:
            writer.write_table(data)
"""


def available() -> bool:
    if not os.path.exists(RUST_PYTHON):
        return False
    probe = subprocess.run([RUST_PYTHON, "-c", "import pypaimon_rust.datafusion"],
                           capture_output=True, check=False)
    return probe.returncode == 0


def require() -> None:
    if not available():
        pytest.skip(
            f"pypaimon-rust is not installed at {RUST_PYTHON} (set $PAIMON_RUST_PYTHON); see "
            "tests/independent_reader.py for the two commands that install it"
        )


def read_rows(warehouse: str, table: str = "db.t") -> Counter:
    """Every row of ``table``'s latest snapshot as pypaimon-rust reads it (a multiset)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.arrow")
        done = subprocess.run([RUST_PYTHON, "-c", _SCRIPT, warehouse, table, out],
                              capture_output=True, text=True, check=False, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"pypaimon-rust could not read {table}: {done.stderr[-2000:]}")
        if os.path.getsize(out) == 0:
            return Counter()
        with pa.memory_map(out) as source:
            data = pa.ipc.open_file(source).read_all()
    return Counter(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))
