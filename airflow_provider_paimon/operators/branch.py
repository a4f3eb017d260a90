"""Branch operators: create, delete, rename, fast-forward (merge) and replace main.

Each submits the ``branch`` job family (``spark/jobs/branch.py``), which does the file
operations crash-safely through ``airflow_provider_paimon.paimon``. The operators only
check names and existence first, so a typo fails in a second instead of after a submit.

Replace-main and fast-forward take a lineage store (``lineage_conn_id`` or
``lineage_url``): the job then records that main's new snapshot is the branch's, so
lineage queries follow the replacement. The URL reaches the job in its environment
(``PAIMON_LINEAGE_URL``), never on the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.job_contract import LINEAGE_URL_ENV
from airflow_provider_paimon.operators.approval import ApprovalGateMixin
from airflow_provider_paimon.operators.base import (
    IF_EXISTS,
    PaimonSparkJobOperator,
    check_if_exists,
    operator_lineage_store,
    optional_int,
    optional_str,
)
from airflow_provider_paimon.paimon.branch import pending_operation
from airflow_provider_paimon.paimon.names import (
    refuse_lookalike,
    validate_branch_name,
    validate_tag_name,
)

BACKUP_KINDS = ("tag", "branch")


class _BranchOperator(PaimonSparkJobOperator):
    """Shared by the branch operators: a ``branch`` argument and the ``branch`` job family."""

    job_family = "branch"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "branch")

    def __init__(self, *, branch: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.branch = branch

    def job_args(self) -> list[str]:
        return ["--branch", self.branch]

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        validate_branch_name(self.branch, self.name_profile(hook))
        self.require_branch(hook, self.branch)
        return None

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, self.branch)]

    def ol_main_snapshot_read(self, result: dict[str, Any]) -> int | None:
        """A branch job's result ``snapshot_id`` is the main snapshot it started from."""
        return int(result["snapshot_id"]) if result.get("snapshot_id") else None


class BranchCreateOperator(_BranchOperator):
    """Create ``branch`` on ``table``: empty, from ``tag``, or from ``snapshot_id``.

    Fails before submitting when the name is invalid, the branch already exists, or the
    tag/snapshot does not exist. With ``if_exists="skip"`` an existing branch is left as
    it is and the task succeeds without submitting (so a retried task is harmless; the
    existing branch is not compared with the requested source). XCom: the job's result
    (branch, source, snapshot), or ``{"skipped": true, ...}``.
    """

    action = "create"
    template_fields: Sequence[str] = (*_BranchOperator.template_fields, "tag", "snapshot_id", "if_exists")

    def __init__(
        self,
        *,
        tag: str | None = None,
        snapshot_id: int | str | None = None,
        if_exists: str = "fail",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.tag = tag
        self.snapshot_id = snapshot_id
        self.if_exists = check_if_exists(if_exists)  # a template is checked once rendered

    def job_args(self) -> list[str]:
        args = ["--branch", self.branch]
        tag = optional_str(self.tag)
        snapshot_id = optional_int(self.snapshot_id, "snapshot_id")
        if tag is not None:
            args += ["--tag", tag]
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        return args

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        if self.if_exists not in IF_EXISTS:  # a templated value, rendered now
            self.fail(f"if_exists must be one of {', '.join(IF_EXISTS)}, got {self.if_exists!r}")
        validate_branch_name(self.branch, self.name_profile(hook))
        tag = optional_str(self.tag)
        snapshot_id = optional_int(self.snapshot_id, "snapshot_id")
        if tag is not None and snapshot_id is not None:
            self.fail("give either tag or snapshot_id, not both")
        if hook.branch_exists(self.table, self.branch):
            if self.if_exists == "skip":
                return {"command": "create", "table": self.table, "branch": self.branch, "skipped": True,
                        "message": f"branch {self.branch!r} already exists; left as it is"}
            self.fail(f"branch {self.branch!r} already exists on {self.table}")
        refuse_lookalike("branch", self.branch, hook.list_branches(self.table))
        if tag is not None:
            self.require_tag(hook, tag)
        if snapshot_id is not None:
            self.require_snapshot(hook, snapshot_id)
        return None

    def input_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, None)]

    def ol_lifecycle_change(self) -> str | None:
        return "CREATE"


class BranchDeleteOperator(_BranchOperator):
    """Delete ``branch`` from ``table`` (fails before submitting if it does not exist)."""

    partition_events_allowed = False  # changes no rows a reader sees

    action = "delete"

    def ol_lifecycle_change(self) -> str | None:
        return "DROP"

    def ol_output_gone(self) -> bool:
        return True


class BranchRenameOperator(_BranchOperator):
    """Rename ``branch`` to ``new_name`` (both checked before submitting)."""

    action = "rename"
    template_fields: Sequence[str] = (*_BranchOperator.template_fields, "new_name")

    def __init__(self, *, new_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.new_name = new_name

    def ol_lifecycle_change(self) -> str | None:
        return "RENAME"

    def job_args(self) -> list[str]:
        return ["--branch", self.branch, "--new-name", self.new_name]

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        super().check_before_submit(hook)
        validate_branch_name(self.new_name, self.name_profile(hook))
        if hook.branch_exists(self.table, self.new_name):
            self.fail(f"branch {self.new_name!r} already exists on {self.table}")
        refuse_lookalike("branch", self.new_name, [b for b in hook.list_branches(self.table) if b != self.branch])
        return None

    def input_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, self.branch)]

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, self.new_name)]


class _LinksLineage(_BranchOperator):
    """Replace-main and fast-forward: optionally link main's new snapshot to the branch's.

    :param lineage_conn_id: a ``paimon_lineage`` connection naming the store.
    :param lineage_url: or the store's SQLAlchemy URL (templated); blank: no link.
    :param lineage_database: the store's system database; default the connection's / ``paimon``.
    """

    template_fields: Sequence[str] = (*_BranchOperator.template_fields, "lineage_url", "lineage_database")
    # a URL with a password is refused (literal: at parse; templated: once rendered)
    secret_url_fields: ClassVar[tuple[str, ...]] = ("warehouse", "lineage_url")

    def __init__(
        self,
        *,
        lineage_conn_id: str | None = None,
        lineage_url: str | None = None,
        lineage_database: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.lineage_conn_id = lineage_conn_id
        self.lineage_url = lineage_url
        self.lineage_database = lineage_database
        self.check_literal_locations()

    def lineage_store(self) -> tuple[str | None, str | None]:
        """(URL with its password, database) of the store to link in; (None, None): none."""
        return operator_lineage_store(self)

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        super().check_before_submit(hook)
        self.lineage_store()  # a bad URL or missing connection fails before the submit
        return None

    def job_args(self) -> list[str]:
        _url, database = self.lineage_store()
        return super().job_args() + (["--lineage-database", database] if database else [])

    def job_secret_env(self) -> dict[str, str]:
        url, _database = self.lineage_store()
        return {LINEAGE_URL_ENV: url} if url else {}


class MergeBranchOperator(_LinksLineage):
    """Fast-forward main to ``branch`` (the Paimon branch proposal's merge-branch).

    Main takes the branch's snapshots, schemas and tags from the branch point on; main's
    own later snapshots, schemas and tags go. XCom: the job's result.
    """

    action = "fast-forward"

    def input_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, self.branch)]

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, None)]


class ReplaceMainBranchOperator(ApprovalGateMixin, _LinksLineage):
    """Replace main with ``branch``: afterwards main reads exactly as the branch did.

    ``approve=True`` asks a person first, showing the upstream audit's evidence
    (``operators/approval.py``: ``approval_timeout``, ``sensitive_columns``,
    ``evidence_task_ids``, ``approvers``); a rejection or no answer fails the task and
    main stays as it is.

    By default the previous main is kept as a branch (``backup_kind='tag'`` for a tag)
    named ``backup_name`` (the job picks a name when not given), so the replacement can
    be undone; ``backup=False`` keeps nothing. XCom: the job's result,
    with ``main_snapshot_id`` and ``backup`` ({kind, name} or null).
    """

    action = "replace-main"
    template_fields: Sequence[str] = (*_LinksLineage.template_fields, "backup_name")

    def __init__(
        self,
        *,
        backup: bool = True,
        backup_name: str | None = None,
        backup_kind: str = "branch",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if backup_kind not in BACKUP_KINDS:
            raise ValueError(f"backup_kind must be one of {BACKUP_KINDS}, got {backup_kind!r}")
        self.backup = backup
        self.backup_name = backup_name
        self.backup_kind = backup_kind

    def job_args(self) -> list[str]:
        args = super().job_args()
        if not self.backup:
            return [*args, "--no-backup"]
        name = optional_str(self.backup_name)
        if name is not None:
            args += ["--backup-name", name]
        return [*args, "--backup-kind", self.backup_kind]

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        super().check_before_submit(hook)
        name = optional_str(self.backup_name)
        if not self.backup or name is None:
            return None
        if self._resuming(hook):
            # A killed or unreported earlier try left its journal: the backup it made
            # exists by design, and only the job can finish (or no-op) the operation.
            return None
        if self.backup_kind == "tag":
            validate_tag_name(name, self.name_profile(hook))
            if hook.tag_exists(self.table, name):
                self.fail(f"backup tag {name!r} already exists on {self.table}")
            refuse_lookalike("tag", name, hook.list_tags(self.table))
        else:
            validate_branch_name(name, self.name_profile(hook))
            if hook.branch_exists(self.table, name):
                self.fail(f"backup branch {name!r} already exists on {self.table}")
            refuse_lookalike("branch", name, hook.list_branches(self.table))
        return None

    def input_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, self.branch)]

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(self.table, None)]

    def _resuming(self, hook: PaimonHook) -> bool:
        """True when an unfinished replace-main of this branch is pending on the table."""
        pending = pending_operation(hook.get_table(self.table)) or {}
        return pending.get("op") == "replace_main" and pending.get("branch") == self.branch
