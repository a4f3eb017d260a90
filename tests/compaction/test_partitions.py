"""``--partition`` selects partitions of every type by value, parsed by the column's type."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pypaimon import Schema

from airflow_provider_paimon.job_contract import parse_result
from airflow_provider_paimon.paimon.catalog import open_catalog
from airflow_provider_paimon.paimon.compaction.errors import PartitionNotFoundError
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.plan import partition_spec_filter
from airflow_provider_paimon.paimon.compaction.runner import compact
from airflow_provider_paimon.paimon.compaction.scan import latest_snapshot, live_entries
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partitions import split_partition_text
from airflow_provider_paimon.spark.jobs import compact as job

from .helpers import SMALL, append, files_on_disk, reload, row_multiset

UTC = dt.timezone.utc

# type -> (arrow type, partition compacted, partition left alone, how a user writes the first)
CASES: dict[str, tuple[pa.DataType, Any, Any, str]] = {
    "string": (pa.string(), "eu", "us", "eu"),
    "int": (pa.int32(), 7, 8, "7"),
    "bigint": (pa.int64(), 2**40, 5, str(2**40)),
    "date": (pa.date32(), dt.date(2026, 11, 3), dt.date(2026, 11, 4), "2026-11-03"),
    "timestamp": (pa.timestamp("us", tz="UTC"), dt.datetime(2026, 11, 3, 10, 15, tzinfo=UTC),
                  dt.datetime(2026, 11, 3, 11, 0, tzinfo=UTC), "2026-11-03T10:15:00Z"),
    "timestamp_ntz": (pa.timestamp("us"), dt.datetime(2026, 11, 3, 10, 15),
                      dt.datetime(2026, 11, 3, 9, 0), "2026-11-03 10:15:00"),
    "decimal": (pa.decimal128(10, 2), Decimal("1.50"), Decimal("2.25"), "1.5"),
    "boolean": (pa.bool_(), True, False, "TRUE"),
}


def _typed_table(warehouse: str, arrow_type: pa.DataType, values: list[Any], commits: int = 3,
                 **options: str) -> Any:
    """``db.t`` partitioned by ``p`` of ``arrow_type``: ``commits`` small files per value."""
    schema = pa.schema([("p", arrow_type), ("id", pa.int64())])
    catalog = open_catalog(warehouse)
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        schema, partition_keys=["p"], options={**SMALL, **options}), False)
    table = reload(warehouse)
    for i in range(commits):
        rows = [{"p": v, "id": i * 100 + j} for j, v in enumerate(values)]
        append(table, pa.Table.from_pylist(rows, schema=schema))
    return reload(warehouse)


def _files_per_partition(table: Any) -> Counter:
    return Counter(e.partition.values[0] for e in live_entries(table, latest_snapshot(table)))


@pytest.mark.parametrize("name", list(CASES))
def test_partition_of_every_type_compacts_only_that_partition(warehouse, name):
    arrow_type, target, other, spec = CASES[name]
    table = _typed_table(warehouse, arrow_type, [target, other, None])
    rows = row_multiset(table)
    assert _files_per_partition(table) == {target: 3, other: 3, None: 3}

    only = partition_spec_filter(table, [split_partition_text(f"p={spec}")])
    result = compact(table, CompactionOptions.from_table(table), partition_filter=only)

    table = reload(warehouse)
    assert result.committed and result.files_before == 3 and result.files_after == 1
    assert _files_per_partition(table) == {target: 1, other: 3, None: 3}
    assert row_multiset(table) == rows


def test_null_partition_is_selected_by_the_default_name(warehouse):
    arrow_type, target, _other, _spec = CASES["date"]
    table = _typed_table(warehouse, arrow_type, [target, None])
    only = partition_spec_filter(table, [split_partition_text("p=__DEFAULT_PARTITION__")])
    compact(table, CompactionOptions.from_table(table), partition_filter=only)
    assert _files_per_partition(reload(warehouse)) == {target: 3, None: 1}


@pytest.mark.parametrize(("legacy", "folder"), [("true", "p=20760"), ("false", "p=2026-11-03")])
def test_compacted_files_land_in_the_tables_partition_folders(warehouse, legacy, folder):
    """Both of Paimon's folder namings: readers recompute the folder, so it must match."""
    arrow_type, target, other, spec = CASES["date"]
    table = _typed_table(warehouse, arrow_type, [target, other], **{"partition.legacy-name": legacy})
    rows = row_multiset(table)
    only = partition_spec_filter(table, [split_partition_text(f"p={spec}")])
    assert compact(table, CompactionOptions.from_table(table), partition_filter=only).committed
    table = reload(warehouse)
    assert row_multiset(table) == rows  # plain pypaimon finds every file
    compacted = [p for p in files_on_disk(warehouse) if "data-compact-" in p]
    assert compacted and all(f"/{folder}/bucket-0/" in p for p in compacted)


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("date", "2026-13-45", InvalidArgumentError,
         "value '2026-13-45' of partition column 'p' is not a valid DATE"),
        ("int", "abc", InvalidArgumentError, "value 'abc' of partition column 'p' is not a valid INT"),
        ("boolean", "yes", InvalidArgumentError, "use true or false"),
        ("date", "2026-11-05", PartitionNotFoundError,
         r"p=2026-11-05 does not exist in db.t \(partitions: p=2026-11-03, p=2026-11-04\)"),
        ("timestamp", "2026-11-03 12:00Z", PartitionNotFoundError,
         r"partitions: p=2026-11-03 10:15:00Z, p=2026-11-03 11:00:00Z"),
    ],
)
def test_bad_or_missing_partition_is_refused(warehouse, name, value, error, message):
    arrow_type, target, other, _spec = CASES[name]
    table = _typed_table(warehouse, arrow_type, [target, other], commits=1)
    with pytest.raises(error, match=message):
        partition_spec_filter(table, [split_partition_text(f"p={value}")])


@pytest.mark.spark
def test_job_compacts_a_date_partition_and_refuses_a_bad_date(spark, warehouse, capsys):
    arrow_type, target, other, _spec = CASES["date"]
    table = _typed_table(warehouse, arrow_type, [target, other])
    rows = row_multiset(table)

    disk = files_on_disk(warehouse)
    code = job.main(["--warehouse", warehouse, "--table", "db.t", "--partition", "p=2026-13-45"])
    out = capsys.readouterr()
    assert code == 2 and parse_result(out.out) is None
    assert "not a valid DATE" in out.err and files_on_disk(warehouse) == disk

    code = job.main(["--warehouse", warehouse, "--table", "db.t", "--partition", "p=2026-11-03"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = parse_result(out.out)
    assert result["committed"] is True and result["files_before"] == 3
    table = reload(warehouse)
    assert _files_per_partition(table) == {target: 1, other: 3}
    assert row_multiset(table) == rows
