"""Registering the ``paimon`` data source on a session: what the workers must carry.

The data source's code runs in Python worker processes that Spark starts for planning
and commits; they see neither the session's conf nor the driver's environment. So the
class registered is a subclass of ``PaimonDataSource`` made at registration, carrying
what the session says now: its branch redirects (``spark.paimon.branch.*``,
``branch/redirect.py``), its lineage session (job name and spool folder, for
option-driven lineage: ``lineage/direct.py``) and the snapshot properties of its
commits (the Airflow run and Spark app id: ``paimon/commit_properties.py``).

``register(spark)`` calls it, and so does lineage capture when it re-registers the
source to point the workers at itself (``lineage/worker_routing.py``). Its
own module because it is the one place that ties the data source, the redirects and
the lineage session and the capture's routing together: the data source and the redirects then import each
other in one direction only.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Hashable, Mapping
from typing import Any, cast

from airflow_provider_paimon.paimon.commit_properties import commit_properties
from airflow_provider_paimon.paimon.errors import InvalidArgumentError

from .branch.redirect import parse_redirects, session_entries
from .lineage.connect_state import lineage_defaults, openlineage_settings
from .lineage.direct import session_info
from .lineage.routing_state import capture_routing
from .session_info import app_id, is_connect, session_key

__all__ = ["forget_published", "register_data_source"]

log = logging.getLogger(__name__)

_published: dict[Hashable, str] = {}
_published_lock = threading.Lock()


def register_data_source(spark: Any) -> None:
    """Register the ``paimon`` data source on ``spark`` carrying the session's redirects
    and the snapshot properties of its commits (``paimon.commit_properties``).

    The class registered is a subclass of ``PaimonDataSource`` whose
    ``branch_redirects`` holds the session's ``spark.paimon.branch.*`` entries now:
    Spark pickles the class (by value) into every planner and task worker. (Handing
    them over in the workers' environment would work too, but every new environment
    makes Spark start new Python worker daemons, ~20 s on a busy 2-core machine.)
    Malformed entries are carried as they are: the first read or write fails on them
    with the message that names the key. Used by ``register(spark)`` and by lineage
    capture when it re-registers the source.
    """
    from .datasource.source import PaimonDataSource  # pyspark: loaded when a session registers

    raw = session_entries(spark)
    lineage = session_info(spark)  # job name and spool folder, for option-driven lineage
    # the Airflow run (this driver's AIRFLOW_CTX_* environment) and the Spark app id,
    # for every snapshot the source commits: its commit runs in a worker that has neither
    properties = commit_properties(spark_app_id=app_id(spark))
    defaults = lineage_defaults(spark)  # a Connect session's capture: recorded at commit
    openlineage = openlineage_settings(spark)  # ... and its OpenLineage events, sent at commit
    routing = capture_routing(spark)  # a classic session's capture: where workers report
    carry = is_connect(spark)  # streaming runners of Connect need the package inside
    cls = PaimonDataSource
    if raw or lineage or properties or defaults or openlineage or routing or carry:
        cls = cast(type[PaimonDataSource], type(  # a subclass, made at run time
            "PaimonDataSource",
            (PaimonDataSource,),
            {
                "branch_redirects": dict(raw),
                "lineage_session": lineage,
                "commit_properties": properties,
                "lineage_defaults": defaults,
                "openlineage_session": openlineage,
                "capture_routing": routing,
                "carry_package": carry,
                "__module__": PaimonDataSource.__module__,
            },
        ))
    spark.dataSource.register(cls)
    _log_published(spark, raw)


def forget_published(spark: Any) -> None:
    """Forget what was logged for the session (a pooled session's next job logs its own)."""
    with _published_lock:
        _published.pop(session_key(spark), None)


def _log_published(spark: Any, raw: Mapping[str, str]) -> None:
    """One INFO line per redirected table whenever the session's redirects change."""
    value = json.dumps(dict(raw), sort_keys=True)
    with _published_lock:
        key = session_key(spark)
        if _published.get(key, "{}") == value:
            return
        _published[key] = value
    try:
        for redirect in parse_redirects(raw).values():
            log.info(
                "branch redirect: every read and write of %s.%s in this job uses branch %s (%s)",
                redirect.database, redirect.table, redirect.branch, redirect.key,
            )
    except InvalidArgumentError as err:
        log.warning("branch redirect: %s (the first read or write of a paimon table fails on it)", err)
