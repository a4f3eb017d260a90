"""Compaction's ``where`` whitelist: what it accepts, what it refuses, how it evaluates.

The parser and evaluator are plain Python (no Spark); the compact job test that shows a
hostile ``where`` never reaches Spark SQL is in tests/compaction/test_job.py.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.predicates import check_where, parse_where, where_filter

TYPES = {"dt": "DATE", "hr": "INT", "region": "STRING", "ok": "BOOLEAN", "amount": "DECIMAL(10, 2)"}
PARTS = [
    {"dt": dt.date(2026, 11, d), "hr": h, "region": r, "ok": h == 1, "amount": Decimal(h) / 2}
    for d in (1, 2, 3) for h in (1, 2) for r in ("eu", "us")
] + [{"dt": None, "hr": None, "region": None, "ok": None, "amount": None}]  # the default partition


def selected(where: str) -> list[tuple]:
    keep = where_filter(where, TYPES)
    return [(p["dt"] and p["dt"].day, p["hr"], p["region"]) for p in PARTS if keep(p)]


@pytest.mark.parametrize(
    ("where", "count"),
    [
        ("dt = '2026-11-02'", 4),
        ("dt >= DATE '2026-11-02' AND hr IN (1, 3)", 4),
        ("dt BETWEEN '2026-11-01' AND '2026-11-02' AND region <> 'eu'", 4),
        ("dt NOT BETWEEN '2026-11-01' AND '2026-11-02'", 4),
        ("'2026-11-03' > dt", 8),  # literal on the left: the comparison is mirrored
        ("region = 'eu' OR (hr = 2 AND NOT region = 'eu')", 9),
        ("hr = '2'", 6),  # a quoted number compares with an INT column as in SQL
        ("hr > 1.5 and ok = false", 6),
        ("amount = 0.5", 6),
        ("`region` != 'us' AnD Hr == 1", 3),  # back-quoted column, keywords in any case, ==
        ("dt IS NULL", 1),
        ("dt IS NOT NULL", 12),
        # NULL makes a comparison unknown, and NOT unknown is still unknown
        ("dt = NULL", 0),
        ("NOT (dt = NULL)", 0),
        ("hr NOT IN (1, NULL)", 0),
        ("hr IN (2, NULL)", 6),
        ("NOT hr = 1", 6),  # the NULL partition is neither
    ],
)
def test_accepted_predicates_select_the_right_partitions(where, count):
    assert len(selected(where)) == count


def test_selection_details():
    assert selected("dt = '2026-11-03' AND hr = 2") == [(3, 2, "eu"), (3, 2, "us")]


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("reflect('java.lang.System', 'exit', 1)", "function calls are not allowed (reflect(...) at character 1)"),
        ("region = reflect('java.lang.System', 'getProperty', 'user.home')", "function calls are not allowed (reflect"),
        ("java_method('java.lang.Runtime', 'getRuntime') IS NULL", "function calls are not allowed (java_method"),
        ("region IN (SELECT region FROM db.t)", "subqueries are not allowed"),
        ("(SELECT 1) = hr", "subqueries are not allowed"),
        ("EXISTS (SELECT 1)", "function calls are not allowed"),
        ("1=1; DROP TABLE db.t", "a semicolon ends a statement"),
        ("hr = 1;", "a semicolon"),
        ("hr = 1 -- and the rest", "comments are not allowed"),
        ("hr = 1 /* x */", "comments are not allowed"),
        ("v = 'x'", "'v' is not a partition column (partition columns: dt, hr, region, ok, amount)"),
        ("1 = 1", "names no partition column"),
        ("hr = hr", "not a literal"),
        ("region = \"eu\"", "double quotes are not allowed"),
        ("hr + 1 = 2", "unexpected '+'"),
        ("region LIKE 'e%'", "expected a comparison"),
        ("CAST(hr AS STRING) = '1'", "function calls are not allowed (CAST"),
        ("hr = 1 OR", "it ends where"),
        ("(hr = 1", "it ends where ')' was expected"),
        ("region = 1", "region has type STRING: quote the value ('1')"),
        ("hr = 'x'", "'x' is not a valid INT for hr"),
        ("dt > DATE '2026-13-01'", "DATE '2026-13-01' is not a valid DATE for dt"),
        ("ok = 3", "3 is not a valid BOOLEAN for ok"),
        ("hr = " + "1" * 20000, "longer than 10000 characters"),
        # nesting that used to end in a RecursionError (exit 1, retried): refused as input
        ("(" * 2000 + "hr = 1" + ")" * 2000, "nests parentheses and NOTs more than 50 deep (at character 51)"),
        ("NOT " * 2000 + "hr = 1", "nests parentheses and NOTs more than 50 deep"),
        ("(NOT " * 1000 + "hr = 1" + ")" * 1000, "nests parentheses and NOTs more than 50 deep"),
    ],
)
def test_everything_else_is_refused_with_a_clear_message(where, problem):
    with pytest.raises(InvalidArgumentError) as err:
        check_where(where, TYPES)
    message = str(err.value)
    assert problem in message
    assert "partition columns with literals" in message  # says what is accepted
    assert len(message) < 1000


def test_fifty_levels_of_nesting_still_parse():
    where = "(" * 25 + "NOT " * 25 + "hr = 1" + ")" * 25
    assert len(selected(where)) == 6


def test_blank_and_unpartitioned():
    with pytest.raises(InvalidArgumentError, match="must not be blank"):
        parse_where("  ", ["dt"])
    with pytest.raises(InvalidArgumentError, match="table is not partitioned"):
        parse_where("dt = '1'", [])


def test_column_named_date_still_works_and_date_literals_too():
    keep = where_filter("date = DATE '2026-11-01' OR `date` > '2026-11-05'", {"date": "DATE"})
    assert [keep({"date": dt.date(2026, 11, d)}) for d in (1, 2, 6)] == [True, False, True]


def test_partition_values_kept_as_text_are_compared_as_their_type():
    keep = where_filter("hr >= 2 AND dt = '2026-11-01'", {"hr": "INT", "dt": "DATE"})
    assert keep({"hr": "10", "dt": "2026-11-01"}) is True  # numerically, not as text ("10" < "2")
    assert keep({"hr": "__DEFAULT_PARTITION__", "dt": "2026-11-01"}) is False  # reads as NULL
