"""Run a Paimon Spark job against a Spark Connect server, in the Airflow worker.

The alternative to spark-submit when the operators' ``spark_conn_id`` names a
connection of Airflow's own ``spark_connect`` type (host ``sc://host``, port 15002,
login = user id, password = token, extra ``use_ssl``): no JVM starts per task. The
job's code runs here, in the task process, on a Connect session of the server
(``spark.session.remote_job_session``): by default one that an earlier task on this
host left warm, leased for the task's length and cleaned after it
(``spark.connect_pool``; connection extras ``session_reuse``, ``session_pool_size``); its Spark work (reads, writes, the compaction's
rewrite tasks) runs on the server, whose Python workers get this package the Connect
way (``register`` ships it).

* the package's jobs (``launcher`` families): their ``main(argv)`` runs in this
  process, with the same contract as under spark-submit (``PAIMON_RESULT`` in
  ``$PAIMON_RESULT_FILE``, exit 2 for bad input);
* a user's application (``PaimonSparkSubmitOperator``): its ``.py`` file runs as
  ``__main__`` (``sys.argv`` = the file and its arguments; a ``PAIMON_RESULT {json}``
  line it prints is its result, as under spark-submit), or a ``python_callable`` gets
  the session (its return value is the result); its
  ``SparkSession.builder.getOrCreate()`` returns that session.

Secrets travel as under spark-submit: catalog options in ``PAIMON_CATALOG_OPTIONS_JSON``
and ``secret_env`` in this process's environment for the job's length only, Spark conf
over the Connect protocol; the Connect URL (it may carry the token) is never logged:
the log names the server as ``sc://host:port`` only.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from airflow.sdk import BaseHook

from airflow_provider_paimon.hooks.spark_job import (
    EXIT_BAD_INPUT,
    PaimonJobError,
    PaimonJobInputError,
    job_environment,
    register_secrets,
)
from airflow_provider_paimon.job_contract import JobAnswer
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.secrets import register_secret, scrub
from airflow_provider_paimon.spark.connect_pool import parse_pool_settings
from airflow_provider_paimon.spark.jobs.common import RESULT_FILE_ENV
from airflow_provider_paimon.spark.session import remote_job_session

#: Airflow's own connection type for Spark Connect (apache-airflow-providers-apache-spark)
CONN_TYPE = "spark_connect"


def is_spark_connect(conn_id: str) -> bool:
    """Whether ``conn_id`` names a ``spark_connect`` connection (False when it does not exist)."""
    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception:  # noqa: BLE001 - missing: the operators' own check says so
        return False
    return str(conn.conn_type or "").replace("-", "_") == CONN_TYPE


def session_pool(conn_id: str, server: str) -> Any:
    """The pool of server sessions the connection's tasks on this host share, or None.

    Connection extras: ``session_reuse`` (default true; false: a new server session per
    task) and ``session_pool_size`` (default 4: sessions kept per Airflow worker host).
    A value that is not understood is an error naming the key (``connect_pool``). The
    sessions belong to the connection, its ``server`` (``sc://host:port``, as
    ``connect_url`` shows it) and its user id, never a token.
    """
    conn = BaseHook.get_connection(conn_id)
    key = f"conn={conn_id}\nserver={server}\nuser={conn.login or ''}"
    return parse_pool_settings(dict(conn.extra_dejson or {}), key)


def connect_url(conn_id: str) -> tuple[str, str]:
    """(the URL the client uses, the same without its parameters for logs).

    Built by Airflow's ``SparkConnectHook`` (its rules for host, port, user id, token
    and SSL); the token is registered with the masker before anything is logged.
    """
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    conn = BaseHook.get_connection(conn_id)
    register_secret(conn.password)
    url = SparkConnectHook(conn_id).get_connection_url()
    register_secret(url)
    parsed = urlparse(url)
    return url, f"sc://{parsed.hostname}:{parsed.port or 15002}"


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` in this process's environment for the block (the job reads it), then undone."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class _JobLines(io.TextIOBase):
    """Stdout for a user's application: passes everything on and reads each whole line
    into ``answer``, as the spark-submit hook reads the driver's output (under
    spark-submit the application's print is the contract)."""

    #: a line longer than this is passed on but not kept (no result line is that long)
    MAX_LINE = 1 << 20

    def __init__(self, out: Any, answer: JobAnswer) -> None:
        super().__init__()
        self._out = out
        self._partial = ""
        self.answer = answer

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._out.write(text)
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        if len(self._partial) > self.MAX_LINE:
            self._partial = ""
        for line in lines:
            self.answer.take_line(line)
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def finish(self) -> None:
        """Read a last line printed without its newline."""
        if self._partial:
            self.answer.take_line(self._partial)
            self._partial = ""


class PaimonSparkConnectJobHook(BaseHook):
    """Run a job family's ``main`` (or a user's application) on a Spark Connect session.

    :param family: a ``launcher`` family (``compact``, ``audit``...), or the user
        application's name when ``application`` / ``python_callable`` is given.
    :param job_args: the job's arguments (no secrets here).
    :param spark_conn_id: a ``spark_connect`` connection.
    :param conf: Spark conf for the session (``spark.paimon.*`` included). No driver log
        level: the server's driver JVM started long ago with its own log configuration, and
        a session can neither take a driver Java option (static conf) nor set the server's
        log level; the operators' ``spark_log_level`` is for spark-submit only.
    :param application: a user's ``.py`` file to run as ``__main__``.
    :param python_callable: or a callable taking the session (its return value is the result).
    """

    def __init__(
        self,
        family: str,
        job_args: list[str],
        *,
        spark_conn_id: str,
        conf: Mapping[str, Any] | None = None,
        secret_options: dict[str, str] | None = None,
        secret_env: dict[str, str] | None = None,
        context_env: dict[str, str] | None = None,
        application: str | None = None,
        python_callable: Callable[..., Any] | None = None,
        require_result: bool = True,
    ) -> None:
        super().__init__()
        self.family = family
        self.job_args = [str(a) for a in job_args]
        self.spark_conn_id = spark_conn_id
        self.conf = {str(k): str(v) for k, v in (conf or {}).items()}
        self._secret_options = dict(secret_options or {})
        self._secret_env = dict(secret_env or {})
        self._context_env = {str(k): str(v) for k, v in (context_env or {}).items()}
        self.application = application
        self.python_callable = python_callable
        self.require_result = require_result
        register_secrets(self._secret_options)
        register_secrets(self._secret_env)
        register_secrets(self.conf)
        self.answer = JobAnswer()
        #: the server session the last run used (pooled sessions serve several tasks)
        self.session_id: str | None = None

    def _job_env(self, result_file: Path) -> dict[str, str]:
        full = job_environment(self._context_env, self._secret_options, self._secret_env)
        changed = {k: v for k, v in full.items() if os.environ.get(k) != v}
        changed[RESULT_FILE_ENV] = str(result_file)
        return changed

    def run(self) -> dict[str, Any] | None:
        """Run the job on a Connect session (pooled unless the connection opts out); its result, or ``PaimonJobError``."""
        url, shown = connect_url(self.spark_conn_id)
        try:
            pool = session_pool(self.spark_conn_id, shown)
        except InvalidArgumentError as err:
            raise PaimonJobInputError(f"Spark Connect connection {self.spark_conn_id!r}: {err}",
                                      EXIT_BAD_INPUT, self.family) from err
        what = self.application or getattr(self.python_callable, "__name__", None) or self.family
        self.log.info("Running %s on Spark Connect %s (in the Airflow worker, no spark-submit): %s",
                      what, shown, scrub(" ".join(self.job_args)))
        self.answer = JobAnswer()
        with tempfile.TemporaryDirectory(prefix="paimon-connect-job-") as tmp:
            result_file = Path(tmp) / "result.json"
            with _environment(self._job_env(result_file)), remote_job_session(url, self.conf, pool) as spark:
                self.session_id = str(spark.session_id)  # not a secret: which server session ran it
                exit_code, value = self._run_job(spark)
            if value is not None:
                self.answer.result = value
            self.answer.take_file(result_file, self.log)  # the job's record wins
        if exit_code != 0:
            detail = scrub(self.answer.error or "no PAIMON_ERROR (see the log above)")
            error_class = PaimonJobInputError if exit_code == EXIT_BAD_INPUT else PaimonJobError
            raise error_class(f"Paimon {self.family} job failed on Spark Connect (exit {exit_code}): {detail}",
                              exit_code, self.family)
        if self.answer.result is None and self.require_result:
            raise PaimonJobError(f"Paimon {self.family} job finished without a result", 0, self.family)
        return self.answer.result

    def _run_job(self, spark: Any) -> tuple[int, dict[str, Any] | None]:
        """(exit code, the callable's result): the job's ``sys.exit`` is its exit code."""
        try:
            if self.python_callable is not None:
                value = self.python_callable(spark, *self.job_args)
                return 0, value if isinstance(value, dict) or value is None else {"result": value}
            if self.application is not None:
                return self._run_application()
            import importlib

            from airflow_provider_paimon.spark.jobs.launcher import FAMILIES

            module = importlib.import_module(FAMILIES[self.family])
            return int(module.main(self.job_args)), None
        except SystemExit as stop:
            code = stop.code
            return (code if isinstance(code, int) else (0 if code is None else 1)), None

    def _run_application(self) -> tuple[int, dict[str, Any] | None]:
        """The user's ``.py`` as ``__main__``; its printed result line is its result."""
        argv, lines = sys.argv, _JobLines(sys.stdout, self.answer)
        sys.argv = [str(self.application), *self.job_args]
        code = 0
        try:
            with contextlib.redirect_stdout(lines):
                runpy.run_path(str(self.application), run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            sys.argv = argv
            lines.finish()
        printed = self.answer.result
        result = printed if isinstance(printed, dict) or printed is None else {"result": printed}
        return code, result

    def on_kill(self) -> None:
        """Nothing runs outside this process; Airflow's kill ends the task process itself."""
