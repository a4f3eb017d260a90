"""The wire between a task and its job has one home (``job_contract.py``) and one reader.

A real job's output (``common.run_job``: result line on stdout, error line on stderr) is
read by both hooks' line readers and by ``parse_result``, and they agree; the names of
the contract's environment variables are written nowhere else in the package.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from airflow_provider_paimon import job_contract
from airflow_provider_paimon.job_contract import JobAnswer, JobLine, parse_result, read_job_line
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.spark.jobs import common

pytestmark = [pytest.mark.airflow]

PACKAGE = Path(job_contract.__file__).resolve().parent


@pytest.fixture(autouse=True)
def _spark_connection(monkeypatch):
    """The spark-submit hook needs a spark connection to exist (nothing is submitted)."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))


def _job_output(body, capsys) -> tuple[int, list[str]]:
    code = common.run_job(body)
    out = capsys.readouterr()
    return code, [*out.out.splitlines(), *out.err.splitlines()]


def _local_hook():
    from airflow_provider_paimon.hooks.local_job import PaimonLocalJobHook

    return PaimonLocalJobHook("tag", [])


def _spark_hook():
    from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook

    return PaimonSparkJobHook("tag", [])


def _feed(hook, lines):
    hook.answer = JobAnswer()
    for line in lines:
        hook.capture_line(line + "\n")
    return hook.answer.result, hook.answer.error


def test_a_jobs_result_and_error_read_the_same_by_both_hooks_and_the_parser(capsys):
    result = {"snapshot_id": 7, "tags": ["a", "b"], "text": "PAIMON_ERROR is only text here"}
    code, ok_lines = _job_output(lambda: result, capsys)
    assert code == 0 and parse_result(ok_lines) == result == parse_result("\n".join(ok_lines))

    def refused():
        raise InvalidArgumentError("tag 't1' already exists")

    code, bad_lines = _job_output(refused, capsys)
    assert code == 2 and parse_result(bad_lines) is None
    for hook in (_local_hook(), _spark_hook()):
        assert _feed(hook, ok_lines) == (result, None)
        assert _feed(hook, bad_lines) == (None, "tag 't1' already exists")


def test_a_line_that_another_process_ran_into_is_still_read():
    """spark-submit's own output can run into the driver's line: the prefix may follow text."""
    line = '26/11/26 INFO SparkContext: stopped PAIMON_RESULT {"n": 1}'
    assert read_job_line(line) == JobLine("result", {"n": 1})
    assert read_job_line("WARN x PAIMON_ERROR boom ") == JobLine("error", "boom")
    for hook in (_local_hook(), _spark_hook()):
        assert _feed(hook, [line]) == ({"n": 1}, None)


def test_a_cut_result_line_is_unreadable_not_a_result_and_the_last_readable_one_wins():
    cut = 'PAIMON_RESULT {"n": 1, "rows": [1, 2'
    assert read_job_line(cut) == JobLine("result", None, readable=False)
    assert parse_result(['PAIMON_RESULT {"n": 0}', cut]) == {"n": 0}
    assert parse_result(['PAIMON_RESULT {"n": 0}', 'PAIMON_RESULT {"n": 2}']) == {"n": 2}
    assert read_job_line("26/11/26 INFO noise") is None and parse_result("") is None
    for hook in (_local_hook(), _spark_hook()):
        assert _feed(hook, ['PAIMON_RESULT {"n": 0}', cut]) == ({"n": 0}, None)


def test_the_contracts_names_are_written_only_in_its_module():
    names = {
        value for key, value in vars(job_contract).items()
        if key.isupper() and isinstance(value, str)
    }
    assert {"PAIMON_LINEAGE_URL", "PAIMON_CATALOG_OPTIONS_JSON", "PAIMON_RESULT_FILE", "PAIMON_RESULT ",
            "PAIMON_ERROR "} <= names
    quoted = re.compile("|".join(re.escape(f'"{name}"') for name in sorted(names)))
    elsewhere = [
        f"{path.relative_to(PACKAGE.parent)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py")) if path.name != "job_contract.py"
        for n, text in enumerate(path.read_text().splitlines(), 1) if quoted.search(text)
    ]
    assert elsewhere == []


def test_a_user_applications_printed_lines_read_as_the_hooks_read_them():
    """The Connect hook's stdout tee feeds the same answer; a last line without newline counts."""
    import io

    from airflow_provider_paimon.hooks.spark_connect_job import _JobLines

    out = io.StringIO()
    tee = _JobLines(out, answer := JobAnswer())
    tee.write('some output\nPAIMON_ERROR first\nPAIMON_RESULT {"n": 1}\nPAIMON_RES')
    tee.write('ULT {"n": 2}')  # split across writes, no newline
    assert answer.result == {"n": 1}
    tee.finish()
    assert (answer.result, answer.error) == ({"n": 2}, "first")
    assert out.getvalue().endswith('PAIMON_RESULT {"n": 2}')  # everything passed on


def test_the_result_file_wins_over_the_lines_and_a_missing_one_keeps_them(tmp_path, caplog):
    answer = JobAnswer()
    answer.take_line('PAIMON_RESULT {"from": "line"}')
    answer.take_line("PAIMON_ERROR from the line")
    answer.take_file(tmp_path / "missing.json")
    assert (answer.result, answer.error) == ({"from": "line"}, "from the line")
    record = tmp_path / "result.json"
    record.write_text(json.dumps({"result": {"from": "file"}, "error": "from the file"}))
    answer.take_file(record)
    assert (answer.result, answer.error) == ({"from": "file"}, "from the file")
    record.write_text('{"result": {"cut')
    answer.take_file(record)  # unreadable: a warning, what was read stands
    assert answer.result == {"from": "file"} and "unreadable job result file" in caplog.text
