"""Planning: Paimon's candidate, packing and min-file-num rules; options; selection."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_provider_paimon.paimon.compaction.errors import (
    NotCompactableError,
    PartitionNotFoundError,
)
from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
from airflow_provider_paimon.paimon.compaction.plan import (
    pack_bucket_in_order,
    pack_by_size,
    partition_spec_filter,
    plan_compaction,
)
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.partitions import split_partition_text

from .helpers import SMALL, append_many, make_table

KB = 1024


def _file(name: str, size: int, seq: int = 0) -> SimpleNamespace:
    return SimpleNamespace(file_name=name, file_size=size, min_sequence_number=seq,
                           max_sequence_number=seq, creation_time=None, row_count=1)


def _opts(**kw) -> CompactionOptions:
    base = dict(target_file_size=100 * KB, small_file_ratio=0.7, min_file_num=3, open_file_cost=0)
    base.update(kw)
    return CompactionOptions(**base)


def test_defaults_are_paimons():
    opts = CompactionOptions()
    assert opts.target_file_size == 256 * 1024 * 1024
    assert opts.small_file_ratio == 0.7
    assert opts.min_file_num == 5
    assert opts.open_file_cost == 4 * 1024 * 1024
    assert opts.compaction_file_size == int(256 * 1024 * 1024 * 0.7)


def test_options_from_table_then_overrides(warehouse):
    table = make_table(warehouse, options={"target-file-size": "1 mb", "compaction.min.file-num": "7"})
    opts = CompactionOptions.from_table(table)
    assert (opts.target_file_size, opts.min_file_num) == (1024 * 1024, 7)
    opts = CompactionOptions.from_table(table, {"compaction.min.file-num": "2", "unrelated": "x"})
    assert (opts.target_file_size, opts.min_file_num) == (1024 * 1024, 2)


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"target-file-size": "-1 mb"}, "must not be negative"),
        ({"target-file-size": "0"}, "must be a positive size"),
        ({"target-file-size": "lots"}, "must be a size"),
        ({"compaction.min.file-num": "0"}, "at least 1"),
        ({"compaction.min.file-num": "two"}, "must be an integer"),
        ({"compaction.small-file-ratio": "1.5"}, "(0, 1]"),
        ({"source.split.open-file-cost": "-5"}, "must not be negative"),
    ],
)
def test_nonsensical_options_rejected(overrides, fragment):
    with pytest.raises(InvalidArgumentError) as err:
        CompactionOptions.from_mapping(overrides)
    assert fragment in str(err.value)


def test_only_small_files_are_candidates_and_bins_fill_to_twice_target():
    opts = _opts()
    files = [_file(f"f{i}", 30 * KB) for i in range(10)] + [_file("big", 70 * KB)]
    bins = pack_by_size(files, opts)
    # 70 KB is not < 0.7 x 100 KB: never a candidate.
    assert all("big" not in [f.file_name for f in b] for b in bins)
    # 30 KB files: a bin is full at >= 200 KB, i.e. 7 files; 3 left over >= min 3.
    assert [len(b) for b in bins] == [7, 3]


def test_leftovers_below_min_file_num_wait():
    opts = _opts(min_file_num=5)
    bins = pack_by_size([_file(f"f{i}", 30 * KB) for i in range(4)], opts)
    assert bins == []


def test_open_file_cost_counts_per_file():
    opts = _opts(open_file_cost=50 * KB)
    bins = pack_by_size([_file(f"f{i}", 10 * KB) for i in range(6)], opts)
    # 60 KB each with the cost: full at 4 files; the 2 left are fewer than min 3.
    assert [len(b) for b in bins] == [4]


def test_single_file_bins_never_planned():
    bins = pack_by_size([_file("only", 1 * KB)], _opts(min_file_num=1))
    assert bins == []


def test_bucketed_packing_keeps_sequence_order_and_large_files_split_runs():
    opts = _opts(min_file_num=2)
    files = [_file("s1", 10 * KB, 1), _file("s2", 10 * KB, 2), _file("L", 90 * KB, 3),
             _file("s4", 10 * KB, 4), _file("s5", 10 * KB, 5), _file("s6", 10 * KB, 6)]
    bins = pack_bucket_in_order(list(reversed(files)), opts)
    assert [[f.file_name for f in b] for b in bins] == [["s1", "s2"], ["s4", "s5", "s6"]]


def test_plan_on_real_table_groups_per_partition(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 6)
    plan = plan_compaction(table, CompactionOptions.from_table(table))
    assert plan.snapshot_id == 6
    assert plan.files_scanned == 12 and plan.candidates == 12
    assert {b.partition for b in plan.bins} == {("a",), ("b",)}
    assert plan.files_before == 12
    d = plan.to_dict()
    assert d["bins"][0]["partition"] in ({"p": "a"}, {"p": "b"})


def test_partition_spec_selects_and_validates(warehouse):
    table = make_table(warehouse, options=SMALL)
    append_many(table, 4)
    only_a = partition_spec_filter(table, [split_partition_text("p=a")])
    plan = plan_compaction(table, CompactionOptions.from_table(table), only_a)
    assert {b.partition for b in plan.bins} == {("a",)}
    with pytest.raises(PartitionNotFoundError, match=r"p=zz does not exist.*partitions: p=a, p=b"):
        partition_spec_filter(table, [{"p": "zz"}])
    with pytest.raises(InvalidArgumentError, match="not partition columns"):
        partition_spec_filter(table, [{"q": "a"}])
    with pytest.raises(InvalidArgumentError, match="COLUMN=VALUE"):
        split_partition_text("p")


def test_primary_key_table_is_not_planned_as_an_append_table(warehouse):
    table = make_table(warehouse, primary_keys=["id", "p"], bucket=2)
    with pytest.raises(NotCompactableError, match="primary-key tables are compacted per bucket"):
        plan_compaction(table, CompactionOptions())


def test_empty_table_plans_nothing(warehouse):
    table = make_table(warehouse)
    plan = plan_compaction(table, CompactionOptions())
    assert plan.is_empty and plan.snapshot_id is None


def test_min_file_num_uses_the_one_integer_parser():
    """compaction.min.file-num goes through option_values.parse_int: same words, same message."""
    from airflow_provider_paimon.paimon.compaction.options import CompactionOptions
    from airflow_provider_paimon.paimon.errors import InvalidArgumentError

    assert CompactionOptions.from_mapping({"compaction.min.file-num": " 7 "}).min_file_num == 7
    for bad in ("abc", "2.5", "", True):
        with pytest.raises(InvalidArgumentError, match=r"^compaction\.min\.file-num must be an integer, got "):
            CompactionOptions.from_mapping({"compaction.min.file-num": bad})
