"""Tag operators: create and delete tags on main or on a branch.

They submit the ``tag`` job family (``spark/jobs/tag.py``). A tag is cheap metadata,
but going through the same job keeps one code path (and one audit trail in Spark) for
every change to a table; the checks here make a bad name or a missing snapshot fail
before any submit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.operators.base import (
    IF_EXISTS,
    PaimonSparkJobOperator,
    check_if_exists,
    optional_int,
    optional_str,
)
from airflow_provider_paimon.paimon.names import is_main, validate_tag_name


class _TagOperator(PaimonSparkJobOperator):
    job_family = "tag"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "tag", "branch")

    def __init__(self, *, tag: str, branch: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tag = tag
        self.branch = branch

    def _branch_args(self) -> list[str]:
        branch = optional_str(self.branch)
        return [] if is_main(branch) else ["--branch", branch]  # type: ignore[list-item]

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, optional_str(self.branch))]


class TagCreateOperator(_TagOperator):
    """Tag ``snapshot_id`` (default: the latest snapshot) of ``table`` on ``branch`` (default main).

    Fails before submitting when the name is invalid, the tag exists, the branch or
    snapshot does not exist, or there is no snapshot to tag. With ``if_exists="skip"``
    an existing tag is left as it is and nothing is submitted (a retried task is
    harmless). XCom: the job's result, or ``{"skipped": true, ...}``.
    """

    action = "create"
    template_fields: Sequence[str] = (*_TagOperator.template_fields, "snapshot_id", "if_exists")

    def __init__(
        self, *, snapshot_id: int | str | None = None, if_exists: str = "fail", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.snapshot_id = snapshot_id
        self.if_exists = check_if_exists(if_exists)  # a template is checked once rendered

    def job_args(self) -> list[str]:
        args = ["--tag", self.tag, *self._branch_args()]
        snapshot_id = optional_int(self.snapshot_id, "snapshot_id")
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        if self.if_exists not in IF_EXISTS:  # a templated value, rendered now
            self.fail(f"if_exists must be one of {', '.join(IF_EXISTS)}, got {self.if_exists!r}")
        validate_tag_name(self.tag)
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        if hook.tag_exists(self.table, self.tag, branch):
            if self.if_exists == "skip":
                return {"command": "create", "table": self.table, "tag": self.tag, "skipped": True,
                        "message": f"tag {self.tag!r} already exists; left as it is"}
            self.fail(f"tag {self.tag!r} already exists on {self.table}")
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
        validate_tag_name(self.tag)
        branch = optional_str(self.branch)
        self.require_branch(hook, branch)
        self.require_tag(hook, self.tag, branch)
        return None
