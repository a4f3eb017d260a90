"""The operators of a cascading correction: plan, branch, re-run, audit.

``task_groups/cascade.py`` (``cascade_correction``) wires them, with a
``SnapshotCatchUpSensor`` per re-run job and ``PublishBranchesOperator``, into one task
group; its docstring draws the group and says what each step does. Here:
``CascadePlanOperator`` (the plan, from the lineage store; changes nothing),
``CascadeBranchOperator`` (tag and branch each planned table at its branch point),
``CascadeJobOperator`` (re-run a table's job with every planned table redirected to
its correction branch) and ``CascadeAuditOperator`` (diff the branch against main and
run the table's checks; a failed check stops the publish with nothing changed).

Every step can be retried, and a failed DAG run rerun (clear the failed tasks): the
plan is the same (the lineage of the bad snapshot does not change), the branch step
accepts the tags and branches it made before, and jobs re-run into their branch (they
must rebuild or resume their output: a streaming job with its own checkpoint for the
correction, a batch job that overwrites).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_provider_paimon.common.templated_secrets import MaskRenderedSecrets
from airflow_provider_paimon.hooks.lineage import PaimonLineageHook
from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.lineage import LineageStore
from airflow_provider_paimon.lineage.cascade import plan_cascade
from airflow_provider_paimon.lineage.errors import LineageError
from airflow_provider_paimon.operators.audit import BranchAuditOperator
from airflow_provider_paimon.operators.spark_submit import PaimonSparkSubmitOperator
from airflow_provider_paimon.paimon.branch.branch_point import branch_at
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.paimon.names import parse_table_name, validate_branch_name

#: the XCom key of the whole plan; the return value is its list of tables (what
#: ``branch`` maps over: Airflow maps over return values only)
PLAN_XCOM_KEY = "plan"


def tag_for(correction: str) -> str:
    """The tag that pins each table's branch point for correction ``correction``."""
    return f"{correction}_base"


def plan_table_name(name: str) -> str:
    """``db.table`` in the plan's spelling (lower case), refusing a branch suffix."""
    try:
        db, tbl = parse_table_name(str(name).strip())
    except (PaimonError, ValueError) as err:
        raise ValueError(f"{name!r} is not a database.table name: {err}") from None
    if "$" in tbl:
        raise ValueError(f"{name!r}: name the table itself; the cascade chooses its branch")
    return f"{db}.{tbl}".lower()


def check_job_order(plan: Mapping[str, Any], declared: Sequence[str]) -> None:
    """Every planned table has a declared job, declared after the planned tables it reads.

    Raises ``ValueError`` naming the first problem; the group's tasks run in the declared
    order, so a declared order the plan contradicts would run a job before its input was
    corrected.
    """
    position = {name: i for i, name in enumerate(declared)}
    tables = plan["tables"]
    missing = [t["name"] for t in tables if t["name"] not in position]
    if missing:
        raise ValueError(
            f"the plan corrects {', '.join(missing)} but the cascade has no job for "
            f"{'it' if len(missing) == 1 else 'them'}: add {'it' if len(missing) == 1 else 'them'} to jobs= "
            f"(jobs declared: {', '.join(declared) or 'none'})"
        )
    for t in tables:
        for up in t["upstreams"]:
            if up in position and position[up] > position[t["name"]]:
                raise ValueError(
                    f"{t['name']} reads {up}, but its job is declared before {up}'s: declare the jobs "
                    f"upstream first (the plan's order: {', '.join(plan['order'])})"
                )


class CascadePlanOperator(MaskRenderedSecrets, BaseOperator):
    """Plan the cascade from the lineage store; return it for the other tasks (XCom).

    :param table: the table (``db.table``) that got the bad snapshot (templated).
    :param snapshot_id: its first bad snapshot (templated).
    :param correction: the correction's name: the branch every planned table gets, and
        ``<correction>_base`` the tag at each branch point (templated).
    :param jobs: the tables the DAG has a re-run job for, in the order they run.
    :param depth: table hops to follow from ``table``.
    :param lineage_conn_id: a ``paimon_lineage`` connection, or ``lineage_url``
        (templated) and ``lineage_database``.

    XCom: the plan under key ``plan``: ``correction``, ``tag``, ``root``, ``order``,
    ``tables`` (each with ``name``, ``branch_point``, ``first_bad_snapshot``, ``jobs``,
    ``upstreams``, ``correction``, ``tag``) and
    ``redirects`` (``{"db.table": correction}`` for every planned table), ``publish``
    (``[["db.table", correction], ...]`` upstream first). The return value is the
    plan's ``tables``, for the mapped ``branch`` task.
    """

    template_fields: Sequence[str] = (
        "table", "snapshot_id", "correction", "lineage_conn_id", "lineage_url", "lineage_database",
    )
    secret_url_fields: ClassVar[tuple[str, ...]] = ("lineage_url",)
    ui_color = "#e8dcf5"

    def __init__(
        self,
        *,
        table: str,
        snapshot_id: int | str,
        correction: str,
        jobs: Sequence[str],
        depth: int = 20,
        lineage_conn_id: str | None = None,
        lineage_url: str | None = None,
        lineage_database: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not (lineage_conn_id or lineage_url):
            raise ValueError("the cascade plan reads the lineage store: give lineage_conn_id or lineage_url")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
        self.jobs = [plan_table_name(j) for j in jobs]
        if len(set(self.jobs)) != len(self.jobs):
            raise ValueError(f"a table has two jobs in jobs={list(jobs)!r}: give one job per table")
        self.table = table
        self.snapshot_id = snapshot_id
        self.correction = correction
        self.depth = depth
        self.lineage_conn_id = lineage_conn_id
        self.lineage_url = lineage_url
        self.lineage_database = lineage_database
        self.check_literal_locations()

    def _store(self) -> Any:
        conn_id = (self.lineage_conn_id or "").strip()
        if conn_id:
            return PaimonLineageHook(conn_id).get_store(read_only=True)

        database = (self.lineage_database or "").strip()
        extra: dict[str, Any] = {"database": database} if database else {}
        return LineageStore.from_url((self.lineage_url or "").strip(), read_only=True, **extra)

    def build_plan(self) -> dict[str, Any]:
        """The plan as plain JSON types; raises ``AirflowFailException`` on anything wrong."""
        try:
            correction = str(self.correction).strip()
            validate_branch_name(correction)
            root = plan_table_name(self.table)
            snapshot_id = int(str(self.snapshot_id).strip())
            if snapshot_id <= 0:
                raise ValueError(f"snapshot_id must be a positive integer, got {self.snapshot_id!r}")
            db, tbl = root.split(".")
            with self._store() as store:
                plan = plan_cascade(store, db, tbl, snapshot_id, depth=self.depth).to_dict()
        except (PaimonError, LineageError, ValueError) as err:
            raise AirflowFailException(f"cannot plan the cascade: {err}; nothing was changed") from None
        if plan["truncated"]:
            raise AirflowFailException(
                f"the cascade plan was cut short ({plan['truncated_reason']}): its branch points may be "
                "too late; raise depth and rerun; nothing was changed"
            )
        if not plan["tables"]:
            corrected = ", ".join(plan.get("corrected") or []) or root
            raise AirflowFailException(
                f"nothing to correct: no table's current rows come from snapshot {snapshot_id} of {root} any more "
                f"({corrected} corrected before); nothing was changed"
            )
        off_main = [t["name"] for t in plan["tables"] if t["branch"] != "main"]
        if off_main:
            raise AirflowFailException(
                f"the plan reaches branches other than main ({', '.join(off_main)}): a cascade corrects "
                "main tables only; correct those branches separately; nothing was changed"
            )
        try:
            check_job_order(plan, self.jobs)
        except ValueError as err:
            raise AirflowFailException(f"{err}; nothing was changed") from None
        tag = tag_for(correction)
        for t in plan["tables"]:
            t["correction"] = correction
            t["tag"] = None if t["branch_point"] is None else tag
        plan.update(
            correction=correction, tag=tag, redirects={t["name"]: correction for t in plan["tables"]},
            publish=[[t["name"], correction] for t in plan["tables"]],  # upstream first
        )
        return plan

    def execute(self, context: Any) -> list[dict[str, Any]]:
        plan = self.build_plan()
        for t in plan["tables"]:
            at = "empty" if t["branch_point"] is None else f"snapshot {t['branch_point']}"
            if t["branch_point"] is not None and t.get("branch_point_branch", "main") != "main":
                at += f" of branch {t['branch_point_branch']} (where its current rows came from)"
            self.log.info("%s: branch %s at %s, re-run %s", t["name"], plan["correction"], at,
                          ", ".join(t["jobs"]) or "(no recorded job)")
        context["ti"].xcom_push(key=PLAN_XCOM_KEY, value=plan)
        return plan["tables"]


class CascadeBranchOperator(MaskRenderedSecrets, BaseOperator):
    """Tag one planned table at its branch point and branch from the tag (idempotent).

    :param entry: one of the plan's tables (mapped: ``.expand(entry=plan.output)``).
    :param warehouse: warehouse path/URI; blank: the ``paimon_conn_id`` connection's.
    :param warehouse_options: extra catalog options.
    :param paimon_conn_id: a ``paimon`` connection.

    Metadata only (a few small files), so it runs on the worker with pypaimon.
    """

    template_fields: Sequence[str] = ("warehouse", "warehouse_options", "paimon_conn_id")
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse",)
    secret_option_fields: ClassVar[tuple[str, ...]] = ("warehouse_options",)
    ui_color = "#e8dcf5"

    def __init__(
        self,
        *,
        entry: Mapping[str, Any],
        warehouse: str | None = None,
        warehouse_options: dict[str, str] | None = None,
        paimon_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        self.warehouse = warehouse
        self.warehouse_options = warehouse_options
        self.paimon_conn_id = paimon_conn_id
        self.check_literal_locations()

    def execute(self, context: Any) -> dict[str, Any]:
        entry = dict(self.entry)
        try:
            hook = PaimonHook.for_task(self.warehouse, self.paimon_conn_id, catalog_options=self.warehouse_options)
            result = branch_at(
                hook.get_table(entry["name"]), entry["correction"],
                snapshot_id=entry["branch_point"], tag=entry["tag"],
                source_branch=entry.get("branch_point_branch"),
            )
        except (PaimonError, ValueError) as err:
            raise AirflowFailException(f"{entry.get('name')}: {type(err).__name__}: {err}") from None
        made = [what for what, yes in result["created"].items() if yes]
        self.log.info(
            "%s: branch %s at %s (%s)", entry["name"], result["branch"],
            "empty" if result["snapshot_id"] is None else
            f"tag {result['tag']} = snapshot {result['snapshot_id']} of {result.get('source_branch', 'main')}",
            "made " + " and ".join(made) if made else "already there from an earlier try",
        )
        return {"table": entry["name"], **result}


class _PlannedTable:
    """For a task about one table: read the plan, skip when the table is not in it."""

    plan_task_id: str
    cascade_table: str

    def planned(self, context: Any) -> dict[str, Any]:
        plan = context["ti"].xcom_pull(task_ids=self.plan_task_id, key=PLAN_XCOM_KEY)
        if not plan:
            raise AirflowFailException(f"no cascade plan in XCom of task {self.plan_task_id!r}")
        if self.cascade_table not in plan["redirects"]:
            raise AirflowSkipException(f"{self.cascade_table} is not affected by this cascade")
        return plan


class CascadeJobOperator(_PlannedTable, PaimonSparkSubmitOperator):
    """``PaimonSparkSubmitOperator`` re-running one table's job with the plan's redirects.

    :param cascade_table: the table this job writes (``db.table``).
    :param plan_task_id: the ``CascadePlanOperator`` task.

    Every planned table is redirected to the correction branch (reads and writes); the
    others stay on main. Skipped when the plan leaves ``cascade_table`` out.
    """

    def __init__(self, *, cascade_table: str, plan_task_id: str, **kwargs: Any) -> None:
        if kwargs.get("branch_redirects"):
            raise ValueError("a cascade job's branch_redirects come from the plan: do not give them")
        super().__init__(**kwargs)
        self.cascade_table = plan_table_name(cascade_table)
        self.plan_task_id = plan_task_id

    def execute(self, context: Any) -> dict[str, Any] | None:
        plan = self.planned(context)
        self.branch_redirects = dict(plan["redirects"])
        self.log.info("re-running %s with redirects %s", self.application, self.branch_redirects)
        return super().execute(context)


class CascadeAuditOperator(_PlannedTable, BranchAuditOperator):
    """``BranchAuditOperator`` on the correction branch of one planned table (else skipped)."""

    def __init__(self, *, cascade_table: str, plan_task_id: str, **kwargs: Any) -> None:
        super().__init__(table=cascade_table, **kwargs)
        self.cascade_table = plan_table_name(cascade_table)
        self.plan_task_id = plan_task_id

    def execute(self, context: Any) -> dict[str, Any]:
        self.planned(context)
        return super().execute(context)
