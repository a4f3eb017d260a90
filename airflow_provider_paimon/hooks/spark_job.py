"""Run one of this package's Spark jobs through Airflow's ``SparkSubmitHook``.

The job runs as ``spark-submit [spark args] launcher.py FAMILY ARGS`` with the package
zipped into ``--py-files`` (see ``airflow_provider_paimon.packaging``), on the master
of the Airflow ``spark`` connection. The job contract (``spark/jobs/__init__.py``):

* the result is one stdout line ``PAIMON_RESULT {json}``;
* a failure prints ``PAIMON_ERROR message`` and exits 2 (bad input, nothing changed)
  or 1 (anything else);
* both are also written to the file named by ``$PAIMON_RESULT_FILE``, which this hook
  sets and prefers: spark-submit copies the Python driver's output in 1 KiB chunks, so
  a JVM log line can land in the middle of a long result line.

``PaimonSparkJobHook`` extends the hook's log processing (as Airflow's own hook does to
find driver ids) to capture those lines, returns the result, and turns a failure into a
``PaimonJobError`` whose message is the job's own error.

Secrets: catalog options (operators pass all of a connection's, secret or not) travel in
``PAIMON_CATALOG_OPTIONS_JSON`` in the environment of the spark-submit process, which is where the driver runs in client
deploy mode. They are *not* given to ``SparkSubmitHook(env_vars=...)``: on YARN and
Kubernetes that hook turns env vars into ``--conf`` arguments, i.e. onto the command
line. Client deploy mode is also what lets the driver's stdout (the result line) reach
Airflow, so cluster deploy mode is refused.

Spark conf that is secret (every ``spark.openlineage.transport.*`` key, a value the
package knows as a secret by origin, and by the policy's second net an ``apiKey``, a
``header.*``, a URL with a password...) is not given as ``--conf`` either: it is written, with the Spark defaults it would have been merged with, to a
private properties file (mode 0600, in a directory deleted after the run) that
spark-submit reads with ``--properties-file``. The JVM sees the same conf; the command
line and the task log see only the file's path. Its values are also registered with
Airflow's log masker.

The ``spark`` connection must exist: Airflow's hook would otherwise fall back to
``yarn`` and fail late with a YARN error, so a missing one is refused up front.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowNotFoundException

from airflow_provider_paimon.common.secret_masking import register_values
from airflow_provider_paimon.job_contract import (
    CATALOG_OPTIONS_ENV,
    RESULT_FILE_ENV,
    RESULT_PREFIX,
    JobAnswer,
)
from airflow_provider_paimon.packaging import build_py_files_zip, launcher_path
from airflow_provider_paimon.paimon.commit_properties import airflow_env
from airflow_provider_paimon.paimon.secrets import scrub, secret_values, split_secrets
from airflow_provider_paimon.spark.log_level import with_log_level

EXIT_BAD_INPUT = 2
SECRET_PROPERTIES_FILE = "secret-spark.properties"


class SparkConnectionNotFoundError(AirflowFailException):
    """The ``spark`` connection named by an operator does not exist: nothing was submitted."""


def missing_spark_connection(conn_id: str) -> str | None:
    """Why ``conn_id`` cannot be used as the ``spark`` connection, or ``None`` when it exists.

    Airflow's ``SparkSubmitHook`` silently falls back to ``--master yarn`` when the
    connection is missing, and the task then fails late with a misleading YARN error.
    """
    from airflow.sdk import BaseHook

    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        env_name = f"AIRFLOW_CONN_{conn_id.upper()}"
        return (
            f"spark connection {conn_id!r} does not exist; create it, e.g. `airflow connections "
            f"add {conn_id} --conn-type spark --conn-host 'local[*]'` (or spark://HOST:7077, "
            f"yarn, k8s://https://HOST) or set ${env_name}, or pass spark_conn_id= naming an "
            "existing spark connection"
        )
    return None


def _escape_property(text: str) -> str:
    """``text`` escaped for a Java properties file (what spark-submit reads)."""
    out: list[str] = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char in "=: #!":
            out.append("\\" + char)
        elif char in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[char])
        elif not 0x20 <= ord(char) <= 0x7E:
            units = char.encode("utf-16-be")
            out.extend(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
        else:
            out.append(char)
    return "".join(out)


def spark_defaults_file(environ: Mapping[str, str], spark_binary: str) -> Path | None:
    """The ``spark-defaults.conf`` spark-submit would read (``$SPARK_CONF_DIR``,
    ``$SPARK_HOME/conf``, or the ``conf`` beside the ``spark-submit`` on ``PATH``)."""
    if environ.get("SPARK_CONF_DIR"):
        candidates = [Path(environ["SPARK_CONF_DIR"])]
    elif environ.get("SPARK_HOME"):
        candidates = [Path(environ["SPARK_HOME"]) / "conf"]
    else:
        candidates = []
        found = shutil.which(spark_binary, path=environ.get("PATH"))
        if found:
            candidates.append(Path(os.path.realpath(found)).parent.parent / "conf")
        spec = importlib.util.find_spec("pyspark")  # pip's spark-submit: SPARK_HOME = pyspark/
        if spec is not None and spec.submodule_search_locations:
            candidates.append(Path(next(iter(spec.submodule_search_locations))) / "conf")
    for conf_dir in candidates:
        path = conf_dir / "spark-defaults.conf"
        if path.is_file():
            return path
    return None


def airflow_context_env(context: Mapping[str, Any] | None) -> dict[str, str]:
    """``AIRFLOW_CTX_*`` naming the task try of ``context``, for the job's environment.

    Airflow's task runner exports most of them into the task process (the job inherits
    them), but not the map index, and not when an operator runs outside the task
    runner; so the operators pass them explicitly (``paimon.commit_properties``).
    """
    if not context:
        return {}
    ti = context.get("ti") or context.get("task_instance")
    dag_run = context.get("dag_run")
    dag_id = getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None)
    if not dag_id:
        return {}
    run_id = getattr(ti, "run_id", None) or getattr(dag_run, "run_id", None) or context.get("run_id")
    return airflow_env(
        dag_id=str(dag_id),
        run_id=str(run_id or ""),
        task_id=str(getattr(ti, "task_id", "") or ""),
        try_number=getattr(ti, "try_number", None),
        map_index=getattr(ti, "map_index", None),
    )


#: Spark conf keys kept off the command line whatever their value: the OpenLineage
#: transport (URL, API key, headers) the Spark-side emitter sends events with
SECRET_CONF_PREFIXES = ("spark.openlineage.transport.",)


def register_secrets(values: Mapping[str, Any]) -> None:
    """Register the secrets in ``values`` (secret keys' values, URL credentials) with the
    package's registry, hence Airflow's masker (task logs, UI)."""
    register_values(secret_values({str(k): v for k, v in values.items()}))


def split_secret_conf(conf: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(public, secret)`` Spark conf: the policy's split, plus every transport key."""
    public, secret = split_secrets(dict(conf))
    for key in [k for k in public if str(k).startswith(SECRET_CONF_PREFIXES)]:
        secret[key] = public.pop(key)
    return public, secret


def job_environment(
    context_env: Mapping[str, str], secret_options: Mapping[str, str], secret_env: Mapping[str, str]
) -> dict[str, str]:
    """A job process's environment: ours, the task try, the secret catalog options as
    ``PAIMON_CATALOG_OPTIONS_JSON`` and other secrets; secrets never go on its argv."""
    env = dict(os.environ)
    env.update(context_env)
    if secret_options:
        env[CATALOG_OPTIONS_ENV] = json.dumps(dict(secret_options), sort_keys=True)
    env.update(secret_env)
    return env


class PaimonJobError(AirflowException):
    """A Paimon Spark job failed; the message is the job's own ``PAIMON_ERROR`` text."""

    def __init__(self, message: str, exit_code: int | None, family: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.family = family

    @property
    def bad_input(self) -> bool:
        """True when the job refused its input (exit 2): nothing was changed, retrying won't help."""
        return self.exit_code == EXIT_BAD_INPUT


class PaimonJobInputError(PaimonJobError, AirflowFailException):
    """The job refused its input (exit 2, nothing changed): fail the task without retries."""


class PaimonSparkJobHook(SparkSubmitHook):
    """Submit ``launcher.py FAMILY ARGS`` and return the job's ``PAIMON_RESULT`` as a dict.

    :param family: job family (``branch``, ``tag``, ``compact``...).
    :param job_args: the family's command-line arguments (no secrets here).
    :param secret_options: catalog options passed through ``PAIMON_CATALOG_OPTIONS_JSON``
        (operators pass all of them: none goes on the command line).
    :param spark_conn_id: the Airflow ``spark`` connection (default ``spark_default``).
    :param conf: Spark configuration passed through as ``--conf``.
    :param log_level: Spark's driver log level in the task log (``WARN``, ``INFO``...;
        ``None``: Spark's own configuration). The submit gives it to the driver JVM as
        ``spark.driver.extraJavaOptions`` (``spark/log_level.py``): only a spark-submit
        starts that JVM, so only this hook turns the level into conf.
    :param name: the Spark application name (operators use ``{dag_id}.{task_id}``).
    :param py_files: extra ``--py-files`` entries, added after the package zip.
    :param application: run this script instead of the package's launcher; then
        ``job_args`` are its whole command line and ``family`` only labels messages.
    :param secret_env: more environment variables holding secrets for the driver
        (e.g. ``PAIMON_LINEAGE_URL``); like ``secret_options``, never on the command line.
    :param context_env: plain (not secret) environment for the job, e.g. the
        ``AIRFLOW_CTX_*`` naming the task try (``airflow_context_env``), which the job's
        commits write into their snapshots' properties.
    :param require_result: fail when the job prints no ``PAIMON_RESULT`` line (our jobs
        always do; a user's application may not).
    :param spark_kwargs: any other ``SparkSubmitHook`` argument (memory, cores, ...).
    """

    def __init__(
        self,
        family: str,
        job_args: list[str],
        *,
        secret_options: dict[str, str] | None = None,
        spark_conn_id: str = "spark_default",
        conf: dict[str, Any] | None = None,
        log_level: str | None = None,
        name: str = "paimon-job",
        py_files: list[str] | None = None,
        deploy_mode: str | None = "client",
        application: str | None = None,
        secret_env: dict[str, str] | None = None,
        context_env: dict[str, str] | None = None,
        require_result: bool = True,
        **spark_kwargs: Any,
    ) -> None:
        if deploy_mode == "cluster":
            raise ValueError(
                "Paimon jobs run their driver in client deploy mode (the result line and "
                "secret catalog options need the driver next to Airflow); executors still "
                "run on the cluster. Use deploy_mode='client'."
            )
        if "env_vars" in spark_kwargs:
            raise ValueError(
                "pass catalog secrets through the paimon connection, not env_vars: "
                "SparkSubmitHook may put env_vars on the command line"
            )
        missing = missing_spark_connection(spark_conn_id)
        if missing:
            raise SparkConnectionNotFoundError(f"{missing}; nothing was submitted")
        public_conf, self._secret_conf = split_secret_conf(with_log_level(conf or {}, log_level))
        self.family = family
        self.job_args = list(job_args)
        self._secret_options = dict(secret_options or {})
        self._secret_env = dict(secret_env or {})
        self._context_env = {str(k): str(v) for k, v in (context_env or {}).items()}
        for values in (self._secret_conf, self._secret_options, self._secret_env):
            register_secrets(values)
        self.application = application or launcher_path()
        self.require_result = require_result
        self.answer = JobAnswer()
        super().__init__(
            conf=public_conf,
            conn_id=spark_conn_id,
            py_files=",".join([build_py_files_zip(), *(py_files or [])]),
            name=name,
            application_args=self.job_args if application else [family, *self.job_args],
            deploy_mode=deploy_mode,
            **spark_kwargs,
        )
        self._user_properties_file: str | None = self._properties_file
        if self._connection.get("deploy_mode") == "cluster":
            raise ValueError(
                f"spark connection {spark_conn_id!r} asks for cluster deploy mode; Paimon jobs "
                "need client mode (pass deploy_mode='client' or change the connection)"
            )

    @property
    def secret_conf(self) -> dict[str, Any]:
        """The Spark conf kept off the command line (it goes in a private properties file)."""
        return dict(self._secret_conf)

    def write_secret_properties(self, directory: Path, environ: Mapping[str, str]) -> Path | None:
        """Write the secret conf, after the defaults it would have joined, to a 0600 file.

        ``--properties-file`` replaces ``spark-defaults.conf`` (or the user's
        ``properties_file``), so that file's content is copied first: the job sees the
        same conf as with ``--conf``. Returns ``None`` when there is no secret conf.
        """
        if not self._secret_conf:
            return None
        base = Path(self._user_properties_file) if self._user_properties_file else spark_defaults_file(
            environ, self._connection.get("spark_binary") or "spark-submit"
        )
        lines = [base.read_text(encoding="utf-8")] if base is not None else []
        lines += [
            f"{_escape_property(str(key))}={_escape_property(str(value))}"
            for key, value in sorted(self._secret_conf.items())
        ]
        path = directory / SECRET_PROPERTIES_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        return path

    def build_command(self) -> list[str]:
        """The full spark-submit command line, as it will be run (for checks and tests)."""
        return self._build_spark_submit_command(self.application)

    def job_environment(self) -> dict[str, str]:
        """The environment of the spark-submit process: ours, plus the secret options."""
        return job_environment(self._context_env, self._secret_options, self._secret_env)

    def run(self) -> dict[str, Any] | None:
        """Submit, wait, and return the job's result; raise ``PaimonJobError`` on failure."""
        self.answer = JobAnswer()
        with tempfile.TemporaryDirectory(prefix="paimon-job-") as tmp:
            result_file = Path(tmp) / "result.json"
            env = {**self.job_environment(), RESULT_FILE_ENV: str(result_file)}
            properties = self.write_secret_properties(Path(tmp), env)
            if properties is not None:
                self._properties_file = str(properties)
            try:
                self.submit(self.application, env=env)
                failure = None
            except AirflowException as err:
                failure = err
            finally:
                self._properties_file = self._user_properties_file
            self.answer.take_file(result_file, self.log)
        if failure is not None:
            exit_code = getattr(self._submit_sp, "returncode", None)
            if self.answer.error is not None:
                error_class = PaimonJobInputError if exit_code == EXIT_BAD_INPUT else PaimonJobError
                raise error_class(
                    f"Paimon {self.family} job failed (exit {exit_code}): {scrub(self.answer.error)}",
                    exit_code,
                    self.family,
                ) from None
            raise PaimonJobError(
                f"Paimon {self.family} job failed (exit {exit_code}) before reporting an "
                f"error: {scrub(str(failure))}",
                exit_code,
                self.family,
            ) from None
        if self.answer.result is None and self.require_result:
            raise PaimonJobError(
                f"Paimon {self.family} job finished without a {RESULT_PREFIX.strip()} line; "
                "is the launcher's stdout reaching spark-submit (client deploy mode)?",
                0,
                self.family,
            )
        return self.answer.result

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self._capture_job_lines(itr))

    def _capture_job_lines(self, itr: Iterator[Any]) -> Iterator[Any]:
        """Pass every line through, remembering the job's result and error lines."""
        for raw in itr:
            self.capture_line(raw)
            yield raw

    def capture_line(self, raw: str) -> None:
        """Record a ``PAIMON_RESULT`` / ``PAIMON_ERROR`` line (the last of each wins)."""
        if not self.answer.take_line(raw):
            self.log.warning("unreadable %s line: %s", RESULT_PREFIX.strip(), raw.strip())
