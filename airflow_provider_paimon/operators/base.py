"""PaimonSparkJobOperator: the shared shape of every operator that submits a Paimon Spark job.

An operator here does three things and nothing else:

1. **check** what the ``paimon`` connection can already see (names, table, branch,
   tag) and fail before paying for a spark-submit: nothing is submitted, nothing changes;
2. **build** the job's command line (``family`` + arguments) and submit it with
   ``PaimonSparkJobHook`` through the ``spark`` connection;
3. **return** the job's ``PAIMON_RESULT`` as the task's XCom return value.

Subclasses set ``job_family`` (and ``action`` for families with sub-commands) and implement ``job_args()`` and ``check_before_submit()``.
``input_tables()`` / ``output_tables()`` name what the task reads and writes (the
OpenLineage facets and Paimon assets use them), ``spark_conf()`` injects the
OpenLineage parent-job conf, and ``last_result`` keeps the result for
``get_openlineage_facets_on_complete``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.hooks.lineage import LineageUrlError, resolve_lineage_store
from airflow_provider_paimon.hooks.local_job import METADATA_FAMILIES, PaimonLocalJobHook
from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.hooks.spark_connect_job import (
    PaimonSparkConnectJobHook,
    is_spark_connect,
)
from airflow_provider_paimon.hooks.spark_job import (
    PaimonSparkJobHook,
    airflow_context_env,
    missing_spark_connection,
)
from airflow_provider_paimon.operators.links import (
    MarquezLink,
    PaimonLineageLink,
    committed_snapshot,
)
from airflow_provider_paimon.operators.openlineage_mixin import PaimonOpenLineageMixin
from airflow_provider_paimon.operators.run_tagging import (
    check_run_tag,
    run_tag_for,
    tag_committed_snapshot,
)
from airflow_provider_paimon.operators.spark_lineage_conf import inject_openlineage_spark_conf
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, PaimonError
from airflow_provider_paimon.paimon.names import is_main, name_profile, parse_table_name
from airflow_provider_paimon.paimon.option_values import parse_int
from airflow_provider_paimon.spark.log_level import DEFAULT_LEVEL as DEFAULT_LOG_LEVEL
from airflow_provider_paimon.spark.log_level import check_log_level


class PaimonPreflightError(AirflowFailException):
    """The operator saw a problem before submitting: nothing was submitted or changed."""


class PaimonSparkJobOperator(MaskRenderedSecrets, PaimonOpenLineageMixin, BaseOperator):
    """Base class: check, submit ``launcher.py FAMILY ARGS`` via spark-submit, return the result.

    :param table: the table as ``database.table`` (templated).
    :param warehouse: the warehouse path/URI (templated, e.g. from a DAG param); blank:
        the ``paimon_conn_id`` connection's.
    :param paimon_conn_id: ``paimon`` connection naming the warehouse and catalog options
        (default ``paimon_default`` when no ``warehouse`` is given; with a ``warehouse``,
        read only when named, for its catalog options and credentials).
    :param spark_conn_id: ``spark`` connection naming the master (default ``spark_default``),
        or a ``spark_connect`` connection (Airflow's type, ``sc://host:15002``): the job's
        ``main`` then runs in the Airflow worker on a session of that Spark Connect server,
        with no spark-submit and no JVM start (``hooks/spark_connect_job.py``; static
        ``conf`` and ``spark_kwargs`` belong to the server then).
    :param conf: Spark configuration (``--conf``), templated.
    :param spark_name: Spark application name; default ``{dag_id}.{task_id}``.
    :param run_tag: ``True`` (or a tag prefix): once the job succeeded, tag the snapshot it
        committed with the DAG run's tag, ``{prefix}-{logical date}`` (prefix: the DAG id);
        see ``run_tagging.py``. Default ``False``.
    :param spark_kwargs: other ``SparkSubmitHook`` arguments (``executor_memory``,
        ``driver_memory``, ``total_executor_cores``, ``packages``, ``verbose``...).
    :param spark_log_level: level of Spark's own driver logs in the task log (``WARN``;
        ``INFO``, ``ERROR``...; ``None`` keeps Spark's configuration), see ``spark/log_level.py``.
    :param run_in: ``"spark"`` (default): the job goes through spark-submit on the ``spark``
        connection. ``"worker"``: the job runs in a child of the Airflow worker's Python
        (``hooks/local_job.py``), with no JVM start; only for the metadata-only families
        (branch, tag, maintenance, publish), and only when the worker can reach the
        warehouse's storage. ``spark_conn_id``, ``conf`` and ``spark_kwargs`` are unused then.
    :param asset_partitions: ``True``: one partitioned asset event per Paimon partition
        the job changed in each table it writes (docs/assets.md); refused by operators
        that change no rows. Default ``False``: plain asset events.
    :param allow_location_from_params: accept a ``warehouse`` (or ``lineage_url``)
        templated from ``params`` / ``dag_run`` (default ``False``: refused, see
        ``templated_secrets.MaskRenderedSecrets``).

    Secrets: ``warehouse`` and the URLs in ``conf`` carry no credentials (refused when
    the DAG is parsed, or once rendered); the connection's catalog options reach the
    job through its environment only, never its command line; secret ``conf`` entries
    through a private properties file; rendered fields are stored masked.
    """

    job_family: ClassVar[str] = ""
    #: sub-command of the family (``create``, ``fast-forward``...); empty for single-action families
    action: ClassVar[str] = ""
    template_fields: Sequence[str] = ("table", "warehouse", "paimon_conn_id", "conf", "spark_name")
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse",)
    secret_option_fields: ClassVar[tuple[str, ...]] = ("conf",)
    ui_color = "#d3eafc"
    #: "Paimon lineage": the lineage page at the snapshot the try committed; "Marquez":
    #: the Spark job in Marquez when its web URL is configured (``links.py``)
    operator_extra_links = (PaimonLineageLink(), MarquezLink())

    def __init__(
        self,
        *,
        table: str,
        warehouse: str | None = None,
        paimon_conn_id: str | None = None,
        spark_conn_id: str = "spark_default",
        conf: dict[str, Any] | None = None,
        spark_name: str | None = None,
        spark_kwargs: dict[str, Any] | None = None,
        spark_log_level: str | None = DEFAULT_LOG_LEVEL,
        run_in: str = "spark",
        run_tag: bool | str = False,
        asset_partitions: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.init_asset_partitions(asset_partitions)
        self.run_in = checked_run_in(run_in, self.job_family)
        self.spark_log_level = checked_log_level(spark_log_level)
        try:
            self.run_tag_prefix = check_run_tag(run_tag)
        except InvalidArgumentError as err:
            raise ValueError(f"{self.task_id}: {err}") from None
        self.table = table
        self.warehouse = warehouse
        self.paimon_conn_id = paimon_conn_id
        self.spark_conn_id = spark_conn_id
        self.conf = conf or {}
        self.spark_name = spark_name
        self.spark_kwargs = dict(spark_kwargs or {})
        self.last_result: dict[str, Any] | None = None
        self._job_hook: PaimonSparkJobHook | PaimonLocalJobHook | PaimonSparkConnectJobHook | None = None
        self.check_literal_locations()

    # -- what subclasses provide --

    def job_args(self) -> list[str]:
        """The operation's own arguments (after ``[action] --warehouse/--table/--catalog-option``)."""
        raise NotImplementedError

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        """Raise ``PaimonPreflightError`` (via ``self.fail``) for problems seen from metadata.

        Return a result dict instead to finish without submitting (the work is already
        done, e.g. ``if_exists="skip"`` on a retried create); ``None`` to submit.
        """
        return None

    def input_tables(self) -> list[tuple[str, str | None]]:
        """(table, branch) pairs the job reads; default: the table it writes."""
        return self.output_tables()

    def output_tables(self) -> list[tuple[str, str | None]]:
        """(table, branch) pairs the job changes."""
        return [(self.table, None)]

    def spark_conf(self, context: Context) -> dict[str, Any]:
        """Spark conf for this run: the operator's ``conf`` plus the OpenLineage parent job info.

        No log level here: ``spark_log_level`` goes to the spark-submit hook, which makes
        it a driver Java option; a Connect session has no driver of its own to start.
        """
        return inject_openlineage_spark_conf(self.conf, context)

    # -- shared machinery --

    @cached_property
    def paimon_hook(self) -> PaimonHook:
        return PaimonHook.for_task(self.warehouse, self.paimon_conn_id)

    def fail(self, message: str) -> None:
        """Stop before submitting, with a message that says what is wrong."""
        raise PaimonPreflightError(f"{self.task_id}: {message}; nothing was submitted")

    def preflight(self) -> dict[str, Any] | None:
        """Run the common and the operator's own checks, mapping Paimon errors to ``fail``.

        Returns the operator's no-submit result when there is nothing to do. The
        ``spark`` connection is checked first: without it Airflow's hook would submit
        to ``yarn`` and fail late with a misleading message.
        """
        missing = missing_spark_connection(self.spark_conn_id) if self.run_in == "spark" else None
        if missing:
            self.fail(missing)
        try:
            parse_table_name(self.table)
            self.paimon_hook.get_table(self.table)
            return self.check_before_submit(self.paimon_hook)
        except PaimonError as err:
            self.fail(str(err))
        return None  # pragma: no cover - fail() raises

    def command_args(self) -> list[str]:
        """``[action] --warehouse W --table T OWN ARGS``.

        No catalog option goes on the command line, secret or not: they all reach the
        job through ``PAIMON_CATALOG_OPTIONS_JSON`` in its environment (``catalog_options``),
        so no option the secret policy fails to recognise can show in ``ps`` or a log.
        """
        config = self.paimon_hook.catalog_config
        args = [self.action] if self.action else []
        return [*args, "--warehouse", config.warehouse, "--table", self.table, *self.job_args()]

    def catalog_options(self) -> dict[str, str]:
        """Every catalog option of the task's warehouse: the job's environment carries them."""
        return dict(self.paimon_hook.catalog_config.options)

    def application_name(self, context: Context) -> str:
        if self.spark_name:
            return self.spark_name
        return f"{self.dag_id}.{self.task_id}"

    def make_job_hook(self, context: Context) -> PaimonSparkJobHook | PaimonLocalJobHook | PaimonSparkConnectJobHook:
        if self.run_in == "spark" and is_spark_connect(self.spark_conn_id):
            # Airflow's spark_connect connection: the job's main() runs here on a remote session
            # (no spark_log_level: the server's driver keeps its own log configuration)
            return PaimonSparkConnectJobHook(
                self.job_family,
                self.command_args(),
                spark_conn_id=self.spark_conn_id,
                conf=self.spark_conf(context),
                secret_options=self.catalog_options(),
                secret_env=self.job_secret_env() or None,
                context_env=airflow_context_env(context),
            )
        if self.run_in == "worker":
            return PaimonLocalJobHook(
                self.job_family,
                [*self.command_args()],
                secret_options=self.catalog_options(),
                secret_env=self.job_secret_env() or None,
                context_env=airflow_context_env(context),
            )
        return PaimonSparkJobHook(
            self.job_family,
            self.command_args(),
            secret_options=self.catalog_options(),
            spark_conn_id=self.spark_conn_id,
            conf=self.spark_conf(context),
            log_level=self.spark_log_level,
            name=self.application_name(context),
            secret_env=self.job_secret_env() or None,
            context_env=airflow_context_env(context),  # the run, on the job's snapshots
            **self.spark_kwargs,
        )

    def job_secret_env(self) -> dict[str, str]:
        """Secret environment for the job's driver (e.g. a lineage store URL); never argv."""
        return {}

    def execute(self, context: Context) -> dict[str, Any]:
        done = self.preflight()
        if done is not None:
            self.log.info("Nothing to submit: %s", done)
            self.last_result = done
            return done
        self._job_hook = self.make_job_hook(context)
        result = self._job_hook.run() or {}  # our jobs always report (require_result)
        self.last_result = result
        self.tag_the_run(context, result)
        self.report(result)
        return result

    def tag_the_run(self, context: Context, result: dict[str, Any]) -> None:
        """``run_tag``: tag the committed snapshot with the run's tag (``result["run_tag"]``)."""
        if self.run_tag_prefix is None:
            return
        snapshot_id = committed_snapshot(self)
        if snapshot_id is None:
            self.log.info("run_tag: the job committed no snapshot, nothing to tag")
            return
        branch = next((b for t, b in self.output_tables() if t == self.table), None)
        tag = run_tag_for(self.run_tag_prefix, self.dag_id, context)
        try:
            done = tag_committed_snapshot(self.paimon_hook, self.table, branch, snapshot_id, tag)
        except PaimonError as err:
            raise AirflowFailException(
                f"{self.task_id}: the job committed snapshot {snapshot_id} of {self.table}, but the "
                f"run's tag {tag!r} could not be made ({err}); tag it with TagDagRunOperator "
                "(not retried: a retry would write the data again)"
            ) from None
        result["run_tag"] = done
        self.log.info("run_tag: %s", done)

    def report(self, result: dict[str, Any]) -> None:
        """Log the result for people reading the task log (subclasses make it readable)."""
        self.log.info("Paimon %s job result: %s", self.job_family, result)

    def on_kill(self) -> None:
        if self._job_hook is not None:
            self._job_hook.on_kill()

    # -- helpers for subclasses' checks --

    def name_profile(self, hook: PaimonHook) -> str:
        """The name profile the table's branch and tag names follow (``paimon.names.name_profile``)."""
        return name_profile(hook.get_table(self.table))

    def require_branch(self, hook: PaimonHook, branch: str | None) -> None:
        if branch is not None and not is_main(branch) and not hook.branch_exists(self.table, branch):
            known = ", ".join(hook.list_branches(self.table)) or "none"
            self.fail(f"branch {branch!r} does not exist on {self.table} (branches: {known})")

    def require_tag(self, hook: PaimonHook, tag: str, branch: str | None = None) -> None:
        if not hook.tag_exists(self.table, tag, branch):
            known = ", ".join(hook.list_tags(self.table, branch)) or "none"
            where = "" if is_main(branch) else f" branch {branch}"
            self.fail(f"tag {tag!r} does not exist on {self.table}{where} (tags: {known})")

    def require_snapshot(self, hook: PaimonHook, snapshot_id: int, branch: str | None = None) -> None:
        if hook.get_snapshot(self.table, snapshot_id, branch) is None:
            latest = hook.get_latest_snapshot_id(self.table, branch)
            self.fail(
                f"snapshot {snapshot_id} does not exist on {self.table} "
                f"(latest snapshot: {latest if latest is not None else 'none, the table is empty'})"
            )


def operator_lineage_store(op: Any) -> tuple[str | None, str | None]:
    """The lineage store an operator's ``lineage_conn_id`` / ``lineage_url`` /
    ``lineage_database`` name (``hooks.lineage.resolve_lineage_store``); a bad URL fails
    the task before anything is submitted."""
    try:
        return resolve_lineage_store(op.lineage_conn_id, op.lineage_url, op.lineage_database)
    except LineageUrlError as err:
        raise PaimonPreflightError(f"{op.task_id}: {err}; nothing was submitted") from None


def optional_int(value: Any, what: str) -> int | None:
    """A templated number arrives as a string: '' / None mean "not given" (``parse_int``)."""
    try:
        return parse_int(value, what)
    except InvalidArgumentError as err:
        raise PaimonPreflightError(f"{err}; nothing was submitted") from None


def optional_str(value: Any) -> str | None:
    """A templated optional string: '' / None mean "not given"."""
    if value is None:
        return None
    text = str(value)
    return text if text.strip() else None


IF_EXISTS = ("fail", "skip")


def check_if_exists(value: str) -> str:
    """``if_exists`` of the create operators: ``fail`` (default) or ``skip``.

    A Jinja template (e.g. ``"{{ params.if_exists }}"``) passes here and is checked
    once rendered, before anything is submitted.
    """
    if isinstance(value, str) and "{{" in value:
        return value
    if value not in IF_EXISTS:
        raise ValueError(f"if_exists must be one of {IF_EXISTS}, got {value!r}")
    return value


RUN_IN = ("spark", "worker")


def checked_run_in(value: Any, family: str) -> str:
    """``run_in`` checked when the DAG is parsed: an unknown place or a Spark job in the
    worker is an error, never a silent spark-submit."""
    if value not in RUN_IN:
        raise ValueError(f"run_in must be one of {RUN_IN}, got {value!r}")
    if value == "worker" and family not in METADATA_FAMILIES:
        raise ValueError(
            f"run_in='worker' is only for metadata-only jobs ({', '.join(sorted(METADATA_FAMILIES))}); "
            f"the {family or 'this'} job needs Spark: use run_in='spark'"
        )
    return value


def checked_log_level(level: Any) -> str | None:
    """``spark_log_level`` checked when the DAG is parsed: a typo is an error, never INFO."""
    try:
        return check_log_level(level)
    except PaimonError as err:
        raise ValueError(str(err)) from None
