"""PollingCheckTrigger's loop on its own: a toy check scripted poll by poll, a fake clock.

No Paimon and no real waiting: ``time`` and ``asyncio.sleep`` of the polling module are
replaced by a clock that only moves when the loop sleeps (or a check takes "time"), so
the deadline arithmetic is exact and the tests take milliseconds.
"""

from __future__ import annotations

import asyncio
import threading
import time
import types
from typing import Any

import pytest

from airflow_provider_paimon.triggers import polling
from airflow_provider_paimon.triggers.polling import PollingCheckTrigger

SECRET = "s3cr3t-token"


class ToyChecker:
    """Plays ``script`` one entry per check: ``no``, ``met``, ``transient`` or ``permanent``.

    Past the end of the script every check is ``no``.
    """

    def __init__(self, script: list[str], bad: bool = False, check_seconds: float = 0.0) -> None:
        self.script = list(script)
        self.bad = bad
        self.check_seconds = check_seconds
        self.polls = 0
        self.threads: list[int] = []
        self.closed_in: list[int] = []

    def validate(self) -> None:
        if self.bad:
            raise ValueError("bad toy argument: set bad=False")

    def check(self, clock: FakeClock) -> tuple[bool, dict[str, Any]]:
        self.threads.append(threading.get_ident())
        self.polls += 1
        clock.now += self.check_seconds
        step = self.script[self.polls - 1] if self.polls <= len(self.script) else "no"
        if step == "transient":
            raise ConnectionError(f"store out of reach (token {SECRET})")
        if step == "permanent":
            raise ValueError(f"no such table (token {SECRET})")
        return step == "met", {"polls": self.polls}


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class LogLines:
    """Stands in for the trigger's logger: keeps (level, formatted line)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __getattr__(self, level: str) -> Any:
        return lambda msg, *args, **_: self.lines.append((level, msg % args))

    def at(self, level: str) -> list[str]:
        return [line for lvl, line in self.lines if lvl == level]


class ToyTrigger(PollingCheckTrigger[ToyChecker, dict[str, Any]]):
    check_name = "toy check"
    clock: FakeClock

    @property
    def log(self) -> LogLines:  # type: ignore[override]
        if "_lines" not in self.__dict__:
            self.__dict__["_lines"] = LogLines()
        return self.__dict__["_lines"]

    @classmethod
    def secrets_refusal(cls, problems: list[str]) -> str:
        return f"cannot defer the toy: {'; '.join(problems)}"

    def build_checker(self, check: dict[str, Any]) -> ToyChecker:
        self.checker = ToyChecker(**check)
        return self.checker

    def check_once(self, checker: ToyChecker) -> tuple[bool, dict[str, Any]]:
        return checker.check(self.clock)

    def describe_error(self, checker: ToyChecker, error: BaseException) -> str:
        return f"{type(error).__name__}: {error}".replace(SECRET, "***")

    def not_yet_message(self, checker: ToyChecker, result: dict[str, Any]) -> str:
        return f"toy not met yet after {result['polls']} polls"

    def timeout_message(self, checker: ToyChecker, last: dict[str, Any] | None, deadline_utc: str) -> str:
        return f"toy not met by {deadline_utc}: {last}"

    def close_checker(self, checker: ToyChecker) -> None:
        checker.closed_in.append(threading.get_ident())


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(polling, "time", types.SimpleNamespace(time=fake.time, strftime=time.strftime, gmtime=time.gmtime))
    monkeypatch.setattr(polling, "asyncio", types.SimpleNamespace(sleep=fake.sleep))
    return fake


def trigger(clock: FakeClock, script: list[str], poll_interval: float = 10.0,
            deadline: float | None = None, **check: Any) -> ToyTrigger:
    t = ToyTrigger(check={"script": script, **check}, poll_interval=poll_interval, deadline=deadline)
    t.clock = clock
    return t


def events(t: ToyTrigger) -> tuple[list[dict[str, Any]], int]:
    """Every event ``run()`` yields (it must end on its own), and the loop's thread."""

    async def drain():
        return [e.payload async for e in t.run()], threading.get_ident()

    return asyncio.run(drain())


def test_success_after_some_polls_without_a_deadline(clock):
    t = trigger(clock, ["no", "no", "met"])
    payloads, loop_thread = events(t)
    assert payloads == [{"status": "success", "result": {"polls": 3}}]
    assert clock.sleeps == [10.0, 10.0]
    assert t.log.at("info") == ["toy not met yet after 1 polls", "toy not met yet after 2 polls"]
    # every check and the close ran off the event loop's thread; close exactly once, at the end
    assert loop_thread not in t.checker.threads and len(t.checker.threads) == 3
    assert len(t.checker.closed_in) == 1 and loop_thread not in t.checker.closed_in


def test_transient_error_is_logged_scrubbed_and_retried(clock):
    t = trigger(clock, ["transient", "met"], deadline=clock.now + 60)
    payloads, _ = events(t)
    assert payloads == [{"status": "success", "result": {"polls": 2}}]
    assert t.log.at("warning") == [
        "toy check failed, retrying next poll: ConnectionError: store out of reach (token ***)"
    ]
    assert SECRET not in repr(t.log.lines)
    assert len(t.checker.closed_in) == 1


def test_permanent_error_ends_with_one_error_event_and_the_last_progress(clock):
    t = trigger(clock, ["no", "permanent", "met"], deadline=clock.now + 60)
    payloads, _ = events(t)
    assert payloads == [{
        "status": "error",
        "result": {"polls": 1},
        "message": "ValueError: no such table (token ***)",
    }]
    assert t.checker.polls == 2  # no poll after the permanent error
    assert len(t.checker.closed_in) == 1


def test_deadline_timeout_and_sleep_never_past_it(clock):
    # each check "takes" 1 s: the wait is what is left after the check, capped at the deadline
    t = trigger(clock, [], deadline=clock.now + 25, check_seconds=1.0)
    payloads, _ = events(t)
    assert clock.sleeps == [10.0, 10.0, 2.0]  # 1001 -> 1011, 1012 -> 1022, 1023 -> 1025
    assert t.checker.polls == 4  # the last check, at the deadline, is still made
    assert payloads == [{
        "status": "timeout",
        "result": {"polls": 4},
        "message": "toy not met by 1970-01-01T00:17:05Z: {'polls': 4}",  # deadline 1025
    }]
    assert len(t.checker.closed_in) == 1


def test_timeout_after_only_transient_errors_has_no_result(clock):
    t = trigger(clock, ["transient"] * 4, poll_interval=5.0, deadline=clock.now + 12)
    payloads, _ = events(t)
    assert clock.sleeps == [5.0, 5.0, 2.0] and t.checker.polls == 4
    assert payloads == [{"status": "timeout", "result": None,
                         "message": "toy not met by 1970-01-01T00:16:52Z: None"}]


def test_a_deadline_already_passed_checks_once_then_times_out(clock):
    t = trigger(clock, ["no"], deadline=clock.now - 1)
    payloads, _ = events(t)
    assert clock.sleeps == [] and t.checker.polls == 1
    assert payloads[0]["status"] == "timeout" and payloads[0]["result"] == {"polls": 1}


def test_build_refuses_secrets_and_bad_arguments_and_serializes(clock):
    with pytest.raises(ValueError, match="cannot defer the toy: warehouse_options holds secrets") as err:
        trigger(clock, [], warehouse_options={"fs.s3.accessKeySecret": SECRET})
    assert SECRET not in str(err.value)
    with pytest.raises(ValueError, match="set bad=False"):
        trigger(clock, [], bad=True)
    t = trigger(clock, ["met"], poll_interval=3, deadline=1500)
    classpath, kwargs = t.serialize()
    assert classpath == f"{__name__}.ToyTrigger"
    assert kwargs == {"check": {"script": ["met"]}, "poll_interval": 3.0, "deadline": 1500.0}
    assert ToyTrigger(**kwargs).serialize() == (classpath, kwargs)
