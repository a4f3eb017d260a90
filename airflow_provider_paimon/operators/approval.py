"""A human approves a publish, with the evidence in front of them.

``approve=True`` on ``ReplaceMainBranchOperator`` and ``PublishBranchesOperator``
(``ApprovalGateMixin``) and a ``PublishApprovalOperator`` task in ``cascade_correction``
ask a person before anything is published, through Airflow's human-in-the-loop
machinery (the standard provider's HITL detail, shown under "Required actions" in the
UI, answered there or through the REST API). The request's body is Markdown built
from the upstream audits' results (``BranchAuditOperator`` XComs): per table, rows
added and removed per partition vs main, the expectation and check results, a sample
of changed rows (columns named in ``sensitive_columns`` shown as ``***``), and links to
the table history and lineage pages.

Outcomes, all fail-closed:

* **Approve**: the publish runs as it would have without the gate;
* **Reject**: the task fails with the reviewer's name and comment (the ``comment``
  field of the form); nothing was published, every branch stays as it is;
* **no answer** within ``approval_timeout`` (default 24 hours): the task fails, as a
  rejection would. There is no default answer.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_paimon.operators.links import _airflow_base_url
from airflow_provider_paimon.paimon.durations import parse_duration

APPROVE = "Approve"
REJECT = "Reject"
OPTIONS = [APPROVE, REJECT]
DEFAULT_TIMEOUT = timedelta(hours=24)
#: rows of each kind (added / removed) shown per table
SAMPLE_ROWS = 5
#: partitions listed per table in the body
BODY_PARTITIONS = 20
MASK = "***"


class PublishRejectedError(AirflowFailException):
    """The reviewer rejected the publish, or nobody answered in time: nothing was published."""


def _comment_param() -> dict[str, Any]:
    """The form field for the reviewer's comment, serialized as Airflow's HITL expects."""
    from airflow.sdk.definitions.param import Param

    return {"comment": Param("", type=["null", "string"], title="Comment",
                             description="Why you approve or reject (kept with the run)").serialize()}


def evidence_from_xcom(values: Iterable[Any]) -> list[dict[str, Any]]:
    """The audit results among ``values`` (XCom return values of upstream tasks)."""
    found = []
    for value in values:
        if isinstance(value, Mapping) and ("diff" in value or "expectations" in value):
            found.append(dict(value))
        elif isinstance(value, list):
            found.extend(evidence_from_xcom(value))
    return found


def approval_body(
    evidence: Sequence[Mapping[str, Any]],
    *,
    tables: Sequence[str] = (),
    sensitive_columns: Iterable[str] = (),
    base_url: str = "",
) -> str:
    """Markdown for the reviewer: one section per audited table (or per ``tables`` entry
    without an audit), values of ``sensitive_columns`` masked."""
    hidden = {c.lower() for c in sensitive_columns}
    sections: list[str] = []
    audited = set()
    for audit in evidence:
        table = str(audit.get("table") or (audit.get("diff") or {}).get("table") or "?")
        audited.add(table)
        sections.append(_section(audit, table, hidden, base_url))
    for table in tables:
        if table not in audited:
            sections.append(f"### {_md(table)}\n\nNo audit result was found for this table: "
                            "review it on the table history page before approving.\n\n"
                            f"{_links(table, None, base_url)}")
    if not sections:
        sections.append("No audit ran before this step: nothing here tells what the publish changes.")
    return "\n\n---\n\n".join(sections)


def _section(audit: Mapping[str, Any], table: str, hidden: set[str], base_url: str) -> str:
    diff = audit.get("diff") or {}
    branch = str(audit.get("branch") or diff.get("branch") or "?")
    base = str(audit.get("base") or diff.get("base") or "main")
    verdict = "**passed**" if audit.get("passed") else "**FAILED**"
    lines = [f"### {_md(table)}: publish `{_md(branch)}` over `{_md(base)}`", "",
             f"Audit {verdict}: {_md(str(audit.get('summary') or diff.get('summary') or ''))}", ""]
    partitions = list(diff.get("partitions") or [])
    if partitions:
        keys = list(diff.get("partition_keys") or [])
        lines += ["| partition | rows added | rows removed |", "|---|---:|---:|"]
        for part in partitions[:BODY_PARTITIONS]:
            label = ",".join(f"{k}={(part.get('partition') or {}).get(k)}" for k in keys) or "(table)"
            lines.append(f"| {_md(label)} | {int(part.get('added') or 0)} | {int(part.get('removed') or 0)} |")
        more = int(diff.get("changed_partitions") or len(partitions)) - min(len(partitions), BODY_PARTITIONS)
        if more > 0:
            lines.append(f"| ... {more} more changed partition(s) | | |")
        lines.append("")
    expectations = audit.get("expectations") or {}
    results = list(expectations.get("results") or [])
    if results:
        lines += ["| expectation | on violation | result | violations |", "|---|---|---|---:|"]
        for result in results:
            state = "passed" if result.get("passed") else "violated"
            lines.append(f"| {_md(str(result.get('name')))} (`{_md(str(result.get('content')))}`) | "
                         f"{_md(str(result.get('on_violation')))} | {state} | {int(result.get('violations') or 0)} |")
        if expectations.get("dropped"):
            quarantine = (expectations.get("quarantine") or {}).get("branch")
            lines.append(f"\n{int(expectations['dropped'])} row(s) were moved to branch `{_md(str(quarantine))}`.")
        lines.append("")
    checks = audit.get("checks") or {}
    if checks:
        lines.append(f"Checks: {_md(str(checks.get('summary') or ''))}")
        lines.append("")
    for label, key in (("added", "sample_added"), ("removed", "sample_removed")):
        rows = list(diff.get(key) or [])[:SAMPLE_ROWS]
        if rows:
            lines += [f"Sample of rows {label}:", "", _rows_table(rows, hidden), ""]
    lines.append(_links(table, diff.get("branch_snapshot"), base_url, branch))
    return "\n".join(lines)


def _rows_table(rows: Sequence[Mapping[str, Any]], hidden: set[str]) -> str:
    columns = list(dict.fromkeys(c for row in rows for c in row))
    out = ["| " + " | ".join(_md(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [MASK if c.lower() in hidden else _md(_short(row.get(c))) for c in columns]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _links(table: str, snapshot: Any, base_url: str, branch: str | None = None) -> str:
    base = base_url.rstrip("/")
    history = f"{base}/paimon-history/?{urllib.parse.urlencode({'table': table})}"
    parts = [f"[Table history]({history})"]
    database, _, name = table.partition(".")
    if isinstance(snapshot, int):
        query = {"database": database, "table": name, "snapshot": str(snapshot)}
        if branch and branch != "main":
            query["branch"] = branch
        parts.append(f"[Lineage of the branch snapshot]({base}/paimon-lineage/?{urllib.parse.urlencode(query)})")
    return " · ".join(parts)


def _short(value: Any, limit: int = 60) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell or heading: no markup, no line breaks."""
    out = str(text).replace("\\", "\\\\").replace("\r", " ").replace("\n", " ")
    for char in "|`*_[]<>#!":
        out = out.replace(char, "\\" + char)
    return out


def ask_for_approval(
    operator: Any,
    context: Any,
    *,
    subject: str,
    body: str,
    timeout: timedelta,
    assigned_users: Any = None,
    method_name: str = "execute_after_approval",
) -> None:
    """Write the HITL request of ``operator``'s task instance and park the task until a
    person answers (Airflow 3.3+: AWAITING_INPUT; older: deferred to ``HITLTrigger``)."""
    from airflow.providers.standard.version_compat import AIRFLOW_V_3_3_PLUS
    from airflow.sdk.execution_time.hitl import upsert_hitl_detail
    from airflow.sdk.timezone import utcnow

    ti_id = context["task_instance"].id
    upsert_hitl_detail(ti_id=ti_id, options=OPTIONS, subject=subject, body=body, defaults=None,
                       multiple=False, params=_comment_param(), assigned_users=assigned_users)
    operator.log.info("Waiting for a person to approve or reject: %s", subject)
    if AIRFLOW_V_3_3_PLUS:
        from airflow.sdk.exceptions import TaskAwaitingInput

        raise TaskAwaitingInput(method_name=method_name, timeout=timeout)
    from airflow.providers.standard.triggers.hitl import HITLTrigger

    operator.defer(
        trigger=HITLTrigger(ti_id=ti_id, options=OPTIONS, defaults=None, params=_comment_param(),
                            multiple=False, timeout_datetime=utcnow() + timeout),
        method_name=method_name,
    )


def check_answer(task_id: str, event: Mapping[str, Any] | None) -> str:
    """The reviewer's comment when the answer is Approve; raise ``PublishRejectedError``
    for a rejection, a timeout or anything else (fail closed)."""
    event = event or {}
    if "error" in event or "chosen_options" not in event:
        kind = event.get("error_type") or "no answer"
        raise PublishRejectedError(
            f"{task_id}: nobody approved the publish ({kind}); nothing was published, the branches "
            "are as they were. Clear the task to ask again."
        )
    chosen = list(event.get("chosen_options") or [])
    user = event.get("responded_by_user") or {}
    who = (user.get("name") or user.get("id") or "a reviewer") if isinstance(user, Mapping) else str(user)
    comment = str((event.get("params_input") or {}).get("comment") or "").strip()
    if chosen != [APPROVE]:
        raise PublishRejectedError(
            f"{task_id}: rejected by {who}: {comment or '(no comment)'}; nothing was published, the "
            "branches are as they were"
        )
    return comment


def approval_timeout(value: Any) -> timedelta:
    """``approval_timeout`` checked at DAG parse time (a duration; never unlimited)."""
    return parse_duration(DEFAULT_TIMEOUT if value is None else value, "approval_timeout", allow_zero=False)


class ApprovalGateMixin:
    """``approve=True``: the operator asks a person before it publishes (see module doc).

    Mix in before the operator class. The evidence is read from the XCom of
    ``evidence_task_ids`` (default: the task's direct upstream tasks), so put the audit
    right before the publish.
    """

    approve: bool
    approval_evidence_task_ids: list[str] | None
    sensitive_columns: list[str]
    approvers: Any
    approval_timeout: timedelta

    def __init__(
        self,
        *,
        approve: bool = False,
        approval_timeout: Any = None,
        evidence_task_ids: Sequence[str] | None = None,
        sensitive_columns: Sequence[str] = (),
        approvers: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(approve, bool):
            raise ValueError(f"approve must be True or False, got {approve!r}")
        self.approve = approve
        self.approval_timeout = approval_timeout_or_error(approval_timeout)
        self.approval_evidence_task_ids = list(evidence_task_ids) if evidence_task_ids is not None else None
        if isinstance(sensitive_columns, str):
            sensitive_columns = [sensitive_columns]
        self.sensitive_columns = [str(c) for c in sensitive_columns]
        self.approvers = approvers

    def approval_tables(self) -> list[str]:
        return [str(getattr(self, "table", ""))]

    def approval_subject(self) -> str:
        return f"Publish {', '.join(self.approval_tables())}?"

    def execute(self, context: Any) -> Any:
        if not self.approve:
            return super().execute(context)  # type: ignore[misc]  # a mixin: the operator has it
        preflight = getattr(self, "preflight", None)
        if callable(preflight):
            done = preflight()  # fail before asking anyone
            if done is not None:
                return super().execute(context)  # type: ignore[misc]
        task = context["task"]
        ids = self.approval_evidence_task_ids
        if ids is None:
            ids = sorted(task.upstream_task_ids)
        values = context["ti"].xcom_pull(task_ids=ids) if ids else []
        if not isinstance(values, list):
            values = [values]
        body = approval_body(evidence_from_xcom(values), tables=self.approval_tables(),
                             sensitive_columns=self.sensitive_columns, base_url=_airflow_base_url())
        ask_for_approval(self, context, subject=self.approval_subject(), body=body,
                         timeout=self.approval_timeout, assigned_users=self.approvers)
        return None

    def execute_after_approval(self, context: Any, event: Mapping[str, Any] | None = None) -> Any:
        comment = check_answer(str(getattr(self, "task_id", "?")), event)
        self.log.info("Approved%s; publishing", f" ({comment})" if comment else "")  # type: ignore[attr-defined]
        return super().execute(context)  # type: ignore[misc]


def approval_timeout_or_error(value: Any) -> timedelta:
    try:
        return approval_timeout(value)
    except Exception as err:  # noqa: BLE001 - a parse-time error for the DAG author
        raise ValueError(str(err)) from None


class _Approved(BaseOperator):
    def execute(self, context: Any) -> dict[str, Any]:
        return {"approved": True}


class PublishApprovalOperator(ApprovalGateMixin, _Approved):
    """A task of its own that asks a person to approve publishing ``tables``.

    What ``cascade_correction(approve=True)`` puts between the audits and the publish:
    the evidence is the audits' XCom (its upstream tasks). Approve: returns
    ``{"approved": True}`` and the publish runs; reject or no answer: the task fails and
    the publish never runs.
    """

    template_fields = ("tables",)
    ui_color = "#fff3cd"

    def __init__(self, *, tables: Sequence[str], **kwargs: Any) -> None:
        super().__init__(approve=True, **kwargs)
        if isinstance(tables, str):
            tables = [tables]
        self.tables = list(tables)

    def approval_tables(self) -> list[str]:
        return [str(t) for t in self.tables]
