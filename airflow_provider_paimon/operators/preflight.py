"""Check every Paimon operator of a DAG before the first one changes anything.

Each Paimon operator checks its own input right before it submits (``preflight``), so
a bad name in the fourth task of a correction DAG is found only after the first three
have tagged, branched and run a Spark job. ``preflight_all`` runs all of those checks
up front, from the first task: every operator is rendered with the run's context (on a
copy: the DAG's own operators are not touched) and its ``preflight`` is called in the
DAG's order against a *planned* view of the warehouse, in which the tags and branches
the earlier operators will create (or delete) already exist (or are gone). So
``create_branch(tag=before_fix)`` after ``tag_main(tag=before_fix)`` passes, and
``replace_main(branch=fix)`` after ``create_branch(fix)`` passes, while a tag or
branch that nobody creates, an existing one (without ``if_exists="skip"``), or an
unknown table fails, all reported together, before anything changed.

Use it from a ``@task`` (``preflight_all(dag_tasks, get_current_context())``) or as
the first task: ``PaimonPreflightOperator`` checks every Paimon operator downstream of
itself.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.base import PaimonSparkJobOperator, optional_str
from airflow_provider_paimon.operators.branch import (
    BranchCreateOperator,
    BranchDeleteOperator,
    BranchRenameOperator,
    ReplaceMainBranchOperator,
)
from airflow_provider_paimon.operators.schema import AlterTableOperator, _rendered_changes
from airflow_provider_paimon.operators.tag import (
    TagCreateOperator,
    TagDeleteOperator,
    TagRenameOperator,
)
from airflow_provider_paimon.paimon.names import is_main
from airflow_provider_paimon.paimon.schema import check_alter

if TYPE_CHECKING:
    from airflow.sdk.types import Operator  # BaseOperator | MappedOperator


class PaimonPreflightFailed(AirflowFailException):  # reads as what happened
    """One or more Paimon operators of the DAG would fail; nothing was changed."""


class PlannedPaimonHook:
    """A ``PaimonHook`` as it will look after the operators planned so far have run.

    Only names change in the plan (branches and tags created, deleted, renamed); every
    other question goes to the real hook. A planned branch answers with main's latest
    snapshot (it will be created from main's history).
    """

    def __init__(self, hook: PaimonHook) -> None:
        self._hook = hook
        self._branches: dict[tuple[str, str], bool] = {}  # (table, branch) -> exists
        self._tags: dict[tuple[str, str, str], bool] = {}  # (table, branch, tag) -> exists

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hook, name)

    # -- the plan ------------------------------------------------------------------

    def plan_branch(self, table: str, branch: str, exists: bool = True) -> None:
        self._branches[(table, branch)] = exists

    def plan_tag(self, table: str, tag: str, branch: str | None = None, exists: bool = True) -> None:
        self._tags[(table, _branch(branch), tag)] = exists

    # -- the hook's questions, answered from the plan first ---------------------------

    def branch_exists(self, table: str, branch: str) -> bool:
        planned = self._branches.get((table, branch))
        return self._hook.branch_exists(table, branch) if planned is None else planned

    def list_branches(self, table: str) -> list[str]:
        names = set(self._hook.list_branches(table))
        for (t, branch), exists in self._branches.items():
            if t == table:
                (names.add if exists else names.discard)(branch)
        return sorted(names)

    def tag_exists(self, table: str, tag: str, branch: str | None = None) -> bool:
        planned = self._tags.get((table, _branch(branch), tag))
        return self._hook.tag_exists(table, tag, branch) if planned is None else planned

    def list_tags(self, table: str, branch: str | None = None) -> list[str]:
        names = set(self._hook.list_tags(table, branch)) if self._real_branch(table, branch) else set()
        for (t, b, tag), exists in self._tags.items():
            if (t, b) == (table, _branch(branch)):
                (names.add if exists else names.discard)(tag)
        return sorted(names)

    def get_latest_snapshot_id(self, table: str, branch: str | None = None) -> int | None:
        if not self._real_branch(table, branch):
            return self._hook.get_latest_snapshot_id(table)
        return self._hook.get_latest_snapshot_id(table, branch)

    def get_snapshot(self, table: str, snapshot_id: int, branch: str | None = None) -> Any:
        if not self._real_branch(table, branch):
            return self._hook.get_snapshot(table, snapshot_id)
        return self._hook.get_snapshot(table, snapshot_id, branch)

    def _real_branch(self, table: str, branch: str | None) -> bool:
        """Whether ``branch`` exists on disk now (main always does)."""
        return is_main(branch) or self._branches.get((table, str(branch))) is None


def _branch(branch: str | None) -> str:
    return "main" if is_main(branch) else str(branch)


def apply_effects(op: PaimonSparkJobOperator, planned: PlannedPaimonHook) -> None:
    """Record in the plan what ``op`` (rendered) will create or delete when it runs."""
    table = op.table
    if isinstance(op, BranchCreateOperator):
        planned.plan_branch(table, op.branch)
    elif isinstance(op, BranchDeleteOperator):
        planned.plan_branch(table, op.branch, exists=False)
    elif isinstance(op, BranchRenameOperator):
        planned.plan_branch(table, op.branch, exists=False)
        planned.plan_branch(table, op.new_name)
    elif isinstance(op, ReplaceMainBranchOperator):
        name = optional_str(op.backup_name)
        if op.backup and name is not None:
            if op.backup_kind == "tag":
                planned.plan_tag(table, name)
            else:
                planned.plan_branch(table, name)
    elif isinstance(op, TagCreateOperator):
        planned.plan_tag(table, op.tag, optional_str(op.branch))
    elif isinstance(op, TagDeleteOperator):
        planned.plan_tag(table, op.tag, optional_str(op.branch), exists=False)
    elif isinstance(op, TagRenameOperator):
        planned.plan_tag(table, op.tag, optional_str(op.branch), exists=False)
        planned.plan_tag(table, op.new_name, optional_str(op.branch))


def _in_dag_order(tasks: Iterable[Operator]) -> list[Operator]:
    """``tasks`` in an order where every task comes after its upstream tasks."""
    tasks = list(tasks)
    wanted = {t.task_id for t in tasks}
    if not tasks:
        return []
    order = [t for t in tasks[0].dag.topological_sort() if t.task_id in wanted] if tasks[0].dag else tasks
    return order


def preflight_all(tasks: Iterable[Operator], context: Context) -> list[dict[str, Any]]:
    """Run the preflight of every Paimon operator in ``tasks``; raise listing every failure.

    Returns one entry per checked operator (``task_id`` and what its preflight said:
    ``submit`` or its no-submit result, e.g. an ``if_exists="skip"``).
    """
    planned: dict[str, PlannedPaimonHook] = {}
    problems: list[str] = []
    checked: list[dict[str, Any]] = []
    for task in _in_dag_order(tasks):
        if isinstance(task, AlterTableOperator):
            try:
                checked.append({"task_id": task.task_id, "preflight": _preflight_alter(task, context, planned)})
            except Exception as err:  # noqa: BLE001 - a refused change, a template or connection error
                problems.append(f"{task.task_id}: {type(err).__name__}: {err}")
            continue
        if not isinstance(task, PaimonSparkJobOperator):
            continue
        op = copy.copy(task)
        op.__dict__.pop("paimon_hook", None)  # never a hook made from unrendered templates
        try:
            op.render_template_fields(context)
            hook = op.paimon_hook
            view = planned.setdefault(hook.warehouse, PlannedPaimonHook(hook))
            op.__dict__["paimon_hook"] = view  # the cached property, on the copy only
            done = op.preflight()
        except AirflowFailException as err:
            problems.append(str(err))
            continue
        except Exception as err:  # noqa: BLE001 - a template or connection error is a problem too
            problems.append(f"{task.task_id}: {type(err).__name__}: {err}")
            continue
        checked.append({"task_id": task.task_id, "preflight": done if done is not None else "submit"})
        apply_effects(op, view)
    if problems:
        raise PaimonPreflightFailed(
            f"{len(problems)} Paimon task(s) would fail; nothing was changed:\n- " + "\n- ".join(problems)
        )
    return checked


def _preflight_alter(task: AlterTableOperator, context: Context, planned: dict[str, PlannedPaimonHook]) -> str:
    """``AlterTableOperator``: its changes checked against the schema they will meet
    (``check_alter``, nothing written). A branch that an earlier task creates is checked
    against main's latest schema, which it starts from."""
    op = copy.copy(task)
    op.render_template_fields(context)
    hook = PaimonHook.for_task(op.warehouse, op.paimon_conn_id, catalog_options=op.warehouse_options)
    view = planned.setdefault(hook.warehouse, PlannedPaimonHook(hook))
    branch = optional_str(op.branch)
    table = hook.get_table(op.table)
    if branch is not None and not is_main(branch):
        if not view.branch_exists(op.table, branch):
            raise ValueError(f"branch {branch!r} of {op.table} does not exist and no earlier task creates it")
        if not view._real_branch(op.table, branch):
            branch = None  # created later from main's history: main's schema
    result = check_alter(table, _rendered_changes(op.changes), branch=branch)
    return "submit" if result["changed"] else "no change"


class PaimonPreflightOperator(BaseOperator):
    """First task of a DAG: the preflight of every Paimon operator downstream of it.

    Fails (without retries) listing every problem, before any of them runs. XCom: the
    checked tasks (``preflight_all``'s result).
    """

    ui_color = "#d3eafc"

    def execute(self, context: Context) -> list[dict[str, Any]]:
        downstream = self.get_flat_relatives(upstream=False)
        result = preflight_all(downstream, context)
        self.log.info("Paimon preflight passed for %s", ", ".join(r["task_id"] for r in result) or "no task")
        return result
