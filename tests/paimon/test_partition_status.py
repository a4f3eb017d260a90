"""partition_status / mark_partition_done on real pypaimon tables (no Spark).

The reference for "has data" is a plain pypaimon read of the partition; for "done",
Paimon Java's ``SuccessFile`` JSON as ``JsonSerdeUtil.toJson`` writes it.
"""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pytest
from pypaimon import Schema
from support.pypaimon_writes import commit_rows

from airflow_provider_paimon.paimon import branch as branch_ops
from airflow_provider_paimon.paimon.catalog import load_table, open_catalog
from airflow_provider_paimon.paimon.errors import BranchNotFoundError, InvalidArgumentError
from airflow_provider_paimon.paimon.partition_status import (
    SuccessFile,
    SuccessFileError,
    mark_partition_done,
    partition_path,
    partition_status,
)

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hr", pa.int32())])


def make(warehouse: str, options: dict[str, str] | None = None, schema: pa.Schema = SCHEMA, keys=("dt", "hr")):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=list(keys), options=options or {}), False)
    return catalog, load_table(catalog, "db.t")


def write(table, rows: list[dict], overwrite: dict | None = None, schema: pa.Schema = SCHEMA) -> None:
    if overwrite is not None:  # static: an empty overwrite empties the partition
        table = table.copy({"dynamic-partition-overwrite": "false"})
    commit_rows(table, rows, schema, overwrite=overwrite)


def reference_rows(catalog, partition: dict, branch: str | None = None) -> int:
    """Rows of the partition by a plain pypaimon read of the whole table."""
    table = load_table(catalog, "db.t", branch)
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sum(all(str(r[k]) == str(v) for k, v in partition.items()) for r in data)


def tree(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), path) for r, _d, fs in os.walk(path) for f in fs)


def test_has_data_follows_writes_overwrites_and_branches(warehouse):
    catalog, t = make(warehouse)
    day = {"dt": "2026-11-03"}
    before = partition_status(t, day)
    assert (before.has_data, before.file_count, before.row_count, before.snapshot_id) == (False, 0, 0, None)

    write(t, [{"id": 1, "dt": "2026-11-03", "hr": 1}, {"id": 2, "dt": "2026-11-03", "hr": 2}])
    write(t, [{"id": 3, "dt": "2026-11-03", "hr": 1}, {"id": 4, "dt": "2026-11-04", "hr": 1}])
    now = partition_status(t, day)
    assert now.has_data and now.snapshot_id == 2 and now.branch == "main"
    assert now.row_count == reference_rows(catalog, day) == 3
    assert now.file_count >= 2 and now.path == "dt=2026-11-03"
    assert partition_status(t, {"dt": "2026-11-03", "hr": "2"}).row_count == 1
    assert not partition_status(t, {"dt": "2026-11-05"}).has_data  # another partition
    assert not partition_status(t, {"dt": "2026-11-03", "hr": 3}).has_data

    # an overwrite that empties the partition: no data again; the other day stays
    write(t, [], overwrite={"dt": "2026-11-03"})
    emptied = partition_status(t, day)
    assert (emptied.has_data, emptied.row_count, emptied.snapshot_id) == (False, 0, 3)
    assert reference_rows(catalog, day) == 0
    assert partition_status(t, {"dt": "2026-11-04"}).row_count == reference_rows(catalog, {"dt": "2026-11-04"}) == 1

    # a branch has its own snapshots: data there is not main's, and the other way round
    branch_ops.create_branch(t, "fix")
    write(load_table(catalog, "db.t", "fix"), [{"id": 9, "dt": "2026-11-03", "hr": 5}])
    on_fix = partition_status(t, day, branch="fix")
    assert on_fix.has_data and on_fix.branch == "fix" and on_fix.row_count == reference_rows(catalog, day, "fix") == 1
    assert not partition_status(t, day).has_data
    assert partition_status(load_table(catalog, "db.t", "fix"), day).has_data  # a branch table reads itself
    assert not partition_status(load_table(catalog, "db.t", "fix"), day, branch="main").has_data
    with pytest.raises(BranchNotFoundError, match="ghost"):
        partition_status(t, day, branch="ghost")


def test_mark_done_writes_javas_success_file(warehouse):
    _catalog, t = make(warehouse)
    write(t, [{"id": 1, "dt": "2026-11-03", "hr": 1}])
    day = {"dt": "2026-11-03", "hr": "1"}
    assert not partition_status(t, day).done

    first = mark_partition_done(t, day, now_millis=1_700_000_000_000)
    path = os.path.join(warehouse, "db.db", "t", "dt=2026-11-03", "hr=1", "_SUCCESS")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    # Jackson's default pretty printer, field names of org.apache.paimon.partition.file.SuccessFile
    assert text == '{\n  "creationTime" : 1700000000000,\n  "modificationTime" : 1700000000000\n}'
    assert json.loads(text) == {"creationTime": 1_700_000_000_000, "modificationTime": 1_700_000_000_000}
    status = partition_status(t, day)
    assert status.done and status.success_file == first == SuccessFile(1_700_000_000_000, 1_700_000_000_000)
    assert status.to_dict()["success_file"] == {"creationTime": 1_700_000_000_000, "modificationTime": 1_700_000_000_000}
    assert not partition_status(t, {"dt": "2026-11-03"}).done  # the dt=... directory has no mark

    # marking again keeps creationTime, moves modificationTime (SuccessFileMarkDoneAction)
    second = mark_partition_done(t, day, now_millis=1_700_000_005_000)
    assert second == SuccessFile(1_700_000_000_000, 1_700_000_005_000)
    assert partition_status(t, day).success_file == second
    # real clock: a mark without data is allowed (Java marks what the writer says)
    mark_partition_done(t, {"dt": "2026-11-09"})
    empty = partition_status(t, {"dt": "2026-11-09"})
    assert empty.done and not empty.has_data and empty.success_file.creation_time > 1_700_000_005_000


def test_success_file_written_by_java_is_read(warehouse):
    """A file with Java's compact form and extra fields reads too (ignoreUnknown)."""
    _catalog, t = make(warehouse)
    d = os.path.join(warehouse, "db.db", "t", "dt=x", "hr=1")
    os.makedirs(d)
    with open(os.path.join(d, "_SUCCESS"), "w") as fh:
        fh.write('{"creationTime":5,"modificationTime":7,"extra":1}')
    assert partition_status(t, {"dt": "x", "hr": 1}).success_file == SuccessFile(5, 7)
    with open(os.path.join(d, "_SUCCESS"), "w") as fh:
        fh.write("")  # e.g. Hadoop's empty _SUCCESS: Java's reader refuses it too
    with pytest.raises(SuccessFileError, match="not a Paimon success file"):
        partition_status(t, {"dt": "x", "hr": 1})


def test_partition_path_follows_paimon_naming(warehouse):
    """Escaping, the default name for null, and legacy names, as the data directories."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("s", pa.string())])
    _catalog, t = make(warehouse, {"partition.default-name": "NULLP"}, schema, ("dt", "s"))
    write(t, [{"id": 1, "dt": dt.date(2026, 11, 3), "s": "a/b:c=d"}, {"id": 2, "dt": dt.date(2026, 11, 3), "s": None}], schema=schema)
    days = (dt.date(2026, 11, 3) - dt.date(1970, 1, 1)).days  # partition.legacy-name=true
    assert partition_path(t, {"dt": "2026-11-03", "s": "a/b:c=d"}) == f"dt={days}/s=a%2Fb%3Ac%3Dd"
    assert partition_path(t, {"dt": "2026-11-03", "s": "NULLP"}) == f"dt={days}/s=NULLP"
    data_dirs = {os.path.dirname(os.path.dirname(p)) for p in tree(os.path.join(warehouse, "db.db", "t")) if "bucket-" in p}
    assert data_dirs == {f"dt={days}/s=a%2Fb%3Ac%3Dd", f"dt={days}/s=NULLP"}
    assert partition_status(t, {"dt": "2026-11-03", "s": "NULLP"}).row_count == 1
    assert partition_status(t, {"dt": "2026-11-03", "s": None}).row_count == 1
    mark_partition_done(t, {"dt": "2026-11-03", "s": "a/b:c=d"})
    assert os.path.exists(os.path.join(warehouse, "db.db", "t", f"dt={days}", "s=a%2Fb%3Ac%3Dd", "_SUCCESS"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"day": "2026-11-03"}, r"day.*not a partition column.*partition columns: dt, hr"),
        ({"hr": "1"}, r"leading partition columns.*\(dt, hr\).*give dt"),
        ({"dt": "x", "hr": "one"}, r"'one'.*'hr'.*INT"),
        ({}, r"non-empty mapping.*partition columns of db.t: dt, hr"),
    ],
)
def test_bad_partition_refused_and_nothing_written(warehouse, spec, message):
    _catalog, t = make(warehouse)
    write(t, [{"id": 1, "dt": "x", "hr": 1}])
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match=message):
        mark_partition_done(t, spec)
    with pytest.raises(InvalidArgumentError, match=message):
        partition_status(t, spec)
    assert tree(warehouse) == before


def test_unpartitioned_and_other_mark_done_actions_refused(warehouse):
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.flat", Schema.from_pyarrow_schema(SCHEMA), False)
    flat = load_table(catalog, "db.flat")
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        mark_partition_done(flat, {"dt": "x"})
    _c, t = make(warehouse, {"partition.mark-done-action": "done-partition"})
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match=r"partition.mark-done-action='done-partition'.*success-file"):
        mark_partition_done(t, {"dt": "x"})
    assert tree(warehouse) == before
    _c2, t2 = make(os.path.join(warehouse, "w2"), {"partition.mark-done-action": "success-file,done-partition"})
    assert mark_partition_done(t2, {"dt": "x"}, now_millis=1).creation_time == 1


def test_mark_done_on_s3(s3_warehouse):
    """Through the table's file IO: the success file lands in the bucket."""
    catalog = open_catalog(s3_warehouse.uri, s3_warehouse.options)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt", "hr"]), False)
    t = load_table(catalog, "db.t")
    write(t, [{"id": 1, "dt": "2026-11-03", "hr": 1}])
    assert partition_status(t, {"dt": "2026-11-03"}).has_data
    mark_partition_done(t, {"dt": "2026-11-03"}, now_millis=10)
    mark_partition_done(t, {"dt": "2026-11-03"}, now_millis=20)
    text = t.file_io.read_file_utf8(f"{s3_warehouse.uri}/db.db/t/dt=2026-11-03/_SUCCESS")
    assert SuccessFile.from_json(text) == SuccessFile(10, 20)
    assert partition_status(load_table(catalog, "db.t"), {"dt": "2026-11-03"}).success_file == SuccessFile(10, 20)
