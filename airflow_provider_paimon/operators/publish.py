"""Publish several branches as one change, and undo it: thin operators over the ``publish`` job.

``PublishBranchesOperator`` replaces main of every listed table by its branch under one
crash-safe journal (``paimon/branch/publish_many.py``, docs/branches.md "Publish several
tables as one change"); ``UndoPublishOperator`` puts every previous main back. Both
submit the ``publish`` job family (``spark/jobs/publish.py``) the way the branch
operators submit theirs, and return the job's result as XCom.

Retries are safe by construction, not by the operator: a try killed mid-publish leaves
the journal, and the retry's job (same tables) resumes it and finishes every table; a
retry after a finished publish changes nothing and returns ``unchanged``. So the
operator checks only what cannot depend on an earlier try (names, tables and branches
exist) and leaves the backup-name and pending-operation checks to the job, which makes
them before writing anything.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from airflow_provider_paimon.common.templating import is_templated
from airflow_provider_paimon.hooks.paimon import PaimonHook
from airflow_provider_paimon.hooks.spark_job import missing_spark_connection
from airflow_provider_paimon.job_contract import LINEAGE_URL_ENV
from airflow_provider_paimon.operators.approval import ApprovalGateMixin
from airflow_provider_paimon.operators.base import (
    PaimonSparkJobOperator,
    operator_lineage_store,
    optional_str,
)
from airflow_provider_paimon.paimon.branch.publish_many import pending_publish
from airflow_provider_paimon.paimon.errors import PaimonError
from airflow_provider_paimon.paimon.names import parse_table_name, validate_branch_name

TABLES_EXAMPLE = '[("ods.orders", "fix"), ("dws.sales", "fix")] or {"ods.orders": "fix", "dws.sales": "fix"}'


def _decoded(value: Any) -> Any:
    """A whole-list template renders to a string (without native rendering): read it back.

    JSON (``{{ params.tables | tojson }}``) or a Python literal (``{{ params.tables }}``
    renders a list param as its repr); ``ast.literal_eval`` evaluates literals only.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise PaimonError(
            f"tables rendered to the text {value[:200]!r}, which is not a JSON list or object; "
            "render a JSON list of [table, branch] pairs or set render_template_as_native_obj=True on the DAG"
        ) from None


def _table_name(name: Any) -> str:
    database, table = parse_table_name(name)
    return f"{database}.{table}"


def publish_pairs(value: Any) -> list[tuple[str, str]]:
    """``tables`` as ``[(db.table, branch), ...]`` in order; ``PaimonError`` naming what is wrong."""
    value = _decoded(value)
    if isinstance(value, Mapping):
        items: list[Any] = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise PaimonError(f"tables must be a list of (database.table, branch) pairs or a dict, e.g. {TABLES_EXAMPLE}")
    if not items:
        raise PaimonError(f"tables is empty: list at least one (database.table, branch) pair, e.g. {TABLES_EXAMPLE}")
    pairs: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, (str, bytes)) or not isinstance(item, (list, tuple)) or len(item) != 2:
            raise PaimonError(f"{item!r} in tables is not a (database.table, branch) pair, e.g. {TABLES_EXAMPLE}")
        name, branch = item
        if not isinstance(branch, str):
            raise PaimonError(f"the branch of {name!r} must be a string, got {branch!r}")
        validate_branch_name(branch)
        pairs.append((_table_name(name), branch))
    _refuse_duplicates([name for name, _ in pairs])
    return pairs


def undo_names(value: Any) -> list[str] | None:
    """``tables`` of an undo: names, publish pairs or a publish dict; ``None``: the pending publish."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    value = _decoded(value)
    if isinstance(value, Mapping):
        value = list(value)
    if not isinstance(value, (list, tuple)) or not value:
        raise PaimonError("tables must be a non-empty list of database.table names (or the publish's pairs), or None")
    names = [_table_name(item[0] if isinstance(item, (list, tuple)) and len(item) == 2 else item) for item in value]
    _refuse_duplicates(names)
    return names


def _refuse_duplicates(names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PaimonError(f"table {name} is listed twice in tables; list each table once")
        seen.add(name)


def _check_backup_name(value: Any) -> None:
    name = optional_str(value)
    if name is not None:
        validate_branch_name(name.strip())  # a rendered value may carry a newline


class _PublishOperator(PaimonSparkJobOperator):
    """Shared by both: several tables instead of ``table``, the ``publish`` job family."""

    job_family = "publish"
    template_fields: Sequence[str] = (
        *(f for f in PaimonSparkJobOperator.template_fields if f != "table"), "tables", "backup_name",
    )

    def __init__(self, *, tables: Any, backup_name: str | None = None, **kwargs: Any) -> None:
        if "table" in kwargs:
            raise ValueError("give tables (several), not table; e.g. tables=" + TABLES_EXAMPLE)
        super().__init__(table="", **kwargs)
        self.tables = tables
        self.backup_name = backup_name
        if not is_templated(tables):
            self._parse_at_dag_time(tables)
        if not is_templated(backup_name):
            try:
                _check_backup_name(backup_name)
            except PaimonError as err:
                raise ValueError(f"backup_name: {err}") from None

    def _parse_at_dag_time(self, tables: Any) -> None:
        """A literal ``tables`` is checked when the DAG is parsed (a ``ValueError`` there)."""
        try:
            self.parsed_tables()
        except PaimonError as err:
            raise ValueError(str(err)) from None

    def parsed_tables(self) -> Any:
        raise NotImplementedError

    def preflight(self) -> dict[str, Any] | None:
        """Check the rendered names, then that every table (and branch) exists; nothing is submitted otherwise."""
        missing = missing_spark_connection(self.spark_conn_id)
        if missing:
            self.fail(missing)
        try:
            self.parsed_tables()
            _check_backup_name(self.backup_name)
            return self.check_before_submit(self.paimon_hook)
        except PaimonError as err:
            self.fail(str(err))
        return None  # pragma: no cover - fail() raises

    def command_args(self) -> list[str]:
        """``ACTION --warehouse W OWN ARGS``: no ``--table``; catalog options in the environment."""
        return [self.action, "--warehouse", self.paimon_hook.catalog_config.warehouse, *self.job_args()]

    def _backup_args(self) -> list[str]:
        name = optional_str(self.backup_name)
        return [] if name is None else ["--backup-name", name.strip()]

    def _require_table(self, hook: PaimonHook, name: str) -> None:
        if not hook.table_exists(name):
            self.fail(f"table {name} does not exist in {hook.warehouse}")

    # -- OpenLineage: one result lists every table --

    def _table_result(self, result: dict[str, Any], table: str) -> dict[str, Any]:
        for entry in result.get("tables") or []:
            if isinstance(entry, dict) and entry.get("table") == table:
                return entry
        return {}

    def _ol_input_version(self, ref: tuple[str, str | None], result: dict[str, Any]) -> int | None:
        return super()._ol_input_version(ref, self._table_result(result, ref[0]))

    def _ol_output_version(self, ref: tuple[str, str | None], result: dict[str, Any]) -> int | None:
        entry = self._table_result(result, ref[0])
        changed = dict(entry, unchanged=bool(result.get("unchanged") or entry.get("unchanged")))
        if entry.get("restored") is False:
            changed["unchanged"] = True
        return super()._ol_output_version(ref, changed if entry else result)


class PublishBranchesOperator(ApprovalGateMixin, _PublishOperator):
    """Replace main of every table by its branch, as one crash-safe change.

    ``approve=True`` asks a person first, showing the upstream audits' evidence per
    table (``operators/approval.py``); a rejection or no answer fails the task and no
    main changes.

    :param tables: ``[("db.t", "branch"), ...]`` or ``{"db.t": "branch", ...}`` (templated),
        in the order the tables switch (upstream first). A template may render a JSON
        or Python list/object literal (``"{{ params.tables }}"``), or native objects.
    :param backup_name: every table's backup branch (templated); default
        ``backup_main_<UTC time>``, chosen by the job and returned in the result.
    :param lineage_conn_id: a ``paimon_lineage`` connection, or ``lineage_url``
        (templated) and ``lineage_database``: link each table's new main snapshot to its
        branch snapshot in that store, as ``ReplaceMainBranchOperator`` does (the URL
        reaches the job in its environment only).

    Checked before submitting: the pairs' shape, names, no table twice, every table and
    branch exists. The job checks the rest before writing (backup name free, no other
    operation pending, each branch can replace its main). XCom: the job's result:
    ``backup_name``, ``resumed``, ``unchanged`` and per table ``main_snapshot_id``,
    ``previous_main_snapshot_id``, ``branch_snapshot_id``. A retry after a killed try
    resumes the journal; after a finished one it changes nothing (``unchanged``).
    """

    action = "publish"
    template_fields: Sequence[str] = (*_PublishOperator.template_fields, "lineage_url", "lineage_database")
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

    def parsed_tables(self) -> list[tuple[str, str]]:
        return publish_pairs(self.tables)

    def approval_tables(self) -> list[str]:
        return [name for name, _branch in self.parsed_tables()]

    def lineage_store(self) -> tuple[str | None, str | None]:
        """(URL with its password, database) of the store to link in; (None, None): none."""
        return operator_lineage_store(self)

    def job_args(self) -> list[str]:
        args: list[str] = []
        for name, branch in self.parsed_tables():
            args += ["--pair", name, branch]
        _url, database = self.lineage_store()
        return args + self._backup_args() + (["--lineage-database", database] if database else [])

    def job_secret_env(self) -> dict[str, str]:
        url, _database = self.lineage_store()
        return {LINEAGE_URL_ENV: url} if url else {}

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        self.lineage_store()  # a bad URL or missing connection fails before the submit
        for name, branch in self.parsed_tables():
            self._require_table(hook, name)
            if not hook.branch_exists(name, branch):
                known = ", ".join(hook.list_branches(name)) or "none"
                self.fail(f"branch {branch!r} does not exist on {name} (branches: {known})")
        return None

    def input_tables(self) -> list[tuple[str, str | None]]:
        return list(self._pairs_or_empty())

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(name, None) for name, _ in self._pairs_or_empty()]

    def _pairs_or_empty(self) -> list[tuple[str, str]]:
        try:
            return self.parsed_tables()
        except PaimonError:
            return []

    def report(self, result: dict[str, Any]) -> None:
        if result.get("unchanged"):
            self.log.info("Every main already reads as its branch: nothing published")
            return
        self.log.info(
            "Published %d table(s) (backup branch %r%s)", len(result.get("tables") or []),
            result.get("backup_name"), ", resumed" if result.get("resumed") else "",
        )
        for entry in result.get("tables") or []:
            self.log.info("  %s <- %s: main snapshot %s (was %s)", entry.get("table"), entry.get("branch"),
                          entry.get("main_snapshot_id"), entry.get("previous_main_snapshot_id"))


class UndoPublishOperator(_PublishOperator):
    """Put back every table's main from before a publish (downstream first).

    :param tables: the publish's tables (names, its pairs or its dict; templated); ``None``
        with ``backup_name=None`` finishes or undoes the publish still pending in the
        journal (a killed or failed publish).
    :param backup_name: the publish's ``backup_name`` (its XCom), needed after a
        finished publish (templated, e.g. ``"{{ ti.xcom_pull('publish')['backup_name'] }}"``).

    XCom: the job's result, per table ``restored`` and ``main_snapshot_id``. Crash-safe
    and rerunnable like the publish.
    """

    action = "undo"

    def __init__(self, *, tables: Any = None, backup_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(tables=tables, backup_name=backup_name, **kwargs)

    def parsed_tables(self) -> list[str] | None:
        return undo_names(self.tables)

    def job_args(self) -> list[str]:
        args: list[str] = []
        for name in self.parsed_tables() or []:
            args += ["--table", name]
        return args + self._backup_args()

    def check_before_submit(self, hook: PaimonHook) -> dict[str, Any] | None:
        names = self.parsed_tables()
        undo_of_pending = names is None or optional_str(self.backup_name) is None
        if undo_of_pending and pending_publish(hook.get_conn()) is None:
            self.fail(
                "no publish is pending; to undo a finished publish give both tables and backup_name "
                "(the publish result's 'backup_name')"
            )
        for name in names or []:
            self._require_table(hook, name)
        return None

    def _names(self) -> list[str]:
        try:
            names = self.parsed_tables()
        except PaimonError:
            names = None
        if names is None:
            names = [e["table"] for e in (self.last_result or {}).get("tables") or [] if "table" in e]
        return names

    def input_tables(self) -> list[tuple[str, str | None]]:
        backup = optional_str(self.backup_name) or (self.last_result or {}).get("backup_name")
        return [(name, backup) for name in self._names()] if backup else []

    def output_tables(self) -> list[tuple[str, str | None]]:
        return [(name, None) for name in self._names()]

    def report(self, result: dict[str, Any]) -> None:
        restored = [e.get("table") for e in result.get("tables") or [] if e.get("restored")]
        self.log.info("Undo of publish (backup branch %r): restored %s", result.get("backup_name"),
                      ", ".join(restored) or "no table")
