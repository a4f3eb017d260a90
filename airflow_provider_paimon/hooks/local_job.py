"""Run one of this package's metadata-only jobs in the Airflow worker, without spark-submit.

Branch, tag, maintenance and publish jobs change only Paimon metadata files (and delete
files, for maintenance): they never create a SparkSession, yet through spark-submit each
task pays for a JVM start. Where the Airflow worker itself can reach the warehouse, an
operator can run them here instead (``run_in="worker"``), measured in
``benchmarks/metadata_ops.py``. spark-submit stays the default: the cluster may be the
only place with access to the storage.

The job is the same code with the same contract as under spark-submit
(``spark/jobs/launcher.py FAMILY ARGS``, ``PAIMON_RESULT`` / ``PAIMON_ERROR``, exit 2 for
bad input), run as a child process of the worker's own Python: a job's
``sys.exit``, logging set-up or a crash cannot take the task process with it, and
``on_kill`` can stop it. Secrets travel as under spark-submit: secret catalog options in
``PAIMON_CATALOG_OPTIONS_JSON`` and ``secret_env`` in the child's environment, never on
its command line; their values are registered with Airflow's log masker.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_paimon.hooks.spark_job import (
    EXIT_BAD_INPUT,
    PaimonJobError,
    PaimonJobInputError,
    job_environment,
    register_secrets,
)
from airflow_provider_paimon.job_contract import RESULT_FILE_ENV, RESULT_PREFIX, JobAnswer
from airflow_provider_paimon.paimon.secrets import scrub
from airflow_provider_paimon.spark.jobs.launcher import FAMILIES

#: families whose jobs create no SparkSession (the launcher's others need Spark)
METADATA_FAMILIES = frozenset({"branch", "tag", "maintenance", "publish"})
LAUNCHER_MODULE = "airflow_provider_paimon.spark.jobs.launcher"


class PaimonLocalJobHook(BaseHook):
    """Run ``launcher FAMILY ARGS`` in a child of the worker's Python; return its result.

    :param family: a metadata-only job family (``METADATA_FAMILIES``).
    :param job_args: the family's command-line arguments (no secrets here).
    :param secret_options: catalog options passed through ``PAIMON_CATALOG_OPTIONS_JSON``
        (operators pass all of them: none goes on the command line).
    :param secret_env: more secret environment for the job (e.g. ``PAIMON_LINEAGE_URL``).
    :param context_env: plain environment naming the Airflow task try (snapshot properties).
    """

    def __init__(
        self,
        family: str,
        job_args: list[str],
        *,
        secret_options: dict[str, str] | None = None,
        secret_env: dict[str, str] | None = None,
        context_env: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        if family not in METADATA_FAMILIES:
            raise ValueError(
                f"job family {family!r} cannot run in the Airflow worker: it needs Spark "
                f"(only {', '.join(sorted(METADATA_FAMILIES))} are metadata-only); "
                "use run_in='spark'"
            )
        assert family in FAMILIES  # the launcher knows every metadata family
        self.family = family
        self.job_args = list(job_args)
        self._secret_options = dict(secret_options or {})
        self._secret_env = dict(secret_env or {})
        self._context_env = {str(k): str(v) for k, v in (context_env or {}).items()}
        register_secrets(self._secret_options)
        register_secrets(self._secret_env)
        self._process: subprocess.Popen[str] | None = None
        self.answer = JobAnswer()

    def command(self) -> list[str]:
        """The child's command line, as it will be run (no secret is on it)."""
        return [sys.executable, "-m", LAUNCHER_MODULE, self.family, *self.job_args]

    def job_environment(self) -> dict[str, str]:
        return job_environment(self._context_env, self._secret_options, self._secret_env)

    def run(self) -> dict[str, Any]:
        """Run the job, stream its output to the task log, return its ``PAIMON_RESULT``."""
        self.answer = JobAnswer()
        with tempfile.TemporaryDirectory(prefix="paimon-job-") as tmp:
            result_file = Path(tmp) / "result.json"
            env = {**self.job_environment(), RESULT_FILE_ENV: str(result_file)}
            self.log.info("Running the Paimon %s job in the Airflow worker: %s", self.family,
                          scrub(" ".join(self.command()[2:])))
            self._process = subprocess.Popen(
                self.command(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, bufsize=1,
            )
            assert self._process.stdout is not None
            for line in self._process.stdout:
                self.capture_line(line)
                self.log.info("%s", line.rstrip())
            exit_code = self._process.wait()
            self.answer.take_file(result_file, self.log)
        if exit_code != 0:
            detail = scrub(self.answer.error or "no PAIMON_ERROR line (see the output above)")
            error_class = PaimonJobInputError if exit_code == EXIT_BAD_INPUT else PaimonJobError
            raise error_class(f"Paimon {self.family} job failed (exit {exit_code}): {detail}",
                              exit_code, self.family)
        if self.answer.result is None:
            raise PaimonJobError(f"Paimon {self.family} job finished without a "
                                 f"{RESULT_PREFIX.strip()} line", 0, self.family)
        return self.answer.result

    def capture_line(self, raw: str) -> None:
        """Record a ``PAIMON_RESULT`` / ``PAIMON_ERROR`` line (the last of each wins)."""
        if not self.answer.take_line(raw):
            self.log.warning("unreadable %s line", RESULT_PREFIX.strip())

    def on_kill(self) -> None:
        """Stop the job (SIGTERM, then SIGKILL after 10 s); its journals make a rerun finish."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
