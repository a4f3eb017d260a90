"""One DAG for a whole cascading correction: plan, branch, re-run, wait, audit, publish.

``cascade_correction`` builds a task group from the jobs a team already runs::

    plan -> branch (mapped over the planned tables) -> run_<table> [-> wait_<table>] ...
         -> audit_<table> ... -> publish

* ``plan`` (``CascadePlanOperator``) asks the lineage store which tables the bad
  snapshot spoiled (``lineage.cascade.plan_cascade``), checks that the group has a job
  for each, in an order the plan allows, and returns the plan (XCom). It changes
  nothing: a bad plan fails here.
* ``branch`` (``CascadeBranchOperator``, one mapped task per planned table) tags each
  table at its branch point and branches from the tag (``paimon.branch.branch_point``).
* ``run_<table>`` (``CascadeJobOperator``) re-runs the table's job with every planned
  table redirected to the correction branch (``branch_redirects``), so its reads see
  the corrected upstream branches and its writes land on its own branch. A table the
  plan leaves out is skipped, and so is everything of it below.
* ``wait_<table>`` (``SnapshotCatchUpSensor``) waits until that job has consumed its
  sources' latest branch snapshots (a streaming job started with ``availableNow`` has
  caught up when it stops; one left running is waited for).
* ``audit_<table>`` (``CascadeAuditOperator``) diffs the branch against main and runs
  the table's checks; a failed check stops the publish with nothing changed.
* ``publish`` (``PublishBranchesOperator``) replaces every planned table's main by its
  branch under one crash-safe journal, upstream first.

Every step can be retried, and a failed DAG run rerun (clear the failed tasks): the
plan is the same (the lineage of the bad snapshot does not change), the branch step
accepts the tags and branches it made before, jobs re-run into their branch (they must
rebuild or resume their output: a streaming job with its own checkpoint for the
correction, a batch job that overwrites), and the publish resumes its journal or, once
done, changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import TaskGroup

from airflow_provider_paimon.operators.cascade import (
    PLAN_XCOM_KEY,
    CascadeAuditOperator,
    CascadeBranchOperator,
    CascadeJobOperator,
    CascadePlanOperator,
    plan_table_name,
)
from airflow_provider_paimon.operators.publish import PublishBranchesOperator
from airflow_provider_paimon.sensors.catchup import SnapshotCatchUpSensor

__all__ = ["cascade_correction"]


def _task_suffix(table: str) -> str:
    return table.replace(".", "__")


def cascade_correction(
    *,
    group_id: str = "cascade",
    table: str,
    snapshot_id: int | str,
    correction: str,
    jobs: Mapping[str, Mapping[str, Any]],
    checks: Mapping[str, Mapping[str, str] | Sequence[str]] | None = None,
    wait_for_catch_up: bool = True,
    wait_poke_interval: float = 5,
    wait_timeout: float = 3600,
    depth: int = 20,
    backup_name: str | None = None,
    warehouse: str | None = None,
    paimon_conn_id: str | None = None,
    lineage_conn_id: str | None = None,
    lineage_url: str | None = None,
    lineage_database: str | None = None,
    spark_conn_id: str = "spark_default",
    allow_location_from_params: bool = False,
    expectations: Mapping[str, Sequence[Any]] | None = None,
    approve: bool = False,
    approval_timeout: Any = None,
    sensitive_columns: Sequence[str] = (),
) -> TaskGroup:
    """Build the cascade's task group in the current DAG; returns it (chain it like a task).

    :param table: the table with the bad snapshot; :param snapshot_id: its first bad one.
    :param correction: the correction's name (branch on every table, ``<name>_base`` tag).
    :param jobs: ``{"db.table": PaimonSparkSubmitOperator kwargs}`` for every table the
        cascade may correct, upstream first (the root table's entry is its corrected
        job). Each job is re-run as-is with the redirects; the lineage capture names it
        ``{dag_id}.{task_id}`` unless its kwargs say otherwise.
    :param checks: ``{"db.table": checks}`` for ``BranchAuditOperator`` per table; a
        table without checks is still diffed (the summary lands in XCom).
    :param wait_for_catch_up: a ``SnapshotCatchUpSensor`` after each job reading planned tables.
    :param wait_poke_interval: seconds between that sensor's checks (``reschedule`` mode).
    :param wait_timeout: seconds that sensor waits before failing the run.
    :param backup_name: every table's backup branch at publish (default: chosen by the job).
    :param expectations: ``{"db.table": [rules]}``: declarative rules each table's audit
        applies to its correction branch first (``BranchAuditOperator(expectations=...)``,
        docs/publish.md): a violated ``fail`` rule stops the publish, ``drop`` rules move
        rows to ``<correction>__quarantine``.
    :param approve: the publish asks a person first, showing every audit's evidence
        (``approval_timeout``, default 24 h; ``sensitive_columns`` masked in the samples);
        a rejection or no answer fails it and no main changes.

    The templated arguments (``table``, ``snapshot_id``, ``correction``...) may come
    from ``params``: ``"{{ params.snapshot_id }}"``; ``warehouse`` and ``lineage_url``
    only with ``allow_location_from_params=True`` (docs/security.md).
    """
    if not jobs:
        raise ValueError("jobs= must name at least the corrected job of the table with the bad snapshot")
    declared = [plan_table_name(name) for name in jobs]
    unknown_checks = sorted({plan_table_name(n) for n in (checks or {})} - set(declared))
    if unknown_checks:
        raise ValueError(f"checks name tables without a job: {', '.join(unknown_checks)}")
    rules = {plan_table_name(n): r for n, r in (expectations or {}).items()}
    unknown_rules = sorted(set(rules) - set(declared))
    if unknown_rules:
        raise ValueError(f"expectations name tables without a job: {', '.join(unknown_rules)}")
    lineage = {"lineage_conn_id": lineage_conn_id, "lineage_url": lineage_url, "lineage_database": lineage_database}
    where = {"warehouse": warehouse, "paimon_conn_id": paimon_conn_id}
    opt_in: dict[str, Any] = {"allow_location_from_params": allow_location_from_params}
    with TaskGroup(group_id=group_id) as group:
        plan = CascadePlanOperator(
            task_id="plan", table=table, snapshot_id=snapshot_id, correction=correction,
            jobs=declared, depth=depth, **lineage, **opt_in,
        )
        branches = CascadeBranchOperator.partial(task_id="branch", **where, **opt_in).expand(
entry=plan.output)
        plan >> branches
        previous: Any = branches
        for name, kwargs in zip(declared, jobs.values(), strict=True):
            job = CascadeJobOperator(
                task_id=f"run_{_task_suffix(name)}", cascade_table=name, plan_task_id=plan.task_id,
                paimon_conn_id=paimon_conn_id, spark_conn_id=spark_conn_id,
                trigger_rule="none_failed", **{k: v for k, v in lineage.items() if v},
                **{**opt_in, **dict(kwargs)},
            )
            previous >> job
            previous = job
            if wait_for_catch_up and name != declared[0]:
                db_table = name
                wait = SnapshotCatchUpSensor(
                    task_id=f"wait_{_task_suffix(name)}", table=db_table, branch=correction,
                    job=(kwargs.get("lineage_job") or job.application_name()),
                    poke_interval=wait_poke_interval, timeout=wait_timeout, mode="reschedule",
                    **{k: v for k, v in {**lineage, **where}.items() if v},  # type: ignore[arg-type]  # str-valued keyword arguments
                    **opt_in,
                )
                job >> wait
                previous = wait
        audits = []
        for name in declared:
            audit = CascadeAuditOperator(
                task_id=f"audit_{_task_suffix(name)}", cascade_table=name, plan_task_id=plan.task_id,
                branch=correction, checks=(checks or {}).get(name), spark_conn_id=spark_conn_id,
                expectations=rules.get(name), trigger_rule="none_failed", **where, **opt_in,
            )
            previous >> audit
            audits.append(audit)
        publish = PublishBranchesOperator(
            task_id="publish",
            tables=f"{{{{ ti.xcom_pull(task_ids='{plan.task_id}', key='{PLAN_XCOM_KEY}')['publish'] | tojson }}}}",
            backup_name=backup_name, spark_conn_id=spark_conn_id, trigger_rule="none_failed",
            approve=approve, approval_timeout=approval_timeout, sensitive_columns=sensitive_columns,
            **where, **lineage, **opt_in,
        )
        for audit in audits:
            audit >> publish
    return group
