"""Lineage capture settings, read from Spark conf keys of ours (and two env variables).

Everything a capture needs is decided here, from a plain dict (``SparkConf.getAll()``)
and the environment, so it is testable without Spark and the rules live in one place:

=====================================  ===============================================
``spark.paimon.lineage.enabled``       ``true`` turns capture on (setting ``url`` does too)
``spark.paimon.lineage.url``           store SQLAlchemy URL; without a password is best
``spark.paimon.lineage.database``      system database (MySQL) / schema (PostgreSQL); ``paimon``
``spark.paimon.lineage.job``           job name; default: the Spark application name
``spark.paimon.lineage.onStoreFailure`` ``buffer`` (default) or ``fail``
``spark.paimon.lineage.spoolDir``      where undelivered rows wait; ``$PAIMON_HOME/lineage-spool``
``spark.paimon.lineage.pollIntervalMs`` how often batch-job commits are picked up (200)
=====================================  ===============================================

Secrets never need to be on a command line: ``PAIMON_LINEAGE_URL`` (the whole URL)
is used when ``url`` is not set, and ``PAIMON_LINEAGE_PASSWORD`` fills in the password
of a URL that has none. ``repr`` and ``describe`` mask the password.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.option_values import parse_bool, parse_int
from airflow_provider_paimon.paimon.secrets import mask_url

PREFIX = "spark.paimon.lineage."
KEY_ENABLED = PREFIX + "enabled"
KEY_URL = PREFIX + "url"
KEY_DATABASE = PREFIX + "database"
KEY_JOB = PREFIX + "job"
KEY_ON_STORE_FAILURE = PREFIX + "onStoreFailure"
KEY_SPOOL_DIR = PREFIX + "spoolDir"
KEY_POLL_INTERVAL_MS = PREFIX + "pollIntervalMs"
KNOWN_KEYS = (
    KEY_ENABLED, KEY_URL, KEY_DATABASE, KEY_JOB, KEY_ON_STORE_FAILURE, KEY_SPOOL_DIR,
    KEY_POLL_INTERVAL_MS,
)

ENV_URL = "PAIMON_LINEAGE_URL"
ENV_PASSWORD = "PAIMON_LINEAGE_PASSWORD"
BUFFER, FAIL = "buffer", "fail"
POLICIES = (BUFFER, FAIL)
DEFAULT_DATABASE = "paimon"
DEFAULT_POLL_INTERVAL_MS = 200


@dataclass(frozen=True)
class CaptureConfig:
    """Resolved capture settings. ``url`` may hold a password: never log it, use ``describe``."""

    enabled: bool
    job: str
    url: str | None = field(default=None, repr=False)
    database: str = DEFAULT_DATABASE
    on_store_failure: str = BUFFER
    spool_dir: str = ""
    poll_interval: float = DEFAULT_POLL_INTERVAL_MS / 1000.0

    @property
    def masked_url(self) -> str:
        if self.url is None:
            return "(default store)"
        return mask_url(self.url)

    def describe(self) -> str:
        return (
            f"lineage capture {'on' if self.enabled else 'off'}: job={self.job!r} "
            f"store={self.masked_url} database={self.database} "
            f"onStoreFailure={self.on_store_failure} spool={self.spool_dir}"
        )

    def __repr__(self) -> str:
        return f"CaptureConfig({self.describe()})"


def default_spool_root() -> str:
    """``$PAIMON_HOME/lineage-spool`` (``~/.paimon`` when unset), beside the default store."""
    home = os.environ.get("PAIMON_HOME") or str(Path.home() / ".paimon")
    return str(Path(home).expanduser() / "lineage-spool")


def with_password(url: str, password: str | None) -> str:
    """``url`` with ``password`` filled in when it has a user and no password of its own."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)  # also validates: a malformed URL fails here, not mid-job
    if not password:
        return url
    if parsed.username and parsed.password is None:
        parsed = parsed.set(password=password)
    return parsed.render_as_string(hide_password=False)


def capture_config(
    conf: Mapping[str, Any],
    app_name: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    force: bool = False,
) -> CaptureConfig:
    """Settings from Spark conf ``conf`` (a dict); ``force`` turns capture on regardless.

    Capture is on when ``force``, ``spark.paimon.lineage.enabled=true``, or a ``url`` is
    set (``enabled=false`` wins over ``url``). Raises ``InvalidArgumentError`` for a
    bad value, naming the key, so a typo fails the job before any data moves.
    """
    env = os.environ if environ is None else environ
    conf = {str(k): v for k, v in conf.items()}
    unknown = sorted(k for k in conf if k.startswith(PREFIX) and k not in KNOWN_KEYS)
    if unknown:
        raise InvalidArgumentError(
            f"unknown lineage setting {', '.join(unknown)}; known: {', '.join(KNOWN_KEYS)}"
        )
    url = str(conf.get(KEY_URL) or "").strip() or None
    enabled = parse_bool(conf.get(KEY_ENABLED), KEY_ENABLED, default=url is not None) or force
    if url is None:
        url = (env.get(ENV_URL) or "").strip() or None
    if url is not None:
        try:
            url = with_password(url, env.get(ENV_PASSWORD))
        except Exception as err:  # noqa: BLE001 - sqlalchemy's ArgumentError and friends
            raise InvalidArgumentError(
                f"{KEY_URL} {mask_url(url)!r} is not a SQLAlchemy URL ({type(err).__name__})"
            ) from None

    job = str(conf.get(KEY_JOB) or app_name or "").strip()
    if enabled and not job:
        raise InvalidArgumentError(f"no job name: set {KEY_JOB} or the Spark application name")

    policy = str(conf.get(KEY_ON_STORE_FAILURE) or BUFFER).strip().lower()
    if policy not in POLICIES:
        raise InvalidArgumentError(
            f"{KEY_ON_STORE_FAILURE} must be one of {', '.join(POLICIES)}, got {policy!r}"
        )
    interval_ms = (
        parse_int(conf.get(KEY_POLL_INTERVAL_MS), KEY_POLL_INTERVAL_MS, 1) or DEFAULT_POLL_INTERVAL_MS
    )
    spool = str(conf.get(KEY_SPOOL_DIR) or "").strip() or default_spool_root()
    return CaptureConfig(
        enabled=enabled,
        job=job,
        url=url,
        database=str(conf.get(KEY_DATABASE) or DEFAULT_DATABASE).strip(),
        on_store_failure=policy,
        spool_dir=spool,
        poll_interval=interval_ms / 1000.0,
    )
