"""Building blocks of the example DAGs (data correction and the original ETL).

Kept beside the DAG files (Airflow puts the DAGs folder on ``sys.path``) so users can
copy the folder as it is. What is here:

* ``job_path`` / ``JOBS_DIR``: the example Spark jobs live in ``dags/jobs/NAME.py``;
  a job name is a Python identifier naming one of them.
* ``PaimonScriptOperator``: spark-submit one of those jobs through the Airflow
  ``spark`` connection, with this package zipped onto ``--py-files``; the job's
  ``PAIMON_RESULT {json}`` line becomes the task's XCom value.
* ``WarehouseParam`` (mixin) and the ``Correction*`` subclasses of the provider's
  operators and sensor: they take the warehouse from a templated DAG param when it is
  given, and fall back to the ``paimon_default`` connection when it is blank.
* ``resolve_warehouse``: the same rule for plain ``@task`` functions.

A job in ``dags/jobs/`` follows one contract: ``--warehouse W --source DB.T --sink DB.T
[--branch B] --version buggy|fixed [--lineage-url URL] [--job-name NAME]``, prints
``PAIMON_RESULT {json}`` and may define ``verify(source_rows, sink_rows) -> [problems]``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.branch import (
    BranchCreateOperator,
    BranchDeleteOperator,
    ReplaceMainBranchOperator,
)
from airflow_provider_paimon.operators.tag import TagCreateOperator
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

JOBS_DIR = Path(__file__).resolve().parent / "jobs"
JOB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESULT_PREFIX = "PAIMON_RESULT "
ERROR_PREFIX = "PAIMON_ERROR "


def known_jobs() -> list[str]:
    """Names of the jobs in ``dags/jobs/`` (files not starting with ``_``)."""
    return sorted(p.stem for p in JOBS_DIR.glob("*.py") if not p.stem.startswith("_"))


def job_path(name: str) -> Path:
    """The script of job ``name``; ``ValueError`` naming the known jobs when there is none."""
    if not isinstance(name, str) or not JOB_NAME.match(name):
        raise ValueError(f"job name {name!r} is not a Python identifier (known jobs: {', '.join(known_jobs())})")
    path = JOBS_DIR / f"{name}.py"
    if not path.is_file() or name.startswith("_"):
        raise ValueError(f"no job {name!r} in {JOBS_DIR} (known jobs: {', '.join(known_jobs())})")
    return path


def load_job_module(name: str) -> ModuleType:
    """Import job ``name``'s script as a module (its ``verify`` and helpers; no Spark started)."""
    path = job_path(name)
    spec = importlib.util.spec_from_file_location(f"paimon_example_job_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def paimon_hook_for(warehouse: str | None, conn_id: str = PaimonHook.default_conn_name) -> PaimonHook:
    """A PaimonHook on ``warehouse`` when given, else on the ``conn_id`` connection."""
    warehouse = (warehouse or "").strip()
    if warehouse:
        return PaimonHook(paimon_conn_id="", warehouse=warehouse)
    return PaimonHook(paimon_conn_id=conn_id)


def resolve_warehouse(warehouse: str | None, conn_id: str = PaimonHook.default_conn_name) -> str:
    """The warehouse param when given, else the connection's warehouse."""
    return paimon_hook_for(warehouse, conn_id).warehouse


def read_rows(hook: PaimonHook, table: str, branch: str | None = None) -> list[dict[str, Any]]:
    """All rows of ``table`` (on ``branch``) read with plain pypaimon, as dicts."""
    pt = hook.get_table(table, branch)
    builder = pt.new_read_builder()
    splits = builder.new_scan().plan().splits()
    if not splits:
        return []
    return builder.new_read().to_arrow(splits).to_pylist()


class ScriptResultHook(SparkSubmitHook):
    """SparkSubmitHook that remembers the job's ``PAIMON_RESULT`` and ``PAIMON_ERROR`` lines."""

    result: dict[str, Any] | None = None
    job_error: str | None = None

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self._capture(itr))

    def _capture(self, itr: Iterator[Any]) -> Iterator[Any]:
        for raw in itr:
            line = str(raw).strip()
            if RESULT_PREFIX in line:
                try:
                    self.result = json.loads(line[line.index(RESULT_PREFIX) + len(RESULT_PREFIX):])
                except json.JSONDecodeError:
                    self.log.warning("unreadable result line: %s", line)
            elif ERROR_PREFIX in line:
                self.job_error = line[line.index(ERROR_PREFIX) + len(ERROR_PREFIX):]
            yield raw


class PaimonScriptOperator(BaseOperator):
    """spark-submit ``dags/jobs/<job>.py`` (client mode) and return its ``PAIMON_RESULT``.

    :param job: job name (templated), a script in ``dags/jobs/``.
    :param warehouse: warehouse path/URI (templated); blank: the ``paimon_default`` connection's.
    :param source: source table ``db.table`` (templated).
    :param sink: sink table ``db.table`` (templated).
    :param branch: sink branch (templated); blank: main.
    :param version: ``buggy`` or ``fixed`` (templated).
    :param lineage_url: lineage store URL (templated); blank: no lineage recorded.
    :param lineage_capture: record lineage with the Spark-side capture (the
        ``spark.paimon.lineage.url``/``.job`` conf keys; default) instead of the job's own
        ``--lineage-url`` call of the store API.
    :param job_name: the job's name in the lineage store and Spark (templated);
        default ``{dag_id}.{task_id}``.
    :param spark_conn_id: the Airflow ``spark`` connection.
    :param conf: Spark conf (templated).
    """

    template_fields: Sequence[str] = (
        "job", "warehouse", "source", "sink", "branch", "version", "lineage_url", "job_name", "conf",
    )
    ui_color = "#fde8c8"

    def __init__(
        self,
        *,
        job: str,
        source: str,
        sink: str,
        warehouse: str = "",
        branch: str = "",
        version: str = "fixed",
        lineage_url: str = "",
        job_name: str = "",
        lineage_capture: bool = True,
        spark_conn_id: str = "spark_default",
        conf: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.lineage_capture = lineage_capture
        self.job = job
        self.warehouse = warehouse
        self.source = source
        self.sink = sink
        self.branch = branch
        self.version = version
        self.lineage_url = lineage_url
        self.job_name = job_name
        self.spark_conn_id = spark_conn_id
        self.conf = conf or {}
        self._hook: ScriptResultHook | None = None

    def lineage_name(self) -> str:
        """The job's name in Spark and in the lineage store."""
        return self.job_name or f"{self.dag_id}.{self.task_id}"

    def spark_conf(self) -> dict[str, Any]:
        """Spark conf: the given conf, plus the capture's keys when it records lineage."""
        conf = dict(self.conf)
        if self.lineage_capture and (self.lineage_url or "").strip():
            conf["spark.paimon.lineage.url"] = self.lineage_url
            conf["spark.paimon.lineage.job"] = self.lineage_name()
        return conf

    def application_args(self) -> list[str]:
        """The job's command line (after the script)."""
        name = self.lineage_name()
        args = [
            "--warehouse", resolve_warehouse(self.warehouse),
            "--source", self.source,
            "--sink", self.sink,
            "--version", self.version,
            "--job-name", name,
        ]
        if (self.branch or "").strip() and self.branch != "main":
            args += ["--branch", self.branch]
        if (self.lineage_url or "").strip() and not self.lineage_capture:
            args += ["--lineage-url", self.lineage_url]
        return args

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_paimon.packaging import build_py_files_zip

        script = job_path(self.job)
        self._hook = ScriptResultHook(
            conn_id=self.spark_conn_id,
            conf=self.spark_conf(),
            py_files=build_py_files_zip(),
            name=self.lineage_name(),
            application_args=self.application_args(),
            deploy_mode="client",
        )
        try:
            self._hook.submit(str(script))
        except AirflowException as err:
            detail = self._hook.job_error or str(err)
            raise AirflowException(f"job {self.job} failed: {detail}") from None
        if self._hook.result is None:
            raise AirflowException(f"job {self.job} finished without a PAIMON_RESULT line")
        self.log.info("job %s result: %s", self.job, self._hook.result)
        return self._hook.result

    def on_kill(self) -> None:
        if self._hook is not None:
            self._hook.on_kill()


class WarehouseParam:
    """Mixin for the provider's Spark-job operators: the warehouse may come from a param.

    ``warehouse`` is templated; when it renders blank the operator uses its
    ``paimon_conn_id`` connection as usual.
    """

    warehouse: str
    paimon_conn_id: str

    @cached_property
    def paimon_hook(self) -> PaimonHook:
        return paimon_hook_for(self.warehouse, self.paimon_conn_id)


class CorrectionTagCreateOperator(WarehouseParam, TagCreateOperator):
    """TagCreateOperator with a templated ``warehouse``."""

    template_fields: Sequence[str] = (*TagCreateOperator.template_fields, "warehouse")

    def __init__(self, *, warehouse: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warehouse = warehouse


class CorrectionBranchCreateOperator(WarehouseParam, BranchCreateOperator):
    """BranchCreateOperator with a templated ``warehouse``."""

    template_fields: Sequence[str] = (*BranchCreateOperator.template_fields, "warehouse")

    def __init__(self, *, warehouse: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warehouse = warehouse


class CorrectionReplaceMainOperator(WarehouseParam, ReplaceMainBranchOperator):
    """ReplaceMainBranchOperator with a templated ``warehouse``."""

    template_fields: Sequence[str] = (*ReplaceMainBranchOperator.template_fields, "warehouse")

    def __init__(self, *, warehouse: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warehouse = warehouse


class CorrectionBranchDeleteOperator(WarehouseParam, BranchDeleteOperator):
    """BranchDeleteOperator with a templated ``warehouse``."""

    template_fields: Sequence[str] = (*BranchDeleteOperator.template_fields, "warehouse")

    def __init__(self, *, warehouse: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warehouse = warehouse


class CorrectionCatchUpSensor(SnapshotCatchUpSensor):
    """SnapshotCatchUpSensor whose warehouse, lineage URL and allowed lag come from params.

    ``max_lag`` and ``lineage_url`` are templated; a blank ``warehouse`` means the
    ``paimon_default`` connection.
    """

    template_fields: Sequence[str] = (*SnapshotCatchUpSensor.template_fields, "lineage_url", "max_lag")

    def __init__(self, *, max_lag: str | int = 0, **kwargs: Any) -> None:
        kwargs.setdefault("paimon_conn_id", PaimonHook.default_conn_name)
        kwargs.setdefault("lineage_url", "{{ params.lineage_url }}")
        super().__init__(**kwargs)
        self.max_lag = max_lag

    def execute(self, context: Any) -> Any:
        self.max_lag_snapshots = int(self.max_lag)
        if (self.warehouse or "").strip():
            self.paimon_conn_id = None
        else:
            self.warehouse = None
        return super().execute(context)
