"""How the package's sensors wait: check on the worker, or check once and defer.

``SnapshotCatchUpSensor`` and ``PaimonPartitionSensor`` wait the same way, so the way is
written once here:

* not deferrable: Airflow's own poke/reschedule loop (``BaseSensorOperator.execute``);
* deferrable: refuse, before any I/O, a check whose trigger arguments would carry a
  secret (Airflow stores them unencrypted), check once on the worker (a condition that
  already holds needs no trigger), then hand the wait to the sensor's trigger with a
  deadline fixed now (a triggerer restart does not extend it) and a deferral timeout
  that is only a backstop: the trigger reports its own, clearer, timeout event first;
* a failed poke is retried at the next poke when the failure will not outlast a poll
  (``lineage.retry.outlasts_a_poll``), else fails the task at once (no retries);
* the trigger's one event (``success`` / ``error`` / ``timeout``) becomes the task's
  outcome, ``soft_fail`` turning a failure into a skip.

A sensor supplies ``check_name`` (the text of its messages), ``trigger_class``,
``check_kwargs()`` (the plain, secret-free arguments the trigger serializes) and
optionally ``on_done`` (what to do with the result: the partition sensor announces an
asset partition) and ``close_checker``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout, AirflowSkipException

from airflow_provider_paimon.common.templated_secrets import (
    refuse_secrets_message,
    trigger_secret_problems,
)
from airflow_provider_paimon.lineage.retry import outlasts_a_poll

__all__ = ["DeferrableCheckSensor", "blank_to_none"]


def blank_to_none(value: Any) -> Any:
    """A rendered blank text means "not given"."""
    if isinstance(value, str) and not value.strip():
        return None
    return value


class DeferrableCheckSensor(BaseSensorOperator):
    """A sensor whose condition is one blocking check, run here or by ``trigger_class``."""

    #: names the check in messages ("catch-up check", "partition check")
    check_name: ClassVar[str] = "check"
    #: the trigger that polls the check in the triggerer (built as ``(check=,
    #: poll_interval=, deadline=)``)
    trigger_class: ClassVar[Any] = None
    deferrable: bool

    def check_kwargs(self) -> dict[str, Any]:
        """The rendered check as plain values (what the trigger serializes)."""
        raise NotImplementedError

    def rendered_check(self) -> dict[str, Any]:
        """``check_kwargs()``, a bad rendered value failing the task (no retries)."""
        try:
            return self.check_kwargs()
        except ValueError as err:
            raise AirflowFailException(str(err)) from None

    def on_done(self, context: Any, result: Any) -> Any:
        """The task's XCom value once the condition holds (default: the check's result)."""
        return result

    def close_checker(self) -> None:
        """Release what the worker-side checker holds (default: nothing)."""

    def execute(self, context: Any) -> Any:
        check = self.rendered_check()  # a rendered bad value fails here, before any I/O
        if not self.deferrable:
            try:
                return self.on_done(context, super().execute(context))
            finally:
                self.close_checker()
        # Refuse before any work: the trigger's arguments are stored in clear.
        problems = trigger_secret_problems(check)
        if problems:
            raise AirflowFailException(refuse_secrets_message(problems))
        try:
            done = self.poke(context)  # already holds: no trigger needed
        finally:
            self.close_checker()
        if isinstance(done, PokeReturnValue) and done.is_done:
            return self.on_done(context, done.xcom_value)
        self.log.info("deferring to the triggerer (poll every %ss)", self.poke_interval)
        self.defer(
            trigger=self.trigger_class(check=check, poll_interval=self.poke_interval,
                                       deadline=time.time() + self.timeout),
            method_name="execute_complete",
            # A backstop only: the trigger reports its own, clearer, timeout event first.
            timeout=timedelta(seconds=self.timeout + max(60.0, self.poke_interval)),
        )

    def poke_failed(self, err: BaseException, message: str) -> bool:
        """A poke that raised: ``False`` (retry next poke) when the failure will not
        outlast a poll, else the task fails at once with ``message`` (already scrubbed)."""
        if outlasts_a_poll(err):
            self.log.warning("%s failed, retrying next poke: %s", self.check_name, message)
            return False
        raise AirflowFailException(message) from None

    def execute_complete(self, context: Any, event: Mapping[str, Any] | None = None) -> Any:
        """Turn the trigger's event into the task's outcome (success/error/timeout)."""
        event = event or {}
        status = event.get("status")
        message = event.get("message") or "no details"
        if status == "success":
            self.log.info("%s holds: %s", self.check_name, event.get("result"))
            return self.on_done(context, event.get("result"))
        if status == "timeout":
            error: Exception = AirflowSensorTimeout(f"Sensor has timed out: {message}")
        elif status == "error":
            error = AirflowFailException(f"{self.check_name} failed: {message}")
        else:
            error = AirflowFailException(f"unexpected trigger event: {dict(event)!r}")
        if self.soft_fail:
            raise AirflowSkipException(f"Skipping due to soft_fail: {message}") from error
        raise error
