"""Pluggable lineage stores: factories found by entry point, and what the capture does with them.

The third-party case is real: a wheel with its own ``airflow_provider_paimon.lineage_meta``
entry point is built here, installed by pip into a folder, and that folder put on
``sys.path``; the package is then found by ``lineage-meta = <its identifier>`` and the
recorder writes through it (it implements only the proposal's interface, so the
one-row-at-a-time and barrier fallbacks are used).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from airflow_provider_paimon.lineage.entities import LineageFilter, TableLineage
from airflow_provider_paimon.lineage.errors import InvalidLineageArgumentError
from airflow_provider_paimon.lineage.meta import (
    ENTRY_POINT_GROUP,
    LineageMeta,
    LineageMetaContext,
    LineageMetaFactory,
    create_lineage_meta,
    factories,
    installed_identifiers,
)
from airflow_provider_paimon.lineage.meta_factories import memory_store
from airflow_provider_paimon.lineage.meta_options import lineage_meta_options
from airflow_provider_paimon.lineage.store import LineageStore
from airflow_provider_paimon.spark.lineage.config import capture_config
from airflow_provider_paimon.spark.lineage.recorder import BatchRecord, LineageRecorder, TableAt

ACME = '''
"""A lineage store that appends JSON lines to the file named by option acme.path."""
import json

INSTANCES = []


class AcmeMeta:
    def __init__(self, path):
        self.path = path

    def _add(self, kind, entity):
        row = {"kind": kind, "job": entity.job, "database": entity.database, "table": entity.table,
               "barrier_id": getattr(entity, "barrier_id", None),
               "snapshot_id": getattr(entity, "snapshot_id", None)}
        with open(self.path, "a") as fh:
            fh.write(json.dumps(row) + "\\n")

    def _rows(self, kind, predicate):
        try:
            with open(self.path) as fh:
                rows = [json.loads(line) for line in fh]
        except FileNotFoundError:
            return []
        from airflow_provider_paimon.lineage.entities import DataLineage
        out = [r for r in rows if r["kind"] == kind and (predicate is None or predicate.job in (None, r["job"]))]
        return [DataLineage(r["job"], r["database"], r["table"], r["barrier_id"], r["snapshot_id"]) for r in out]

    def store_source_table_lineage(self, entity): self._add("source_table", entity)
    def store_sink_table_lineage(self, entity): self._add("sink_table", entity)
    def store_source_data_lineage(self, entity): self._add("source_data", entity)
    def store_sink_data_lineage(self, entity): self._add("sink_data", entity)
    def source_table_lineages(self, predicate=None): return []
    def sink_table_lineages(self, predicate=None): return []
    def source_data_lineages(self, predicate=None): return self._rows("source_data", predicate)
    def sink_data_lineages(self, predicate=None): return self._rows("sink_data", predicate)
    def delete_source_table_lineage(self, job): return 0
    def delete_sink_table_lineage(self, job): return 0
    def close(self): pass


class AcmeFactory:
    def identifier(self):
        return "acme"

    def create(self, context):
        INSTANCES.append(context)
        return AcmeMeta(context.options()["acme.path"])
'''


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(directory: Path) -> Path:
    """A minimal, valid wheel of package ``acme_lineage`` with our entry point."""
    dist = "acme_lineage-0.1.dist-info"
    files = {
        "acme_lineage/__init__.py": ACME.encode(),
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: acme-lineage\nVersion: 0.1\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[{ENTRY_POINT_GROUP}]\nacme = acme_lineage:AcmeFactory\n".encode(),
    }
    record = [_record_line(p, d) for p, d in files.items()] + [f"{dist}/RECORD,,"]
    wheel = directory / "acme_lineage-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return wheel


@pytest.fixture(scope="module")
def acme_site(tmp_path_factory):
    """pip-install the wheel into a folder (not the venv): nothing outlives the test."""
    root = tmp_path_factory.mktemp("acme")
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(target), str(build_wheel(root))],
        check=True, timeout=120,
    )
    return target


@pytest.fixture
def with_acme(acme_site, monkeypatch):
    monkeypatch.syspath_prepend(str(acme_site))
    yield
    sys.modules.pop("acme_lineage", None)


def test_shipped_factories_are_entry_points():
    known = factories()
    assert {"jdbc", "memory"} <= set(known)
    assert all(isinstance(f, LineageMetaFactory) for f in known.values())
    assert "acme" not in installed_identifiers()  # not before it is installed


def test_a_third_party_factory_is_found_and_used(with_acme, tmp_path):
    assert "acme" in installed_identifiers()
    out = tmp_path / "acme.jsonl"
    settings = lineage_meta_options({"table-lineage": "true", "data-lineage": "true", "lineage-meta": "acme",
                                     "acme.path": str(out)})
    assert settings.meta == "acme"
    conf = {"spark.paimon.catalog.table-lineage": "true", "spark.paimon.catalog.data-lineage": "true",
            "spark.paimon.catalog.lineage-meta": "acme", "spark.paimon.catalog.acme.path": str(out),
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}
    rec = LineageRecorder(capture_config(conf, "job.acme", environ={}))
    rec.open()
    src, sink = TableAt("/wh", "db", "src", "main", 4), TableAt("/wh", "db", "dst", "main", 2)
    assert rec.record(BatchRecord("job.acme", None, [src], [sink], streaming=False))
    assert rec.record(BatchRecord("job.acme", None, [src], [sink], streaming=False))
    rec.close()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [(r["kind"], r["table"], r["barrier_id"], r["snapshot_id"]) for r in rows]
    # table lineage once, data lineage per barrier; barriers from the store's own rows
    assert kinds == [
        ("source_table", "src", None, None), ("sink_table", "dst", None, None),
        ("source_data", "src", 1, 4), ("sink_data", "dst", 1, 2),
        ("source_data", "src", 2, 4), ("sink_data", "dst", 2, 2),
    ]
    import acme_lineage

    context = acme_lineage.INSTANCES[-1]
    assert context.options()["acme.path"] == str(out) and context.database == "paimon"


def test_unknown_identifier_names_the_installed_ones(with_acme):
    with pytest.raises(InvalidLineageArgumentError, match="installed: acme, jdbc, memory"):
        lineage_meta_options({"data-lineage": "true", "lineage-meta": "acme2"})


def test_memory_factory_through_the_recorder(tmp_path):
    store = memory_store("t-recorder")
    store.clear()
    conf = {"spark.paimon.catalog.table-lineage": "true", "spark.paimon.catalog.lineage-meta": "memory",
            "spark.paimon.catalog.memory.name": "t-recorder", "spark.paimon.catalog.jdbc.password": "x",
            "spark.paimon.lineage.spoolDir": str(tmp_path / "spool")}
    rec = LineageRecorder(capture_config(conf, "job.mem", environ={}))
    rec.open()
    assert rec.record(BatchRecord("job.mem", None, [TableAt("/wh", "db", "a", "main", 1)],
                                  [TableAt("/wh", "db", "b", "main", 3)], streaming=False))
    rec.close()
    assert [(t.job, t.table) for t in store.source_table_lineages()] == [("job.mem", "a")]
    assert [(t.job, t.table) for t in store.sink_table_lineages(LineageFilter(job="job.mem"))] == [("job.mem", "b")]
    assert store.sink_data_lineages() == []  # table lineage only
    assert store.catalog_options["memory.name"] == "t-recorder"
    assert "jdbc.password" not in store.catalog_options  # secrets are not kept


def test_jdbc_factory_builds_the_sql_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'j.db'}"
    meta = create_lineage_meta("jdbc", LineageMetaContext({}, url, "paimon"))
    try:
        assert isinstance(meta, LineageStore) and isinstance(meta, LineageMeta)
        meta.store_sink_table_lineage(TableLineage("j", "db", "t"))
        assert [t.table for t in meta.sink_table_lineages(LineageFilter(job="j"))] == ["t"]
    finally:
        meta.close()
    assert "password" not in repr(LineageMetaContext({"jdbc.password": "pw"}, "mysql://u:pw@h/x"))


def test_a_broken_entry_point_is_skipped_and_logged(monkeypatch, caplog):
    from importlib import metadata

    from airflow_provider_paimon.lineage import meta

    broken = metadata.EntryPoint("broken", "no_such_module:Factory", ENTRY_POINT_GROUP)
    real = meta._entry_points
    monkeypatch.setattr(meta, "_entry_points", lambda: [*real(), broken])
    caplog.set_level(logging.WARNING)
    assert "broken" not in factories() and "jdbc" in factories()
    assert "no_such_module" in caplog.text


def test_shipped_factories_are_known_without_package_metadata(monkeypatch):
    """A job whose code came as a --py-files zip has no entry points: jdbc still works."""
    from airflow_provider_paimon.lineage import meta

    monkeypatch.setattr(meta, "_entry_points", lambda: [])
    assert installed_identifiers() == ["jdbc", "memory"]
    assert lineage_meta_options({"table-lineage": "true", "lineage-meta": "jdbc"}).meta == "jdbc"
