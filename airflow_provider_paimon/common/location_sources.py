"""Who may name where the package writes: DAG code, connections and Variables, not a trigger.

``warehouse``, ``warehouse_options`` and ``lineage_url`` (and the ``conf`` entries
naming a URL, URI, endpoint or warehouse) decide where a task reads and writes: a
lineage store a job creates tables in, a SQLite file it creates, a warehouse it commits
to. Whoever can trigger a DAG chooses its ``params`` and ``dag_run.conf`` (and its run id
and, for a manual run, its logical date), so a location templated from them lets that
user make the worker create a database or a file wherever the worker may write.

The rule, checked on the field's *template* before it is rendered (Jinja's own parser:
``jinja2.meta.find_undeclared_variables``, never a text search): a location template
may read only what DAG code, admins or Airflow's date formatting decide
(``SAFE_TEMPLATE_NAMES``: Variables, connections, macros, the run's dates, the DAG's
own ``user_defined_macros``). Anything else (``params``, ``dag_run``, ``run_id``, ``ti``,
a name we do not know) is refused, failing closed, unless the DAG author set
``allow_location_from_params=True`` on the task. A template that does not parse is
refused too (rendering it would fail anyway).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_paimon.common.templating import is_templated

__all__ = ["SAFE_TEMPLATE_NAMES", "location_conf_keys", "template_sources", "untrusted_sources"]

#: context names a location template may read without the opt-in
SAFE_TEMPLATE_NAMES = frozenset({
    "var", "conn", "macros",
    "ds", "ds_nodash", "ts", "ts_nodash", "ts_nodash_with_tz",
    "logical_date", "data_interval_start", "data_interval_end",
})
#: segments of a Spark conf key that make its value a location
_LOCATION_KEY_ENDINGS = ("url", "uri", "endpoint", "warehouse")


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def template_sources(value: Any, jinja_env: Any) -> set[str]:
    """The context names the templates inside ``value`` read (``jinja2.meta``).

    Raises ``jinja2.TemplateSyntaxError`` for a template that does not parse.
    """
    from jinja2 import meta

    names: set[str] = set()
    for text in _strings(value):
        if is_templated(text):
            names |= meta.find_undeclared_variables(jinja_env.parse(text))
    return names


def untrusted_sources(value: Any, jinja_env: Any, trusted: Iterable[str] = ()) -> list[str]:
    """The names ``value``'s templates read that a DAG's triggerer may choose (sorted)."""
    allowed = SAFE_TEMPLATE_NAMES | set(trusted)
    return sorted(template_sources(value, jinja_env) - allowed)


def location_conf_keys(conf: Any) -> dict[str, Any]:
    """The entries of a Spark ``conf`` whose value is a location (a URL, URI, endpoint or
    warehouse: ``spark.paimon.lineage.url``, ``spark.openlineage.transport.url``...)."""
    if not isinstance(conf, Mapping):
        return {}
    return {
        key: value for key, value in conf.items()
        if str(key).lower().replace("-", ".").replace("_", ".").rsplit(".", 1)[-1].endswith(_LOCATION_KEY_ENDINGS)
    }
