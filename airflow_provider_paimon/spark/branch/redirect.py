"""Session-level branch redirects: ``spark.paimon.branch.<db>.<table>=<branch>``.

Why: to re-run a job against a branch (data correction, as in the Paimon branch proposal) without touching its
code, the job's Spark conf names the branch per table, and every read and write of that
table in the job goes there: the ``paimon`` data source (batch and streaming, read and
write) and the native helpers (``read_table``, ``write_table``, ``register_views``,
``foreach_batch_writer``). This module is the one place that decides the branch.

Rules (docs/datasource.md, "Branch redirects"):

* the key is ``spark.paimon.branch.`` + ``database.table`` (exactly one dot); database
  and table match case-insensitively (Spark's analyser and Paimon's Hive/REST catalogs
  treat names so, and ``--conf`` keys are typed by hand); the value is the branch name,
  case-sensitive (it is a folder). ``main`` is allowed and means main.
* a malformed key (``spark.paimon.branch.orders``, ``...db.t.x``), a blank or invalid
  branch name, or two keys for the same table with different branches: a clear error
  at the first read or write that resolves a branch (nothing read, nothing written).
* an explicit ``branch`` option (or argument) that names another branch than the
  redirect: an error naming both values and how to fix it (fail closed); the same
  value: fine.
* the branch must exist: the usual branch-not-found error when the table is opened.

Where the conf is read. The native helpers run on the driver and read the active
session's conf directly. The data source's code runs in Python worker processes that
Spark starts for planning and commits, which cannot see the session's conf; so
``register(spark)`` (``spark/registration.py``) registers the data source with the
session's redirect entries inside it, and Spark hands the class to those workers.
A redirect changed with ``spark.conf.set`` after ``register(spark)`` would not reach
the planner; every read and write task therefore compares the branch its plan used
with the redirect in the session conf Spark propagates to tasks (local properties)
and fails the job, before anything is committed, when they differ.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_paimon.lineage.meta_options import has_lineage_proposal_options
from airflow_provider_paimon.paimon.errors import InvalidArgumentError
from airflow_provider_paimon.paimon.names import (
    MAIN_BRANCH,
    UNICODE_PROFILE,
    parse_table_name,
    validate_branch_name,
)

from ..lineage.connect_state import lineage_defaults, openlineage_settings
from ..lineage.direct import check_session, session_info
from ..lineage.routing_state import capture_routing, routed_environment
from ..options import parse_options
from ..session_info import spark_conf

if TYPE_CHECKING:
    from ..options import PaimonOptions

log = logging.getLogger(__name__)

#: conf key prefix; the rest of the key is ``database.table``
PREFIX = "spark.paimon.branch."

_logged: set[tuple[Any, ...]] = set()
_logged_lock = threading.Lock()


@dataclass(frozen=True)
class Redirect:
    """One table's redirect: the conf key that set it and the branch it names."""

    key: str
    database: str
    table: str
    branch: str

    @property
    def is_main(self) -> bool:
        return self.branch == MAIN_BRANCH


def entries(conf: Mapping[str, Any]) -> dict[str, str]:
    """The ``spark.paimon.branch.*`` entries of a conf map, unparsed."""
    return {str(k): str(v) for k, v in conf.items() if str(k).startswith(PREFIX) and v is not None}


def parse_redirects(raw: Mapping[str, str]) -> dict[tuple[str, str], Redirect]:
    """Validate redirect entries; keyed by (database, table) case-folded."""
    found: dict[tuple[str, str], Redirect] = {}
    for key in sorted(raw):
        name = key[len(PREFIX):]
        parts = name.split(".")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise InvalidArgumentError(
                f"Spark conf key {key!r} is not a branch redirect: it must be "
                f"'{PREFIX}<database>.<table>' (e.g. {PREFIX}sales.orders=fix_2026_11); "
                "fix or remove it"
            )
        branch = str(raw[key]).strip()
        if not branch:
            raise InvalidArgumentError(
                f"Spark conf {key} is blank: give the branch to read and write {name} on, or remove the key"
            )
        if branch != MAIN_BRANCH:
            try:
                validate_branch_name(branch, UNICODE_PROFILE)  # a reference: the table's ops apply its profile
            except InvalidArgumentError as err:
                raise InvalidArgumentError(f"Spark conf {key}: {err}") from None
        database, table = (p.strip() for p in parts)
        ident = (database.casefold(), table.casefold())
        other = found.get(ident)
        if other is not None and other.branch != branch:
            raise InvalidArgumentError(
                f"Spark conf keys {other.key}={other.branch} and {key}={branch} redirect the same "
                "table (names match case-insensitively) to different branches; keep one"
            )
        found.setdefault(ident, Redirect(key, database, table, branch))
    return found


def lookup(raw: Mapping[str, str], database: str, table: str) -> Redirect | None:
    """The redirect for ``database.table`` (validating every entry: first use fails loudly)."""
    return parse_redirects(raw).get((database.casefold(), table.casefold()))


def resolve(explicit: str | None, database: str, table: str, raw: Mapping[str, str]) -> tuple[str | None, Redirect | None]:
    """The branch to use (None: main) and the redirect that chose it, if any.

    ``explicit`` is the read's or write's own ``branch`` option (None when not given).
    """
    redirect = lookup(raw, database, table)
    given = None if explicit is None or not str(explicit).strip() else str(explicit).strip()
    if redirect is None:
        return (None if given in (None, MAIN_BRANCH) else given), None
    if given is not None and given != redirect.branch:
        raise InvalidArgumentError(
            f"table {database}.{table}: option branch={given!r} contradicts Spark conf "
            f"{redirect.key}={redirect.branch!r}; remove the 'branch' option (the conf then "
            f"decides) or remove/change the conf key, so that one branch is named"
        )
    return (None if redirect.is_main else redirect.branch), redirect


def apply(opts: PaimonOptions, raw: Mapping[str, str], *, what: str = "reading") -> PaimonOptions:
    """``opts`` with the redirect resolved in (``opts.branch`` is what the job uses)."""
    explicit = opts.raw.get("branch")
    branch, redirect = resolve(explicit, opts.database, opts.table_name, raw)
    resolved = dataclasses.replace(
        opts, branch=branch, redirect_key=None if redirect is None else redirect.key, redirect_checked=True
    )
    if redirect is not None:
        _log_once(what, resolved, redirect)
    return resolved


def _log_once(what: str, opts: PaimonOptions, redirect: Redirect) -> None:
    key = (what, opts.warehouse, opts.database.casefold(), opts.table_name.casefold(), redirect.branch)
    with _logged_lock:
        if key in _logged:
            return
        _logged.add(key)
    towards = "to" if what == "writing" else "from"
    log.info("%s %s %s branch %s (%s)", what, opts.table, towards, redirect.branch, redirect.key)


# ---------------------------------------------------------------- submitting a job


def redirect_conf(redirects: Mapping[str, str] | None) -> dict[str, str]:
    """``{"db.table": "branch"}`` as Spark conf entries, validated (the operator's argument)."""
    if not redirects:
        return {}
    if not isinstance(redirects, Mapping):
        raise InvalidArgumentError(
            f"branch_redirects must be a dict {{'database.table': 'branch'}}, got {type(redirects).__name__}"
        )
    conf: dict[str, str] = {}
    for name, branch in redirects.items():
        if not isinstance(name, str) or not isinstance(branch, str):
            raise InvalidArgumentError(
                f"branch_redirects maps 'database.table' to a branch name (both strings), got {name!r}: {branch!r}"
            )
        try:
            parse_table_name(name.strip())
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"branch_redirects: {err}") from None
        conf[PREFIX + name.strip()] = branch.strip()
    parse_redirects(conf)  # branch names; one branch per table
    return conf


def merge_redirects(conf: Mapping[str, Any], redirects: Mapping[str, str]) -> dict[str, Any]:
    """``conf`` plus the redirect entries; a conf entry naming another branch is an error."""
    merged = dict(conf)
    for key, branch in redirects.items():
        given = merged.get(key)
        if given is not None and str(given).strip() != branch:
            raise InvalidArgumentError(
                f"table {key[len(PREFIX):]}: branch_redirects names branch {branch!r} but conf "
                f"{key}={given!r}; give the redirect once"
            )
        merged[key] = branch
    parse_redirects(entries(merged))  # e.g. the same table in another case, another branch
    return merged


# ---------------------------------------------------------------- driver side


def session_entries(spark: Any) -> dict[str, str]:
    """The session's redirect entries: SparkConf plus runtime conf (``spark.conf.set`` wins)."""
    return entries(spark_conf(spark))


def apply_from_session(opts: PaimonOptions, spark: Any, *, what: str) -> PaimonOptions:
    """Resolve ``opts``' branch from ``spark``'s conf (the native helpers, on the driver).

    ``spark`` None: the active session's; without one (planning outside Spark) no
    redirect applies.
    """
    session = spark if spark is not None else active_session()
    if session is None:
        return opts
    import dataclasses

    defaults = lineage_defaults(session)  # a Connect session's capture: recorded by the commit
    if defaults and not has_lineage_proposal_options(opts.raw):
        opts = parse_options({**defaults, **opts.raw})
    resolved = apply(opts, session_entries(session), what=what)
    resolved = dataclasses.replace(
        resolved,
        lineage_session=session_info(session),
        openlineage=openlineage_settings(session),
        capture_routing=capture_routing(session),
    )
    check_session(resolved, routed_environment(session))  # options and the capture must agree
    return resolved


def active_session() -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - the native helpers need pyspark anyway
        return None
    return SparkSession.getActiveSession()


# ---------------------------------------------------------------- worker side


def check_task(opts: PaimonOptions) -> None:
    """In a read or write task: refuse a plan whose branch the session conf no longer names.

    Spark propagates the session's conf to tasks as local properties. A redirect set,
    changed or removed after ``register(spark)`` reaches them but not the planner; the
    task then fails, so the job neither reads nor commits the wrong branch.
    """
    if not opts.redirect_checked:
        return
    try:
        from pyspark import TaskContext

        context = TaskContext.get()
    except Exception:  # noqa: BLE001 - not in a Spark task
        return
    props = getattr(context, "_localProperties", None) if context is not None else None
    if props is None:
        return  # no task context (or a pyspark without it): the planner's decision stands
    raw = entries(props)
    branch, redirect = resolve(opts.raw.get("branch"), opts.database, opts.table_name, raw)
    if branch != opts.branch:
        now = f"{redirect.key}={redirect.branch}" if redirect else f"no {PREFIX}{opts.table} key"
        planned = f"branch {opts.branch or MAIN_BRANCH}" + (f" ({opts.redirect_key})" if opts.redirect_key else "")
        raise InvalidArgumentError(
            f"table {opts.table}: the session conf has {now}, but this query was planned on {planned}: "
            f"the '{PREFIX}*' conf changed after airflow_provider_paimon.spark.register(spark). "
            "Call register(spark) again after changing it (or set it when the session is built)"
        )
