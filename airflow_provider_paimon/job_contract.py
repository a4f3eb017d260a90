"""The wire between a task and the job it runs: environment names and the result lines.

An operator (through ``hooks/spark_job.py`` or ``hooks/local_job.py``) starts a job of
``spark/jobs/`` with arguments on its command line and anything secret in its
environment; the job answers with one stdout line ``PAIMON_RESULT {json}`` (or a
``PAIMON_ERROR text`` line on stderr and exit code 2 for bad input, 1 otherwise), and
with the same record in ``$PAIMON_RESULT_FILE`` when the hook asks for it. Both sides,
and the lineage CLI (which reads the same store URL and catalog options), name these
here and nowhere else, and read the lines with ``read_job_line`` only.

Everything below the Airflow layer imports this module (``paimon/`` reads
``PAIMON_ASSET_PARTITIONS``, ``lineage/`` the store URL), so it imports nothing of the
package, nor Airflow, nor pyspark.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "ASSET_PARTITIONS_ENV",
    "CATALOG_OPTIONS_ENV",
    "ERROR_PREFIX",
    "LINEAGE_PASSWORD_ENV",
    "LINEAGE_URL_ENV",
    "RESULT_FILE_ENV",
    "RESULT_PREFIX",
    "JobAnswer",
    "JobLine",
    "parse_result",
    "read_job_line",
]

#: the job's result: one stdout line, this prefix then the result as a JSON object
RESULT_PREFIX = "PAIMON_RESULT "
#: the job's error: one stderr line, this prefix then the (scrubbed) message
ERROR_PREFIX = "PAIMON_ERROR "
#: where the hook wants the result as a file too (client deploy mode: the driver runs
#: next to Airflow). The stdout line alone is not enough: spark-submit copies the
#: Python driver's output in 1 KiB chunks, so a log line of another JVM thread can land
#: inside a long result line.
RESULT_FILE_ENV = "PAIMON_RESULT_FILE"
#: the connection's secret catalog options, a JSON object (never on the command line)
CATALOG_OPTIONS_ENV = "PAIMON_CATALOG_OPTIONS_JSON"
#: the lineage store's SQLAlchemy URL (may hold its password); also the lineage CLI's default
LINEAGE_URL_ENV = "PAIMON_LINEAGE_URL"
#: the lineage store's password, when the URL is given without it
LINEAGE_PASSWORD_ENV = "PAIMON_LINEAGE_PASSWORD"
#: set by a task that reports its commits' partitions as asset events itself
#: (snapshot property ``airflow.asset_partitions``; ``paimon/commit_properties.py``)
ASSET_PARTITIONS_ENV = "PAIMON_ASSET_PARTITIONS"


@dataclass(frozen=True)
class JobLine:
    """A result or error line of a job's output.

    ``value`` is the result (decoded JSON) or the error text; ``readable`` is False for a
    result line whose JSON does not decode (a cut or interleaved line: the result file
    then has the record).
    """

    kind: Literal["result", "error"]
    value: Any
    readable: bool = True


def read_job_line(line: str) -> JobLine | None:
    """The result or error a line of a job's output carries; ``None`` for any other line.

    The prefix may follow other text on the line (spark-submit's own output can run
    into the driver's); a result prefix wins over an error prefix on the same line.
    """
    text = line.strip()
    idx = text.find(RESULT_PREFIX)
    if idx >= 0:
        try:
            return JobLine("result", json.loads(text[idx + len(RESULT_PREFIX):]))
        except json.JSONDecodeError:
            return JobLine("result", None, readable=False)
    idx = text.find(ERROR_PREFIX)
    if idx >= 0:
        return JobLine("error", text[idx + len(ERROR_PREFIX):].strip())
    return None


def parse_result(output: str | Iterable[str]) -> Any:
    """The last readable result in a job's output (text or lines); ``None`` without one."""
    lines = output.splitlines() if isinstance(output, str) else output
    found = None
    for line in lines:
        read = read_job_line(line)
        if read is not None and read.kind == "result" and read.readable:
            found = read.value
    return found


class JobAnswer:
    """A job's answer as a hook collects it, the same for every way a job runs.

    ``take_line`` reads each output line (the last result and the last error win);
    ``take_file`` then reads ``$PAIMON_RESULT_FILE``, which wins over the lines: a long
    stdout line can be cut or run into by another process, the file cannot.
    """

    def __init__(self) -> None:
        self.result: Any = None
        self.error: str | None = None

    def take_line(self, line: str) -> bool:
        """Read one output line; False only for a result line whose JSON does not decode."""
        read = read_job_line(line)
        if read is None:
            return True
        if read.kind == "error":
            self.error = read.value
        elif read.readable:
            self.result = read.value
        else:
            return False
        return True

    def take_file(self, path: Path, log: Any = None) -> None:
        """The record the job wrote to ``path``; a missing file (the job died before
        reporting) leaves what the lines said."""
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as err:
            (log or logging.getLogger(__name__)).warning("unreadable job result file %s: %s", path, err)
            return
        if isinstance(record.get("result"), dict):
            self.result = record["result"]
        if isinstance(record.get("error"), str):
            self.error = record["error"]
