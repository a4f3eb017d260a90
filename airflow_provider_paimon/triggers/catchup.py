"""SnapshotCatchUpTrigger: wait in the triggerer until a job has caught up with its sources.

The poll loop, the events (``success`` / ``error`` / ``timeout``), the deadline and the
refusal of secrets are ``PollingCheckTrigger``'s (``triggers/polling.py``). What is
this trigger's own: the check is ``CatchUpHook.check`` (``paimon.catchup``: catalog
reads plus the lineage store), so "permanent" covers an unknown table, branch, job or
consumer, a source the job never read, a store that refuses us; ``result`` is
``CatchUpResult.to_dict()`` (consumed/latest per source); the hook keeps a store
connection open between polls, so it is closed when the trigger ends. Only connection
ids travel: ``lineage_url`` with a password, secret ``warehouse_options`` or a warehouse
URI with credentials are refused (``refuse_secrets_message``).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_paimon.common.templated_secrets import refuse_secrets_message
from airflow_provider_paimon.hooks.catchup import CatchUpHook
from airflow_provider_paimon.paimon.catchup import CatchUpResult
from airflow_provider_paimon.triggers.polling import PollingCheckTrigger


class SnapshotCatchUpTrigger(PollingCheckTrigger[CatchUpHook, CatchUpResult]):
    """Poll the catch-up check every ``poll_interval`` seconds until done or ``deadline``.

    :param check: the check's arguments (``CatchUpHook`` keyword arguments: table,
        branch, job or consumer_id, sources, max_lag_snapshots, warehouse, conn ids,
        lineage URL/database); plain JSON values only, and no secrets (``ValueError``).
    :param poll_interval: seconds between checks.
    :param deadline: epoch seconds after which the trigger reports ``timeout``;
        ``None`` waits for ever (the task's own deferral timeout still applies).
    """

    check_name = "catch-up check"

    @classmethod
    def secrets_refusal(cls, problems: list[str]) -> str:
        return refuse_secrets_message(problems)

    def build_checker(self, check: dict[str, Any]) -> CatchUpHook:
        return CatchUpHook(**check)

    def check_once(self, checker: CatchUpHook) -> tuple[bool, CatchUpResult]:
        result = checker.check()
        return result.caught_up, result

    def result_dict(self, result: CatchUpResult) -> dict[str, Any]:
        return result.to_dict()

    def not_yet_message(self, checker: CatchUpHook, result: CatchUpResult) -> str:
        return f"not caught up yet: {result.summary()}"

    def timeout_message(self, checker: CatchUpHook, last: CatchUpResult | None, deadline_utc: str) -> str:
        progress = last.summary() if last else "no successful check"
        return f"sources not caught up by the deadline ({deadline_utc}): {progress}"

    def close_checker(self, checker: CatchUpHook) -> None:
        checker.close()
