"""Tag operators: create (with an optional retention), delete and rename tags on main
or on a branch, and tag the snapshot of a DAG run (``TagDagRunOperator``).

They submit the ``tag`` job family (``spark/jobs/tag.py``). A tag is cheap metadata,
but going through the same job keeps one code path (and one audit trail in Spark) for
every change to a table; the checks here make a bad name or a missing snapshot fail
before any submit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import Context

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.base import (
    IF_EXISTS,
    PaimonSparkJobOperator,
    check_if_exists,
    optional_int,
    optional_str,
)
from airflow_provider_paimon.paimon.durations import parse_duration
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.paimon.names import is_main, refuse_lookalike, validate_tag_name
from airflow_provider_paimon.paimon.tag.run_tag import run_tag_name


def is_template(value: Any) -> bool:
    """A value Airflow still has to render (checked once rendered, not when parsed)."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def time_retained_arg(value: Any) -> timedelta | None:
    """``time_retained`` as given or rendered: ``None``/blank, a ``timedelta``, seconds or ``"7 d"``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_duration(value, "time_retained", allow_zero=False)


def check_time_retained(value: Any) -> Any:
    """Check ``time_retained`` when the DAG is parsed (a template: once rendered)."""
    if not is_template(value):
        try:
            time_retained_arg(value)
        except PaimonError as err:
            raise ValueError(str(err)) from None
    return value


class _TagOperator(PaimonSparkJobOperator):
    job_family = "tag"
    partition_events_allowed = False  # a tag changes no rows a reader sees
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "tag", "branch")

    def __init__(self, *, tag: str, branch: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tag = tag
        self.branch = branch

    def _branch_args(self) -> list[str]:
        branch = optional_str(self.branch)
        return [] if branch is None or is_main(branch) else ["--branch", branch]

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, optional_str(self.branch))]

    def paimon_outlet_tables(self) -> list[tuple[str, str | None]]:
        """None: a tag is metadata; no reader of the table sees new data."""
        return []


class TagCreateOperator(_TagOperator):
    """Tag ``snapshot_id`` (default: the latest snapshot) of ``table`` on ``branch`` (default main).

    Fails before submitting when the name is invalid, the tag exists, the branch or
    snapshot does not exist, or there is no snapshot to tag. With ``if_exists="skip"``
    an existing tag is left as it is and nothing is submitted (a retried task is
    harmless). XCom: the job's result, or ``{"skipped": true, ...}``.

    :param time_retained: the tag expires this long after its creation (``timedelta``,
        seconds, or Paimon's ``"7 d"``; templated); written as Paimon Java's
        ``tagCreateTime`` / ``tagTimeRetained`` and honoured by ``ExpireTagsOperator``
        and Paimon Java's tag expiry. Default: the tag never expires.
    """

    action = "create"
    template_fields: Sequence[str] = (*_TagOperator.template_fields, "snapshot_id", "if_exists", "time_retained")

    def __init__(
        self,
        *,
        snapshot_id: int | str | None = None,
        if_exists: str = "fail",
        time_retained: timedelta | float | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.snapshot_id = snapshot_id
        self.if_exists = check_if_exists(if_exists)  # a template is checked once rendered
        self.time_retained = check_time_retained(time_retained)

    def job_args(self) -> list[str]:
        args = ["--tag", self.tag, *self._branch_args()]
        snapshot_id = optional_int(self.snapshot_id, "snapshot_id")
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        retained = time_retained_arg(self.time_retained)
        if retained is not None:
            args += ["--time-retained", str(retained.total_seconds())]
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        if self.if_exists not in IF_EXISTS:  # a templated value, rendered now
            self.fail(f"if_exists must be one of {', '.join(IF_EXISTS)}, got {self.if_exists!r}")
        validate_tag_name(self.tag, self.name_profile(hook))
        time_retained_arg(self.time_retained)  # a bad rendered value fails here
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        if hook.tag_exists(self.table, self.tag, branch):
            if self.if_exists == "skip":
                return {"command": "create", "table": self.table, "tag": self.tag, "skipped": True,
                        "message": f"tag {self.tag!r} already exists; left as it is"}
            self.fail(f"tag {self.tag!r} already exists on {self.table}")
        refuse_lookalike("tag", self.tag, hook.list_tags(self.table, branch))
        snapshot_id = optional_int(self.snapshot_id, "snapshot_id")
        if snapshot_id is not None:
            self.require_snapshot(hook, snapshot_id, branch)
        elif hook.get_latest_snapshot_id(self.table, branch) is None:
            self.fail(f"{self.table} has no snapshot to tag yet (write to it first)")
        return None


class TagDeleteOperator(_TagOperator):
    """Delete ``tag`` of ``table`` on ``branch`` (default main); it must exist."""

    action = "delete"

    def job_args(self) -> list[str]:
        return ["--tag", self.tag, *self._branch_args()]

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        validate_tag_name(self.tag, self.name_profile(hook))
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        self.require_tag(hook, self.tag, branch)
        return None


class TagRenameOperator(_TagOperator):
    """Rename ``tag`` of ``table`` on ``branch`` (default main) to ``new_name``.

    Fails before submitting when a name is invalid, ``tag`` does not exist or
    ``new_name`` already names a different tag. The job writes the new tag first
    and deletes the old one after (``paimon/tag/rename.py``): killed in between, both
    names read the same snapshot and a rerun finishes. A tag a branch was created
    from is refused by the job, naming the branch.
    """

    action = "rename"
    template_fields: Sequence[str] = (*_TagOperator.template_fields, "new_name")

    def __init__(self, *, new_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.new_name = new_name

    def job_args(self) -> list[str]:
        return ["--tag", self.tag, "--new-name", self.new_name, *self._branch_args()]

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        validate_tag_name(self.tag, self.name_profile(hook))
        validate_tag_name(self.new_name, self.name_profile(hook))
        if self.tag == self.new_name:
            self.fail(f"tag {self.tag!r} cannot be renamed to itself; give a different new_name")
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        self.require_tag(hook, self.tag, branch)
        target = hook.get_tag(self.table, self.new_name, branch)
        if target is not None and target != hook.get_tag(self.table, self.tag, branch):
            self.fail(
                f"tag {self.new_name!r} already exists on {self.table} (snapshot {target['id']}); "
                "delete it first or choose another new_name"
            )
        refuse_lookalike("tag", self.new_name, [t for t in hook.list_tags(self.table, branch) if t != self.tag])
        return None


class TagDagRunOperator(TagCreateOperator):
    """Tag the snapshot this DAG run produced, with a tag named after the run.

    The tag is ``{tag_prefix}-{logical date}`` (``paimon_etl-20261124T090000Z``) or,
    for a run without a logical date, ``{tag_prefix}-{run id}``, reduced to safe
    characters (``paimon/tag/run_tag.py``); ``tag_prefix`` defaults to the DAG id.
    The snapshot is ``snapshot_id`` (templated, e.g. from the writing task's XCom:
    ``"{{ ti.xcom_pull(task_ids='compact')['snapshot_id'] }}"``; blank/None: the
    latest snapshot when the tag is made).

    Rerunning the same run is idempotent: when the run's tag exists, nothing is
    submitted and the task succeeds if the tag holds the requested snapshot, or, with
    no ``snapshot_id``, whatever snapshot the run's first attempt tagged (it is the
    run's tag; a streaming writer has moved ``latest`` on since). An existing tag on
    a different ``snapshot_id`` fails, naming both ids. XCom: the job's result, or
    ``{"existing": true, "snapshot_id": ..., ...}``.
    """

    template_fields: Sequence[str] = (*TagCreateOperator.template_fields, "tag_prefix")

    def __init__(self, *, tag_prefix: str | None = None, **kwargs: Any) -> None:
        if "tag" in kwargs or "if_exists" in kwargs:
            raise TypeError("TagDagRunOperator names the tag after the run: do not pass tag or if_exists")
        super().__init__(tag="", **kwargs)
        self.tag_prefix = tag_prefix

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        """Render, then name the tag after this run (also for ``preflight_all``'s copies)."""
        super().render_template_fields(context, jinja_env)
        dag_run = context.get("dag_run")
        run_id = context.get("run_id") or getattr(dag_run, "run_id", None)
        logical_date = context.get("logical_date") or getattr(dag_run, "logical_date", None)
        prefix = optional_str(self.tag_prefix) or self.dag_id
        self.tag = run_tag_name(prefix, logical_date, run_id)

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        if not self.tag:
            self.fail("the run's tag name is unknown (the task was not rendered with a run context)")
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        existing = hook.get_tag(self.table, self.tag, branch)
        if existing is None:
            return super().check_before_submit(hook)
        wanted = optional_int(self.snapshot_id, "snapshot_id")
        if wanted is not None and wanted != existing["id"]:
            self.fail(
                f"this run's tag {self.tag!r} already tags snapshot {existing['id']}, not the requested "
                f"snapshot {wanted}; delete the tag (TagDeleteOperator) to tag the new snapshot"
            )
        return {
            "command": "create", "table": self.table, "tag": self.tag, "branch": branch or "main",
            "snapshot_id": existing["id"], "existing": True,
            "message": f"this run's tag {self.tag!r} already tags snapshot {existing['id']}; left as it is",
        }
