"""PollingCheckTrigger: the loop shared by triggers that poll a blocking check until it holds.

A deferrable sensor hands the triggerer a check (plain JSON arguments), a poll interval
and a deadline. The trigger re-runs the check every ``poll_interval`` seconds and ends
with exactly one event, ``{"status", "result"[, "message"]}``:

* ``success``: the check holds; ``result`` is what it saw;
* ``error``: a permanent problem (``lineage.retry.outlasts_a_poll`` says it will not go
  away by the next poll: a bad name, an unknown table, a store that refuses us);
  ``message`` says which, and ``result`` is the last progress seen, if any;
* ``timeout``: ``deadline`` (epoch seconds, fixed when the sensor deferred, so a
  triggerer restart does not extend it) passed first; ``result`` is the last progress.

Transient failures (a store or warehouse out of reach) are logged and retried at the
next poll. The wait between polls never runs past the deadline. The check is blocking
file and database I/O, so each call runs in a worker thread (``sync_to_async`` with
``thread_sensitive=False``, on the loop's default executor) and the triggerer's event
loop never blocks; when the trigger is cancelled mid-check, that call is awaited to its
end before the checker is closed, so closing never races a running check.

Only plain values and connection ids are serialized (``{check, poll_interval,
deadline}``): Airflow stores trigger arguments unencrypted in its ``trigger`` table, so
a check carrying a secret is refused when the trigger is built
(``trigger_secret_problems``); connections are resolved where the check runs. The check
is validated at build time too, so a bad argument fails the task, not the triggerer.

A subclass supplies the hooks: build the checker, run one check, turn its result into
plain values, describe an error safely, the "not yet" and timeout texts, the refusal
text and (if the checker holds resources) how to close it.
"""

from __future__ import annotations

import asyncio
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_provider_paimon.common.templated_secrets import trigger_secret_problems
from airflow_provider_paimon.lineage.retry import outlasts_a_poll


class Checker(Protocol):
    """What the loop needs of a checker beyond the hooks: an I/O-free argument check."""

    def validate(self) -> None: ...


CheckerT = TypeVar("CheckerT", bound=Checker)
ResultT = TypeVar("ResultT")


async def in_worker_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run blocking ``fn(*args)`` off the event loop (awaited to its end even if cancelled)."""
    return await sync_to_async(fn, thread_sensitive=False)(*args)


class PollingCheckTrigger(BaseTrigger, Generic[CheckerT, ResultT]):
    """Poll a check every ``poll_interval`` seconds until it holds, fails for good, or ``deadline``.

    :param check: the checker's keyword arguments: plain JSON values, no secrets
        (``ValueError``, with the subclass's ``secrets_refusal`` text).
    :param poll_interval: seconds between checks.
    :param deadline: epoch seconds after which the trigger reports ``timeout``;
        ``None`` waits for ever (the task's own deferral timeout still applies).
    """

    #: names the check in the "failed, retrying" log line (e.g. "partition check")
    check_name: ClassVar[str] = "check"

    def __init__(
        self,
        check: dict[str, Any],
        poll_interval: float = 60.0,
        deadline: float | None = None,
    ) -> None:
        super().__init__()
        problems = trigger_secret_problems(check)
        if problems:
            raise ValueError(self.secrets_refusal(problems))
        self.build_checker(check).validate()
        self.check = dict(check)
        self.poll_interval = float(poll_interval)
        self.deadline = None if deadline is None else float(deadline)

    # -- hooks -------------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def secrets_refusal(cls, problems: list[str]) -> str:
        """The ``ValueError`` text for a check that would store secrets, and the fix."""

    @abstractmethod
    def build_checker(self, check: dict[str, Any]) -> CheckerT:
        """The blocking checker, from the serialized ``check`` (no I/O yet)."""

    @abstractmethod
    def check_once(self, checker: CheckerT) -> tuple[bool, ResultT]:
        """One blocking check: (condition met?, what it saw). Runs in a worker thread."""

    def result_dict(self, result: ResultT) -> dict[str, Any]:
        """``result`` as the plain values an event carries (default: it already is)."""
        return result  # type: ignore[return-value]  # a ResultT that is not a dict overrides this

    def describe_error(self, checker: CheckerT, error: BaseException) -> str:
        """``error`` as one line for the log and the ``error`` event; no secret in it."""
        return f"{type(error).__name__}: {error}"

    @abstractmethod
    def not_yet_message(self, checker: CheckerT, result: ResultT) -> str:
        """The info line logged after a check that does not hold yet."""

    @abstractmethod
    def timeout_message(self, checker: CheckerT, last: ResultT | None, deadline_utc: str) -> str:
        """The ``timeout`` event's message; ``last`` is ``None`` if no check succeeded."""

    def close_checker(self, checker: CheckerT) -> None:
        """Release what the checker holds (blocking; runs in a worker thread)."""

    # -- the loop ----------------------------------------------------------------------

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"check": self.check, "poll_interval": self.poll_interval, "deadline": self.deadline},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        checker = self.build_checker(self.check)
        last: ResultT | None = None
        try:
            while True:
                try:
                    met, last = await in_worker_thread(self.check_once, checker)
                except Exception as err:  # noqa: BLE001 - classified right below
                    if not outlasts_a_poll(err):
                        yield self._event("error", last, self.describe_error(checker, err))
                        return
                    self.log.warning(
                        "%s failed, retrying next poll: %s", self.check_name, self.describe_error(checker, err)
                    )
                else:
                    if met:
                        yield self._event("success", last)
                        return
                    self.log.info("%s", self.not_yet_message(checker, last))
                if self.deadline is not None and time.time() >= self.deadline:
                    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.deadline))
                    yield self._event("timeout", last, self.timeout_message(checker, last, when))
                    return
                await asyncio.sleep(self._sleep_seconds())
        finally:
            await in_worker_thread(self.close_checker, checker)

    def _sleep_seconds(self) -> float:
        if self.deadline is None:
            return self.poll_interval
        return max(0.0, min(self.poll_interval, self.deadline - time.time()))

    def _event(self, status: str, result: ResultT | None, message: str | None = None) -> TriggerEvent:
        payload: dict[str, Any] = {"status": status, "result": None if result is None else self.result_dict(result)}
        if message:
            payload["message"] = message
        return TriggerEvent(payload)
