"""PaimonSparkSubmitOperator: spark-submit your own PySpark job that uses the ``paimon`` source.

Airflow's ``SparkSubmitOperator`` can run such a job too; this one adds what a Paimon
job needs and users would otherwise wire by hand:

* this package zipped onto ``--py-files`` (executors import the ``paimon`` data source
  from it; the job calls ``airflow_provider_paimon.spark.register(spark)``);
* the Spark-side lineage capture turned on for the job (``spark.paimon.lineage.*``)
  when a lineage store is named, with the store URL (and its password) passed to the
  driver in the environment (``PAIMON_LINEAGE_URL``), never on the command line;
* the OpenLineage parent/root job info, so the Spark run nests under the task;
* with ``paimon_conn_id``, the ``paimon`` connection's warehouse and catalog options
  (S3 endpoint and credentials...) in the driver's environment (``PAIMON_CONNECTION_WAREHOUSE``,
  ``PAIMON_CATALOG_OPTIONS_JSON``), where the ``paimon`` data source takes them as
  defaults for that warehouse: the job's code, command line and query plans never
  carry the credentials (docs/storage.md);
* ``branch_redirects`` (``{"db.table": "branch"}``) as ``spark.paimon.branch.db.table``
  conf entries: every ``paimon`` read and write of those tables in the job goes to the
  branch, so the same job re-runs against a branch without a code change
  (docs/datasource.md, "Branch redirects");
* the job's ``PAIMON_RESULT {json}`` line (when it prints one) as the XCom value, and
  its ``PAIMON_ERROR`` line as the task's error message;
* ``asset_partitions=True``: the ``paimon://`` assets in ``outlets`` get one Airflow
  asset event per Paimon partition the job's commits changed (``dt=2026-11-03/region=eu``),
  read from the snapshots this task try committed (their properties name the try) and
  their delta manifests, not from the job's arguments (docs/assets.md).

The driver runs in client deploy mode (the result line and the secrets need it next to
Airflow); executors run wherever the ``spark`` connection's master puts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.common.asset_partitions import (
    check_asset_partitions,
    emit_partition_events,
    paimon_outlets,
    try_partition_env,
)
from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.common.templating import is_templated
from airflow_provider_paimon.hooks.lineage import LineageUrlError, resolve_lineage_store
from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.hooks.spark_connect_job import (
    PaimonSparkConnectJobHook,
    is_spark_connect,
)
from airflow_provider_paimon.hooks.spark_job import PaimonSparkJobHook, airflow_context_env
from airflow_provider_paimon.job_contract import LINEAGE_URL_ENV
from airflow_provider_paimon.operators.asset_partitions import (
    PartitionTarget,
    outlet_tables,
    own_warehouse_hook,
)
from airflow_provider_paimon.operators.base import checked_log_level
from airflow_provider_paimon.operators.links import MarquezLink
from airflow_provider_paimon.operators.run_tagging import (
    check_run_tag,
    run_tag_for,
    snapshot_of_try,
    tag_committed_snapshot,
)
from airflow_provider_paimon.operators.spark_lineage_conf import inject_openlineage_spark_conf
from airflow_provider_paimon.paimon.commit_properties import airflow_properties
from airflow_provider_paimon.paimon.errors import InvalidArgumentError, PaimonError
from airflow_provider_paimon.paimon.names import parse_table_name
from airflow_provider_paimon.spark.branch.redirect import merge_redirects, redirect_conf
from airflow_provider_paimon.spark.log_level import DEFAULT_LEVEL as DEFAULT_LOG_LEVEL
from airflow_provider_paimon.spark.options import CONNECTION_WAREHOUSE_ENV

#: the capture's Spark conf keys (spark/lineage/config.py); the URL travels in the env
LINEAGE_ENABLED = "spark.paimon.lineage.enabled"
LINEAGE_JOB = "spark.paimon.lineage.job"
LINEAGE_DATABASE = "spark.paimon.lineage.database"


class PaimonSparkSubmitOperator(MaskRenderedSecrets, BaseOperator):
    """Run a PySpark application with the ``paimon`` data source and lineage capture.

    :param application: path of the ``.py`` application (templated).
    :param python_callable: with a ``spark_connect`` connection (``spark_conn_id``), the
        job as a callable ``f(spark, *application_args)`` run in the Airflow worker on a
        session of the Connect server (its dict return value is the result); an
        ``application`` file runs there too, as ``__main__``. No spark-submit, no JVM
        start per task (``hooks/spark_connect_job.py``).
    :param application_args: its arguments (templated).
    :param paimon_conn_id: a ``paimon`` connection whose warehouse and catalog options
        the job's ``paimon`` reads and writes use by default (templated).
    :param lineage_conn_id: a ``paimon_lineage`` connection: turn the lineage capture on
        and record into that store (preferred: the password stays in the connection).
    :param lineage_url: or the store's SQLAlchemy URL (templated); blank: no capture
        unless ``lineage_conn_id`` is given. A URL with a password is refused (it would
        be shown in the rendered fields and the serialized DAG): the password goes in a
        ``paimon_lineage`` connection.
    :param lineage_database: the store's system database (MySQL) / schema (PostgreSQL).
    :param lineage_job: the job's name in the lineage store (templated); default: the
        Spark application name, which defaults to ``{dag_id}.{task_id}``.
    :param name: the Spark application name (templated).
    :param conf: Spark conf (templated); keys set here win over the ones added. Secret
        entries reach spark-submit through a private properties file, not its command
        line; a URL with credentials or a literal credential is refused.
    :param branch_redirects: ``{"db.table": "branch"}`` (templated): run the job's reads
        and writes of each table on that branch (``spark.paimon.branch.db.table`` conf
        entries). Checked when the DAG is parsed, or at execute when templated; an entry
        of ``conf`` naming another branch for the same table is an error.
    :param spark_conn_id: the Airflow ``spark`` connection (master, queue, ...).
    :param py_files: more ``--py-files`` entries (after this package's zip).
    :param spark_kwargs: other ``SparkSubmitHook`` arguments (``executor_memory``, ...).
    :param spark_log_level: level of Spark's own driver logs in the task log (``WARN``;
        ``None`` keeps Spark's configuration), see ``spark/log_level.py``.
    :param run_tag: ``True`` (or a tag prefix): once the application succeeded, tag the
        snapshot it committed to each of ``run_tag_tables`` with the DAG run's tag,
        ``{prefix}-{logical date}`` (prefix: the DAG id); the snapshot is the latest whose
        properties name this task try (see ``run_tagging.py``). Default ``False``.
    :param run_tag_tables: the tables (``db.table``) the application writes, for
        ``run_tag`` (templated); a table redirected by ``branch_redirects`` is tagged on
        that branch. Tables are read through ``paimon_conn_id`` (default ``paimon_default``).
    :param asset_partitions: ``True``: each ``paimon://`` asset in ``outlets`` gets one
        partitioned asset event per partition the try's commits to that table (and
        branch) changed, for DAGs on ``PartitionedAssetTimetable``; such events no longer
        wake DAGs scheduled plainly on the asset (Airflow keeps the two apart). Needs a
        ``paimon://`` outlet in the ``paimon_conn_id`` connection's warehouse. Default
        ``False``: plain asset events, as Airflow emits for any outlet.
    """

    template_fields: Sequence[str] = (
        "application",
        "application_args",
        "paimon_conn_id",
        "lineage_conn_id",
        "lineage_url",
        "lineage_database",
        "lineage_job",
        "name",
        "conf",
        "branch_redirects",
        "run_tag_tables",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"conf": "json", "application_args": "json", "branch_redirects": "json"}
    #: a URL with credentials is refused there (at parse, or once rendered); what the
    #: rendered fields hold is registered with the masker before Airflow stores them
    secret_url_fields: ClassVar[tuple[str, ...]] = ("lineage_url",)
    secret_option_fields: ClassVar[tuple[str, ...]] = ("conf",)
    secret_text_fields: ClassVar[tuple[str, ...]] = ("application_args",)
    ui_color = "#fde8c8"
    #: "Marquez": the job's Spark run in Marquez when its web URL is configured (``links.py``)
    operator_extra_links = (MarquezLink(),)

    def __init__(
        self,
        *,
        application: str = "",
        python_callable: Callable[..., Any] | None = None,
        application_args: list[Any] | None = None,
        paimon_conn_id: str | None = None,
        lineage_conn_id: str | None = None,
        lineage_url: str | None = None,
        lineage_database: str | None = None,
        lineage_job: str | None = None,
        name: str | None = None,
        conf: dict[str, Any] | None = None,
        branch_redirects: dict[str, str] | str | None = None,
        spark_conn_id: str = "spark_default",
        py_files: list[str] | None = None,
        spark_kwargs: dict[str, Any] | None = None,
        spark_log_level: str | None = DEFAULT_LOG_LEVEL,
        run_tag: bool | str = False,
        run_tag_tables: list[str] | None = None,
        asset_partitions: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.asset_partitions = check_asset_partitions(asset_partitions, self.task_id)
        if self.asset_partitions and not paimon_outlets(self.outlets):
            raise ValueError(
                f"{self.task_id}: asset_partitions=True needs the paimon:// asset of each table the "
                "application writes in outlets (e.g. outlets=[asset_for(WAREHOUSE, 'db.orders')])"
            )
        self.spark_log_level = checked_log_level(spark_log_level)
        try:
            self.run_tag_prefix = check_run_tag(run_tag)
        except InvalidArgumentError as err:
            raise ValueError(f"{self.task_id}: {err}") from None
        self.run_tag_tables = list(run_tag_tables or [])
        if self.run_tag_prefix is not None and not self.run_tag_tables:
            raise ValueError(
                f"{self.task_id}: run_tag needs run_tag_tables, the tables the application "
                "writes (e.g. run_tag_tables=['db.orders'])"
            )
        if not application and python_callable is None:
            raise ValueError(f"{self.task_id}: give the job: application='job.py' (or python_callable= "
                             "with a spark_connect connection)")
        self.application = application
        self.python_callable = python_callable
        self.application_args = list(application_args or [])
        self.paimon_conn_id = paimon_conn_id
        self.lineage_conn_id = lineage_conn_id
        self.lineage_url = lineage_url
        self.lineage_database = lineage_database
        self.lineage_job = lineage_job
        self.name = name
        self.conf = dict(conf or {})
        # a string is a template rendering to the dict (render_template_as_native_obj)
        self.branch_redirects = branch_redirects if isinstance(branch_redirects, str) else dict(branch_redirects or {})
        if not is_templated(self.branch_redirects):
            try:
                redirect_conf(self.branch_redirects)  # type: ignore[arg-type]  # a dict when not a template
            except InvalidArgumentError as err:
                raise ValueError(str(err)) from None
        self.spark_conn_id = spark_conn_id
        self.py_files = list(py_files or [])
        self.spark_kwargs = dict(spark_kwargs or {})
        self._hook: PaimonSparkJobHook | PaimonSparkConnectJobHook | None = None
        self.check_literal_locations()

    def application_name(self) -> str:
        return (self.name or "").strip() or f"{self.dag_id}.{self.task_id}"

    def lineage_store_url(self) -> tuple[str | None, str | None]:
        """(URL with its password, database) of the store to record into; (None, None): no capture."""
        try:
            return resolve_lineage_store(self.lineage_conn_id, self.lineage_url, self.lineage_database)
        except LineageUrlError as err:
            raise AirflowFailException(f"{err}; nothing was submitted") from None

    def spark_conf(self, context: Context, lineage_on: bool, database: str | None) -> dict[str, Any]:
        """The user's conf, plus the capture's keys and the OpenLineage parent job info."""
        added: dict[str, Any] = {}
        if lineage_on:
            added[LINEAGE_ENABLED] = "true"
            added[LINEAGE_JOB] = (self.lineage_job or "").strip() or self.application_name()
            if database:
                added[LINEAGE_DATABASE] = database
        try:
            # rendered by now: a dict, or a string redirect_conf refuses with a clear message
            redirects = redirect_conf(self.branch_redirects)  # type: ignore[arg-type]  # rendered: see above
            conf = merge_redirects({**added, **self.conf}, redirects)
        except InvalidArgumentError as err:
            raise AirflowFailException(f"{err}; nothing was submitted") from None
        return inject_openlineage_spark_conf(conf, context)

    def make_hook(self, context: Context) -> PaimonSparkJobHook | PaimonSparkConnectJobHook:
        application = str(self.application or "")
        connect = is_spark_connect(self.spark_conn_id)
        if self.python_callable is not None and not connect:
            raise AirflowFailException(
                f"python_callable runs on a Spark Connect session: spark_conn_id {self.spark_conn_id!r} "
                "is not a spark_connect connection (or give application='job.py' for spark-submit); "
                "nothing was submitted"
            )
        if self.python_callable is None and not Path(application).is_file():
            raise AirflowFailException(f"application {application!r} does not exist; nothing was submitted")
        url, database = self.lineage_store_url()
        secret_env = {LINEAGE_URL_ENV: url} if url else {}
        catalog_options: dict[str, str] = {}
        paimon_conn_id = (self.paimon_conn_id or "").strip()
        if paimon_conn_id:
            config = PaimonHook(paimon_conn_id).catalog_config  # masks its secrets
            secret_env[CONNECTION_WAREHOUSE_ENV] = config.warehouse
            catalog_options = dict(config.options)  # all of them: the env, not argv
        if connect:  # no spark_log_level: the server's driver keeps its own log configuration
            return PaimonSparkConnectJobHook(
                Path(application).stem or getattr(self.python_callable, "__name__", "job"),
                [str(a) for a in self.application_args],
                spark_conn_id=self.spark_conn_id,
                conf=self.spark_conf(context, url is not None, database),
                secret_options=catalog_options or None,
                secret_env=secret_env or None,
                context_env=self.try_env(context),
                application=application or None,
                python_callable=self.python_callable,
                require_result=False,
            )
        return PaimonSparkJobHook(
            Path(application).stem,
            [str(a) for a in self.application_args],
            application=application,
            secret_options=catalog_options or None,
            secret_env=secret_env or None,
            context_env=self.try_env(context),  # the run, on the job's snapshots
            require_result=False,
            spark_conn_id=self.spark_conn_id,
            conf=self.spark_conf(context, url is not None, database),
            log_level=self.spark_log_level,
            name=self.application_name(),
            py_files=self.py_files,
            **self.spark_kwargs,
        )

    def execute(self, context: Context) -> dict[str, Any] | None:
        if self.run_tag_prefix is not None:  # names checked before paying for a submit
            for table in self.run_tag_tables:
                try:
                    parse_table_name(str(table))
                except PaimonError as err:
                    raise AirflowFailException(f"run_tag_tables: {err}; nothing was submitted") from None
        targets = self.partition_targets() if self.asset_partitions else []
        self._hook = self.make_hook(context)
        result = self._hook.run()
        if result is None:
            self.log.info("%s finished (it printed no PAIMON_RESULT line)", self.application)
        else:
            self.log.info("%s result: %s", Path(self.application).name, result)
        if self.run_tag_prefix is not None:
            tags = self.tag_the_run(context)
            result = {**(result or {}), "run_tag": tags}
        if targets:
            result = {**(result or {}), "asset_partitions": self.emit_asset_partitions(context, targets)}
        return result

    def try_env(self, context: Context) -> dict[str, str]:
        """``AIRFLOW_CTX_*`` naming this try (and, with ``asset_partitions``, that it reports
        its partitions itself), for the job's environment and so its snapshots' properties."""
        env = airflow_context_env(context)
        return {**env, **try_partition_env()} if env and self.asset_partitions else env

    def partition_targets(self) -> list[PartitionTarget]:
        """The ``paimon://`` outlets, each with its latest snapshot before the job (the
        scan for the try's commits stops there). Read through ``paimon_conn_id`` (its
        warehouse's tables only), else through each asset's own warehouse (no credentials)."""
        assets = paimon_outlets(self.outlets)
        conn_id = (self.paimon_conn_id or "").strip()
        try:
            if conn_id:
                targets = outlet_tables(PaimonHook(paimon_conn_id=conn_id), assets)
            else:
                targets = [t for a in assets for t in outlet_tables(own_warehouse_hook(a), [a])]
        except (PaimonError, ValueError) as err:
            raise AirflowFailException(f"asset_partitions: {err}; nothing was submitted") from None
        for asset in assets:
            if asset.uri not in {t.asset.uri for t in targets}:
                self.log.warning(
                    "asset_partitions: outlet %s is not a table of the %s connection's warehouse; "
                    "it gets a plain asset event", asset.uri, conn_id,
                )
        return targets

    def emit_asset_partitions(self, context: Context, targets: list[PartitionTarget]) -> dict[str, list[str]]:
        """One partitioned event per partition this try's commits changed, per target."""
        wanted = airflow_properties(self.try_env(context))
        emitted: dict[str, list[str]] = {}
        for target in targets:
            try:
                keys, snapshot_ids = target.partitions_committed(wanted)
            except PaimonError as err:
                raise AirflowFailException(
                    f"{self.task_id}: the application succeeded, but the partitions it changed in "
                    f"{target.table} could not be read ({err}); no asset event was emitted (not "
                    "retried: a retry would run the application again)"
                ) from None
            extra = {"paimon": {"table": target.table, "branch": target.branch or "main",
                                "snapshot_ids": snapshot_ids}}
            emitted[target.asset.uri] = emit_partition_events(self, context, target.asset, keys, extra)
        self.log.info("asset_partitions: %s", emitted)
        return emitted

    def tag_the_run(self, context: Context) -> list[dict[str, Any]]:
        """``run_tag``: the run's tag on the snapshot this try committed to each table."""
        hook = PaimonHook((self.paimon_conn_id or "").strip() or PaimonHook.default_conn_name)
        tag = run_tag_for(self.run_tag_prefix or "", self.dag_id, context)
        try_env = airflow_context_env(context)
        redirects = self.branch_redirects if isinstance(self.branch_redirects, dict) else {}
        done = []
        for table in self.run_tag_tables:
            table = str(table)
            branch = redirects.get(table)
            try:
                snapshot_id = snapshot_of_try(hook, table, branch, try_env)
                if snapshot_id is None:
                    self.log.warning("run_tag: this try committed nothing to %s; no tag there", table)
                    continue
                done.append({"table": table, **tag_committed_snapshot(hook, table, branch, snapshot_id, tag)})
            except PaimonError as err:
                raise AirflowFailException(
                    f"{self.task_id}: the application succeeded, but the run's tag {tag!r} could not "
                    f"be made on {table} ({err}); tag it with TagDagRunOperator (not retried: a "
                    "retry would run the application again)"
                ) from None
        self.log.info("run_tag: %s", done)
        return done

    def on_kill(self) -> None:
        if self._hook is not None:
            self._hook.on_kill()

