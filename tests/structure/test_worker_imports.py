"""What a Spark Python worker of the ``paimon`` source imports: nothing it does not use.

Spark forks a worker for every planning step and task, and each imports the data
source's modules afresh (outside a preloading daemon). SQLAlchemy (~0.3 s of CPU to
import) belongs to the lineage store: a read or write that configures no lineage store
must not load it (lineage/url.py imports it where a URL is parsed or built).
"""

from __future__ import annotations

import subprocess
import sys

WORKER_MODULES = (
    "airflow_provider_paimon.spark.datasource.source",
    "airflow_provider_paimon.spark.datasource.reader",
    "airflow_provider_paimon.spark.datasource.writer",
    "airflow_provider_paimon.spark.datasource.streaming_reader",
    "airflow_provider_paimon.spark.datasource.streaming_writer",
)


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        check=True, capture_output=True, text=True,
    ).stdout
    return set(out.split())


def test_the_data_sources_modules_load_no_sqlalchemy():
    loaded = _loaded_after("\n".join(f"import {m}" for m in WORKER_MODULES))
    assert set(WORKER_MODULES) <= loaded
    assert "sqlalchemy" not in loaded


def test_options_without_a_lineage_store_load_no_sqlalchemy_and_with_one_they_do(tmp_path):
    parse = "from airflow_provider_paimon.spark.options import parse_options\n"
    plain = _loaded_after(parse + f"parse_options({{'warehouse': {str(tmp_path)!r}, 'table': 'db.t'}})")
    assert "sqlalchemy" not in plain
    store = f"sqlite:///{tmp_path / 'lineage.db'}"
    with_store = _loaded_after(
        parse + f"o = parse_options({{'warehouse': {str(tmp_path)!r}, 'table': 'db.t', "
        f"'table-lineage': 'true', 'jdbc.url': {store!r}}})\n"
        "assert o.lineage.url.get_backend_name() == 'sqlite'"
    )
    assert "sqlalchemy" in with_store
