"""What every job entry point shares: argument parsing, result and error printing.

The contract itself (the result and error lines, the environment names, the one parser
the hooks use) is ``airflow_provider_paimon/job_contract.py``.

``run_job`` registers the secrets the job received through its private channels and
scrubs its log records, its result line and its error (``job_secrets.py``), so a job's
output never shows a secret, whatever punctuation it holds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from ...job_contract import CATALOG_OPTIONS_ENV, ERROR_PREFIX, RESULT_FILE_ENV, RESULT_PREFIX
from ...lineage.meta_options import pypaimon_catalog_options
from ...paimon.errors import InvalidArgumentError, PaimonError
from ...paimon.secrets import scrub
from .job_secrets import register_private_secrets, scrub_value, scrubbed_output

log = logging.getLogger("airflow_provider_paimon.jobs")


class ArgumentError(InvalidArgumentError):
    """A command-line argument is missing or malformed."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so errors follow the job contract."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentError(f"{self.prog}: {message}")


def new_parser(prog: str, description: str, *, one_table: bool = True) -> argparse.ArgumentParser:
    """A parser with the arguments every job takes: warehouse, catalog options and, for
    a job on one table (all but the multi-table ones), the table."""
    parser = _Parser(prog=prog, description=description)
    parser.add_argument("--warehouse", required=True, help="warehouse path or URI")
    if one_table:
        parser.add_argument("--table", required=True, help="table as database.table")
    parser.add_argument(
        "--catalog-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="catalog option (repeatable); secret ones go in $" + CATALOG_OPTIONS_ENV,
    )
    return parser


def parse_key_values(pairs: list[str], what: str = "option") -> dict[str, str]:
    """``["a=1", "b=2"]`` -> ``{"a": "1", "b": "2"}`` with a clear error on a bad pair."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ArgumentError(f"{what} {pair!r} must be NAME=VALUE")
        out[key.strip()] = value
    return out


def catalog_options(args: argparse.Namespace) -> dict[str, str]:
    """The catalog options to open the job's catalog with: the command line's merged with
    the connection's from the environment, without the lineage proposal's keys."""
    options = parse_key_values(args.catalog_option, "catalog option")
    raw = os.environ.get(CATALOG_OPTIONS_ENV)
    if raw:
        try:
            secret = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ArgumentError(f"${CATALOG_OPTIONS_ENV} is not valid JSON: {err.msg}") from None
        if not isinstance(secret, dict):
            raise ArgumentError(f"${CATALOG_OPTIONS_ENV} must be a JSON object")
        options.update({str(k): str(v) for k, v in secret.items()})

    return pypaimon_catalog_options(options)


def _write_result_file(record: dict[str, Any]) -> None:
    """Write ``record`` to ``$PAIMON_RESULT_FILE`` (atomically), when the hook set it."""
    path = os.environ.get(RESULT_FILE_ENV)
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(record, out, sort_keys=True, default=str)
    os.replace(tmp, path)


def print_result(result: dict[str, Any]) -> None:
    """Report the job's result: the ``PAIMON_RESULT`` line, and the result file if asked
    (every string in it scrubbed of secrets)."""
    result = scrub_value(result)
    _write_result_file({"result": result})
    sys.stdout.write(RESULT_PREFIX + json.dumps(result, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


def print_error(message: str) -> None:
    """Report the job's error: the ``PAIMON_ERROR`` line (stderr), and the result file
    (scrubbed of secrets)."""
    message = scrub(message)
    _write_result_file({"error": message})
    sys.stderr.write(ERROR_PREFIX + message + "\n")
    sys.stderr.flush()


def job_spark_session(app_name: str) -> Any:
    """The running session (spark-submit's, or the caller's), else a local one."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return SparkSession.builder.appName(app_name).getOrCreate()


def run_job(body: Callable[[], dict[str, Any]]) -> int:
    """Run ``body``, print its result, and map failures to the contract's exit codes.

    First the secrets of the private channels are registered; while the job runs its
    log records are scrubbed, and so are its traceback, error and result.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with scrubbed_output():
        try:
            register_private_secrets()
        except Exception as err:  # noqa: BLE001 - the job still runs; its output is scrubbed anyway
            log.warning("could not read every private setting for secrets: %s: %s", type(err).__name__, err)
        try:
            result = body()
        except PaimonError as err:
            print_error(str(err))
            return 2
        except Exception as err:  # noqa: BLE001 - the job's last line of defence
            sys.stderr.write(scrub(traceback.format_exc()))
            sys.stderr.flush()
            print_error(f"{type(err).__name__}: {err}")
            return 1
        print_result(result)
        return 0
