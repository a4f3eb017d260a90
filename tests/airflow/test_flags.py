"""One parser for booleans (and integers) behind every entry point; flags fail closed.

Every way a flag reaches the package (a data source option, a Paimon table option, a
Spark conf key, an operator argument, an environment variable) must accept the same
words and refuse the same mistakes with the same message: a mistyped ``dry_run`` must
never run a real compaction.
"""

from __future__ import annotations

import pytest

from airflow_provider_paimon.lineage.openlineage.config import (
    KEY_ASYNC,
    KEY_ENABLED,
    KEY_TYPE,
    resolve_settings,
)
from airflow_provider_paimon.operators.base import PaimonPreflightError, optional_int
from airflow_provider_paimon.operators.compaction import CompactionOperator, as_bool
from airflow_provider_paimon.paimon.compaction.precommit import precommit_enabled
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.option_values import ACCEPTED_BOOLEANS, parse_int
from airflow_provider_paimon.paimon.parquet_encoding import dictionary_columns
from airflow_provider_paimon.paimon.stream_scan import parse_stream_scan_config
from airflow_provider_paimon.spark.lineage.config import KEY_ENABLED as LINEAGE_ENABLED
from airflow_provider_paimon.spark.lineage.config import KEY_POLL_INTERVAL_MS, capture_config
from airflow_provider_paimon.spark.options import parse_options

GOOD = [("true", True), ("TRUE", True), (" yes ", True), ("1", True), ("on", True),
        ("false", False), ("No", False), ("0", False), ("OFF", False)]
BAD = ["ture", "y", "n", "2", "enabled", "flase", "t"]


def _source_option(value):
    return parse_options({"warehouse": "/w", "table": "db.t", "create-table": value}).create_table


def _table_option(value):
    import pyarrow as pa

    return dictionary_columns(pa.schema([("s", pa.string())]), {"parquet.enable.dictionary": value})


def _precommit_option(value):
    return precommit_enabled({"precommit-compact": value})


def _stream_option(value):
    return parse_stream_scan_config({"streaming-read-overwrite": value}).read_overwrite


def _lineage_conf(value):
    return capture_config({LINEAGE_ENABLED: value}, "app", environ={}).enabled


def _openlineage_conf(value):
    return resolve_settings({KEY_ASYNC: value, KEY_ENABLED: "true"}, environ={}).asynchronous


def _env_var(value):
    """``OPENLINEAGE_DISABLED``: True (disabled) turns a configured transport off."""
    return not resolve_settings({KEY_TYPE: "console"}, environ={"OPENLINEAGE_DISABLED": value}).enabled


def _operator_arg(value):
    return as_bool(value, "dry_run")


#: entry point -> (reader, the name its error must carry)
ENTRY_POINTS = {
    "data source option": (_source_option, "option 'create-table'"),
    "Paimon table option": (_table_option, "option 'parquet.enable.dictionary'"),
    "streaming read option": (_stream_option, "option 'streaming-read-overwrite'"),
    "pre-commit compaction option": (_precommit_option, "option 'precommit-compact'"),
    "Spark conf key (lineage)": (_lineage_conf, LINEAGE_ENABLED),
    "Spark conf key (OpenLineage)": (_openlineage_conf, KEY_ASYNC),
    "environment variable": (_env_var, "$OPENLINEAGE_DISABLED"),
    "operator argument": (_operator_arg, "dry_run"),
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize(("word", "expected"), GOOD)
def test_every_entry_point_accepts_the_same_words(entry, word, expected):
    reader, _ = ENTRY_POINTS[entry]
    assert reader(word) is expected


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("word", BAD)
def test_every_entry_point_refuses_the_same_words_with_one_message(entry, word):
    reader, name = ENTRY_POINTS[entry]
    with pytest.raises(InvalidArgumentError) as err:
        reader(word)
    assert str(err.value) == f"{name} must be a boolean ({ACCEPTED_BOOLEANS}), got {word!r}"


def test_integers_have_one_parser_too():
    assert parse_int(" 42 ", "n") == 42 and parse_int("", "n", default=7) == 7
    for bad in ("4x", "1.5", 1.5, True):
        with pytest.raises(InvalidArgumentError, match=r"^n must be an integer, got "):
            parse_int(bad, "n")
    with pytest.raises(InvalidArgumentError, match=f"^{KEY_POLL_INTERVAL_MS} must be an integer >= 1, got 0$"):
        capture_config({KEY_POLL_INTERVAL_MS: "0"}, "app", environ={})
    with pytest.raises(InvalidArgumentError, match=f"^{KEY_POLL_INTERVAL_MS} must be an integer, got 'abc'$"):
        capture_config({KEY_POLL_INTERVAL_MS: "abc"}, "app", environ={})
    with pytest.raises(PaimonPreflightError, match=r"^max_retries must be an integer, got 2.5; nothing was submitted$"):
        optional_int(2.5, "max_retries")  # int(2.5) used to truncate it silently


@pytest.mark.parametrize("word", ["ture", "y"])
def test_compaction_dry_run_typo_fails_before_submitting(wh, no_submit, word):
    before = wh.files()
    op = CompactionOperator(task_id="compact", table="db.events", dry_run=word)
    with pytest.raises(PaimonPreflightError) as err:
        op.execute({})
    assert str(err.value) == (
        f"compact: dry_run must be a boolean ({ACCEPTED_BOOLEANS}), got {word!r}; nothing was submitted"
    )
    assert no_submit == [] and wh.files() == before


@pytest.mark.parametrize(("word", "dry"), [("False", False), ("yes", True), (True, True), ("", False)])
def test_compaction_dry_run_words_render_to_the_job_flag(wh, word, dry):
    op = CompactionOperator(task_id="compact", table="db.events", dry_run=word)
    op.preflight()
    assert ("--dry-run" in op.command_args()) is dry


@pytest.mark.parametrize(("word", "only"), [("False", False), ("true", True), (True, True), ("", False)])
def test_compaction_manifests_only_renders_to_the_job_flag_on_any_table_type(wh, word, only):
    """``manifests_only`` is Paimon's compact_manifest: a primary-key table is fine too."""
    for table in ("db.events", "db.users") if only else ("db.events",):
        op = CompactionOperator(task_id="compact", table=table, manifests_only=word)
        op.preflight()
        assert ("--manifests-only" in op.command_args()) is only
