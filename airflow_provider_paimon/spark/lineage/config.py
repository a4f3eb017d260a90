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

The lineage proposal's catalog options work too (``lineage/meta_options.py``), as
``spark.paimon.catalog.<key>`` conf entries (``spark.paimon.catalog.table-lineage``,
``...data-lineage``, ``...lineage-meta``, ``...jdbc.url``, ``...jdbc.username``,
``...jdbc.password``, ``...jdbc.database``) or in the ``paimon`` connection's extra
(which reaches the driver in ``PAIMON_CATALOG_OPTIONS_JSON``, never on the command
line); the conf entries win over the connection's. ``table-lineage`` alone records
only which tables the job reads and writes, ``data-lineage`` alone only the snapshot
links. Where they and our own keys both say something (on/off, the store, the
database), they must agree: a contradiction is an error naming both keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_paimon.job_contract import (
    CATALOG_OPTIONS_ENV,
    LINEAGE_PASSWORD_ENV,
    LINEAGE_URL_ENV,
)
from airflow_provider_paimon.lineage.meta_options import (
    lineage_meta_options,
    lineage_proposal_options,
    store_identity,
)
from airflow_provider_paimon.lineage.url import parse_url, register_url
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.option_values import parse_bool, parse_int
from airflow_provider_paimon.paimon.secrets import (
    mask_url,
    register_secret,
    register_secret_options,
)

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

#: the proposal's catalog options in the Spark conf: ``spark.paimon.catalog.<key>``
CATALOG_PREFIX = "spark.paimon.catalog."

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
    #: the proposal's flags: record table lineage (job <-> table) / data lineage (snapshots)
    table_lineage: bool = True
    data_lineage: bool = True
    #: the store's factory (``lineage-meta``) and the catalog options it is made from
    meta: str = "jdbc"
    meta_options: dict[str, str] = field(default_factory=dict, repr=False)
    #: False: OpenLineage events only, no lineage store (see the module docstring)
    store: bool = True

    @property
    def masked_url(self) -> str:
        if self.url is None:
            return "(default store)"
        return mask_url(self.url)

    def describe(self) -> str:
        if self.enabled and not self.store:
            return f"lineage capture on: job={self.job!r} store=none (OpenLineage events only)"
        kinds = [k for k, on in (("table", self.table_lineage), ("data", self.data_lineage)) if on]
        return (
            f"lineage capture {'on' if self.enabled else 'off'}: job={self.job!r} "
            f"lineage={'+'.join(kinds) or 'none'} lineage-meta={self.meta} "
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
    proposal = _proposal_settings(conf, env)
    unknown = sorted(k for k in conf if k.startswith(PREFIX) and k not in KNOWN_KEYS)
    if unknown:
        raise InvalidArgumentError(
            f"unknown lineage setting {', '.join(unknown)}; known: {', '.join(KNOWN_KEYS)}"
        )
    url = str(conf.get(KEY_URL) or "").strip() or None
    own_enabled = parse_bool(conf.get(KEY_ENABLED), KEY_ENABLED, default=url is not None)
    enabled = own_enabled or force
    if proposal is not None:
        own_given = conf.get(KEY_ENABLED) not in (None, "") or url is not None
        if own_given and own_enabled != proposal.enabled:
            raise InvalidArgumentError(
                f"{KEY_ENABLED}={str(own_enabled).lower()} contradicts the catalog options "
                f"table-lineage/data-lineage ({proposal.describe()}); remove one of them"
            )
        enabled = enabled or proposal.enabled
        url = _merge_url(url, proposal)
    if url is None:
        url = (env.get(LINEAGE_URL_ENV) or "").strip() or None
    _register_store_secrets(url, env.get(LINEAGE_PASSWORD_ENV))
    if url is not None and url.lower().startswith("jdbc:"):  # the proposal's form of the URL
        url = parse_url(url).render_as_string(hide_password=False)
    if url is not None:
        try:
            url = with_password(url, env.get(LINEAGE_PASSWORD_ENV))
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
    database = str(conf.get(KEY_DATABASE) or "").strip()
    if proposal is not None and proposal.database_given:
        if database and database != proposal.database:
            raise InvalidArgumentError(
                f"{KEY_DATABASE}={database!r} contradicts the catalog option "
                f"jdbc.database={proposal.database!r}; give the system database in one place"
            )
        database = proposal.database
    store = True
    if not enabled and openlineage_requested(conf, env):
        enabled, store = True, False
        if not job:
            raise InvalidArgumentError(f"no job name: set {KEY_JOB} or the Spark application name")
    return CaptureConfig(
        enabled=enabled,
        store=store,
        job=job,
        url=url,
        database=database or DEFAULT_DATABASE,
        on_store_failure=policy,
        spool_dir=spool,
        poll_interval=interval_ms / 1000.0,
        table_lineage=True if proposal is None else proposal.table_lineage,
        data_lineage=True if proposal is None else proposal.data_lineage,
        meta="jdbc" if proposal is None else proposal.meta,
        meta_options={} if proposal is None else dict(proposal.options),
    )


def _register_store_secrets(url: str | None, password: str | None) -> None:
    """The store URL's password (and ``$PAIMON_LINEAGE_PASSWORD``) are secrets from here on."""
    register_url(url)
    register_secret(password)


def openlineage_requested(conf: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the Spark conf itself asks for OpenLineage events (a store is not needed).

    True for a transport in ``spark.paimon.openlineage.transport.*`` or in the
    ``spark.openlineage.transport.*`` keys Airflow injects, or for
    ``spark.paimon.openlineage.enabled=true`` with openlineage-python's own configuration
    (``OPENLINEAGE_URL``, ``openlineage.yml``...). That configuration alone does not start
    a capture: it may be there for other tools of the machine. An invalid OpenLineage
    setting starts no capture (the emitter would be off); it is logged as a warning.
    """
    from airflow_provider_paimon.lineage.openlineage.config import KEY_ENABLED as OL_ENABLED
    from airflow_provider_paimon.lineage.openlineage.config import resolve_settings

    try:
        settings = resolve_settings(conf, environ)
    except ValueError as err:
        import logging

        logging.getLogger(__name__).warning("OpenLineage is off: invalid configuration (%s)", err)
        return False
    if not settings.enabled:
        return False
    if settings.source in ("paimon-conf", "spark-openlineage-conf"):
        return True
    return parse_bool(conf.get(OL_ENABLED), OL_ENABLED, False)


def _proposal_settings(conf: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    """The proposal's options: the ``paimon`` connection's, overridden by the conf's."""
    connection = _connection_options(env)
    given = {k[len(CATALOG_PREFIX):]: str(v) for k, v in conf.items() if k.startswith(CATALOG_PREFIX)}
    if not lineage_proposal_options(given) and not lineage_proposal_options(connection):
        return None
    options = {**connection, **given}
    register_secret_options(options)  # jdbc.password, a jdbc.url with a password
    where = "spark.paimon.catalog." if lineage_proposal_options(given) else "paimon connection extra"
    try:
        return lineage_meta_options(options, where=where.rstrip("."))
    except InvalidArgumentError:
        raise
    except Exception as err:  # noqa: BLE001 - sqlalchemy's parse errors and friends
        from airflow_provider_paimon.lineage.meta_options import JDBC_PASSWORD

        text = str(err)
        if options.get(JDBC_PASSWORD):
            text = text.replace(options[JDBC_PASSWORD], "***")
        raise InvalidArgumentError(f"lineage catalog options: {text}") from None


def _connection_options(env: Mapping[str, str]) -> dict[str, str]:
    """The catalog options the Airflow hook put in the driver's environment (JSON)."""
    import json

    raw = env.get(CATALOG_OPTIONS_ENV)
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        raise InvalidArgumentError(f"${CATALOG_OPTIONS_ENV} is not valid JSON") from None
    options = {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}
    register_secret_options(options)  # the private channel's secrets are known from here on
    return options


def _merge_url(own: str | None, proposal: Any) -> str | None:
    """Our ``url`` and the proposal's ``jdbc.url``: one store, or a clear error."""
    if proposal.url is None:
        return own
    proposal_url = proposal.url.render_as_string(hide_password=False)
    if own is None:
        return proposal_url

    try:
        mine = parse_url(own)
    except Exception:  # noqa: BLE001 - reported with the key below
        raise InvalidArgumentError(f"{KEY_URL} {mask_url(own)!r} is not a SQLAlchemy URL") from None
    if store_identity(mine, "") != store_identity(proposal.url, ""):
        raise InvalidArgumentError(
            f"{KEY_URL} {mask_url(own)!r} and the catalog option jdbc.url "
            f"({proposal.masked_url}) name different lineage stores; give the store in one place"
        )
    if mine.password is not None and proposal.url.password is not None and mine.password != proposal.url.password:
        raise InvalidArgumentError(
            f"{KEY_URL} and the catalog option jdbc.password give different passwords for "
            "the lineage store; give the password in one place"
        )
    return own if mine.password is not None else proposal_url
