"""Tag lifecycle in the library: retention on create, crash-safe rename, run-tag names, durations."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support.branch_tables import load_table, make_table, rows, table_dir, tree, write

from airflow_provider_paimon.paimon import faults
from airflow_provider_paimon.paimon.branch import create_branch
from airflow_provider_paimon.paimon.durations import parse_duration
from airflow_provider_paimon.paimon.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    TagNotFoundError,
)
from airflow_provider_paimon.paimon.maintenance import expire_tags
from airflow_provider_paimon.paimon.names import MAX_NAME_BYTES, validate_tag_name
from airflow_provider_paimon.paimon.tag import create_tag, delete_tag, list_tags, rename_tag
from airflow_provider_paimon.paimon.tag.delete import TagInUseError
from airflow_provider_paimon.paimon.tag.run_tag import run_tag_name


@pytest.fixture
def table(warehouse):
    catalog, t = make_table(warehouse)
    write(t, [1])
    write(t, [2])
    return catalog, t


def java_local_datetime(arr: list[int]) -> datetime:
    """Jackson's LocalDateTime array (trailing zero fields left out) as a datetime."""
    year, month, day, hour, minute, second, nano = ([*list(arr), 0, 0])[:7]
    return datetime(year, month, day, hour, minute, second, nano // 1000)


def _tag_doc(warehouse: str, name: str) -> dict:
    return json.load(open(os.path.join(table_dir(warehouse), "tag", f"tag-{name}")))


def test_time_retained_is_written_as_java_does_and_expire_tags_honours_it(warehouse, table):
    from pypaimon.tag.tag import Tag

    catalog, t = table
    before = datetime.now().replace(microsecond=0)
    out = create_tag(t, "weekly", snapshot_id=1, time_retained="7 d")
    create_tag(t, "brief", snapshot_id=2, time_retained=timedelta(milliseconds=50))
    create_tag(t, "plain", snapshot_id=2)
    assert out["time_retained"] == "7 d" and out["time_retained_seconds"] == 604800.0
    doc = _tag_doc(warehouse, "weekly")
    snapshot = json.loads(Path(os.path.join(table_dir(warehouse), "snapshot", "snapshot-1")).read_text())
    assert {k: v for k, v in doc.items() if not k.startswith("tag")} == snapshot
    assert doc["tagTimeRetained"] == 604800.0  # a Duration in decimal seconds
    created = doc["tagCreateTime"]  # a LocalDateTime as Jackson's array
    assert 5 <= len(created) <= 7 and before <= java_local_datetime(created) <= datetime.now()
    assert "tagCreateTime" not in _tag_doc(warehouse, "plain")  # no retention: the plain snapshot, as Java
    read = load_table(catalog, "db.t").tag_manager().get("weekly")  # plain pypaimon
    assert isinstance(read, Tag) and read.tag_time_retained == timedelta(days=7) and read.id == 1
    listed = {i.name: (i.created_at, i.time_retained_seconds) for i in list_tags(t)}
    assert listed["plain"] == (None, None) and listed["weekly"][1] == 604800.0
    assert datetime.fromisoformat(listed["weekly"][0]) == java_local_datetime(created)
    time.sleep(0.1)
    result = expire_tags(t)
    assert result["expired_tags"] == ["brief"]
    assert result["kept_tags"]["weekly"].startswith("retained until")
    assert result["kept_tags"]["plain"] == "no time_retained"
    assert sorted(load_table(catalog, "db.t").tag_manager().list_tags()) == ["plain", "weekly"]
    assert rows(catalog) == [(1, "m1"), (2, "m2")]


@pytest.mark.parametrize("bad", [0, "0 s", -1, "soon", "1 fortnight", True, "", [1]])
def test_a_bad_time_retained_changes_nothing(warehouse, table, bad):
    _, t = table
    before = tree(warehouse)
    with pytest.raises(InvalidArgumentError, match="time_retained"):
        create_tag(t, "x", time_retained=bad)
    assert tree(warehouse) == before


def test_rename_keeps_the_document_and_refuses_what_would_lose_a_tag(warehouse, table):
    catalog, t = table
    create_tag(t, "a", snapshot_id=1, time_retained="1 d")
    create_tag(t, "b", snapshot_id=2)
    doc = _tag_doc(warehouse, "a")
    before = tree(warehouse)
    for args, error, message in [
        (("a", "b"), AlreadyExistsError, "tag 'b' already exists on main .snapshot 2.; delete it first"),
        (("nope", "c"), TagNotFoundError, "tag 'nope' does not exist"),
        (("a", "a"), InvalidArgumentError, "renamed to itself"),
        (("a", "42"), InvalidArgumentError, "all digits"),
        (("a", "x/y"), InvalidArgumentError, "path separators"),
    ]:
        with pytest.raises(error, match=message):
            rename_tag(t, *args)
        assert tree(warehouse) == before
    out = rename_tag(t, "a", "c")
    assert out == {"tag": "a", "new_name": "c", "branch": "main", "snapshot_id": 1, "resumed": False}
    assert _tag_doc(warehouse, "c") == doc  # creation time and retention travel with it
    assert sorted(load_table(catalog, "db.t").tag_manager().list_tags()) == ["b", "c"]
    # a tag a branch was created from is linked to it by name: refused, naming the branch
    create_branch(t, "fix", tag="c")
    before = tree(warehouse)
    with pytest.raises(TagInUseError, match="branch 'fix' was created from it"):
        rename_tag(t, "c", "d")
    assert tree(warehouse) == before
    assert rows(catalog, branch="fix") == [(1, "m1")]


def test_rename_killed_between_its_steps_reads_and_a_rerun_finishes(warehouse, table):
    catalog, t = table
    create_tag(t, "old", snapshot_id=1)
    faults.set_fault("rename_tag.written")
    try:
        with pytest.raises(faults.InjectedFault):
            rename_tag(t, "old", "new")
    finally:
        faults.clear()
    tags = load_table(catalog, "db.t").tag_manager()
    assert sorted(tags.list_tags()) == ["new", "old"]  # both names read the same snapshot
    assert tags.get("new").id == tags.get("old").id == 1
    assert rename_tag(t, "old", "new")["resumed"] is True
    assert load_table(catalog, "db.t").tag_manager().list_tags() == ["new"]
    with pytest.raises(TagNotFoundError):  # done: a third run has nothing to rename
        rename_tag(t, "old", "new")
    delete_tag(t, "new")


@pytest.mark.parametrize(
    ("prefix", "logical_date", "run_id", "expected"),
    [
        ("etl", datetime(2026, 11, 24, 9, 0), None, "etl-20261124T090000Z"),
        ("etl", datetime(2026, 11, 24, 9, 0, 0, 250000), "x", "etl-20261124T090000.250000Z"),
        ("etl", None, "manual__2026-11-24T09:15:27+00:00", "etl-manual__2026-11-24T09_15_27_00_00"),
        ("my dag/../x", None, "run\u202eid\n", "my_dag___x-run_id"),
        ("", None, "42", "42-hidden"),
    ],
)
def test_run_tag_names_are_safe_and_stable(prefix, logical_date, run_id, expected):
    if expected == "42-hidden":  # all digits is not a tag name: refused, not guessed around
        with pytest.raises(InvalidArgumentError, match="all digits"):
            run_tag_name(prefix, logical_date, run_id)
        return
    name = run_tag_name(prefix, logical_date, run_id)
    assert name == expected and validate_tag_name(name) == name
    assert run_tag_name(prefix, logical_date, run_id) == name


def test_long_run_tag_names_fit_and_stay_distinct():
    a = run_tag_name("d" * 200, None, "run-1")
    b = run_tag_name("d" * 200, None, "run-2")
    assert a != b and len(a.encode()) <= MAX_NAME_BYTES and validate_tag_name(b) == b


@pytest.mark.parametrize(
    ("value", "expected"),
    [(timedelta(hours=2), timedelta(hours=2)), (90, timedelta(seconds=90)), (1.5, timedelta(seconds=1.5)),
     ("3600", timedelta(hours=1)), ("1 h", timedelta(hours=1)), ("30min", timedelta(minutes=30)),
     ("7 d", timedelta(days=7)), ("500 ms", timedelta(milliseconds=500)), ("0", timedelta(0))],
)
def test_durations(value, expected):
    assert parse_duration(value, "older_than") == expected


@pytest.mark.parametrize("value", [None, True, -5, float("nan"), float("inf"), "-5", "1 hour-ish", "", "1 y", {}])
def test_bad_durations_name_the_setting(value):
    with pytest.raises(InvalidArgumentError, match="older_than"):
        parse_duration(value, "older_than")
